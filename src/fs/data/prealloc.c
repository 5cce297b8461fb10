/* Blocks claimed ahead. A small allocation (a new small file, an append)
 * claims the whole free run of a bitmap word with its one CAS and keeps the
 * rest here, so the next small allocations from that pool need no round
 * trip: a CAS per up to 64 blocks instead of one per block.
 *
 * The blocks are allocated in the pool and referenced by nothing until a
 * write's records are logged. Unmount gives them back while the lease is
 * still held (after it, fsck --repair may already have reclaimed them for
 * someone else); a crash or a lost lease leaks them, as it leaks blocks of
 * writes whose records never went out: fsck reports them and --repair
 * returns them. Only a lease holder claims ahead (not mkfs, never a
 * read-only mount). They count as free space (statfs, the reserve): they
 * are this volume's to use. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int prealloc_init(struct rp_fs *fs)
{
	pthread_mutex_init(&fs->prealloc.mu, NULL);
	fs->prealloc.by_peer = calloc(fs->ps->n, sizeof(*fs->prealloc.by_peer));
	return fs->prealloc.by_peer ? 0 : -ENOMEM;
}

void prealloc_fini(struct rp_fs *fs)
{
	free(fs->prealloc.by_peer);
	fs->prealloc.by_peer = NULL;
	pthread_mutex_destroy(&fs->prealloc.mu);
}

bool prealloc_enabled(const struct rp_fs *fs)
{
	return fs->lease.running && fs->prealloc.by_peer;
}

bool prealloc_take(struct rp_fs *fs, uint32_t pool, uint32_t want, struct rp_extent *out)
{
	bool got = false;
	if (!prealloc_enabled(fs) || pool >= fs->ps->n)
		return false;
	/* a run claimed while every copy was current is not carved while one
	 * is stale or filling: its blocks there may be another volume's now
	 * (a replacement), and the rebuild claims only what is listed (review
	 * 50: a piece carved before its claims and mapped after them was
	 * written over, and given back, as the volume's) */
	if (rp_poolset_replicated(fs->ps) && !rp_replica_all_usable(fs->ps, pool))
		return false;
	rp_mutex_lock(&fs->prealloc.mu, RP_LK_PREALLOC);
	struct rp_extent *r = &fs->prealloc.by_peer[pool];
	if (r->count) {
		uint32_t n = RP_MIN(want, r->count);
		*out = (struct rp_extent){ .pool = pool, .block = r->block, .count = n };
		r->block += n;
		r->count -= n;
		got = true;
	}
	rp_mutex_unlock(&fs->prealloc.mu);
	rp_count(got ? &fs->stats.prealloc_hits : &fs->stats.prealloc_misses, 1);
	return got;
}

bool prealloc_take_any(struct rp_fs *fs, uint32_t want, struct rp_extent *out)
{
	for (size_t k = 0; k < fs->ps->npeers; k++)
		if (rp_pool_connected(fs->ps, fs->ps->ids[k]) &&
		    prealloc_take(fs, fs->ps->ids[k], want, out))
			return true;
	return false;
}

void prealloc_keep(struct rp_fs *fs, const struct rp_extent *rest)
{
	if (rest->count == 0)
		return;
	rp_mutex_lock(&fs->prealloc.mu, RP_LK_PREALLOC);
	struct rp_extent *r = &fs->prealloc.by_peer[rest->pool];
	bool kept = r->count == 0;
	if (kept)
		*r = *rest;
	rp_mutex_unlock(&fs->prealloc.mu);
	if (!kept) /* another thread's run got there first */
		rp_pool_free(fs->ps, rest);
}

uint64_t prealloc_held(struct rp_fs *fs)
{
	uint64_t n = 0;
	if (!fs->prealloc.by_peer)
		return 0;
	rp_mutex_lock(&fs->prealloc.mu, RP_LK_PREALLOC);
	for (size_t i = 0; i < fs->ps->n; i++)
		n += fs->prealloc.by_peer[i].count;
	rp_mutex_unlock(&fs->prealloc.mu);
	return n;
}

void prealloc_return(struct rp_fs *fs)
{
	if (!fs->prealloc.by_peer)
		return;
	for (size_t i = 0; i < fs->ps->n; i++) {
		rp_mutex_lock(&fs->prealloc.mu, RP_LK_PREALLOC);
		struct rp_extent r = fs->prealloc.by_peer[i];
		fs->prealloc.by_peer[i].count = 0;
		rp_mutex_unlock(&fs->prealloc.mu);
		if (r.count && rp_pool_free(fs->ps, &r) < 0)
			rp_warn("pool %u: could not give back %u blocks claimed ahead (fsck "
				"--repair returns them)", r.pool, r.count);
	}
}
