/* Serving the metrics registry over HTTP/1.0 (GET /metrics), so Prometheus
 * or curl can scrape it: on a unix socket (under /run/rdmapool by default)
 * and, when asked, on a TCP port. One thread reads up to 16 requests at
 * once, each given 2 s in all, so an idle client holds only itself up. */
#ifndef RDMAPOOL_METRICS_SERVER_H
#define RDMAPOOL_METRICS_SERVER_H

#include <stddef.h>

#define RP_METRICS_DIR "/run/rdmapool"
/* The TCP port's address unless another is given: the metrics are not
 * authenticated, so other hosts reach them only when asked for. */
#define RP_METRICS_ADDR "127.0.0.1"

struct rp_metrics_server;

/* unix_path: NULL for none; its folder is made (0755) and a stale socket
 * replaced, a live one refused. tcp_port: 0 for none, else on tcp_addr (a
 * numeric IPv4 or IPv6 address; NULL: RP_METRICS_ADDR; "::" or "0.0.0.0":
 * every address). Returns 0 or a negative errno with err filled in. */
int rp_metrics_serve(const char *unix_path, const char *tcp_addr, int tcp_port,
		     struct rp_metrics_server **out, char *err, size_t errlen);
/* Stop serving and remove the socket. NULL is fine. */
void rp_metrics_stop(struct rp_metrics_server *s);

/* A socket of the mount at mountpoint (a canonical path), by kind ("fs":
 * metrics, "ctl": its supervisor): one name per mountpoint, so that
 * 'rdmapool stats MOUNTPOINT' and 'rdmapoolfs --restart' find them. */
void rp_mount_socket(const char *kind, const char *mountpoint, char *out, size_t len);

#endif
