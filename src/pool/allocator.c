/* Block allocation by clients alone: read a span of a pool's bitmap, pick a
 * free run inside one 64-bit word, claim it with one remote compare-and-swap,
 * and on a conflict retry with the value the CAS returned. Many clients can
 * allocate from one pool at once without the pool server's CPU. The span
 * stays cached, so allocations after the first cost one CAS each. */
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

static int get_pool(struct rp_poolset *ps, uint32_t pool, struct rp_pool **out)
{
	int rc = rp_pool_ensure(ps, pool);
	if (rc == 0)
		*out = &ps->pools[pool];
	return rc;
}

uint64_t pool_word_off(const struct rp_pool *p, uint64_t w)
{
	return p->sb.bitmap_off + w * 8;
}

/* Claim a run of up to want blocks in span[0..n) (bitmap words w0..): 1 with
 * the run in out, 0 when the span has none, or a negative errno. span is
 * updated with every value a CAS returns. */
static int claim_in_span(struct rp_pool *p, uint32_t pool, uint64_t w0, uint64_t *span,
			 uint64_t n, uint32_t want, struct rp_extent *out)
{
	for (uint64_t i = 0; i < n; i++) {
		unsigned bit, len;
		while (rp_bitmap_find_run(span[i], want, &bit, &len) == 0) {
			uint64_t v = span[i], nv = v | rp_bitmap_mask(bit, len), old;
			int rc = pool_cas(p, pool_word_off(p, w0 + i), v, nv, &old);
			if (rc < 0)
				return rc;
			if (old == v) {
				span[i] = nv;
				*out = (struct rp_extent){ .pool = pool, .block = (w0 + i) * 64 + bit,
							   .count = len };
				return 1;
			}
			span[i] = old; /* lost a race: retry this word with its real value */
		}
	}
	return 0;
}

/* Keep span (words w0..w0+n) as the pool's cached span; the cursor stays on
 * the word the last run came from while it has room. */
static void remember(struct rp_pool *p, uint64_t w0, const uint64_t *span, uint64_t n,
		     const struct rp_extent *got)
{
	rp_mutex_lock(&p->mu, RP_LK_POOL);
	memcpy(p->span, span, n * 8);
	p->span_w0 = w0;
	p->span_n = n;
	if (got) {
		uint64_t w = got->block / 64;
		p->cursor = span[w - w0] == ~0ull ? (w + 1) % p->sb.bitmap_words : w;
	}
	rp_mutex_unlock(&p->mu);
}

/* After a claim from the tail span[0..n) (words w0..) of the cached span:
 * write it back, if the cache still holds the same words. */
static void merge_span(struct rp_pool *p, uint64_t w0, const uint64_t *span, uint64_t n,
		       const struct rp_extent *got)
{
	uint64_t full[SPAN_WORDS];
	rp_mutex_lock(&p->mu, RP_LK_POOL);
	bool same = p->span_n && p->span_w0 <= w0 && w0 + n == p->span_w0 + p->span_n;
	uint64_t fw0 = p->span_w0, fn = p->span_n;
	if (same) {
		memcpy(full, p->span, fn * 8);
		memcpy(full + (w0 - fw0), span, n * 8);
	}
	rp_mutex_unlock(&p->mu);
	if (same)
		remember(p, fw0, full, fn, got);
}

int rp_pool_alloc(struct rp_poolset *ps, uint32_t pool, uint32_t want, struct rp_extent *out)
{
	int rc = rp_poolset_replicated(ps) ? replica_alloc(ps, pool, want, out)
					   : pool_alloc_single(ps, pool, want, out);
	pool_count_settle(ps, false);
	return rc;
}

int pool_alloc_single(struct rp_poolset *ps, uint32_t pool, uint32_t want, struct rp_extent *out)
{
	struct rp_pool *p = NULL;
	uint64_t span[SPAN_WORDS], w0, n;
	int rc = get_pool(ps, pool, &p);
	if (rc < 0)
		return rc;
	if (want == 0 || want > 64)
		return -EINVAL;

	/* first the cached span, from the cursor on */
	rp_mutex_lock(&p->mu, RP_LK_POOL);
	uint64_t start = p->cursor, words = p->sb.bitmap_words;
	n = 0;
	if (p->span_n && start >= p->span_w0 && start < p->span_w0 + p->span_n) {
		w0 = start;
		n = p->span_w0 + p->span_n - start;
		memcpy(span, p->span + (start - p->span_w0), n * 8);
	}
	rp_mutex_unlock(&p->mu);
	if (n) {
		rc = claim_in_span(p, pool, w0, span, n, want, out);
		if (rc > 0)
			merge_span(p, w0, span, n, out);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	/* then fresh reads, span by span, round the whole bitmap */
	for (uint64_t scanned = 0; scanned < words;) {
		w0 = (start + scanned) % words;
		n = RP_MIN((uint64_t)SPAN_WORDS, words - w0);
		rc = rp_conn_read(p->conn, pool_word_off(p, w0), span, n * 8);
		if (rc < 0)
			return rc;
		rp_count(&p->stats.bitmap_read_bytes, n * 8);
		rc = claim_in_span(p, pool, w0, span, n, want, out);
		if (rc < 0)
			return rc;
		remember(p, w0, span, n, rc > 0 ? out : NULL);
		if (rc > 0)
			return 0;
		scanned += n;
	}
	return -ENOSPC;
}

int rp_poolset_alloc(struct rp_poolset *ps, uint32_t first, uint32_t want, struct rp_extent *out)
{
	int rc = -ENOSPC, last = -ENOSPC;
	/* the listed pools in id order, starting at the first id >= first
	 * (taken modulo the ids, so any number spreads) */
	first %= (uint32_t)ps->n;
	size_t start = 0;
	while (start < ps->npeers && ps->ids[start] < first)
		start++;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t pool = ps->ids[(start + k) % ps->npeers];
		rc = rp_pool_alloc(ps, pool, want, out);
		if (rc == 0)
			return 0;
		if (rc != -ENOSPC)
			last = rc;
	}
	/* Full everywhere is ENOSPC; otherwise say why the rest failed. */
	return last;
}

/* Our own free of word w: the cached span shows the blocks free at once. */
static void note_freed(struct rp_pool *p, uint64_t w, uint64_t val)
{
	rp_mutex_lock(&p->mu, RP_LK_POOL);
	if (w >= p->span_w0 && w < p->span_w0 + p->span_n)
		p->span[w - p->span_w0] = val; /* reusable at once */
	rp_mutex_unlock(&p->mu);
}

/* ps->frees moves after the bits are clear: a free-space refresh that
 * read the bitmap before then sees the counter moved and rereads. */
int rp_pool_free(struct rp_poolset *ps, const struct rp_extent *e)
{
	int rc = rp_poolset_replicated(ps) ? replica_free_many(ps, e, 1) : pool_free_single(ps, e);
	pool_count_settle(ps, true);
	atomic_fetch_add(&ps->frees, 1);
	return rc;
}

int pool_free_single(struct rp_poolset *ps, const struct rp_extent *e)
{
	struct rp_pool *p = NULL;
	int rc = get_pool(ps, e->pool, &p);
	if (rc < 0)
		return rc;
	if (e->count == 0 || e->block + e->count > p->sb.nblocks)
		return -EINVAL;
	uint64_t b = e->block, end = e->block + e->count;
	while (b < end) {
		uint64_t w = b / 64;
		unsigned bit = (unsigned)(b % 64);
		unsigned len = (unsigned)RP_MIN(end - b, 64 - bit);
		uint64_t mask = rp_bitmap_mask(bit, len), v, old;
		/* fetch-and-add of 0 is an atomic read of the word */
		rc = rp_conn_faa(p->conn, pool_word_off(p, w), 0, &v);
		for (;;) {
			if (rc < 0)
				return rc;
			if ((v & mask) != mask) {
				rp_err("pool %u: freeing blocks %llu+%u that are not allocated",
				       e->pool, (unsigned long long)b, len);
				return -EUCLEAN;
			}
			rc = pool_cas(p, pool_word_off(p, w), v, v & ~mask, &old);
			if (rc == 0 && old == v) {
				note_freed(p, w, v & ~mask);
				break;
			}
			v = old;
		}
		b += len;
	}
	return 0;
}

/* A batch free, word by word: what to clear in one bitmap word of one pool,
 * the word's value as last seen, where it stands (1 pending, 0 done, or a
 * negative errno), and whether a change of it was ever posted (a word
 * that failed before that is certainly still allocated). */
struct word_free {
	uint32_t pool;
	uint64_t w, mask, v;
	int status;
	bool sent;
};

static int cmp_word_free(const void *a, const void *b)
{
	const struct word_free *x = a, *y = b;
	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	return x->w < y->w ? -1 : x->w > y->w;
}

#ifdef RP_TEST_HOOKS
/* Tests only (fstest 097): RP_TEST_FREE_CAS_LOST=N reports this process's
 * first N free compare-and-swaps that landed as timed out, as a pool that
 * applied them past the timeout would; compiled out of packages. */
static int test_cas_lost(int status)
{
	static atomic_uint n;
	const char *v = getenv("RP_TEST_FREE_CAS_LOST");
	if (status == 0 && v && atomic_fetch_add(&n, 1) < strtoul(v, NULL, 10))
		return -ETIMEDOUT;
	return status;
}
#else
#define test_cas_lost(status) (status)
#endif

/* One round for the pending words of one pool, all posted at once: read
 * them (fetch-and-add of 0), or CAS each to its value without the mask. */
static void free_round(struct rp_pool *p, struct word_free *it, size_t n, bool cas,
		       struct rp_op *ops, size_t *idx, uint32_t timeout_ms)
{
	struct rp_completion comp;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (it[i].status != 1)
			continue;
		ops[k] = (struct rp_op){ .opcode = cas ? RP_OP_CAS : RP_OP_FAA,
					 .offset = pool_word_off(p, it[i].w), .compare = it[i].v,
					 .value = cas ? it[i].v & ~it[i].mask : 0 };
		it[i].sent |= cas;
		idx[k++] = i;
	}
	if (k == 0)
		return;
	rp_completion_init(&comp);
	rp_conn_post(p->conn, ops, k, &comp);
	rp_completion_wait(&comp, timeout_ms); /* each op carries its own status */
	rp_completion_destroy(&comp);
	if (cas)
		rp_count(&p->stats.cas, k);
	for (size_t j = 0; j < k; j++) {
		struct word_free *f = &it[idx[j]];
		if (cas && ops[j].result == f->v)
			ops[j].status = test_cas_lost(ops[j].status);
		if (cas && (ops[j].status < 0 || ops[j].result != f->v))
			rp_count(&p->stats.cas_failed, 1);
		if (ops[j].status < 0) {
			f->status = ops[j].status;
		} else if (cas && ops[j].result == f->v) {
			f->status = 0;
			pool_count_bits(p, f->v, f->v & ~f->mask); /* before note_freed's lock */
			note_freed(p, f->w, f->v & ~f->mask);
		} else {
			f->v = ops[j].result; /* read, or lost a race: retry with it */
			if ((f->v & f->mask) != f->mask) {
				rp_err("pool %u: freeing blocks in word %llu (mask %016llx) that are "
				       "not allocated", f->pool, (unsigned long long)f->w,
				       (unsigned long long)f->mask);
				f->status = -EUCLEAN;
			}
		}
	}
}

/* Free the words it[0..n) of one pool: one read round, then CAS rounds until
 * every word is done or failed. */
static int free_words(struct rp_poolset *ps, struct word_free *it, size_t n)
{
	struct rp_pool *p = NULL;
	int rc = get_pool(ps, it[0].pool, &p);
	struct rp_op *ops = rc == 0 ? calloc(n, sizeof(*ops)) : NULL;
	size_t *idx = ops ? calloc(n, sizeof(*idx)) : NULL;
	if (rc == 0 && !idx)
		rc = -ENOMEM;
	for (size_t i = 0; i < n && rc < 0; i++)
		it[i].status = rc;
	if (rc == 0) {
		free_round(p, it, n, false, ops, idx, ps->op_timeout_ms);
		for (bool pending = true; pending;) {
			free_round(p, it, n, true, ops, idx, ps->op_timeout_ms);
			pending = false;
			for (size_t i = 0; i < n; i++)
				pending |= it[i].status == 1;
		}
	}
	free(ops);
	free(idx);
	for (size_t i = 0; i < n; i++)
		if (it[i].status < 0)
			return it[i].status;
	return 0;
}

int rp_pool_free_many(struct rp_poolset *ps, const struct rp_extent *v, size_t n)
{
	return rp_pool_free_many_keep(ps, v, n, NULL);
}

int rp_pool_free_many_keep(struct rp_poolset *ps, const struct rp_extent *v, size_t n,
			   struct rp_extent_list *unsent)
{
	int rc = rp_poolset_replicated(ps) ? replica_free_many(ps, v, n)
					   : pool_free_many_single(ps, v, n, unsent);
	pool_count_settle(ps, true);
	atomic_fetch_add(&ps->frees, 1);
	return rc;
}

/* The bits of a word whose change was never posted, as extents, onto
 * unsent (NULL: not wanted). A word that was not allocated (-EUCLEAN) is
 * not one: freeing it again would fail again. */
static int keep_unsent(const struct word_free *f, struct rp_extent_list *unsent)
{
	if (!unsent || f->status >= 0 || f->sent || f->status == -EUCLEAN)
		return 0;
	for (unsigned bit = 0; bit < 64;) {
		if (!(f->mask >> bit & 1)) {
			bit++;
			continue;
		}
		unsigned len = 0;
		while (bit + len < 64 && (f->mask >> (bit + len) & 1))
			len++;
		struct rp_extent e = { .pool = f->pool, .block = f->w * 64 + bit, .count = len };
		if (extent_list_append(unsent, &e, SIZE_MAX / sizeof(e)) < 0)
			return -ENOMEM; /* (these stay allocated: a leak) */
		bit += len;
	}
	return 0;
}

/* The words the extents touch, one entry per word (several extents may
 * share one), sorted by pool and word; *out NULL when there are none. */
static int words_of(struct rp_poolset *ps, const struct rp_extent *v, size_t n,
		    struct word_free **out, size_t *nout)
{
	struct word_free *it = NULL;
	size_t nit = 0, cap = 0;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		const struct rp_extent *e = &v[i];
		if (e->pool >= ps->n || !ps->pools[e->pool].present || e->count == 0 ||
		    e->block + e->count > ps->pools[e->pool].sb.nblocks) {
			rc = -EINVAL;
			continue;
		}
		for (uint64_t b = e->block, end = e->block + e->count; b < end;) {
			unsigned bit = (unsigned)(b % 64);
			unsigned len = (unsigned)RP_MIN(end - b, 64 - bit);
			if (nit == cap) {
				cap = cap ? 2 * cap : 64;
				struct word_free *ni = realloc(it, cap * sizeof(*ni));
				if (!ni) {
					free(it);
					return -ENOMEM;
				}
				it = ni;
			}
			it[nit++] = (struct word_free){ .pool = e->pool, .w = b / 64,
							.mask = rp_bitmap_mask(bit, len), .status = 1 };
			b += len;
		}
	}
	/* one CAS per word, even when several extents share it */
	if (nit)
		qsort(it, nit, sizeof(*it), cmp_word_free);
	size_t m = 0;
	for (size_t i = 0; i < nit; i++) {
		if (m && it[m - 1].pool == it[i].pool && it[m - 1].w == it[i].w)
			it[m - 1].mask |= it[i].mask;
		else
			it[m++] = it[i];
	}
	*out = it;
	*nout = m;
	return rc;
}

int pool_free_many_single(struct rp_poolset *ps, const struct rp_extent *v, size_t n,
			  struct rp_extent_list *unsent)
{
	struct word_free *it = NULL;
	size_t m = 0;
	int rc = words_of(ps, v, n, &it, &m);
	if (rc == -ENOMEM)
		return rc; /* (nothing sent, nothing handed back: they stay allocated) */
	for (size_t s = 0; s < m;) {
		size_t e = s;
		while (e < m && it[e].pool == it[s].pool && e - s < 1024)
			e++;
		int frc = free_words(ps, it + s, e - s);
		if (frc < 0 && rc == 0)
			rc = frc;
		s = e;
	}
	for (size_t i = 0; i < m; i++)
		if (keep_unsent(&it[i], unsent) < 0)
			break;
	free(it);
	return rc;
}

int rp_pool_read_bitmap(struct rp_poolset *ps, uint32_t pool, uint64_t **words)
{
	struct rp_pool *p = NULL;
	int rc = get_pool(ps, pool, &p);
	if (rc < 0)
		return rc;
	uint64_t *w = malloc(p->sb.bitmap_words * 8);
	if (!w)
		return -ENOMEM;
	rc = rp_conn_read(p->conn, p->sb.bitmap_off, w, p->sb.bitmap_words * 8);
	if (rc < 0) {
		free(w);
		return rc;
	}
	rp_count(&p->stats.bitmap_read_bytes, p->sb.bitmap_words * 8);
	*words = w;
	return 0;
}

/* ---- the used-block count ---- */

/* Hand over what p holds back, on its connection as it is (the caller
 * made sure it is up; nothing here reconnects, since frees settle under
 * the filesystem lock). A fetch-and-add that failed before it was posted
 * (no connection) did nothing: its amount waits for the next one. One that
 * timed out or broke with its connection may have been applied, and is
 * not sent twice; churn is (it is only compared: twice is harmless, lost
 * is not). While a hand-over is under way, count_inflight says so: a
 * stamp read meanwhile would miss it. Returns the count's result. */
static int count_add(struct rp_pool *p, uint64_t *used)
{
	atomic_fetch_add(&p->count_inflight, 1);
	int64_t d = atomic_exchange(&p->count_pending, 0);
	uint64_t c = atomic_exchange(&p->churn_pending, 0), old = 0;
	int rc = d || used ? rp_conn_faa(p->conn, RP_COUNT_OFFSET, (uint64_t)d, &old) : 0;
	if (rc == -ENOTCONN)
		atomic_fetch_add(&p->count_pending, d);
	if (rc == 0 && used)
		*used = old + (uint64_t)d;
	/* (churn after the count: a reader between the two sees the count
	 * moved, or neither, and reads both again next time) */
	if (c && (rc < 0 || rp_conn_faa(p->conn, RP_COUNT_CHURN_OFFSET, c, &old) < 0))
		atomic_fetch_add(&p->churn_pending, c);
	atomic_fetch_sub(&p->count_inflight, 1);
	return rc;
}

void pool_count_settle(struct rp_poolset *ps, bool all)
{
	for (size_t k = 0; ps->ids && ps->pools && k < ps->npeers; k++) {
		uint32_t i = ps->ids[k];
		struct rp_pool *p = &ps->pools[i];
		int64_t d = atomic_load(&p->count_pending);
		uint64_t c = atomic_load(&p->churn_pending);
		if ((d == 0 && c == 0) || (!all && d >= 0 && d < RP_COUNT_BATCH))
			continue;
		if (!atomic_load(&p->counted)) {
			atomic_store(&p->count_pending, 0); /* no count to move */
			atomic_store(&p->churn_pending, 0);
		} else if (rp_pool_connected(ps, i)) {
			count_add(p, NULL); /* (a pool down keeps its amount) */
		}
	}
}

void rp_poolset_count_flush(struct rp_poolset *ps)
{
	pool_count_settle(ps, true);
}

/* Move the count of a connected pool that keeps one by delta, handing
 * over what we held back with it; *used (if not NULL) gets the result. */
static int count_move(struct rp_poolset *ps, uint32_t pool, int64_t delta, uint64_t *used)
{
	struct rp_pool *p = NULL;
	int rc = get_pool(ps, pool, &p);
	if (rc < 0)
		return rc;
	if (!atomic_load(&p->counted))
		return -EOPNOTSUPP;
	atomic_fetch_add(&p->count_pending, delta);
	return count_add(p, used);
}

int rp_pool_used(struct rp_poolset *ps, uint32_t pool, uint64_t *used)
{
	return count_move(ps, pool, 0, used);
}

int rp_pool_bitmap_stamp(struct rp_poolset *ps, uint32_t pool, uint64_t *stamp)
{
	struct rp_pool *p = NULL;
	uint64_t w[4]; /* count, tag, start, churn */
	int rc = get_pool(ps, pool, &p);
	if (rc == 0 && !atomic_load(&p->counted))
		rc = -EOPNOTSUPP;
	if (rc == 0 && (atomic_load(&p->count_pending) || atomic_load(&p->churn_pending)))
		rc = count_add(p, NULL); /* ours in it first */
	if (rc == 0)
		rc = rp_pool_read(ps, pool, RP_COUNT_OFFSET, w, sizeof(w));
	/* (another thread's hand-over under way, or churn not handed over:
	 * the words may not show all of ours yet) */
	if (rc == 0 && (atomic_load(&p->count_inflight) || atomic_load(&p->churn_pending)))
		rc = -EBUSY;
	if (rc < 0)
		return rc;
	*stamp = rp_fnv1a(RP_FNV_INIT, w, sizeof(w));
	return 0;
}

int rp_pool_count_adjust(struct rp_poolset *ps, uint32_t pool, int64_t delta)
{
	return count_move(ps, pool, delta, NULL);
}

int rp_pool_usage(struct rp_poolset *ps, uint32_t pool, bool from_bitmap, uint64_t *free_blocks,
		  uint64_t *total)
{
	uint64_t *w, used;
	int rc = from_bitmap ? -EOPNOTSUPP : rp_pool_used(ps, pool, &used);
	struct rp_pool *p = &ps->pools[pool];
	if (rc == 0) {
		/* (a count a crash left short may go below 0: nothing is used) */
		*free_blocks = p->sb.nblocks - ((int64_t)used < 0 ? 0 : RP_MIN(used, p->sb.nblocks));
		*total = p->sb.nblocks;
		return 0;
	}
	if (rc != -EOPNOTSUPP || (rc = rp_pool_read_bitmap(ps, pool, &w)) < 0)
		return rc;
	*free_blocks = rp_bitmap_count_free(w, p->sb.bitmap_words);
	*total = p->sb.nblocks;
	free(w);
	return 0;
}
