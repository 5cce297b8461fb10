/* Internals of the pool layer shared by its files: the single-pool
 * operations that replica.c builds copies from. */
#ifndef RDMAPOOL_POOL_IMPL_H
#define RDMAPOOL_POOL_IMPL_H

#include <rdmapool/pool.h>

#include <errno.h>
#include <stdbool.h>

/* allocator.c: one pool, no replicas */
int pool_alloc_single(struct rp_poolset *ps, uint32_t pool, uint32_t want, struct rp_extent *out);
int pool_free_single(struct rp_poolset *ps, const struct rp_extent *e);
int pool_free_many_single(struct rp_poolset *ps, const struct rp_extent *v, size_t n,
			  struct rp_extent_list *unsent);
uint64_t pool_word_off(const struct rp_pool *p, uint64_t w);
/* extent_list.c: add e to l, merged into the last extent when it continues
 * it; -ENOMEM when l would grow past max extents (l unchanged) */
int extent_list_append(struct rp_extent_list *l, const struct rp_extent *e, size_t max);
/* io.c: register every buffer of the set with a pool connected late */
int bufs_register(struct rp_poolset *ps, uint32_t pool);
/* io.c: every io to the pool it names */
/* The connection broke under an operation (a timeout aborts it; a reset or
 * a restarted server ends it), not the pool refusing it: a read or write
 * is worth one more try on a new connection. */
static inline bool pool_connection_lost(int err)
{
	return err == -ETIMEDOUT || err == -ENOTCONN || err == -ECONNRESET || err == -EPIPE ||
	       err == -ESHUTDOWN || err == -ECONNABORTED;
}

/* rp_pool_ensure, saying whether it had to wait for a reconnect (its own
 * or another thread's): seconds in which the volume may have been taken
 * over, so a write asks the lease guard again. */
int pool_ensure(struct rp_poolset *ps, uint32_t pool, bool *waited);
int poolset_rw_single(struct rp_poolset *ps, enum rp_opcode opc, struct rp_io *ios, size_t n);
/* The fs layer's lease guard (0 when none is set): asked again before a
 * write that had to wait for a reconnect. A write it refuses fails with
 * -ENOLCK, which no transport returns: nothing was posted, so no copy
 * missed it (a flushed rdma work request is -ECANCELED, and is a miss). */
int poolset_write_guard(struct rp_poolset *ps);

/* missed.c: frees a copy missed (see rp_pool_missed_flush) */
int missed_init(struct rp_poolset *ps);
void missed_fini(struct rp_poolset *ps);
/* keep these blocks (each on the pool it names) for that pool */
void missed_add(struct rp_poolset *ps, const struct rp_extent *v, size_t n);
void missed_flush(struct rp_poolset *ps);

/* replica.c */
int replica_alloc(struct rp_poolset *ps, uint32_t pool, uint32_t want, struct rp_extent *out);
int replica_free_many(struct rp_poolset *ps, const struct rp_extent *v, size_t n);
int replica_rw(struct rp_poolset *ps, enum rp_opcode opc, struct rp_io *ios, size_t n);

/* allocator.c: the pool's used-block count. A bitmap word that went from
 * before to after by our CAS moves the count by the bits it changed; the
 * change waits in count_pending until pool_count_settle hands it over. */
static inline void pool_count_bits(struct rp_pool *p, uint64_t before, uint64_t after)
{
	int64_t d = (int64_t)__builtin_popcountll(after) - (int64_t)__builtin_popcountll(before);
	if (d)
		atomic_fetch_add(&p->count_pending, d);
	if (before != after)
		atomic_fetch_add(&p->churn_pending, (uint64_t)__builtin_popcountll(before ^ after));
}
/* Hand over what waits: always (all), or only frees and large amounts (the
 * allocation path: one fetch-and-add per many CASes). */
void pool_count_settle(struct rp_poolset *ps, bool all);

/* Every CAS the pool layer makes, counted: attempts, and failures (an
 * error or a word that had changed: a lost race). One that changed a
 * bitmap word moves the used-block count too. */
static inline int pool_cas(struct rp_pool *p, uint64_t off, uint64_t expect, uint64_t desired,
			   uint64_t *old)
{
	int rc = rp_conn_cas(p->conn, off, expect, desired, old);
	rp_count(&p->stats.cas, 1);
	if (rc < 0 || *old != expect)
		rp_count(&p->stats.cas_failed, 1);
	else if (off >= RP_BITMAP_OFFSET && off < p->sb.bitmap_off + p->sb.bitmap_words * 8)
		pool_count_bits(p, expect, desired); /* (home and lease words: no p->sb read) */
	return rc;
}

#endif
