/* rdmapoold's metrics: what its listeners count, served like rdmapoolfs's. */
#ifndef RDMAPOOLD_SERVER_METRICS_H
#define RDMAPOOLD_SERVER_METRICS_H

#include <rdmapool/metrics_server.h>
#include <rdmapool/transport_server.h>

/* List st (and the region's size) in the registry and serve them on
 * socket (NULL: RP_METRICS_DIR/pool-CLUSTER-ID.sock; "off": none) and tcp
 * port (0: none) of addr (NULL: RP_METRICS_ADDR). NULL when nothing is served; a failure is logged, not
 * fatal: the pool serves without metrics. */
struct rp_metrics_server *server_metrics_start(struct rp_serve_stats *st, const char *cluster,
					       uint32_t id, uint64_t region_size,
					       const char *transport, const char *socket,
					       const char *addr, int port);

#endif
