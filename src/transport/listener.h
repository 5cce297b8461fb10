/* Common head of both listeners, so rp_listener_stop can dispatch. */
#ifndef RDMAPOOL_LISTENER_H
#define RDMAPOOL_LISTENER_H

#include <rdmapool/transport_server.h>

struct rp_listener {
	void (*stop)(struct rp_listener *l);
};

#endif
