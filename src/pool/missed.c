/* Frees a copy missed (replicated volumes). A free skips a copy that is
 * stale or not connected, and a copy whose bitmap read failed was never
 * sent its change: those blocks stay allocated there. Each is kept here,
 * per pool, and freed once that pool is connected and current (neither
 * stale nor filling): no one else can have them meanwhile, since their bits
 * stay set on it and the placement allocates a block only where every copy
 * is current (rdmapool(7), REPLICAS, Rebuild). Only for a pool still the
 * one this process found when it opened the pools (identity generation 0):
 * once another is adopted in its place, or a pool down since the open is
 * first adopted, nothing more is kept for it and what was kept is dropped
 * (a replacement's bits were never set for those blocks, or were set by a
 * rebuild that may give them back: freeing them there could free another
 * volume's blocks). Kept in memory only: a daemon's death leaks them, as
 * before, for fsck --repair. */
#include "config.h"
#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/pool.h>
#include <rdmapool/util.h>

#include "pool_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* a pool away for long stops collecting (its blocks leak, as before):
 * 16 bytes a run, so at most 16 MiB per pool */
#define MISSED_MAX (1u << 20)
/* and says so at most once a minute */
#define MISSED_WARN_MS 60000

struct rp_missed {
	struct rp_extent_list l;  /* blocks on that pool */
};

/* Still the pool found at the open (and reached then)? */
static bool first_identity(const struct rp_poolset *ps, uint32_t pool)
{
	return ps->pools[pool].opened && atomic_load(&ps->pools[pool].identity_gen) == 0;
}

int missed_init(struct rp_poolset *ps)
{
	pthread_mutex_init(&ps->missed_mu, NULL);
	ps->missed = calloc(ps->n ? ps->n : 1, sizeof(*ps->missed));
	return ps->missed ? 0 : -ENOMEM;
}

void missed_fini(struct rp_poolset *ps)
{
	for (size_t i = 0; ps->missed && i < ps->n; i++)
		free(ps->missed[i].l.v);
	free(ps->missed);
	ps->missed = NULL;
	pthread_mutex_destroy(&ps->missed_mu);
}

void missed_add(struct rp_poolset *ps, const struct rp_extent *v, size_t n)
{
	size_t lost = 0;
	rp_mutex_lock(&ps->missed_mu, RP_LK_MISSED);
	for (size_t i = 0; i < n; i++) {
		if (v[i].pool >= ps->n || !ps->missed || !first_identity(ps, v[i].pool))
			continue; /* (a leak, as before) */
		struct rp_extent_list *l = &ps->missed[v[i].pool].l;
		size_t before = l->n;
		if (extent_list_append(l, &v[i], MISSED_MAX) < 0)
			lost += v[i].count;
		atomic_fetch_add(&ps->missed_runs, l->n - before);
	}
	static _Atomic uint64_t warned_ms;
	uint64_t now = rp_now_ms(), last = atomic_load(&warned_ms);
	rp_mutex_unlock(&ps->missed_mu);
	if (lost && (!last || now - last >= MISSED_WARN_MS) &&
	    atomic_compare_exchange_strong(&warned_ms, &last, now))
		rp_warn("%zu blocks freed while a copy was away stay allocated on it (too many to "
			"keep): 'rdmapool fsck --repair' gives them back", lost);
}

/* May the pool be given its missed frees now? */
static bool pool_ready(struct rp_poolset *ps, uint32_t pool)
{
	struct rp_pool *p = &ps->pools[pool];
	return !atomic_load(&p->stale) && !atomic_load(&p->filling) && rp_pool_connected(ps, pool);
}

/* Take, under the lock, the list of a pool that may be given it now. */
static struct rp_extent_list take_ready(struct rp_poolset *ps, uint32_t pool)
{
	struct rp_extent_list take = { 0 };
	rp_mutex_lock(&ps->missed_mu, RP_LK_MISSED);
	/* (one no longer the pool found at the open: dropped, by the caller) */
	if (ps->missed[pool].l.n && (pool_ready(ps, pool) || !first_identity(ps, pool))) {
		take = ps->missed[pool].l;
		ps->missed[pool].l = (struct rp_extent_list){ 0 };
		atomic_fetch_sub(&ps->missed_runs, take.n);
	}
	rp_mutex_unlock(&ps->missed_mu);
	return take;
}

void missed_flush(struct rp_poolset *ps)
{
	if (!atomic_load(&ps->missed_runs))
		return; /* (the common case: nothing kept, no lock taken) */
	for (uint32_t pool = 0; ps->missed && pool < ps->n; pool++) {
		struct rp_extent_list take = take_ready(ps, pool), unsent = { 0 };
		if (!take.n || !first_identity(ps, pool)) {
			free(take.v); /* (replaced since: not ours there) */
			continue;
		}
		uint64_t blocks = 0;
		for (size_t i = 0; i < take.n; i++)
			blocks += take.v[i].count;
		int rc = pool_free_many_single(ps, take.v, take.n, &unsent);
		pool_count_settle(ps, true);
		atomic_fetch_add(&ps->frees, 1); /* (the free count is read again) */
		rp_info("peer %u: %llu blocks freed while it was away given back%s%s", pool,
			(unsigned long long)blocks, rc < 0 ? ": " : "", rc < 0 ? strerror(-rc) : "");
		missed_add(ps, unsent.v, unsent.n); /* (never sent: certainly still ours) */
		free(unsent.v);
		free(take.v);
	}
}

void rp_pool_identity_moved(struct rp_poolset *ps, uint32_t pool)
{
	if (pool < ps->n)
		atomic_fetch_add(&ps->pools[pool].identity_gen, 1);
}

void rp_pool_missed_flush(struct rp_poolset *ps)
{
	if (rp_poolset_replicated(ps))
		missed_flush(ps);
}
