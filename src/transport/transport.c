/* Backend-independent part of the transport: connection lifecycle dispatch,
 * completions, the in-flight table and the convenience calls. */
#include "config.h"
#include "transport_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BOUNCE_LEN (1u << 20)

const char *rp_op_name(enum rp_opcode op)
{
	switch (op) {
	case RP_OP_READ: return "read";
	case RP_OP_WRITE: return "write";
	case RP_OP_CAS: return "cas";
	case RP_OP_FAA: return "faa";
	}
	return "?";
}

/* ---- completions ---- */

void rp_completion_init(struct rp_completion *comp)
{
	pthread_condattr_t ca;
	pthread_mutex_init(&comp->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&comp->cv, &ca);
	pthread_condattr_destroy(&ca);
	comp->remaining = 0;
	comp->first_err = 0;
	comp->nconns = 0;
}

void rp_completion_destroy(struct rp_completion *comp)
{
	pthread_cond_destroy(&comp->cv);
	pthread_mutex_destroy(&comp->mu);
}

void rp_op_complete(struct rp_op *op, int status)
{
	struct rp_completion *comp = op->comp_;
	rp_mutex_lock(&comp->mu, RP_LK_COMPLETION);
	op->status = status;
	if (op->conn_idx_ >= 0 && --comp->pending[op->conn_idx_] == 0 && status >= 0) {
		struct rp_conn *c = comp->conns[op->conn_idx_];
		if (c->latency)
			rp_hist_observe(c->latency, rp_now_ns() - comp->posted_ns[op->conn_idx_]);
	}
	if (status < 0 && comp->first_err == 0)
		comp->first_err = status;
	if (--comp->remaining == 0)
		pthread_cond_broadcast(&comp->cv);
	rp_mutex_unlock(&comp->mu);
}

/* What both transports require: a known opcode; READ/WRITE with a buffer, a
 * registration and at most RP_MAX_IO bytes; atomics 8-byte aligned (verbs). */
static bool op_valid(const struct rp_op *op)
{
	switch (op->opcode) {
	case RP_OP_READ:
	case RP_OP_WRITE:
		return op->local && op->mr && op->len <= RP_MAX_IO;
	case RP_OP_CAS:
	case RP_OP_FAA:
		return op->offset % 8 == 0;
	}
	return false;
}

void rp_conn_post(struct rp_conn *c, struct rp_op *ops, size_t n, struct rp_completion *comp)
{
	bool listed = false;
	int idx = -1;

	if (n == 0)
		return;
	rp_mutex_lock(&comp->mu, RP_LK_COMPLETION);
	comp->remaining += n;
	for (size_t i = 0; i < comp->nconns; i++)
		if (comp->conns[i] == c) {
			listed = true;
			idx = (int)i;
		}
	if (!listed && comp->nconns < RP_COMPLETION_MAX_CONNS) {
		idx = (int)comp->nconns;
		comp->pending[idx] = 0;
		comp->conns[comp->nconns++] = c;
	}
	if (idx >= 0) {
		if (comp->pending[idx] == 0)
			comp->posted_ns[idx] = rp_now_ns();
		comp->pending[idx] += n;
	}
	rp_mutex_unlock(&comp->mu);

	for (size_t i = 0; i < n; i++) {
		ops[i].comp_ = comp;
		ops[i].conn_idx_ = idx;
		ops[i].status = 1; /* pending */
		ops[i].result = 0;
	}
	if (!listed && comp->nconns >= RP_COMPLETION_MAX_CONNS && comp->conns[RP_COMPLETION_MAX_CONNS - 1] != c) {
		/* Cannot be aborted on timeout, so refuse rather than risk a hang. */
		for (size_t i = 0; i < n; i++)
			rp_op_complete(&ops[i], -E2BIG);
		return;
	}
	/* Backends see only well-formed ops, in runs; the rest fail here. */
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && op_valid(&ops[j]))
			j++;
		if (j > i)
			c->vt->post(c, ops + i, j - i);
		if (j < n)
			rp_op_complete(&ops[j++], -EINVAL);
		i = j;
	}
}

/* A waiter polls connections that have progress() for up to twice their
 * recent latency, when that is below this, yielding the CPU between polls:
 * the completion is handled by the thread that waits for it, with no
 * wake-ups (the poller's, then ours) in between, as perftest measures the
 * link. Longer operations, and tcp (no progress()), sleep at once. */
#define POLL_MAX_NS 1000000ull
#define LAT_START_NS 10000ull

static size_t conns_of(struct rp_completion *comp, struct rp_conn **conns)
{
	rp_mutex_lock(&comp->mu, RP_LK_COMPLETION);
	size_t n = comp->nconns;
	memcpy(conns, comp->conns, n * sizeof(conns[0]));
	rp_mutex_unlock(&comp->mu);
	return n;
}

static bool comp_done(struct rp_completion *comp)
{
	rp_mutex_lock(&comp->mu, RP_LK_COMPLETION);
	bool done = comp->remaining == 0;
	rp_mutex_unlock(&comp->mu);
	return done;
}

static void poll_briefly(struct rp_completion *comp, uint64_t t0)
{
	struct rp_conn *conns[RP_COMPLETION_MAX_CONNS];
	size_t n = conns_of(comp, conns);
	uint64_t budget = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t lat = atomic_load(&conns[i]->lat_ns);
		if (conns[i]->vt->progress && lat < POLL_MAX_NS)
			budget = RP_MAX(budget, 2 * lat);
	}
	while (budget && rp_now_ns() - t0 < budget && !comp_done(comp)) {
		for (size_t i = 0; i < n; i++)
			if (conns[i]->vt->progress)
				conns[i]->vt->progress(conns[i]);
		sched_yield();
	}
}

static void note_latency(struct rp_conn **conns, size_t n, uint64_t t0)
{
	uint64_t took = rp_now_ns() - t0;
	for (size_t i = 0; i < n; i++) {
		uint64_t lat = atomic_load(&conns[i]->lat_ns);
		atomic_store(&conns[i]->lat_ns, (7 * lat + took) / 8);
	}
}

int rp_completion_wait(struct rp_completion *comp, uint32_t timeout_ms)
{
	struct timespec ts;
	uint64_t t0 = rp_now_ns();
	uint64_t deadline = t0 + (uint64_t)timeout_ms * 1000000ull;
	int rc = 0;

	poll_briefly(comp, t0);
	rp_mutex_lock(&comp->mu, RP_LK_COMPLETION);
	while (comp->remaining > 0) {
		ts.tv_sec = (time_t)(deadline / 1000000000ull);
		ts.tv_nsec = (long)(deadline % 1000000000ull);
		if (pthread_cond_timedwait(&comp->cv, &comp->mu, &ts) == ETIMEDOUT &&
		    comp->remaining > 0) {
			size_t nconns = 0;
			struct rp_conn *conns[RP_COMPLETION_MAX_CONNS];
			for (size_t i = 0; i < comp->nconns; i++)
				if (comp->pending[i])
					conns[nconns++] = comp->conns[i];
			rp_mutex_unlock(&comp->mu);
			/* Abort fails every outstanding op on the connections that
			 * have some; the wait below then ends promptly. */
			for (size_t i = 0; i < nconns; i++)
				conns[i]->vt->abort(conns[i], -ETIMEDOUT);
			rp_mutex_lock(&comp->mu, RP_LK_COMPLETION);
			while (comp->remaining > 0)
				pthread_cond_wait(&comp->cv, &comp->mu);
		}
	}
	rc = comp->first_err;
	struct rp_conn *conns[RP_COMPLETION_MAX_CONNS];
	size_t nconns = comp->nconns;
	memcpy(conns, comp->conns, nconns * sizeof(conns[0]));
	comp->first_err = 0;
	comp->nconns = 0;
	rp_mutex_unlock(&comp->mu);
	if (rc == 0)
		note_latency(conns, nconns, t0);
	return rc;
}

int rp_conn_exec(struct rp_conn *c, struct rp_op *ops, size_t n)
{
	struct rp_completion comp;
	int rc;

	rp_completion_init(&comp);
	rp_conn_post(c, ops, n, &comp);
	rc = rp_completion_wait(&comp, c->op_timeout_ms);
	rp_completion_destroy(&comp);
	return rc;
}

/* ---- in-flight table ---- */

int rp_inflight_init(struct rp_inflight *t, uint32_t cap)
{
	pthread_condattr_t ca;
	if (cap == 0 || cap > 0xffff)
		return -EINVAL;
	t->groups = calloc(cap, sizeof(*t->groups));
	if (!t->groups)
		return -ENOMEM;
	t->cap = cap;
	t->used = 0;
	t->next = 0;
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->space, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

void rp_inflight_destroy(struct rp_inflight *t)
{
	free(t->groups);
	t->groups = NULL;
	pthread_cond_destroy(&t->space);
	pthread_mutex_destroy(&t->mu);
}

int64_t rp_inflight_add(struct rp_inflight *t, struct rp_op *ops, uint32_t n,
			bool (*alive)(void *), void *arg)
{
	rp_mutex_lock(&t->mu, RP_LK_INFLIGHT);
	while (t->used == t->cap || t->closed) {
		struct timespec ts;
		if (t->closed) {
			rp_mutex_unlock(&t->mu);
			return -ENOTCONN;
		}
		uint64_t d = rp_now_ns() + 100000000ull;
		if (!alive(arg)) {
			rp_mutex_unlock(&t->mu);
			return -ENOTCONN;
		}
		ts.tv_sec = (time_t)(d / 1000000000ull);
		ts.tv_nsec = (long)(d % 1000000000ull);
		pthread_cond_timedwait(&t->space, &t->mu, &ts);
	}
	uint32_t slot = t->next;
	while (t->groups[slot].used)
		slot = (slot + 1) % t->cap;
	t->next = (slot + 1) % t->cap;
	struct rp_group *g = &t->groups[slot];
	g->used = true;
	g->ops = ops;
	g->n = n;
	g->done_mask = 0;
	g->gen = (g->gen + 1) & 0xffffff;
	t->used++;
	int64_t token = ((int64_t)g->gen << 16) | slot;
	rp_mutex_unlock(&t->mu);
	return token;
}

static struct rp_group *lookup(struct rp_inflight *t, uint64_t id)
{
	uint32_t slot = RP_ID_SLOT(id);
	if (slot >= t->cap)
		return NULL;
	struct rp_group *g = &t->groups[slot];
	if (!g->used || g->gen != RP_ID_GEN(id) || RP_ID_INDEX(id) >= g->n)
		return NULL;
	return g;
}

struct rp_op *rp_inflight_peek(struct rp_inflight *t, uint64_t id)
{
	rp_mutex_lock(&t->mu, RP_LK_INFLIGHT);
	struct rp_group *g = lookup(t, id);
	struct rp_op *op = g && !(g->done_mask & (1u << RP_ID_INDEX(id))) ? &g->ops[RP_ID_INDEX(id)] : NULL;
	rp_mutex_unlock(&t->mu);
	return op;
}

static void release_if_done(struct rp_inflight *t, struct rp_group *g)
{
	uint32_t all = g->n == 32 ? 0xffffffffu : ((1u << g->n) - 1);
	if (g->done_mask == all) {
		g->used = false;
		t->used--;
		pthread_cond_signal(&t->space);
	}
}

void rp_inflight_complete(struct rp_inflight *t, uint64_t id, int status, bool prior_ok)
{
	rp_mutex_lock(&t->mu, RP_LK_INFLIGHT);
	struct rp_group *g = lookup(t, id);
	if (!g) {
		rp_mutex_unlock(&t->mu);
		return;
	}
	uint32_t idx = RP_ID_INDEX(id);
	for (uint32_t i = prior_ok ? 0 : idx; i <= idx; i++) {
		if (g->done_mask & (1u << i))
			continue;
		g->done_mask |= 1u << i;
		rp_op_complete(&g->ops[i], i == idx ? status : 0);
	}
	release_if_done(t, g);
	rp_mutex_unlock(&t->mu);
}

void rp_inflight_fail_all(struct rp_inflight *t, int err)
{
	rp_mutex_lock(&t->mu, RP_LK_INFLIGHT);
	for (uint32_t s = 0; s < t->cap; s++) {
		struct rp_group *g = &t->groups[s];
		if (!g->used)
			continue;
		for (uint32_t i = 0; i < g->n; i++) {
			if (!(g->done_mask & (1u << i))) {
				g->done_mask |= 1u << i;
				rp_op_complete(&g->ops[i], err);
			}
		}
		release_if_done(t, g);
	}
	rp_mutex_unlock(&t->mu);
}

void rp_inflight_close(struct rp_inflight *t, int err)
{
	rp_mutex_lock(&t->mu, RP_LK_INFLIGHT);
	t->closed = true;
	pthread_cond_broadcast(&t->space);
	rp_mutex_unlock(&t->mu);
	rp_inflight_fail_all(t, err);
}

void rp_inflight_open(struct rp_inflight *t)
{
	rp_mutex_lock(&t->mu, RP_LK_INFLIGHT);
	t->closed = false;
	rp_mutex_unlock(&t->mu);
}

uint32_t rp_inflight_count(struct rp_inflight *t)
{
	rp_mutex_lock(&t->mu, RP_LK_INFLIGHT);
	uint32_t n = t->used;
	rp_mutex_unlock(&t->mu);
	return n;
}

/* ---- connections ---- */

void rp_conn_base_init(struct rp_conn *c, const struct rp_conn_vtbl *vt,
		       const struct rp_conn_params *p)
{
	c->vt = vt;
	c->peer = *p->peer;
	snprintf(c->cluster_name, sizeof(c->cluster_name), "%s", p->cluster_name);
	c->secret_len = RP_MIN(p->secret_len, sizeof(c->secret));
	memcpy(c->secret, p->secret, c->secret_len);
	c->connect_timeout_ms = p->connect_timeout_ms ? p->connect_timeout_ms : 3000;
	c->op_timeout_ms = p->op_timeout_ms ? p->op_timeout_ms : 5000;
	atomic_store(&c->lat_ns, LAT_START_NS);
	c->latency = p->latency;
	pthread_mutex_init(&c->bounce_mu, NULL);
	c->bounce = NULL;
	c->bounce_mr = NULL;
	uint64_t session = p->fence_session;
	while (session == 0)
		rp_random_bytes(&session, sizeof(session));
	atomic_store(&c->session, session);
	atomic_store(&c->fence_epoch, p->fence_session ? p->fence_epoch : 0);
}

/* Generations of connects, increasing across the process's connections. */
static _Atomic uint64_t connect_gen;

void rp_conn_next_connect(struct rp_conn *c, uint64_t *session, uint64_t *gen)
{
	/* lease_acquire refuses an epoch past 32 bits */
	uint64_t epoch = RP_MIN(atomic_load(&c->fence_epoch), (uint64_t)UINT32_MAX);
	*session = atomic_load(&c->session);
	*gen = epoch << 32 | ((atomic_fetch_add(&connect_gen, 1) + 1) & UINT32_MAX);
}

void rp_conn_set_fence(struct rp_conn *c, uint64_t session, uint64_t epoch)
{
	atomic_store(&c->fence_epoch, epoch);
	atomic_store(&c->session, session);
}

void rp_conn_drop(struct rp_conn *c)
{
	c->vt->abort(c, -ECONNABORTED);
}

int rp_conn_base_setup_bounce(struct rp_conn *c)
{
	c->bounce = aligned_alloc(4096, BOUNCE_LEN);
	if (!c->bounce)
		return -ENOMEM;
	int rc = c->vt->mr_reg(c, c->bounce, BOUNCE_LEN, &c->bounce_mr);
	if (rc < 0) {
		free(c->bounce);
		c->bounce = NULL;
	}
	return rc;
}

void rp_conn_base_fini(struct rp_conn *c)
{
	if (c->bounce_mr)
		c->vt->mr_dereg(c->bounce_mr);
	free(c->bounce);
	c->bounce = NULL;
	c->bounce_mr = NULL;
	pthread_mutex_destroy(&c->bounce_mu);
	memset(c->secret, 0, sizeof(c->secret));
}

int rp_transport_rdma_available(void);

int rp_conn_open(const struct rp_conn_params *p, struct rp_conn **out, char *err, size_t errlen)
{
	enum rp_transport_kind kind = p->kind;
	*out = NULL;
	if (kind == RP_TRANSPORT_AUTO && !rp_transport_rdma_available()) {
		/* never silently: an auto peer says what it got and why */
		rp_info("peer %u (%s:%u): transport auto: no RDMA device on this machine, "
			"using tcp", p->peer->id, p->peer->host, p->peer->port);
		kind = RP_TRANSPORT_TCP;
	} else if (kind == RP_TRANSPORT_AUTO) {
		kind = RP_TRANSPORT_RDMA;
	}
	if (kind == RP_TRANSPORT_RDMA) {
		int rc = rp_rdma_conn_open(p, out, err, errlen);
		if (rc == 0 && p->kind == RP_TRANSPORT_AUTO)
			rp_info("peer %u (%s:%u): transport auto: using rdma", p->peer->id,
				p->peer->host, p->peer->port);
		if (rc == 0 || p->kind == RP_TRANSPORT_RDMA)
			return rc;
		rp_info("peer %u (%s:%u): transport auto: rdma failed (%s), trying tcp", p->peer->id,
			p->peer->host, p->peer->port, err);
	}
	return rp_tcp_conn_open(p, out, err, errlen);
}

void rp_conn_close(struct rp_conn *c)
{
	if (c)
		c->vt->close(c);
}

bool rp_conn_is_up(const struct rp_conn *c) { return c->vt->is_up(c); }

int rp_conn_reconnect(struct rp_conn *c, char *err, size_t errlen)
{
	return c->vt->reconnect(c, err, errlen);
}

uint64_t rp_conn_region_size(const struct rp_conn *c) { return c->region_size; }
enum rp_transport_kind rp_conn_kind(const struct rp_conn *c) { return c->kind; }
const uint8_t *rp_conn_pool_uuid(const struct rp_conn *c) { return c->pool_uuid; }
const struct rp_peer *rp_conn_peer(const struct rp_conn *c) { return &c->peer; }
void rp_conn_debug_set_rkey(struct rp_conn *c, uint32_t rkey) { c->rkey = rkey; }

int rp_mr_reg(struct rp_conn *c, void *buf, size_t len, struct rp_mr **out)
{
	return c->vt->mr_reg(c, buf, len, out);
}

/* Each mr starts with a pointer to its connection's vtable. */
struct rp_mr_head {
	const struct rp_conn_vtbl *vt;
};

void rp_mr_dereg(struct rp_mr *mr)
{
	if (mr)
		((struct rp_mr_head *)mr)->vt->mr_dereg(mr);
}

static int bounce_io(struct rp_conn *c, enum rp_opcode opc, uint64_t off, void *buf, size_t len)
{
	int rc = 0;
	rp_mutex_lock(&c->bounce_mu, RP_LK_BOUNCE);
	while (len > 0 && rc == 0) {
		uint32_t chunk = (uint32_t)RP_MIN(len, BOUNCE_LEN);
		struct rp_op op = { .opcode = opc, .offset = off, .local = c->bounce,
				    .len = chunk, .mr = c->bounce_mr };
		if (opc == RP_OP_WRITE)
			memcpy(c->bounce, buf, chunk);
		rc = rp_conn_exec(c, &op, 1);
		if (rc == 0 && opc == RP_OP_READ)
			memcpy(buf, c->bounce, chunk);
		buf = (uint8_t *)buf + chunk;
		off += chunk;
		len -= chunk;
	}
	rp_mutex_unlock(&c->bounce_mu);
	return rc;
}

int rp_conn_read(struct rp_conn *c, uint64_t off, void *buf, size_t len)
{
	return bounce_io(c, RP_OP_READ, off, buf, len);
}

int rp_conn_write(struct rp_conn *c, uint64_t off, const void *buf, size_t len)
{
	return bounce_io(c, RP_OP_WRITE, off, (void *)buf, len);
}

int rp_conn_cas(struct rp_conn *c, uint64_t off, uint64_t expect, uint64_t desired, uint64_t *old)
{
	struct rp_op op = { .opcode = RP_OP_CAS, .offset = off, .compare = expect, .value = desired };
	int rc = rp_conn_exec(c, &op, 1);
	if (rc == 0 && old)
		*old = op.result;
	return rc;
}

int rp_conn_faa(struct rp_conn *c, uint64_t off, uint64_t add, uint64_t *old)
{
	struct rp_op op = { .opcode = RP_OP_FAA, .offset = off, .value = add };
	int rc = rp_conn_exec(c, &op, 1);
	if (rc == 0 && old)
		*old = op.result;
	return rc;
}

void rp_auth_mac(const uint8_t *secret, size_t secret_len, const char *label,
		 const uint8_t *nonce_a, const uint8_t *nonce_b, const char *cluster_name,
		 const uint8_t *bind, size_t bind_len, uint8_t out[RP_SHA256_LEN])
{
	/* the label, the nonces and the binding are of fixed length per label;
	 * the cluster name is last, so no two inputs concatenate alike */
	const void *parts[] = { label, nonce_a, nonce_b, bind, cluster_name };
	const size_t lens[] = { strlen(label), RP_NONCE_LEN, RP_NONCE_LEN, bind_len,
				strlen(cluster_name) };
	rp_hmac_sha256(secret, secret_len, parts, lens, 5, out);
}

void rp_auth_bind_server(uint8_t out[RP_BIND_SERVER_LEN], uint32_t peer_id, int32_t status,
			 const uint8_t uuid[16], uint64_t addr, uint64_t size, uint32_t rkey)
{
	rp_put_le32(out, peer_id);
	rp_put_le32(out + 4, (uint32_t)status);
	memcpy(out + 8, uuid, 16);
	rp_put_le64(out + 24, addr);
	rp_put_le64(out + 32, size);
	rp_put_le32(out + 40, rkey);
	rp_put_le32(out + 44, 0);
}
