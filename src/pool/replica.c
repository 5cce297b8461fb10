/* Replicas: every extent of a replicated volume has copies at the same
 * block numbers on the next pools of a ring (the placement). Allocation
 * claims the blocks on every copy's pool with compare-and-swap, writes go
 * to all copies in one posted batch and one wait, reads go to the first
 * copy that is not stale and fail over to the next. A copy that a write
 * could not reach is reported to the owner of the placement (the volume
 * records it before the write counts) and then left alone: it is stale
 * until a rebuild brings it up to date, so it is never read with old data. */
#include "config.h"
#include <rdmapool/bitmap.h>
#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/pool.h>
#include <rdmapool/util.h>

#include "pool_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SPAN_WORDS RP_ALLOC_SPAN_WORDS

int rp_poolset_set_placement(struct rp_poolset *ps, const struct rp_placement *pl)
{
	if (pl->replicas > RP_MAX_REPLICAS || pl->nring > RP_RING_MAX ||
	    (pl->replicas > 1 && pl->replicas > pl->nring))
		return -EINVAL;
	for (uint32_t i = 0; i < pl->nring; i++)
		if (!rp_poolset_has(ps, pl->ring[i]))
			return -ENODEV;
	ps->place = *pl;
	if (pl->replicas <= 1)
		return 0;
	/* A pool down since the start has no known geometry; its copies have
	 * the same block numbers, so borrow a copy's for the offset arithmetic
	 * (the data path never reaches it: only a rebuild adopts it, and
	 * checks that its geometry is this one). */
	for (uint32_t i = 0; i < pl->nring; i++) {
		struct rp_pool *p = &ps->pools[pl->ring[i]];
		if (p->sb.magic)
			continue;
		for (uint32_t k = 1; k < pl->nring; k++) {
			const struct rp_pool *q = &ps->pools[pl->ring[(i + k) % pl->nring]];
			if (q->sb.magic) {
				p->sb.block_size = q->sb.block_size;
				p->sb.nblocks = q->sb.nblocks;
				p->sb.data_off = q->sb.data_off;
				p->sb.bitmap_off = q->sb.bitmap_off;
				p->sb.bitmap_words = q->sb.bitmap_words;
				atomic_store(&p->nblocks, q->sb.nblocks);
				break;
			}
		}
	}
	return 0;
}

static int ring_index(const struct rp_poolset *ps, uint32_t pool)
{
	for (uint32_t i = 0; i < ps->place.nring; i++)
		if (ps->place.ring[i] == pool)
			return (int)i;
	return -1;
}

unsigned rp_replica_members(const struct rp_poolset *ps, uint32_t pool, uint32_t *out)
{
	int i = rp_poolset_replicated(ps) ? ring_index(ps, pool) : -1;
	out[0] = pool;
	if (i < 0)
		return 1;
	for (uint32_t k = 1; k < ps->place.replicas; k++)
		out[k] = ps->place.ring[((uint32_t)i + k) % ps->place.nring];
	return ps->place.replicas;
}

static const char *zone_of(const char *const *zone, size_t i)
{
	return zone && zone[i] ? zone[i] : ""; /* peers without a zone: one zone */
}

void rp_placement_ring(const uint32_t *ids, const char *const *zone, size_t n, uint32_t *ring)
{
	/* zones, in order of first appearance, take turns giving their next peer */
	size_t k = 0;
	for (size_t round = 0; k < n; round++) {
		for (size_t i = 0; i < n; i++) {
			const char *z = zone_of(zone, i);
			size_t first = 0, r = 0;
			while (strcmp(zone_of(zone, first), z) != 0)
				first++;
			if (first != i)
				continue; /* the zone is visited at its first peer */
			for (size_t j = i; j < n; j++)
				if (strcmp(zone_of(zone, j), z) == 0 && r++ == round)
					ring[k++] = ids[j];
		}
	}
}

uint64_t rp_replica_offset(const struct rp_poolset *ps, uint32_t p, uint32_t m, uint64_t off)
{
	return off - ps->pools[p].sb.data_off + ps->pools[m].sb.data_off;
}

/* A copy we may read or allocate on now: not stale, not being filled by a
 * rebuild (its blocks are written, but those not yet copied hold nothing),
 * and connected. A copy whose connection dropped is not waited for here (a
 * reconnect may take the connect timeout); the owner's background check
 * reconnects it or records it. */
static bool usable(struct rp_poolset *ps, uint32_t pool)
{
	return !ps->pools[pool].stale && !ps->pools[pool].filling && rp_pool_connected(ps, pool);
}

bool rp_replica_all_usable(struct rp_poolset *ps, uint32_t pool)
{
	uint32_t m[RP_MAX_REPLICAS];
	unsigned nm = rp_replica_members(ps, pool, m);
	for (unsigned j = 0; j < nm; j++)
		if (!usable(ps, m[j]))
			return false;
	return true;
}

/* ---- allocation: the same free run claimed on every copy's pool ---- */

static int clear_bits(struct rp_pool *p, uint64_t w, uint64_t v, uint64_t mask)
{
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t old;
		int rc = pool_cas(p, pool_word_off(p, w), v, v & ~mask, &old);
		if (rc < 0 || old == v)
			return rc;
		v = old;
	}
	return -EAGAIN;
}

/* Claim mask in word w on every pool, in order; on a conflict give back
 * what was claimed. 1 claimed, 0 lost a race (spans updated), or -errno. */
static int claim_word(struct rp_pool **p, unsigned nm, uint64_t (*span)[SPAN_WORDS], uint64_t i,
		      uint64_t w, uint64_t mask)
{
	unsigned j;
	int rc = 0;
	for (j = 0; j < nm; j++) {
		uint64_t v = span[j][i], old;
		rc = pool_cas(p[j], pool_word_off(p[j], w), v, v | mask, &old);
		if (rc < 0)
			break;
		if (old != v) {
			span[j][i] = old;
			break;
		}
		span[j][i] = v | mask;
	}
	if (j == nm)
		return 1;
	for (unsigned k = 0; k < j; k++)
		if (clear_bits(p[k], w, span[k][i], mask) == 0)
			span[k][i] &= ~mask;
	return rc < 0 ? rc : 0;
}

int replica_alloc(struct rp_poolset *ps, uint32_t pool, uint32_t want, struct rp_extent *out)
{
	uint32_t m[RP_MAX_REPLICAS];
	struct rp_pool *p[RP_MAX_REPLICAS] = { 0 };
	uint64_t span[RP_MAX_REPLICAS][SPAN_WORDS];
	unsigned nm = rp_replica_members(ps, pool, m);
	uint64_t words = UINT64_MAX;

	if (want == 0 || want > 64)
		return -EINVAL;
	if (nm < ps->place.replicas)
		return -ENOSPC; /* not a ring pool: nothing of this volume goes there */
	for (unsigned j = 0; j < nm; j++) {
		if (!usable(ps, m[j]))
			return -ENOSPC; /* a copy would be missing from the start */
		p[j] = &ps->pools[m[j]];
		words = RP_MIN(words, p[j]->sb.bitmap_words);
	}
	rp_mutex_lock(&p[0]->mu, RP_LK_POOL); /* the cursor is shared with the other allocators */
	uint64_t start = p[0]->cursor % words;
	rp_mutex_unlock(&p[0]->mu);
	for (uint64_t scanned = 0; scanned < words;) {
		uint64_t w0 = (start + scanned) % words, n = RP_MIN((uint64_t)SPAN_WORDS, words - w0);
		for (unsigned j = 0; j < nm; j++) {
			int rc = rp_conn_read(p[j]->conn, pool_word_off(p[j], w0), span[j], n * 8);
			if (rc < 0)
				return rc;
			rp_count(&p[j]->stats.bitmap_read_bytes, n * 8);
		}
		for (uint64_t i = 0; i < n; i++) {
			unsigned bit, len;
			for (int races = 0; races < 64; races++) {
				uint64_t taken = 0;
				for (unsigned j = 0; j < nm; j++)
					taken |= span[j][i];
				if (rp_bitmap_find_run(taken, want, &bit, &len) < 0)
					break;
				int rc = claim_word(p, nm, span, i, w0 + i, rp_bitmap_mask(bit, len));
				if (rc < 0)
					return rc;
				if (rc == 1) {
					rp_mutex_lock(&p[0]->mu, RP_LK_POOL);
					p[0]->cursor = w0 + i;
					rp_mutex_unlock(&p[0]->mu);
					*out = (struct rp_extent){ .pool = pool, .count = len,
								   .block = (w0 + i) * 64 + bit };
					return 0;
				}
			}
		}
		scanned += n;
	}
	return -ENOSPC;
}

static int unclaim_exact(struct rp_poolset *ps, uint32_t pool, uint64_t block, uint32_t count);

/* counted in ps->frees once the bits are clear (allocator.c says why) */
int rp_pool_unclaim_exact(struct rp_poolset *ps, uint32_t pool, uint64_t block, uint32_t count)
{
	int rc = unclaim_exact(ps, pool, block, count);
	pool_count_settle(ps, true);
	atomic_fetch_add(&ps->frees, 1);
	return rc;
}

static int unclaim_exact(struct rp_poolset *ps, uint32_t pool, uint64_t block, uint32_t count)
{
	int rc = rp_pool_ensure(ps, pool);
	if (rc < 0)
		return rc;
	struct rp_pool *p = &ps->pools[pool];
	if (count == 0 || block + count > p->sb.nblocks)
		return -EINVAL;
	for (uint64_t b = block, end = block + count; b < end;) {
		unsigned bit = (unsigned)(b % 64), len = (unsigned)RP_MIN(end - b, 64 - bit);
		uint64_t mask = rp_bitmap_mask(bit, len), w = b / 64, v, old;
		if ((rc = rp_conn_faa(p->conn, pool_word_off(p, w), 0, &v)) < 0)
			return rc;
		while (v & mask) {
			if ((rc = pool_cas(p, pool_word_off(p, w), v, v & ~mask, &old)) < 0)
				return rc;
			if (old == v)
				break;
			v = old;
		}
		b += len;
	}
	p->span_n = 0;
	return 0;
}

int rp_pool_claim_exact(struct rp_poolset *ps, uint32_t pool, uint64_t block, uint32_t count,
			bool fresh)
{
	int rc = rp_pool_ensure(ps, pool);
	if (rc < 0)
		return rc;
	struct rp_pool *p = &ps->pools[pool];
	if (count == 0 || block + count > p->sb.nblocks)
		return -EINVAL;
	uint64_t b = block, end = block + count;
	while (b < end) {
		unsigned bit = (unsigned)(b % 64), len = (unsigned)RP_MIN(end - b, 64 - bit);
		uint64_t mask = rp_bitmap_mask(bit, len), w = b / 64, v, old;
		if ((rc = rp_conn_faa(p->conn, pool_word_off(p, w), 0, &v)) < 0)
			break;
		for (;;) {
			if (fresh && (v & mask)) {
				rc = -EEXIST;
				break;
			}
			if ((v & mask) == mask)
				break;
			if ((rc = pool_cas(p, pool_word_off(p, w), v, v | mask, &old)) < 0)
				break;
			if (old == v)
				break;
			v = old;
		}
		if (rc < 0)
			break;
		b += len;
	}
	if (rc < 0) {
		/* on an empty pool every bit before b is ours, set just now: back
		 * (else the next rebuild refuses them as another volume's) */
		if (fresh && b > block)
			unclaim_exact(ps, pool, block, (uint32_t)(b - block));
		return rc;
	}
	p->span_n = 0; /* the cached span may not show these */
	pool_count_settle(ps, false); /* (a rebuild's claims: by the batch, as allocations) */
	return 0;
}

/* ---- frees: every copy that is not stale ---- */

int replica_free_many(struct rp_poolset *ps, const struct rp_extent *v, size_t n)
{
	missed_flush(ps); /* (what copies back since missed, first) */
	struct rp_extent *all = calloc(n * RP_MAX_REPLICAS + 1, sizeof(*all));
	size_t k = 0, nskip = 0, end = n * RP_MAX_REPLICAS;
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t m[RP_MAX_REPLICAS];
		unsigned nm = rp_replica_members(ps, v[i].pool, m);
		for (unsigned j = 0; j < nm; j++) {
			all[k] = v[i];
			all[k].pool = m[j];
			if (!ps->pools[m[j]].stale && rp_pool_connected(ps, m[j]))
				k++;
			else /* (from the end down: k + nskip stays within n * max) */
				all[end - ++nskip] = all[k];
		}
	}
	/* a copy that is stale or not connected (not waited for: frees run
	 * under the filesystem lock) keeps its bits until it is current again
	 * (missed.c); so do the words of a copy never sent their change (their
	 * read failed). Words whose change was sent and not answered stay
	 * allocated (fsck --repair): they may have changed since. */
	struct rp_extent_list unsent = { 0 };
	int rc = pool_free_many_single(ps, all, k, &unsent);
	missed_add(ps, all + end - nskip, nskip);
	missed_add(ps, unsent.v, unsent.n);
	free(unsent.v);
	free(all);
	return rc;
}

/* ---- data I/O ---- */

/* Tell the owner about copies that failed, once per pool; 0 when every one
 * is recorded (and so now stale), else the owner's error. */
static int report_lost(struct rp_poolset *ps, const struct rp_io *ex, size_t nex)
{
	int rc = 0;
	for (size_t j = 0; j < nex; j++) {
		uint32_t pool = ex[j].pool;
		/* refused by the lease guard before it was posted: not missed */
		if (ex[j].status == 0 || ex[j].status == -ENOLCK || ps->pools[pool].stale)
			continue;
		int lrc = ps->place.lost ? ps->place.lost(ps->place.lost_arg, pool, ex[j].status)
					 : ex[j].status;
		if (lrc < 0) {
			if (rc == 0)
				rc = lrc;
			continue;
		}
		ps->pools[pool].stale = true;
	}
	return rc;
}

/* The writes counted in (write_copies) have ended: landed or failed, and
 * a failed one never lands later (a timed-out or reset connection is
 * dropped, its requests with it: rdmapool(7), Fencing). */
static void writes_out(struct rp_poolset *ps, const struct rp_io *ex, size_t nex)
{
	for (size_t j = 0; j < nex; j++)
		atomic_fetch_sub(&ps->pools[ex[j].pool].writes_in, 1);
}

int rp_pool_writes_drain(struct rp_poolset *ps, uint32_t pool, uint64_t ms)
{
	if (pool >= ps->n)
		return -EINVAL;
	for (uint64_t end = rp_now_ms() + ms; atomic_load(&ps->pools[pool].writes_in);) {
		if (rp_now_ms() >= end)
			return -ETIMEDOUT;
		rp_sleep_ms(1);
	}
	return 0;
}

#ifdef RP_TEST_HOOKS
/* Tests only (fstest 105): RP_TEST_FILLING_WRITE_STALL_MS=N holds the first
 * write with a copy on a filling pool whose bytes start with "RPHOLD" for
 * N ms after its look at stale, as a wait for a reconnect would hold it
 * (the marker: a data write of the test's, not a log flush, which holds
 * fs->mu and so would keep the give-back waiting without any count). */
static const char *stall_ms; /* read once: not a getenv per write batch */
static pthread_once_t stall_once = PTHREAD_ONCE_INIT;
static void stall_read_env(void)
{
	stall_ms = getenv("RP_TEST_FILLING_WRITE_STALL_MS");
}

static void test_stall_filling(struct rp_poolset *ps, const struct rp_io *ex, size_t nex)
{
	static atomic_bool done;
	pthread_once(&stall_once, stall_read_env);
	const char *v = stall_ms;
	for (size_t j = 0; v && j < nex; j++) {
		uint32_t pool = ex[j].pool;
		if (!atomic_load(&ps->pools[pool].filling) || ex[j].len < 6 || !ex[j].buf)
			continue;
		const char *b = (const char *)rp_buf_data(ex[j].buf) + ex[j].buf_off;
		if (memcmp(b, "RPHOLD", 6) != 0 || atomic_exchange(&done, true))
			continue;
		rp_warn("RP_TEST_FILLING_WRITE_STALL_MS: a write to filling peer %u held %s ms",
			pool, v);
		rp_sleep_ms((uint64_t)atol(v));
		rp_warn("RP_TEST_FILLING_WRITE_STALL_MS: the held write to peer %u goes on", pool);
		return;
	}
}
#endif

int rp_pool_write_copy(struct rp_poolset *ps, uint32_t pool, uint64_t off, const void *buf,
		       size_t len)
{
	if (pool >= ps->n)
		return -ENODEV;
	struct rp_pool *p = &ps->pools[pool];
	atomic_fetch_add(&p->writes_in, 1); /* (before the look, as in write_copies) */
	int rc = atomic_load(&p->stale) ? -ESTALE : rp_pool_write(ps, pool, off, buf, len);
	atomic_fetch_sub(&p->writes_in, 1);
	return rc;
}

static int write_copies(struct rp_poolset *ps, struct rp_io *ios, size_t n)
{
	struct rp_io *ex = calloc(n * RP_MAX_REPLICAS, sizeof(*ex));
	size_t *owner = calloc(n * RP_MAX_REPLICAS, sizeof(*owner));
	size_t nex = 0;
	int rc = 0;
	bool reconnected = false;
	if (!ex || !owner) {
		free(ex);
		free(owner);
		return -ENOMEM;
	}
	/* copy-major, so each pool's ios stay together for posting */
	for (unsigned k = 0; k < ps->place.replicas; k++)
		for (size_t i = 0; i < n; i++) {
			uint32_t m[RP_MAX_REPLICAS];
			unsigned nm = rp_replica_members(ps, ios[i].pool, m);
			if (k >= nm)
				continue;
			/* counted before the look at stale, which a give-back
			 * sets before it waits for the count (rp_pool_writes_drain):
			 * either this write sees stale, or the give-back sees it */
			atomic_fetch_add(&ps->pools[m[k]].writes_in, 1);
			if (atomic_load(&ps->pools[m[k]].stale)) {
				atomic_fetch_sub(&ps->pools[m[k]].writes_in, 1);
				continue;
			}
			ex[nex] = ios[i];
			ex[nex].pool = m[k];
			ex[nex].off = rp_replica_offset(ps, ios[i].pool, m[k], ios[i].off);
			/* not connected: one reconnect (at most one per backoff
			 * period, so a pool that is really gone costs it once),
			 * else missed: a connection dropped by a hiccup (a timed-out
			 * read) does not make the copy stale */
			bool waited;
			int up = pool_ensure(ps, m[k], &waited);
			/* refused (fenced): not a miss either */
			ex[nex].status = up == 0 ? 1 : up == -ENOLCK ? up : -ENOTCONN;
			reconnected |= waited;
			owner[nex++] = i;
		}
#ifdef RP_TEST_HOOKS
	test_stall_filling(ps, ex, nex);
#endif
	/* the caller's lease guard was asked before these reconnects, which
	 * may have taken seconds: ask it again before anything is posted (a
	 * write refused here misses no copy: none is marked stale) */
	if (reconnected && poolset_write_guard(ps) < 0) {
		writes_out(ps, ex, nex);
		for (size_t i = 0; i < n; i++)
			ios[i].status = -EIO;
		free(ex);
		free(owner);
		return -EIO;
	}
	/* post the connected ones (each io gets its status), in place */
	size_t npost = 0;
	for (size_t j = 0; j < nex; j++)
		if (ex[j].status == 1) {
			struct rp_io t = ex[npost];
			size_t to = owner[npost];
			ex[npost] = ex[j];
			owner[npost] = owner[j];
			ex[j] = t;
			owner[j] = to;
			npost++;
		}
	poolset_rw_single(ps, RP_OP_WRITE, ex, npost);
	writes_out(ps, ex, nex); /* (landed or failed: report_lost writes no data) */
	int lost = report_lost(ps, ex, nex);
	for (size_t i = 0; i < n; i++)
		ios[i].status = -EIO; /* until a copy is known written */
	for (size_t j = 0; j < nex; j++)
		if (ex[j].status == 0 && ios[owner[j]].status != 0)
			ios[owner[j]].status = 0;
	for (size_t i = 0; i < n; i++) {
		if (ios[i].status == 0 && lost < 0)
			ios[i].status = lost; /* written, but a lost copy could not be recorded */
		if (ios[i].status < 0 && rc == 0)
			rc = ios[i].status;
	}
	free(ex);
	free(owner);
	return rc;
}

/* Reads: the first usable copy; what fails is tried on the next one. */
static int read_copies(struct rp_poolset *ps, struct rp_io *ios, size_t n)
{
	struct rp_io *ex = calloc(n, sizeof(*ex));
	size_t *owner = calloc(n, sizeof(*owner));
	unsigned *next = calloc(n, sizeof(*next));
	int rc = 0;
	if (!ex || !owner || !next) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		ios[i].status = 1; /* pending */
	for (unsigned round = 0; round < ps->place.replicas; round++) {
		size_t nex = 0;
		for (size_t i = 0; i < n; i++) {
			uint32_t m[RP_MAX_REPLICAS];
			unsigned nm = rp_replica_members(ps, ios[i].pool, m);
			if (ios[i].status != 1 && ios[i].status >= 0)
				continue;
			while (next[i] < nm && !usable(ps, m[next[i]]))
				next[i]++;
			if (next[i] >= nm) {
				if (ios[i].status == 1)
					ios[i].status = -EIO; /* no copy left */
				continue;
			}
			uint32_t pool = m[next[i]++];
			ex[nex] = ios[i];
			ex[nex].pool = pool;
			ex[nex].off = rp_replica_offset(ps, ios[i].pool, pool, ios[i].off);
			owner[nex++] = i;
		}
		if (nex == 0)
			break;
		poolset_rw_single(ps, RP_OP_READ, ex, nex);
		for (size_t j = 0; j < nex; j++) {
			ios[owner[j]].status = ex[j].status;
			if (ex[j].status < 0)
				rp_warn("peer %u: read failed (%s); trying another copy", ex[j].pool,
					strerror(-ex[j].status));
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (ios[i].status == 1)
			ios[i].status = -EIO;
		if (ios[i].status < 0 && rc == 0)
			rc = ios[i].status;
	}
out:
	free(ex);
	free(owner);
	free(next);
	return rc;
}

int replica_rw(struct rp_poolset *ps, enum rp_opcode opc, struct rp_io *ios, size_t n)
{
	if (n == 0)
		return 0;
	if (opc == RP_OP_WRITE)
		return write_copies(ps, ios, n);
	if (opc == RP_OP_READ)
		return read_copies(ps, ios, n);
	return -EINVAL;
}

int rp_pool_read_copy(struct rp_poolset *ps, uint32_t pool, unsigned k, uint64_t off, void *buf,
		      size_t len)
{
	uint32_t m[RP_MAX_REPLICAS];
	unsigned nm = rp_replica_members(ps, pool, m);
	if (k >= nm)
		return -EINVAL;
	if (ps->pools[m[k]].stale || ps->pools[m[k]].filling)
		return -ESTALE;
	return rp_pool_read(ps, m[k], rp_replica_offset(ps, pool, m[k], off), buf, len);
}

int rp_pool_read_data(struct rp_poolset *ps, uint32_t pool, uint64_t off, void *buf, size_t len)
{
	uint32_t m[RP_MAX_REPLICAS];
	unsigned nm = rp_replica_members(ps, pool, m);
	int rc = -EIO;
	for (unsigned k = 0; k < nm; k++) {
		if ((ps->pools[m[k]].stale || ps->pools[m[k]].filling) && nm > 1)
			continue;
		rc = rp_pool_read_copy(ps, pool, k, off, buf, len);
		if (rc == 0)
			return 0;
	}
	return rc;
}
