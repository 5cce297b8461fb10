/* The serving half of each transport, used by rdmapoold: expose one memory
 * region to authenticated clients. The tcp listener executes the one-sided
 * operations itself; the rdma listener only admits clients and hands out the
 * region's address and rkey, after which the NIC serves them. */
#ifndef RDMAPOOL_TRANSPORT_SERVER_H
#define RDMAPOOL_TRANSPORT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmapool/cluster.h>

struct rp_serve_params {
	const struct rp_peer *self;
	const char *cluster_name;
	const uint8_t *secret;
	size_t secret_len;
	void *base;
	uint64_t size;
	uint8_t pool_uuid[16]; /* from the region's superblock: proved to clients */
	/* the region is served over rdma too: its CAS/FAA are the NIC's, and
	 * the CPU's would not be atomic with them, so tcp clients are refused
	 * (the handshake answers -EXDEV) */
	bool rdma_served;
};

struct rp_listener;

int rp_tcp_listen(const struct rp_serve_params *p, struct rp_listener **out, char *err,
		  size_t errlen);
/* -ENODEV when no RDMA device serves the peer's address. */
int rp_rdma_listen(const struct rp_serve_params *p, struct rp_listener **out, char *err,
		   size_t errlen);
/* Stop accepting, drop every client, release everything. */
void rp_listener_stop(struct rp_listener *l);

#endif
