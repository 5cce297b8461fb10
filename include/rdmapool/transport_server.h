/* The serving half of each transport, used by rdmapoold: expose one memory
 * region to authenticated clients. The tcp listener executes the one-sided
 * operations itself; the rdma listener only admits clients and hands out the
 * region's address and rkey, after which the NIC serves them. */
#ifndef RDMAPOOL_TRANSPORT_SERVER_H
#define RDMAPOOL_TRANSPORT_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmapool/cluster.h>

/* What a pool server counts for its metrics (rdmapoold lists them). */
struct rp_serve_stats {
	_Atomic uint64_t connections_total; /* clients that proved the secret */
	_Atomic uint64_t connections;       /* of those, connected now */
	_Atomic uint64_t refused_total;     /* tcp handshakes refused */
	_Atomic uint64_t tcp_ops[4];        /* tcp requests served: read, write, cas, faa */
	_Atomic uint64_t tcp_refused_ops;   /* tcp requests refused (key, range) */
	_Atomic uint64_t tcp_read_bytes, tcp_written_bytes;
	_Atomic uint64_t registered_bytes;  /* rdma: registered with a device */
};

/* The tcp server lands a write's payload this much at a time, each piece
 * once it has arrived whole (a write cut in the middle leaves whole
 * pieces): a whole number of sectors at any sector-aligned offset. */
#define RP_TCP_WRITE_PIECE (64u << 10)

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
	struct rp_serve_stats *stats; /* the caller's, never NULL */
	/* the memory of holders' fences (rp_fence_memo_open), in the region:
	 * NULL, a listener keeps one of its own for its lifetime */
	struct rp_fence_memo *fences;
};

struct rp_fence_memo;
/* The memo of holders' fences in len bytes at mem (the region's
 * RP_FENCES_SIZE bytes at RP_FENCES_OFFSET): kept as it is when it is one,
 * else started empty. NULL when len is too small. */
struct rp_fence_memo *rp_fence_memo_open(void *mem, size_t len);

struct rp_listener;

int rp_tcp_listen(const struct rp_serve_params *p, struct rp_listener **out, char *err,
		  size_t errlen);
/* -ENODEV when no RDMA device serves the peer's address. */
int rp_rdma_listen(const struct rp_serve_params *p, struct rp_listener **out, char *err,
		   size_t errlen);
/* The tcp server's request loop alone on a connected fd, the handshake
 * taken as done with key rkey: what it runs for each client (the fuzz
 * target feeds it arbitrary frames). Returns when the stream ends (0) or
 * on a malformed frame or an I/O error (negative errno). */
int rp_tcp_serve_stream(const struct rp_serve_params *p, uint32_t rkey, int fd);
/* Stop accepting, drop every client, release everything. */
void rp_listener_stop(struct rp_listener *l);

#endif
