/* Free space and the reserve. Operations that grow the volume (new data
 * blocks, new names, xattrs) stop with ENOSPC while the free blocks are at
 * or below the reserve; operations that give space back (unlink, rmdir,
 * truncate, rename) and checkpoints may dig into it. The reserve covers a
 * checkpoint (a new log at most as large as the current one, written
 * before the old one is freed) plus slack for the records of deletions, so
 * a full volume can always be emptied and always mounts read-write.
 * statfs reports the reserve as used: Size = Used + Avail, and Avail is 0
 * before the reserve is touched. See rdmapool(7). */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/bitmap.h>
#include <rdmapool/lock_order.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define SLACK_MIN_SEGMENTS 16 /* 4 MiB of log at 4 KiB blocks */
#define SLACK_PERCENT 1
#define REFRESH_MS 1000         /* from the counts: one fetch-and-add per pool */
#define REFRESH_BITMAPS_MS 5000 /* from whole bitmaps */
#define CHECK_MAX_AGE_MS 100 /* a growing operation near the reserve */
#define SETTLE_MIN_ATTEMPTS 3
#define SETTLE_MIN_MS 300   /* the kernel's forgets of unlinked inodes, under load */
#define SETTLE_HELD_MS 3000 /* blocks held for read-only mounts to come back */
#define SETTLE_FORGET_MS 1000 /* how recent an unlink of a held file is waited for */
/* Within this many reserves of free space (and space_unseen) the counts
 * are not trusted (one a crash left short) and the bitmaps are read
 * instead */
#define EXACT_WITHIN_RESERVES 2

/* Replicated: an extent needs the same block number free on replicas
 * consecutive ring pools, so size and free space are counted per block
 * number (what allocation can really use: at ENOSPC the free space is 0, as
 * on a volume without copies; a ring of 3 with 2 copies holds one pool's
 * worth, not one and a half; rp_ring_free). A stale or unconnected pool has
 * nothing free. The pools' used-block counts cannot give this: they say how
 * many blocks each pool holds, not at which block numbers, and where the
 * others' free blocks lie decides what fits (another volume's blocks on a
 * ring pool, or two extents that leave single pools between them in a ring
 * of 3n or more, make free blocks that no extent can use; an estimate from
 * counts would be too high and let growing operations into the reserve).
 * So the bitmaps are read whole, but only when the ring's stamp (its
 * pools' counts and churn, which every client moves with each bit it
 * changes, as it hands its changes over) moved since the last read: an
 * idle ring costs one 32-byte read per pool. exact: read them all the
 * same. Returns whether it read them. */
static uint64_t ring_stamp(struct rp_fs *fs, const struct rp_volplace *pl)
{
	uint64_t h = rp_fnv1a(RP_FNV_INIT, &pl->seq, sizeof(pl->seq)), s;
	for (uint32_t i = 0; i < pl->nring; i++) {
		const struct rp_pool *p = &fs->ps->pools[pl->ring[i]];
		if (p->stale || !rp_pool_connected(fs->ps, pl->ring[i]) ||
		    rp_pool_bitmap_stamp(fs->ps, pl->ring[i], &s) < 0)
			return 0; /* (no stamp: read the bitmaps) */
		h = rp_fnv1a(h, &s, sizeof(s));
	}
	return h ? h : 1;
}

static bool space_replicated(struct rp_fs *fs, bool exact, uint64_t *total, uint64_t *nfree)
{
	const struct rp_volplace snap = place_snapshot(fs), *pl = &snap;
	uint64_t *bm[RP_RING_MAX] = { 0 }, size[RP_RING_MAX] = { 0 };
	uint64_t stamp = ring_stamp(fs, pl);
	rp_mutex_lock(&fs->space.ring_mu, RP_LK_RING);
	bool cached = !exact && stamp && stamp == fs->space.ring_stamp;
	*total = fs->space.ring_total;
	*nfree = fs->space.ring_free;
	rp_mutex_unlock(&fs->space.ring_mu);
	if (cached)
		return false;
	for (uint32_t i = 0; i < pl->nring; i++) {
		const struct rp_pool *p = &fs->ps->pools[pl->ring[i]];
		size[i] = rp_pool_nblocks(fs->ps, pl->ring[i]);
		if (!p->stale && rp_pool_connected(fs->ps, pl->ring[i]))
			rp_pool_read_bitmap(fs->ps, pl->ring[i], &bm[i]); /* NULL: nothing free */
	}
	*nfree = rp_ring_free((const uint64_t *const *)bm, size, pl->nring, pl->replicas, total);
	for (uint32_t i = 0; i < pl->nring; i++) {
		if (!bm[i])
			stamp = 0; /* (one not read: not kept, read again next time) */
		free(bm[i]);
	}
	/* (the stamp from before the reads: a change during them moves the
	 * next one, and the bitmaps are read again) */
	rp_mutex_lock(&fs->space.ring_mu, RP_LK_RING);
	fs->space.ring_stamp = stamp;
	fs->space.ring_total = *total;
	fs->space.ring_free = *nfree;
	rp_mutex_unlock(&fs->space.ring_mu);
	return true;
}

/* which pools count and how, as one word (FNV-1a over each pool's id and
 * its connected, stale and filling flags): a change makes a refresh due */
static uint64_t connected_sig(const struct rp_fs *fs)
{
	uint64_t h = RP_FNV_INIT;
	for (size_t k = 0; k < fs->ps->npeers; k++) {
		uint32_t id = fs->ps->ids[k];
		const struct rp_pool *p = &fs->ps->pools[id];
		uint64_t v = (uint64_t)id << 3 | (uint64_t)rp_pool_connected(fs->ps, id) << 2 |
			     (uint64_t)atomic_load(&p->stale) << 1 | (uint64_t)atomic_load(&p->filling);
		h = rp_fnv1a(h, &v, sizeof(v));
	}
	return h;
}

/* Size and free blocks of the volume's pools, from their used-block
 * counts or (exact) their bitmaps. A pool we cannot read counts its size
 * and nothing free: allocation cannot use it, and statfs still answers (df
 * on a degraded cluster works, as on any filesystem, instead of failing
 * with EIO). Returns whether any bitmap was read: with replicas, when the
 * ring changed since the last read, and for a pool whose server keeps no
 * count (an older one). */
static bool space_pools(struct rp_fs *fs, bool exact, uint64_t *total, uint64_t *nfree)
{
	bool read_bitmap = false;
	*total = *nfree = 0;
	if (rp_poolset_replicated(fs->ps))
		return space_replicated(fs, exact, total, nfree);
	for (size_t k = 0; k < fs->ps->npeers; k++) {
		const struct rp_pool *p = &fs->ps->pools[fs->ps->ids[k]];
		uint64_t f = 0, t = rp_pool_nblocks(fs->ps, fs->ps->ids[k]);
		read_bitmap |= exact || !atomic_load(&p->counted);
		rp_pool_usage(fs->ps, fs->ps->ids[k], exact, &f, &t);
		*total += t;
		*nfree += f;
	}
	return read_bitmap;
}

/* What counts and stamps may not show yet: another client's changes held
 * back, up to a batch per pool (one such client assumed; a crash's leftover
 * is what fsck sets right) */
static uint64_t space_unseen(const struct rp_fs *fs)
{
	return (uint64_t)fs->ps->npeers * RP_COUNT_BATCH;
}

void space_refresh(struct rp_fs *fs)
{
	uint64_t total = 0, nfree = 0;
	/* read before the counts: what changes during the reads is seen next,
	 * and our allocations meanwhile are taken off what the reads found */
	uint64_t taken0 = atomic_load(&fs->space.taken_total);
	atomic_store(&fs->space.frees_seen, atomic_load(&fs->ps->frees));
	atomic_store(&fs->space.conns_seen, connected_sig(fs));
	/* near the reserve the bitmaps, exactly: growing operations must not
	 * get into it on a count a crash left short (the reserve from the
	 * size just found: the first refresh has none before) */
	bool exact = space_pools(fs, false, &total, &nfree);
	atomic_store(&fs->space.total, total);
	if (!exact && nfree <= EXACT_WITHIN_RESERVES * space_reserve(fs) + space_unseen(fs))
		exact = space_pools(fs, true, &total, &nfree);
	if (exact) /* what we hold back for the counts goes on its way all the same */
		rp_poolset_count_flush(fs->ps);
	atomic_store(&fs->space.exact, exact);
	/* blocks claimed ahead are allocated in the bitmaps but ours to use */
	nfree += prealloc_held(fs);
	uint64_t since = atomic_load(&fs->space.taken_total) - taken0;
	nfree = nfree > since ? nfree - since : 0;
	atomic_store(&fs->space.total, total);
	atomic_store(&fs->space.free, nfree);
	atomic_store(&fs->space.refreshed_ms, rp_now_ms());
}

void space_refresh_if_old(struct rp_fs *fs)
{
	uint64_t every = atomic_load(&fs->space.exact) ? REFRESH_BITMAPS_MS : REFRESH_MS;
	if (rp_now_ms() - atomic_load(&fs->space.refreshed_ms) >= every)
		space_refresh(fs);
}

/* A refresh costs one fetch-and-add per pool (the whole bitmap for a pool
 * from an older server), so it is done when the count may be wrong, not
 * per call: our allocations are counted as they are made (space_taken),
 * our frees and a pool lost or back make the next call read again, and
 * what other clients of shared pools did shows within max_age_ms. That
 * bounds the cost of statfs and of growing operations on a nearly full
 * volume by time, not by calls. */
void space_refresh_within(struct rp_fs *fs, uint64_t max_age_ms)
{
	if (atomic_load(&fs->ps->frees) == atomic_load(&fs->space.frees_seen) &&
	    connected_sig(fs) == atomic_load(&fs->space.conns_seen) &&
	    rp_now_ms() - atomic_load(&fs->space.refreshed_ms) < max_age_ms)
		return;
	space_refresh(fs);
}

uint64_t space_reserve(struct rp_fs *fs)
{
	uint64_t total = atomic_load(&fs->space.total);
	uint64_t slack = RP_MAX((uint64_t)SLACK_MIN_SEGMENTS * SEG_BLOCKS,
				total * SLACK_PERCENT / 100);
	/* the current log and its spare: what a checkpoint may need */
	uint64_t log = (atomic_load(&fs->log_segments) + 1) * (uint64_t)SEG_BLOCKS;
	return log + slack;
}

void space_taken(struct rp_fs *fs, uint64_t blocks)
{
	atomic_fetch_add(&fs->space.taken_total, blocks);
	uint64_t f = atomic_load(&fs->space.free);
	while (!atomic_compare_exchange_weak(&fs->space.free, &f, f > blocks ? f - blocks : 0))
		;
}

bool space_available(struct rp_fs *fs, uint64_t want)
{
	return atomic_load(&fs->space.free) >= space_reserve(fs) + want;
}

int space_check_locked(struct rp_fs *fs, uint64_t want)
{
	if (space_available(fs, want))
		return 0;
	/* deletions free their blocks once their records are out */
	log_flush(fs, &fs->log);
	space_refresh_within(fs, CHECK_MAX_AGE_MS);
	if (space_available(fs, want))
		return 0;
	return -ENOSPC;
}

/* One step of waiting for deletions in flight before ENOSPC: flush the log
 * (blocks of deleted files are freed once their records are durable) and,
 * if nothing was waiting to be freed, sleep a little, since the kernel
 * forgets an unlinked inode only a moment after unlink returns. Call
 * without fs->mu. Returns false when it is time to give up: at once when
 * nothing is on its way back (no deferred frees, no held blocks, no recent
 * unlink of a file the kernel still held), so a full volume answers ENOSPC
 * as fast as tmpfs does. */
bool space_settle(struct rp_fs *fs, unsigned attempt, uint64_t start_ms)
{
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	bool freeing = fs->deferred.n > 0;
	log_flush(fs, &fs->log);
	bool held = fs->held.n > 0;
	rp_mutex_unlock(&fs->mu);
	uint64_t now = rp_now_ms(), waited = now - start_ms;
	uint64_t unlinked = atomic_load(&fs->space.unlinked_held_ms);
	bool forget_due = unlinked && now - unlinked < SETTLE_FORGET_MS;
	if (!freeing && !held && !forget_due)
		return false;
	if (attempt >= SETTLE_MIN_ATTEMPTS && waited >= SETTLE_MIN_MS &&
	    !(held && waited < SETTLE_HELD_MS))
		return false;
	if (!freeing)
		usleep(20000u * RP_MIN(attempt + 1, 5u));
	return true;
}

void space_wait(struct rp_fs *fs, uint64_t want)
{
	uint64_t start = rp_now_ms();
	for (unsigned attempt = 0; !space_available(fs, want); attempt++) {
		if (!space_settle(fs, attempt, start))
			return;
		space_refresh(fs);
	}
}
