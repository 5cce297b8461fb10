/* Batched data I/O across pools: a request for many extents becomes one
 * batch of one-sided operations per pool and a single wait. */
#include "config.h"
#include <rdmapool/lock_order.h>
#include <rdmapool/pool.h>
#include <rdmapool/util.h>

#include "pool_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct rp_buf {
	struct rp_poolset *ps;
	void *data;
	size_t len;
	struct rp_mr **mrs; /* one per pool; NULL for a pool that is down */
	struct rp_buf *next, *prev; /* ps->bufs */
};

int bufs_register(struct rp_poolset *ps, uint32_t pool)
{
	int rc = 0;
	rp_mutex_lock(&ps->bufs_mu, RP_LK_POOL_BUFS);
	for (struct rp_buf *b = ps->bufs; b && rc == 0; b = b->next)
		if (!b->mrs[pool])
			rc = rp_mr_reg(ps->pools[pool].conn, b->data, b->len ? b->len : 1, &b->mrs[pool]);
	rp_mutex_unlock(&ps->bufs_mu);
	return rc;
}

int rp_buf_alloc(struct rp_poolset *ps, size_t len, struct rp_buf **out)
{
	struct rp_buf *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ps = ps;
	b->len = len;
	b->data = aligned_alloc(4096, RP_ALIGN_UP(len ? len : 1, 4096));
	b->mrs = calloc(ps->n, sizeof(*b->mrs));
	if (!b->data || !b->mrs) {
		rp_buf_free(b);
		return -ENOMEM;
	}
	/* registered and listed in one step: a pool adopted meanwhile
	 * (bufs_register) either is seen here or sees this buffer */
	int rc = 0;
	rp_mutex_lock(&ps->bufs_mu, RP_LK_POOL_BUFS);
	for (size_t i = 0; i < ps->n && rc == 0; i++)
		if (ps->pools[i].conn)
			rc = rp_mr_reg(ps->pools[i].conn, b->data, len ? len : 1, &b->mrs[i]);
	if (rc == 0) {
		b->next = ps->bufs;
		if (ps->bufs)
			ps->bufs->prev = b;
		ps->bufs = b;
	}
	rp_mutex_unlock(&ps->bufs_mu);
	if (rc < 0) {
		rp_buf_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

void *rp_buf_data(const struct rp_buf *b) { return b->data; }
size_t rp_buf_len(const struct rp_buf *b) { return b->len; }

void rp_buf_free(struct rp_buf *b)
{
	if (!b)
		return;
	rp_mutex_lock(&b->ps->bufs_mu, RP_LK_POOL_BUFS);
	if (b->prev || b->ps->bufs == b) {
		if (b->prev)
			b->prev->next = b->next;
		else
			b->ps->bufs = b->next;
		if (b->next)
			b->next->prev = b->prev;
	}
	rp_mutex_unlock(&b->ps->bufs_mu);
	if (b->mrs)
		for (size_t i = 0; i < b->ps->n; i++)
			rp_mr_dereg(b->mrs[i]);
	free(b->mrs);
	free(b->data);
	free(b);
}

int rp_poolset_rw(struct rp_poolset *ps, enum rp_opcode opc, struct rp_io *ios, size_t n)
{
	int rc = rp_poolset_replicated(ps) ? replica_rw(ps, opc, ios, n)
					   : poolset_rw_single(ps, opc, ios, n);
	/* refused (lease guard, fenced): to the caller, an I/O error */
	return rc == -ENOLCK ? -EIO : rc;
}

int poolset_write_guard(struct rp_poolset *ps)
{
	return ps->retry_guard ? ps->retry_guard(ps->retry_arg) : 0;
}

/* One pass: every io posted at once, over all pools, then waited for once. */
static int rw_once(struct rp_poolset *ps, enum rp_opcode opc, struct rp_io *ios, size_t n)
{
	struct rp_completion comp;
	struct rp_op *ops;
	int rc = 0;

	if (opc != RP_OP_READ && opc != RP_OP_WRITE)
		return -EINVAL;
	if (n == 0)
		return 0;
	ops = calloc(n, sizeof(*ops));
	if (!ops)
		return -ENOMEM;
	rp_completion_init(&comp);
	/* Every pool of the batch connected first: a reconnect may take
	 * connect_timeout, long enough for another client to take the volume
	 * over after the caller asked its lease guard, so a write that waited
	 * for one asks the guard again before anything is posted. */
	bool reconnected = false;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint32_t pool = ios[i].pool;
		bool waited;
		int up = pool_ensure(ps, pool, &waited);
		reconnected |= waited;
		while (j < n && ios[j].pool == pool) {
			struct rp_io *io = &ios[j];
			io->status = up;
			if (up == 0 && (!io->buf->mrs[pool] || io->buf_off + io->len > io->buf->len ||
					io->len > RP_MAX_IO))
				io->status = -EINVAL;
			ops[j] = (struct rp_op){ .opcode = opc, .offset = io->off,
						  .local = (uint8_t *)io->buf->data + io->buf_off,
						  .len = io->len,
						  .mr = pool < ps->n ? io->buf->mrs[pool] : NULL };
			j++;
		}
		i = j;
	}
	if (opc == RP_OP_WRITE && reconnected && poolset_write_guard(ps) < 0)
		for (size_t i = 0; i < n; i++)
			ios[i].status = -ENOLCK;
	/* Post per pool in runs so each connection gets its ops in one call:
	 * the valid ones of each run, one connection call per run. */
	for (size_t k = 0; k < n;) {
		uint32_t pool = ios[k].pool;
		size_t m = k;
		while (m < n && ios[m].pool == pool && ios[m].status == 0)
			m++;
		if (m > k)
			rp_conn_post(ps->pools[pool].conn, ops + k, m - k, &comp);
		while (m < n && ios[m].pool == pool && ios[m].status != 0)
			m++;
		k = m;
	}
	int werr = rp_completion_wait(&comp, ps->op_timeout_ms);
	rp_completion_destroy(&comp);
	for (size_t i = 0; i < n; i++) {
		if (ios[i].status == 0 && ops[i].status < 0)
			ios[i].status = ops[i].status;
		if (ios[i].status == 0)
			rp_count(opc == RP_OP_READ ? &ps->pools[ios[i].pool].stats.read_bytes
						   : &ps->pools[ios[i].pool].stats.written_bytes,
				 ios[i].len);
		if (ios[i].status < 0 && rc == 0)
			rc = ios[i].status;
	}
	free(ops);
	return rc ? rc : werr;
}

/* An io whose connection broke is tried once more on a new connection (a
 * pool stalled a little past op_timeout, or a connection reset, is not a
 * lost copy): a write, or a read without copies to turn to, and only when
 * the fs layer's guard says the lease is still ours: the first try may have
 * hung for op_timeout, long enough for a takeover. Safe for reads and writes alike: the server fences the old
 * connection before it welcomes the new one, so the first try cannot land
 * after the second (rdmapool(7), Fencing), and both write the same bytes.
 * The guard is asked again after a reconnect, just before the posts
 * (rw_once): a reconnect of seconds must not stand between it and a write. */
int poolset_rw_single(struct rp_poolset *ps, enum rp_opcode opc, struct rp_io *ios, size_t n)
{
	int rc = rw_once(ps, opc, ios, n);
	size_t nretry = 0;
	for (size_t i = 0; i < n; i++)
		nretry += pool_connection_lost(ios[i].status);
	/* a replicated read goes to another copy instead (replica.c) */
	if (rc == 0 || nretry == 0 || (opc == RP_OP_READ && rp_poolset_replicated(ps)) ||
	    !ps->retry_guard || poolset_write_guard(ps) < 0)
		return rc;
	struct rp_io *again = malloc(nretry * sizeof(*again));
	size_t *from = malloc(nretry * sizeof(*from));
	if (!again || !from) {
		free(again);
		free(from);
		return rc;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (pool_connection_lost(ios[i].status)) {
			from[k] = i;
			again[k++] = ios[i];
		}
	for (size_t i = 0; i < nretry; i++)
		rp_count(&ps->pools[again[i].pool].stats.retries, 1);
	rw_once(ps, opc, again, nretry);
	rc = 0;
	for (size_t i = 0; i < nretry; i++)
		ios[from[i]].status = again[i].status;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = ios[i].status;
	free(again);
	free(from);
	return rc;
}
