/* Stand-in for the rdma listener in a --disable-rdma build. */
#include "config.h"
#include <rdmapool/transport_server.h>

#include <errno.h>
#include <stdio.h>

int rp_rdma_listen(const struct rp_serve_params *p, struct rp_listener **out, char *err,
		   size_t errlen)
{
	(void)p;
	(void)out;
	snprintf(err, errlen, "this build has no rdma transport (configured --disable-rdma)");
	return -ENODEV;
}
