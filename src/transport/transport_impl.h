/* Internals shared by the transport backends: the connection base object,
 * the in-flight table that maps wire ids / work request ids back to ops, and
 * the authentication handshake. Not for use outside src/transport. */
#ifndef RDMAPOOL_TRANSPORT_IMPL_H
#define RDMAPOOL_TRANSPORT_IMPL_H

#include <rdmapool/crypto.h>
#include <rdmapool/transport.h>

#include <stdatomic.h>
#include <stdbool.h>

/* Ops are tracked in groups of at most RP_GROUP_MAX (one post call is split
 * into groups); a group is the unit of selective signalling on rdma. */
#define RP_GROUP_MAX 32

struct rp_group {
	struct rp_op *ops;
	uint32_t n;
	uint32_t done_mask;
	uint32_t gen;
	bool used;
};

/* Token = gen << 16 | slot; wire id / wr_id = token << 8 | index in group.
 * A stale token (its group already failed by an abort) is simply ignored, so
 * a late reply can never touch memory its caller has since reused. */
struct rp_inflight {
	pthread_mutex_t mu;
	pthread_cond_t space;
	uint32_t cap;
	uint32_t used;
	uint32_t next;
	bool closed; /* the completer is gone: nothing may be added */
	struct rp_group *groups;
};

int rp_inflight_init(struct rp_inflight *t, uint32_t cap);
void rp_inflight_destroy(struct rp_inflight *t);
/* Reserve a group for ops[0..n); waits for space while alive() holds.
 * Returns the token or a negative errno. */
int64_t rp_inflight_add(struct rp_inflight *t, struct rp_op *ops, uint32_t n,
			bool (*alive)(void *), void *arg);
/* Look an op up without completing it (NULL when stale). */
struct rp_op *rp_inflight_peek(struct rp_inflight *t, uint64_t id);
/* Complete op idx of the group; when prior_ok, first complete earlier
 * not-yet-done ops of the group with success (rdma: a completion implies all
 * earlier work requests on the queue pair succeeded). */
void rp_inflight_complete(struct rp_inflight *t, uint64_t id, int status, bool prior_ok);
/* Fail every outstanding op with err (abort, peer gone). */
void rp_inflight_fail_all(struct rp_inflight *t, int err);
/* The completer (receive thread, poller) is going away: fail everything in
 * flight and refuse additions (-ENOTCONN) until rp_inflight_open, so an op
 * posted in the same instant can never wait for a completion that will not
 * come. */
void rp_inflight_close(struct rp_inflight *t, int err);
void rp_inflight_open(struct rp_inflight *t);
uint32_t rp_inflight_count(struct rp_inflight *t);

#define RP_ID_SLOT(id) ((uint32_t)(((id) >> 8) & 0xffff))
#define RP_ID_GEN(id) ((uint32_t)((id) >> 24))
#define RP_ID_INDEX(id) ((uint32_t)((id) & 0xff))

void rp_op_complete(struct rp_op *op, int status);

struct rp_conn_vtbl {
	const char *name;
	void (*post)(struct rp_conn *c, struct rp_op *ops, size_t n);
	void (*abort)(struct rp_conn *c, int err);
	int (*mr_reg)(struct rp_conn *c, void *buf, size_t len, struct rp_mr **out);
	void (*mr_dereg)(struct rp_mr *mr);
	int (*reconnect)(struct rp_conn *c, char *err, size_t errlen);
	bool (*is_up)(const struct rp_conn *c);
	void (*close)(struct rp_conn *c);
	/* optional: complete what has arrived, without blocking; a waiter
	 * calls it for a short while before it sleeps (rp_completion_wait) */
	void (*progress)(struct rp_conn *c);
};

struct rp_conn {
	const struct rp_conn_vtbl *vt;
	enum rp_transport_kind kind;
	struct rp_peer peer;
	char cluster_name[RP_NAME_MAX + 1];
	uint8_t secret[RP_SECRET_MAX];
	size_t secret_len;
	uint32_t connect_timeout_ms;
	uint32_t op_timeout_ms;
	uint64_t region_size;
	uint64_t remote_addr; /* rdma: region's virtual address */
	uint32_t rkey;
	uint8_t pool_uuid[16]; /* as the server proved it */
	/* recent time from post to completion (moving average, ns): waiters
	 * poll (progress) only where that is short */
	_Atomic uint64_t lat_ns;
	struct rp_hist *latency; /* the owner's, or NULL */
	/* bounce buffer for the rp_conn_read/write convenience calls */
	pthread_mutex_t bounce_mu;
	void *bounce;
	struct rp_mr *bounce_mr;
	/* who this client is to the server's fencing (wire.h): random, or a
	 * lease holder's fence session with its epoch (rp_conn_set_fence) */
	_Atomic uint64_t session, fence_epoch;
};

/* The session and generation of the next connect: generations grow with
 * every connect of the process, under the epoch in the top 32 bits. */
void rp_conn_next_connect(struct rp_conn *c, uint64_t *session, uint64_t *gen);

void rp_conn_base_init(struct rp_conn *c, const struct rp_conn_vtbl *vt,
		       const struct rp_conn_params *p);
int rp_conn_base_setup_bounce(struct rp_conn *c);
void rp_conn_base_fini(struct rp_conn *c);

/* Backends. */
int rp_tcp_conn_open(const struct rp_conn_params *p, struct rp_conn **out, char *err, size_t errlen);
int rp_rdma_conn_open(const struct rp_conn_params *p, struct rp_conn **out, char *err, size_t errlen);

/* Authentication: HMAC-SHA-256 with the cluster secret over both nonces and
 * the cluster name, in each direction with its own label. */
#define RP_NONCE_LEN 16
void rp_auth_mac(const uint8_t *secret, size_t secret_len, const char *label,
		 const uint8_t *nonce_a, const uint8_t *nonce_b, const char *cluster_name,
		 const uint8_t *bind, size_t bind_len, uint8_t out[RP_SHA256_LEN]);
/* What the server's MAC binds: the peer id, status, pool uuid and region. */
#define RP_BIND_SERVER_LEN 48
void rp_auth_bind_server(uint8_t out[RP_BIND_SERVER_LEN], uint32_t peer_id, int32_t status,
			 const uint8_t uuid[16], uint64_t addr, uint64_t size, uint32_t rkey);

#endif
