/* Stand-in for the rdma backend in a --disable-rdma build. */
#include "config.h"
#include "transport_impl.h"

#include <errno.h>
#include <stdio.h>

int rp_transport_rdma_available(void)
{
	return 0;
}

int rp_rdma_conn_open(const struct rp_conn_params *p, struct rp_conn **out, char *err, size_t errlen)
{
	(void)out;
	snprintf(err, errlen, "peer %u: this build has no rdma transport (configured --disable-rdma)",
		 p->peer->id);
	return -EPROTONOSUPPORT;
}
