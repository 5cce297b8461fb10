/* The transport: one-sided operations on a pool's remote region.
 *
 * The same interface is served by the rdma backend (verbs READ, WRITE,
 * ATOMIC CMP_AND_SWP / FETCH_AND_ADD on an RC queue pair) and by the tcp
 * backend (the same operations emulated by the pool server's CPU). Layers
 * above use only this header. */
#ifndef RDMAPOOL_TRANSPORT_H
#define RDMAPOOL_TRANSPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmapool/cluster.h>
#include <rdmapool/metrics.h>

struct rp_conn;
struct rp_mr;

enum rp_opcode {
	RP_OP_READ = 1,  /* remote -> local */
	RP_OP_WRITE = 2, /* local -> remote */
	RP_OP_CAS = 3,   /* 64-bit compare-and-swap, 8-byte aligned */
	RP_OP_FAA = 4,   /* 64-bit fetch-and-add, 8-byte aligned */
};

/* Largest single READ/WRITE; larger transfers are split by the caller. */
#define RP_MAX_IO (16u << 20)

struct rp_completion;

struct rp_op {
	/* Set by the caller. */
	enum rp_opcode opcode;
	uint64_t offset;   /* byte offset in the remote region */
	void *local;       /* READ/WRITE: buffer inside mr */
	uint32_t len;      /* READ/WRITE length */
	struct rp_mr *mr;  /* registration covering local (READ/WRITE) */
	uint64_t compare;  /* CAS: expected value */
	uint64_t value;    /* CAS: new value; FAA: addend */
	/* Set on completion. */
	uint64_t result;   /* CAS/FAA: the value before the operation */
	int status;        /* 0, or a negative errno (see transport(7) in rdmapool.7) */
	/* Private to the transport. */
	struct rp_completion *comp_;
	int conn_idx_;     /* in comp_->conns; -1: never reached a connection */
};

/* A completion gathers operations posted to one or more connections so that
 * the caller waits once for all of them. */
#define RP_COMPLETION_MAX_CONNS 64
struct rp_completion {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t remaining;
	int first_err;
	size_t nconns;
	struct rp_conn *conns[RP_COMPLETION_MAX_CONNS];
	/* ops still outstanding per connection: on a timeout only those with
	 * some are aborted, not a healthy one that was waited on with them */
	size_t pending[RP_COMPLETION_MAX_CONNS];
	/* when each connection's first op of this wait was posted */
	uint64_t posted_ns[RP_COMPLETION_MAX_CONNS];
};

struct rp_conn_params {
	const struct rp_peer *peer;
	enum rp_transport_kind kind; /* tcp, rdma, or auto: rdma when it connects, else tcp */
	const char *cluster_name;
	const uint8_t *secret;
	size_t secret_len;
	uint32_t connect_timeout_ms;
	uint32_t op_timeout_ms;
	/* optional, the caller's (it outlives the connection, across
	 * reconnects): time from post to the last completion of each
	 * connection's ops in one wait, a round trip as the caller sees it */
	struct rp_hist *latency;
	/* optional: the lease holder's fence (rp_conn_set_fence); 0: none */
	uint64_t fence_session, fence_epoch;
};

/* Connect and authenticate. err receives a message naming the peer. */
int rp_conn_open(const struct rp_conn_params *p, struct rp_conn **out, char *err, size_t errlen);
void rp_conn_close(struct rp_conn *c);

/* A connection whose peer died, timed out or broke the protocol stays down:
 * every op posted to it fails with -ENOTCONN until the owner reconnects it
 * (and checks that the region behind it is still the same). */
bool rp_conn_is_up(const struct rp_conn *c);
int rp_conn_reconnect(struct rp_conn *c, char *err, size_t errlen);

/* Fencing a volume's earlier writers in the pools themselves (rdmapool(7),
 * "Fencing"): a lease holder tags its connections with the volume's fence
 * session and its writer epoch. A pool server that accepts a connect of the
 * session with a newer epoch first cuts every connection of an older one
 * (none of their requests executes after that) and refuses older epochs
 * from then on, also after the newer holder has gone. Takes effect at the
 * next connect: rp_conn_drop, then reconnect. Epochs must fit 32 bits. A
 * connect refused this way fails with -ESTALE (over tcp only when the
 * server proved the refusal). */
void rp_conn_set_fence(struct rp_conn *c, uint64_t session, uint64_t epoch);
/* Take a connection down as a failure would (ops in flight fail with
 * -ECONNABORTED); the owner reconnects it. */
void rp_conn_drop(struct rp_conn *c);

uint64_t rp_conn_region_size(const struct rp_conn *c);
/* The pool uuid the server proved in the handshake (16 bytes). */
const uint8_t *rp_conn_pool_uuid(const struct rp_conn *c);
enum rp_transport_kind rp_conn_kind(const struct rp_conn *c);
const struct rp_peer *rp_conn_peer(const struct rp_conn *c);
/* Replace the remote key used on this connection: debugging and tests of the
 * server's key check only. */
void rp_conn_debug_set_rkey(struct rp_conn *c, uint32_t rkey);

/* Register local memory for READ/WRITE on this connection. */
int rp_mr_reg(struct rp_conn *c, void *buf, size_t len, struct rp_mr **out);
void rp_mr_dereg(struct rp_mr *mr);

void rp_completion_init(struct rp_completion *comp);
void rp_completion_destroy(struct rp_completion *comp);

/* Post n operations on c. Every op posted completes exactly once, with its
 * status set; ops that cannot be posted complete at once with an error. */
void rp_conn_post(struct rp_conn *c, struct rp_op *ops, size_t n, struct rp_completion *comp);

/* Wait until every op posted with comp has completed. After timeout_ms the
 * connections involved are aborted (their outstanding ops fail with
 * -ETIMEDOUT) so this never hangs. Returns 0 or the first op error. */
int rp_completion_wait(struct rp_completion *comp, uint32_t timeout_ms);

/* post + wait on one connection, with the connection's op timeout. */
int rp_conn_exec(struct rp_conn *c, struct rp_op *ops, size_t n);

/* Convenience single operations through a connection-owned bounce buffer. */
int rp_conn_read(struct rp_conn *c, uint64_t off, void *buf, size_t len);
int rp_conn_write(struct rp_conn *c, uint64_t off, const void *buf, size_t len);
int rp_conn_cas(struct rp_conn *c, uint64_t off, uint64_t expect, uint64_t desired, uint64_t *old);
int rp_conn_faa(struct rp_conn *c, uint64_t off, uint64_t add, uint64_t *old);

/* Is an RDMA device usable on this machine (for transport "auto")? */
int rp_transport_rdma_available(void);

const char *rp_op_name(enum rp_opcode op);

#endif
