/* Copies a failed write may have left different. A write to a replicated
 * file reaches every current copy; when one fails and cannot be marked
 * stale (it holds the last current copy of other blocks, so marking it
 * would lose them), the write fails with EIO, and the copies it did reach
 * hold its bytes while that one holds the old ones. Nothing else would
 * ever make them the same again: a read could return either version, and
 * fsck finds current copies that differ. So the file range is noted here,
 * and the background thread makes its copies the same (the first current
 * copy onto the others) once they answer, holding the file's I/O lock so
 * that no write to the range interleaves. A crash loses the notes; the
 * next writer resyncs the range anyway: a failed write's intent buckets
 * stay set (intent.c, copies_resync). */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void diverged_init(struct rp_fs *fs)
{
	pthread_mutex_init(&fs->div.mu, NULL);
}

void diverged_fini(struct rp_fs *fs)
{
	free(fs->div.ranges);
	fs->div.ranges = NULL;
	fs->div.n = fs->div.cap = 0;
	pthread_mutex_destroy(&fs->div.mu);
}

/* Bounded: past this many ranges a failed write is only logged (fsck finds
 * what differs), so a peer down for long under many writes costs no more. */
#define DIVERGED_MAX 65536

void diverged_note(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len)
{
	rp_mutex_lock(&fs->div.mu, RP_LK_DIVERGED);
	/* the same file's range again, or one next to it: one entry */
	for (size_t i = fs->div.n; i-- > 0 && fs->div.n - i <= 16;) {
		struct rp_diverged *d = &fs->div.ranges[i];
		if (d->ino == ino && off <= d->off + d->len && d->off <= off + len) {
			uint64_t end = RP_MAX(d->off + d->len, off + len);
			d->off = RP_MIN(d->off, off);
			d->len = end - d->off;
			rp_mutex_unlock(&fs->div.mu);
			return;
		}
	}
	if (fs->div.n >= DIVERGED_MAX) {
		rp_mutex_unlock(&fs->div.mu);
		rp_err("volume \"%s\": too many ranges whose copies may differ to note inode %llu's: "
		       "'rdmapool fsck' finds them", fs->vol.name, (unsigned long long)ino);
		return;
	}
	if (fs->div.n == fs->div.cap) {
		size_t cap = fs->div.cap ? fs->div.cap * 2 : 16;
		struct rp_diverged *v = realloc(fs->div.ranges, cap * sizeof(*v));
		if (!v) {
			rp_mutex_unlock(&fs->div.mu);
			rp_err("volume \"%s\": no memory to note that the copies of inode %llu may "
			       "differ: 'rdmapool fsck' finds them", fs->vol.name,
			       (unsigned long long)ino);
			return;
		}
		fs->div.ranges = v;
		fs->div.cap = cap;
	}
	fs->div.ranges[fs->div.n++] = (struct rp_diverged){ .ino = ino, .off = off, .len = len };
	rp_mutex_unlock(&fs->div.mu);
}

/* The extents of the file's map that cover [off, off + len), fs->mu held. */
static int range_extents(struct rp_fs *fs, const struct rp_inode *in, uint64_t off,
			 uint64_t len, struct rp_extvec *out)
{
	const uint64_t B = fs->block_size;
	uint64_t first = off / B, end = (off + len + B - 1) / B;
	int rc = 0;
	for (size_t i = emap_find(&in->map, first); i < in->map.n && rc == 0; i++) {
		const struct rp_fext *x = &in->map.v[i];
		if (x->fblock >= end)
			break;
		uint64_t s = RP_MAX(x->fblock, first), e = RP_MIN(x->fblock + x->count, end);
		if (s < e)
			rc = extvec_push(out, &(struct rp_extent){
				.pool = x->pool, .block = x->pblock + (s - x->fblock),
				.count = (uint32_t)(e - s) });
	}
	return rc;
}

/* One noted range: 0 done (or its file is gone), else to try again. */
static int resync_range(struct rp_fs *fs, const struct rp_diverged *d, void *buf)
{
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = itable_get(&fs->it, d->ino);
	if (!in || !S_ISREG(in->mode)) {
		rp_mutex_unlock(&fs->mu);
		return 0; /* its blocks went back, and a new owner writes them whole */
	}
	in->pins++; /* not freed meanwhile */
	rp_mutex_unlock(&fs->mu);
	rp_rwlock_wrlock(&in->io, RP_LK_INODE_IO);
	struct rp_extvec ext = { 0 };
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	int rc = range_extents(fs, in, d->off, d->len, &ext);
	rp_mutex_unlock(&fs->mu);
	for (size_t i = 0; i < ext.n && rc == 0; i++)
		if ((rc = lease_guard(fs)) == 0)
			rc = copies_resync_extent(fs, &ext.v[i], buf);
	rp_rwlock_unlock(&in->io);
	extvec_free(&ext);
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	in->pins--;
	fs_maybe_purge(fs, in);
	rp_mutex_unlock(&fs->mu);
	return rc;
}

/* Every copy that would take part answers: else this round waits (it would
 * only hold files' locks to fail). */
static bool all_answer(struct rp_fs *fs)
{
	struct rp_volplace pl = place_snapshot(fs);
	for (uint32_t i = 0; i < pl.nring; i++)
		if (!(pl.stale & (1u << i)) && !fs->ps->pools[pl.ring[i]].stale &&
		    !rp_pool_connected(fs->ps, pl.ring[i]))
			return false;
	return true;
}

size_t diverged_resync(struct rp_fs *fs)
{
	bool answer = all_answer(fs);
	rp_mutex_lock(&fs->div.mu, RP_LK_DIVERGED);
	if (fs->div.n && !answer) {
		size_t n = fs->div.n;
		rp_mutex_unlock(&fs->div.mu);
		return n;
	}
	struct rp_diverged *v = fs->div.ranges;
	size_t n = fs->div.n, fixed = 0;
	fs->div.ranges = NULL;
	fs->div.n = fs->div.cap = 0;
	rp_mutex_unlock(&fs->div.mu);
	if (n == 0)
		return 0;
	void *buf = malloc(COPY_CHUNK);
	for (size_t i = 0; i < n; i++) {
		if (buf && resync_range(fs, &v[i], buf) == 0)
			fixed++;
		else
			diverged_note(fs, v[i].ino, v[i].off, v[i].len); /* next tick */
	}
	free(buf);
	free(v);
	if (fixed)
		rp_info("volume \"%s\": the copies of %zu range(s) that failed writes left "
			"different are the same again", fs->vol.name, fixed);
	return n - fixed;
}
