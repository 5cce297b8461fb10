/* rdmapoold's metrics: connections, what tcp clients had served, what is
 * registered for RDMA. The data path over RDMA does not pass this CPU, so
 * it is counted by the clients (rdmapool_pool_* of rdmapoolfs), not here. */
#include "config.h"
#include "server_metrics.h"

#include <rdmapool/log.h>
#include <rdmapool/metrics.h>

#include <stdio.h>
#include <string.h>

static uint64_t region_bytes;

static double read_u64(void *arg)
{
	return (double)atomic_load((_Atomic uint64_t *)arg);
}

static double read_region(void *arg)
{
	(void)arg;
	return (double)region_bytes;
}

static double one(void *arg)
{
	(void)arg;
	return 1;
}

static int list(struct rp_serve_stats *st, const char *info)
{
	static const char *const ops[] = { "op=\"read\"", "op=\"write\"", "op=\"cas\"", "op=\"faa\"" };
	int rc = rp_metric_gauge(st, "rdmapoold_info", info, "This pool server (always 1).", one,
				 NULL);
	rc |= rp_metric_gauge(st, "rdmapoold_region_bytes", NULL, "Size of the donated region.",
			      read_region, NULL);
	rc |= rp_metric_gauge(st, "rdmapoold_registered_bytes", NULL,
			      "Bytes of the region registered with RDMA devices.", read_u64,
			      &st->registered_bytes);
	rc |= rp_metric_gauge(st, "rdmapoold_connections", NULL, "Clients connected now.",
			      read_u64, &st->connections);
	rc |= rp_metric_counter(st, "rdmapoold_connections_total", NULL,
				"Clients that connected and proved the cluster secret.",
				&st->connections_total);
	rc |= rp_metric_counter(st, "rdmapoold_refused_total", NULL,
				"tcp handshakes refused (secret, peer id, transport).",
				&st->refused_total);
	for (int i = 0; i < 4; i++)
		rc |= rp_metric_counter(st, "rdmapoold_tcp_ops_total", ops[i],
					"One-sided operations served for tcp clients by this CPU.",
					&st->tcp_ops[i]);
	rc |= rp_metric_counter(st, "rdmapoold_tcp_refused_ops_total", NULL,
				"tcp requests refused (wrong key, out of range).",
				&st->tcp_refused_ops);
	rc |= rp_metric_counter(st, "rdmapoold_tcp_read_bytes_total", NULL,
				"Bytes tcp clients read.", &st->tcp_read_bytes);
	rc |= rp_metric_counter(st, "rdmapoold_tcp_written_bytes_total", NULL,
				"Bytes tcp clients wrote.", &st->tcp_written_bytes);
	return rc;
}

struct rp_metrics_server *server_metrics_start(struct rp_serve_stats *st, const char *cluster,
					       uint32_t id, uint64_t region_size,
					       const char *transport, const char *socket,
					       const char *addr, int port)
{
	char info[256], path[256], err[512];
	struct rp_metrics_server *srv = NULL;
	if (socket && strcmp(socket, "off") == 0 && port == 0)
		return NULL;
	region_bytes = region_size;
	snprintf(info, sizeof(info), "cluster=\"%s\",peer=\"%u\",transport=\"%s\"", cluster, id,
		 transport);
	if (list(st, info) != 0) {
		rp_metrics_drop(st);
		rp_warn("metrics: out of memory; serving none");
		return NULL;
	}
	if (!socket) {
		snprintf(path, sizeof(path), "%s/pool-%s-%u.sock", RP_METRICS_DIR, cluster, id);
		socket = path;
	} else if (strcmp(socket, "off") == 0) {
		socket = NULL;
	}
	if (rp_metrics_serve(socket, addr, port, &srv, err, sizeof(err)) < 0) {
		rp_warn("%s; no metrics served", err);
		return NULL;
	}
	return srv;
}
