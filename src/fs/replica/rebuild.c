/* Rebuild: bring the stale copies of a replicated volume up to date. The
 * home area (volume table) is brought in sync first; then the volume is
 * mounted read-write by the rebuild itself (it holds the lease, so nothing
 * writes the volume meanwhile) and, after replay and before the mount's new
 * log is written (which may need the stale pools' room), every extent with
 * a copy on a stale pool that answers again is claimed on that pool's
 * bitmap and copied from a current copy; the pool is then marked current
 * in the placement record. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/progress.h>

#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


struct rebuild {
	struct rp_fs *fs;
	uint32_t pool;        /* the stale pool being filled */
	bool fresh;           /* an empty pool in its place: nothing of ours on it */
	uint64_t done, total; /* blocks */
	uint64_t start_ms, last_ms;
	uint32_t rate_mib;    /* 0: no limit */
	FILE *out;
	bool publish;         /* online: progress in the volume slot, for the tool */
	struct rp_progress *pr; /* offline: the tool's progress display, and Ctrl-C */
	struct rp_extvec claimed; /* fresh pool: what we claimed, given back if we stop */
	bool unclaim_failed;  /* online: a claim could not be given back */
	bool piecewise;       /* online: the caller throttles, outside the file's lock */
	size_t held_from;     /* online: fs->held entries not copied yet */
	uint8_t *buf;
};

static void progress(struct rebuild *r, bool last)
{
	uint64_t now = rp_now_ms();
	uint64_t every = r->pr ? 200 : 1000; /* a bar moves smoothly; lines and the slot less often */
	if ((!r->out && !r->publish && !r->pr) || (!last && now - r->last_ms < every))
		return;
	r->last_ms = now;
	if (r->publish)
		vol_rebuild_progress(r->fs->ps, r->fs->slot, r->done, r->total);
	if (r->pr) {
		char what[32];
		snprintf(what, sizeof(what), "peer %u", r->pool);
		rp_progress_report(r->pr, what, r->done, r->total, r->fs->block_size);
		return;
	}
	if (!r->out)
		return;
	double s = (double)(now - r->start_ms) / 1000.0;
	double mib = (double)r->done * r->fs->block_size / (1 << 20);
	fprintf(r->out, "peer %u: %llu/%llu blocks (%.0f%%), %.1f MiB/s\n", r->pool,
		(unsigned long long)r->done, (unsigned long long)r->total,
		r->total ? 100.0 * (double)r->done / (double)r->total : 100.0, s > 0 ? mib / s : 0.0);
	fflush(r->out);
}

/* Keep under the rate: sleep until done bytes are due. */
static void throttle(struct rebuild *r)
{
	if (!r->rate_mib)
		return;
	double due_ms = (double)r->done * r->fs->block_size / ((double)r->rate_mib * (1 << 20)) * 1000;
	uint64_t el = rp_now_ms() - r->start_ms;
	if (due_ms > (double)el) {
		uint64_t ms = (uint64_t)due_ms - el;
		struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
}

/* Which copy of e to read: the first current one other than the target. */
static int source_copy(struct rebuild *r, const struct rp_extent *e, unsigned *k, bool *involved)
{
	uint32_t m[RP_MAX_REPLICAS];
	unsigned nm = rp_replica_members(r->fs->ps, e->pool, m);
	*involved = false;
	for (unsigned j = 0; j < nm; j++)
		*involved |= m[j] == r->pool;
	for (unsigned j = 0; j < nm; j++)
		if (m[j] != r->pool && !r->fs->ps->pools[m[j]].stale &&
		    !r->fs->ps->pools[m[j]].filling) {
			*k = j;
			return 0;
		}
	return -ENODATA;
}

/* Mark e's blocks allocated on the pool being filled (if it holds a copy). */
static int claim_extent(struct rebuild *r, const struct rp_extent *e)
{
	unsigned k;
	bool involved;
	source_copy(r, e, &k, &involved);
	if (!involved)
		return 0;
	int rc = rp_pool_claim_exact(r->fs->ps, r->pool, e->block, e->count, r->fresh);
	if (rc == 0 && r->fresh)
		rc = extvec_push(&r->claimed, e);
	if (rc < 0)
		rp_err("peer %u: cannot claim blocks %llu+%u for a copy (%s)%s", r->pool,
		       (unsigned long long)e->block, e->count, strerror(-rc),
		       rc == -EEXIST ? ": another volume took them on the new pool" : "");
	return rc;
}

/* Copy e's bytes from a current copy onto the pool being filled. */
static int copy_data(struct rebuild *r, const struct rp_extent *e)
{
	struct rp_poolset *ps = r->fs->ps;
	unsigned k;
	bool involved;
	int rc = source_copy(r, e, &k, &involved);
	if (!involved)
		return 0;
	if (rc < 0) {
		rp_err("peer %u block %llu+%u: no current copy to rebuild from", e->pool,
		       (unsigned long long)e->block, e->count);
		return -EIO;
	}
	const struct rp_pool_sb *sb = &ps->pools[e->pool].sb;
	uint64_t off = rp_block_offset(sb, e->block), left = (uint64_t)e->count * sb->block_size;
	while (left) {
		uint32_t n = (uint32_t)RP_MIN(left, (uint64_t)COPY_CHUNK);
		if ((rc = rp_pool_read_copy(ps, e->pool, k, off, r->buf, n)) < 0 ||
		    (rc = rp_pool_write(ps, r->pool, rp_replica_offset(ps, e->pool, r->pool, off),
					r->buf, n)) < 0)
			return rc;
		off += n;
		left -= n;
		r->done += n / sb->block_size;
		if (!r->piecewise)
			throttle(r);
		progress(r, false);
		if (rp_progress_stopped(r->pr))
			return -EINTR; /* the pool stays stale */
	}
	return 0;
}

static int copy_extent(struct rebuild *r, const struct rp_extent *e)
{
	int rc = claim_extent(r, e);
	return rc < 0 ? rc : copy_data(r, e);
}

/* Every extent the volume holds: file data, log segments, the log's spare,
 * frees still held for read-only mounts and blocks claimed ahead. */
/* Every extent that is not a file's: the log, and blocks on their way. */
static int each_other_extent(struct rp_fs *fs,
			     int (*fn)(struct rebuild *, const struct rp_extent *), struct rebuild *r)
{
	int rc = 0;
	for (size_t i = 0; i < fs->log.segs.n && rc == 0; i++)
		rc = fn(r, &fs->log.segs.v[i]);
	if (rc == 0 && fs->log.have_spare)
		rc = fn(r, &fs->log.spare);
	for (size_t i = 0; i < fs->held.n && rc == 0; i++)
		rc = fn(r, &fs->held.v[i].e);
	for (size_t i = 0; i < fs->deferred.n && rc == 0; i++)
		rc = fn(r, &fs->deferred.v[i]);
	for (size_t i = 0; fs->prealloc.by_peer && i < fs->ps->n && rc == 0; i++)
		if (fs->prealloc.by_peer[i].count)
			rc = fn(r, &fs->prealloc.by_peer[i]);
	return rc;
}

static int each_extent(struct rp_fs *fs, int (*fn)(struct rebuild *, const struct rp_extent *),
		       struct rebuild *r)
{
	int rc = 0;
	for (size_t b = 0; b < fs->it.nb; b++)
		for (struct rp_inode *in = fs->it.b[b]; in && rc == 0; in = in->hnext)
			for (size_t i = 0; i < in->map.n && rc == 0; i++) {
				struct rp_extent e = { .pool = in->map.v[i].pool,
						       .block = in->map.v[i].pblock,
						       .count = in->map.v[i].count };
				rc = fn(r, &e);
			}
	return rc ? rc : each_other_extent(fs, fn, r);
}

static int count_extent(struct rebuild *r, const struct rp_extent *e)
{
	unsigned k;
	bool involved;
	source_copy(r, e, &k, &involved);
	if (involved)
		r->total += e->count;
	return 0;
}

/* A rebuild onto an empty pool that stopped: the blocks it claimed there go
 * back, so that the next rebuild finds the pool as empty as this one did. */
static void give_back(struct rebuild *r)
{
	for (size_t i = 0; i < r->claimed.n; i++)
		if (rp_pool_unclaim_exact(r->fs->ps, r->pool, r->claimed.v[i].block,
					  r->claimed.v[i].count) < 0) {
			rp_warn("peer %u: could not give back the blocks a stopped rebuild claimed; "
				"'rdmapool fsck --repair' frees them", r->pool);
			break;
		}
	extvec_free(&r->claimed);
}

/* Fill one stale pool, then mark it current (at mount, before the new log). */
static int rebuild_pool(struct rebuild *r)
{
	struct rp_fs *fs = r->fs;
	struct rp_pool *p = &fs->ps->pools[r->pool];
	r->fresh = fs->pool_ids && fs->pool_ids[r->pool].known &&
		   memcmp(fs->pool_ids[r->pool].uuid, p->sb.pool_uuid, 16) != 0;
	r->done = r->total = 0;
	r->start_ms = r->last_ms = rp_now_ms();
	each_extent(fs, count_extent, r);
	if (r->out)
		fprintf(r->out, "peer %u: %s, %llu blocks to copy\n", r->pool,
			r->fresh ? "a new, empty pool" : "back with its old contents",
			(unsigned long long)r->total);
	int rc = each_extent(fs, copy_extent, r);
	progress(r, true);
	if (rc < 0) {
		give_back(r);
		return rc;
	}
	extvec_free(&r->claimed);
	/* current from now on: written with the others, and readable */
	int i = place_ring_index(&fs->place.vol, r->pool);
	struct rp_volplace next = fs->place.vol;
	next.stale &= ~(1u << i);
	if ((rc = place_write(fs->ps, fs->slot, &next, false)) < 0)
		return rc;
	rp_mutex_lock(&fs->place.mu, RP_LK_PLACE);
	fs->place.vol = next;
	rp_mutex_unlock(&fs->place.mu);
	p->stale = false;
	if (fs->pool_ids) {
		fs->pool_ids[r->pool].known = true;
		memcpy(fs->pool_ids[r->pool].uuid, p->sb.pool_uuid, 16);
	}
	/* the checkpoint that follows names the new pool (REC_POOL) */
	return 0;
}

/* One extent: the first current copy onto the other current ones. */
static int resync_extent(struct rebuild *r, const struct rp_extent *e)
{
	struct rp_poolset *ps = r->fs->ps;
	uint32_t m[RP_MAX_REPLICAS];
	unsigned nm = rp_replica_members(ps, e->pool, m), src = nm;
	/* never from a pool being filled: what is not copied yet is not there */
	for (unsigned k = 0; k < nm && src == nm; k++)
		if (!ps->pools[m[k]].stale && !ps->pools[m[k]].filling)
			src = k;
	const struct rp_pool_sb *sb = &ps->pools[e->pool].sb;
	uint64_t off = rp_block_offset(sb, e->block), left = (uint64_t)e->count * sb->block_size;
	while (src < nm && left) {
		uint32_t n = (uint32_t)RP_MIN(left, (uint64_t)COPY_CHUNK);
		int rc = rp_pool_read_copy(ps, e->pool, src, off, r->buf, n);
		for (unsigned k = 0; rc == 0 && k < nm; k++) {
			if (k == src)
				continue;
			/* (counted: a give-back of a stopped fill waits for it) */
			int wrc = rp_pool_write_copy(ps, m[k], rp_replica_offset(ps, e->pool, m[k], off),
						     r->buf, n);
			if (wrc == -ESTALE && ps->pools[m[k]].stale)
				continue;
			/* a copy that cannot be written is recorded stale, as in writes */
			if (wrc < 0 && (rc = ps->place.lost(ps->place.lost_arg, m[k], wrc)) == 0)
				ps->pools[m[k]].stale = true;
		}
		if (rc < 0)
			return rc;
		off += n;
		left -= n;
		r->done += n / sb->block_size;
	}
	return 0;
}

int copies_resync_extent(struct rp_fs *fs, const struct rp_extent *e, void *buf)
{
	struct rebuild r = { .fs = fs, .buf = buf };
	return resync_extent(&r, e);
}

/* The parts of one file extent in chunks the write intent names (all of
 * it when everything is resynced). */
static int resync_file_extent(struct rebuild *r, uint64_t ino, const struct rp_fext *x,
			      bool everything)
{
	const uint64_t B = r->fs->block_size;
	const uint64_t per = RP_MAX(INTENT_CHUNK_BYTES / B, 1); /* blocks per chunk */
	uint64_t fb = x->fblock, end = x->fblock + x->count;
	int rc = 0;
	while (fb < end && rc == 0) {
		uint64_t next = everything ? end : RP_MIN(end, (fb / per + 1) * per);
		if (everything || intent_dirty(r->fs, ino, fb * B, (next - fb) * B)) {
			struct rp_extent e = { .pool = x->pool, .block = x->pblock + (fb - x->fblock),
					       .count = (uint32_t)(next - fb) };
			rc = resync_extent(r, &e);
		}
		fb = next;
	}
	return rc;
}

int copies_resync(struct rp_fs *fs, bool everything, bool with_log)
{
	struct rebuild r = { .fs = fs, .start_ms = rp_now_ms() };
	r.buf = malloc(COPY_CHUNK);
	int rc = r.buf ? 0 : -ENOMEM;
	for (size_t b = 0; b < fs->it.nb && rc == 0; b++)
		for (struct rp_inode *in = fs->it.b[b]; in && rc == 0; in = in->hnext)
			for (size_t i = 0; i < in->map.n && rc == 0; i++)
				rc = resync_file_extent(&r, in->ino, &in->map.v[i], everything);
	uint64_t files = r.done;
	if (rc == 0 && with_log)
		rc = each_other_extent(fs, resync_extent, &r);
	free(r.buf);
	if (rc == 0)
		rp_info("volume \"%s\": copies made the same where the last writer may have left "
			"them different (%s): %llu blocks of files, %llu blocks of its log and free "
			"lists, in %llu ms", fs->vol.name,
			everything ? "everywhere: its log kept no write intent" : "its write intent",
			(unsigned long long)files, (unsigned long long)(r.done - files),
			(unsigned long long)(rp_now_ms() - r.start_ms));
	else
		rp_err("volume \"%s\": making the copies the same after a crash: %s", fs->vol.name,
		       strerror(-rc));
	return rc;
}

/* A pool back with its old contents still marks blocks freed while it was
 * away: fsck's leak pass gives them back (when no volume is mounted
 * read-write; else 'rdmapool fsck --repair' later). */
static void free_missed_frees(struct rp_poolset *ps, FILE *out)
{
	struct rp_fsck_report rep;
	char e[512] = "";
	FILE *quiet = fopen("/dev/null", "w");
	int rc = quiet ? rp_fs_fsck(ps, true, quiet, &rep, NULL, e, sizeof(e)) : -errno;
	if (quiet)
		fclose(quiet);
	if (!out)
		return;
	if (rc == 0)
		fprintf(out, "%llu blocks freed while a pool was away given back\n",
			(unsigned long long)rep.repaired);
	else
		fprintf(out, "blocks freed while a pool was away are still marked on it (%s): "
			"run 'rdmapool fsck --repair' later\n", e[0] ? e : strerror(-rc));
}

int rebuild_stale(struct rp_fs *fs, uint32_t rate_mib, FILE *out, struct rp_progress *pr,
		  char *err, size_t errlen)
{
	struct rebuild r = { .fs = fs, .rate_mib = rate_mib, .out = out, .pr = pr };
	int rc = 0;
	r.buf = malloc(COPY_CHUNK);
	if (!r.buf)
		return -ENOMEM;
	for (uint32_t i = 0; rc == 0 && i < fs->place.vol.nring; i++) {
		r.pool = fs->place.vol.ring[i];
		if (!(fs->place.vol.stale & (1u << i)))
			continue;
		if (rp_pool_ensure(fs->ps, r.pool) < 0) {
			if (out)
				fprintf(out, "peer %u: still unreachable, not rebuilt\n", r.pool);
			fs->rebuild.left++;
			continue;
		}
		if ((rc = rebuild_pool(&r)) == -EINTR)
			snprintf(err, errlen, "interrupted: peer %u stays stale (its copy is not read "
				 "until a rebuild finishes)", r.pool);
		else if (rc < 0)
			snprintf(err, errlen, "rebuilding peer %u: %s", r.pool, strerror(-rc));
		fs->rebuild.done++;
		fs->rebuild.returned += rc == 0 && !r.fresh;
	}
	free(r.buf);
	return rc;
}

/* Post a request in the volume's rebuild word: 0 is none. A word left DONE
 * or FAILED is a finished request its requester never cleared (it died, or
 * its clearing CAS failed): taken over, or no rebuild could ever be asked
 * again. One still ASKED is another requester's: waited for while the
 * mount answers it. */
static int rebuild_ask(struct rp_poolset *ps, int slot, uint64_t asked, char *err,
		       size_t errlen)
{
	uint64_t w = 0, t0 = rp_now_ms();
	for (;;) {
		int rc = vol_rebuild_swap(ps, slot, w, asked);
		if (rc == 0)
			return 0;
		if (rc == -EAGAIN)
			rc = vol_rebuild_word(ps, slot, &w);
		/* another requester's, still asked: wait for the mount's answer,
		 * never swap it away */
		while (rc == 0 && (w & 0xff) == REBUILD_ASKED) {
			if (rp_now_ms() - t0 > 60000) {
				snprintf(err, errlen, "another rebuild of this volume is under way "
					 "(asked over 60 s ago and not answered yet)");
				return -EBUSY;
			}
			struct timespec ts = { 0, 500000000L };
			nanosleep(&ts, NULL);
			rc = vol_rebuild_word(ps, slot, &w);
		}
		if (rc < 0) {
			snprintf(err, errlen, "asking the mount to rebuild: %s", strerror(-rc));
			return rc;
		}
		/* 0, or an answer nobody cleared: swap from that */
	}
}

/* The volume is mounted read-write: ask its mounter to rebuild, and follow. */
static int rebuild_by_holder(struct rp_poolset *ps, int slot, const char *holder,
			     uint32_t rate_mib, FILE *out, struct rp_progress *pr, char *err,
			     size_t errlen)
{
	uint32_t id = 0;
	while (id == 0)
		rp_random_bytes(&id, sizeof(id));
	uint64_t asked = (uint64_t)id << 32 | (uint64_t)RP_MIN(rate_mib, 0xffffffu) << 8 | REBUILD_ASKED;
	uint64_t w = 0, done = 0, total = 0;
	int rc = rebuild_ask(ps, slot, asked, err, errlen);
	if (rc < 0)
		return rc;
	vol_rebuild_progress(ps, slot, 0, 0);
	if (out)
		fprintf(out, "the volume is mounted read-write by %s: it rebuilds while serving\n",
			holder);
	uint64_t last_change = rp_now_ms(), last_done = UINT64_MAX;
	for (;;) {
		struct timespec ts = { 0, 500000000L };
		nanosleep(&ts, NULL);
		if ((rc = vol_rebuild_word(ps, slot, &w)) < 0) {
			snprintf(err, errlen, "following the mount's rebuild: the volume table: %s "
				 "('rdmapool status' shows how far it is)", strerror(-rc));
			return rc; /* the request stays: the mount answers it */
		}
		if (rp_progress_stopped(pr)) {
			snprintf(err, errlen, "stopped following: the mount goes on rebuilding "
				 "('rdmapool status' shows how far it is)");
			return -EINTR;
		}
		if (vol_rebuild_read_progress(ps, slot, &done, &total) == 0 && done != last_done) {
			last_done = done;
			last_change = rp_now_ms();
			if (pr && total)
				rp_progress_report(pr, "rebuild", done, total, 0);
			else if (out && total) {
				fprintf(out, "%llu/%llu blocks (%.0f%%)\n", (unsigned long long)done,
					(unsigned long long)total, 100.0 * (double)done / (double)total);
				fflush(out);
			}
		}
		if (w != asked)
			break;
		if (rp_now_ms() - last_change > 60000) {
			snprintf(err, errlen, "the mounter (%s) has not acted on the request for 60 s "
				 "(an rdmapoolfs without online rebuild?): unmount and rebuild", holder);
			vol_rebuild_swap(ps, slot, asked, 0);
			return -ETIMEDOUT;
		}
	}
	if ((w >> 32) == id) /* answered: cleared (else rebuild_ask takes it over later) */
		vol_rebuild_swap(ps, slot, w, 0);
	if ((w >> 32) != id) {
		snprintf(err, errlen, "another 'rdmapool rebuild' took the request over before "
			 "its answer was read ('rdmapool status' shows what is still stale)");
		rc = -EAGAIN;
	} else if ((w & 0xff) != REBUILD_DONE) {
		snprintf(err, errlen, "the mounter could not rebuild every stale peer (see its log; "
			 "'rdmapool status' shows which are still stale)");
		rc = -EAGAIN;
	}
	if (rc == 0 && out)
		fprintf(out, "all copies current\n");
	return rc;
}

int rp_fs_rebuild(struct rp_poolset *ps, const char *volume, uint32_t rate_mib, FILE *out,
		  struct rp_progress *pr, char *err, size_t errlen)
{
	struct rp_fs *fs;
	int slot;
	struct rp_volrec vol;
	char holder[64];
	struct rp_mount_opts mo = { .volume = volume, .holder = "rdmapool rebuild", .rebuild = true,
				    .rebuild_rate_mib = rate_mib, .progress = out,
				    .rebuild_progress = pr };
	int rc = vol_find(ps, volume, &slot, &vol);
	if (rc < 0) {
		snprintf(err, errlen, rc == -ENOENT ? "no volume \"%s\"" : "reading the volume table: %s",
			 rc == -ENOENT ? volume : strerror(-rc));
		return rc;
	}
	/* a live holder resyncs the volume table's copies itself (home.c) */
	if (lease_probe(ps, slot, vol_lease_period(&vol), holder, sizeof(holder)) > 0)
		return rebuild_by_holder(ps, slot, holder, rate_mib, out, pr, err, errlen);
	if ((rc = home_resync(ps, out)) < 0) {
		snprintf(err, errlen, "bringing the volume table's copies in sync: %s", strerror(-rc));
		return rc;
	}
	if ((rc = rp_fs_mount(ps, &mo, &fs, err, errlen)) < 0)
		return rc;
	unsigned left = fs->rebuild.left, returned = fs->rebuild.returned;
	if (out)
		fprintf(out, "volume \"%s\": %u peer(s) rebuilt%s\n", fs->vol.name, fs->rebuild.done,
			left ? ", some still unreachable (still degraded)" : ", all copies current");
	if ((rc = rp_fs_unmount(fs)) < 0) {
		snprintf(err, errlen, "unmounting after the rebuild: %s", strerror(-rc));
		return rc;
	}
	if (returned)
		free_missed_frees(ps, out);
	if (left) {
		snprintf(err, errlen, "%u stale peer(s) still unreachable: the volume stays degraded",
			 left);
		return -EAGAIN;
	}
	return 0;
}

/* ---- online: the read-write mount rebuilds while it serves ----
 * The pool is first made "filling": every write reaches it from then on,
 * nothing reads it or allocates on it. Under fs->mu (no map, log or free
 * changes meanwhile) every block of the volume with a copy there is claimed
 * on its bitmap. Then each file's blocks are copied a piece at a time under
 * that file's I/O lock (no write to it can interleave with the copy of a
 * piece), the log's under fs->mu. A write that fails on the pool makes it stale again
 * and the rebuild stops; else the pool is marked current. */

static int online_claim(struct rebuild *r)
{
	struct rp_fs *fs = r->fs;
	struct rp_pool *p = &fs->ps->pools[r->pool];
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	rp_mutex_lock(&fs->prealloc.mu, RP_LK_PREALLOC);
	p->filling = true;
	p->stale = false;
	r->total = 0;
	each_extent(fs, count_extent, r);
	int rc = each_extent(fs, claim_extent, r);
	if (rc < 0)
		give_back(r); /* (under the locks: none of it was freed meanwhile) */
	extvec_free(&r->claimed); /* (frees reach a filling pool from now on) */
	rp_mutex_unlock(&fs->prealloc.mu);
	rp_mutex_unlock(&fs->mu);
	return rc;
}

static int unclaim_extent(struct rebuild *r, const struct rp_extent *e)
{
	unsigned k;
	bool involved;
	source_copy(r, e, &k, &involved);
	if (involved && rp_pool_unclaim_exact(r->fs->ps, r->pool, e->block, e->count) < 0)
		r->unclaim_failed = true;
	return 0;
}

/* An online fill of an empty pool that stopped after its claims, the pool
 * stale again and not recorded current: what it claimed goes back, or the
 * next rebuild would refuse its own claims as another volume's (the records
 * still name the old pool) and the pool stay stale for good. The claims
 * are the extents still listed: each was claimed and is not freed while
 * listed, and none listed since has a copy there (nothing is allocated on
 * a filling or stale pool). Not before every write that found the pool
 * current has ended: one that chose it and then waited for a reconnect
 * would land on a block given back, maybe another volume's by then. */
static void online_give_back(struct rebuild *r)
{
	struct rp_fs *fs = r->fs;
	r->unclaim_failed = false;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	rp_mutex_lock(&fs->prealloc.mu, RP_LK_PREALLOC);
	/* stale under the locks the lists change under: a free after this
	 * skips the pool and drops its extent from the lists, one before it
	 * reached the pool; either way what is listed now (or later) is
	 * claimed there */
	fs->ps->pools[r->pool].stale = true;
	fs->ps->pools[r->pool].filling = false;
	rp_mutex_unlock(&fs->prealloc.mu);
	rp_mutex_unlock(&fs->mu);
	/* what one counted write may take: per copy a wait behind another
	 * thread's reconnect and its own (a connect, the superblock and the
	 * count each), the lease guard asked again up to three times, and
	 * two posts */
	uint64_t c = fs->ps->connect_timeout_ms, o = fs->ps->op_timeout_ms;
	uint64_t bound = 2ull * fs->ps->place.replicas * (c + 2 * o) +
			 3 * (fs->lease.held.period_ms + 2 * o) + 2 * o + 1000;
	uint32_t under_way = atomic_load(&fs->ps->pools[r->pool].writes_in);
	if (under_way)
		rp_info("peer %u: waiting for %u write(s) to it under way before giving back the "
			"blocks the stopped rebuild claimed", r->pool, under_way);
	if (rp_pool_writes_drain(fs->ps, r->pool, bound) < 0) {
		rp_warn("peer %u: a write to it is still under way after %llu ms: the blocks the "
			"stopped rebuild claimed stay allocated ('rdmapool fsck --repair' frees them)",
			r->pool, (unsigned long long)bound);
		return;
	}
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	rp_mutex_lock(&fs->prealloc.mu, RP_LK_PREALLOC);
	each_extent(fs, unclaim_extent, r);
	rp_mutex_unlock(&fs->prealloc.mu);
	rp_mutex_unlock(&fs->mu);
	if (r->unclaim_failed)
		rp_warn("peer %u: could not give back every block the stopped rebuild claimed; "
			"'rdmapool fsck --repair' frees them", r->pool);
	else
		rp_info("peer %u: the blocks the stopped rebuild claimed are given back", r->pool);
}

/* One file, a piece (COPY_CHUNK) at a time under its I/O lock: its reads
 * and writes wait for one piece, not for the whole copy, and the rate's
 * sleeps fall between pieces. Each piece is taken from the file's map as it
 * is then, under the lock (a cursor through the file's blocks, not a
 * snapshot): what a truncate or a punch unmapped is not copied, what the
 * file still maps is, and blocks mapped since are either on copies that
 * avoid the filling pool or were written to it (writes reach it). The file
 * is pinned so that it is not freed between pieces. */
static int online_copy_inode(struct rebuild *r, uint64_t ino)
{
	struct rp_fs *fs = r->fs;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = itable_get(&fs->it, ino);
	if (!in || !S_ISREG(in->mode) || !in->map.n) {
		rp_mutex_unlock(&fs->mu);
		return 0;
	}
	in->pins++;
	rp_mutex_unlock(&fs->mu);
	const uint64_t step = RP_MAX(COPY_CHUNK / fs->block_size, 1u);
	uint64_t fb = 0;
	int rc = 0;
	for (bool more = true; more && rc == 0;) {
		if (atomic_load(&fs->stop) || atomic_load(&fs->lease.lost)) {
			rc = -ECANCELED;
			break;
		}
		struct rp_extent e = { 0 };
		rp_rwlock_wrlock(&in->io, RP_LK_INODE_IO);
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		size_t i = emap_find(&in->map, fb); /* the first run ending past fb */
		more = i < in->map.n;
		if (more) {
			const struct rp_fext *x = &in->map.v[i];
			fb = RP_MAX(fb, x->fblock);
			uint64_t n = RP_MIN(step, x->fblock + x->count - fb);
			e = (struct rp_extent){ .pool = x->pool, .block = x->pblock + (fb - x->fblock),
						.count = (uint32_t)n };
			fb += n;
		}
		rp_mutex_unlock(&fs->mu);
		if (more)
			rc = copy_data(r, &e);
		rp_rwlock_unlock(&in->io);
		throttle(r);
	}
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	in->pins--;
	fs_maybe_purge(fs, in);
	rp_mutex_unlock(&fs->mu);
	return rc;
}

/* Blocks freed that read-only mounts may still read (held for them until
 * they are past the freeing record, or deferred until the next flush): a
 * reader that lags reads them from this pool once it is current, so they
 * are copied too, after the files (one freed before its file's copy
 * reached it is among them; one freed later was copied with its file).
 * None goes back to the pools meanwhile, so none is reused and written
 * under the copy: fs->rebuild.holding stays set until online_copy has
 * copied, under fs->mu with the log, what joined since (r->held_from). */
static int online_copy_held(struct rebuild *r)
{
	struct rp_fs *fs = r->fs;
	struct rp_extvec v = { 0 };
	size_t from = 0; /* held only grows while none is released */
	int rc = 0;
	/* rounds until none was added meanwhile (a checkpoint adds the old
	 * log's segments; deferred frees join at each flush) */
	for (int round = 0; rc == 0 && round < 4; round++) {
		v.n = 0;
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		fs->rebuild.holding = true;
		for (size_t i = from; i < fs->held.n && rc == 0; i++)
			rc = extvec_push(&v, &fs->held.v[i].e);
		for (size_t i = 0; i < fs->deferred.n && rc == 0; i++)
			rc = extvec_push(&v, &fs->deferred.v[i]);
		from = fs->held.n;
		rp_mutex_unlock(&fs->mu);
		r->held_from = from;
		if (!v.n)
			break;
		for (size_t i = 0; i < v.n && rc == 0; i++) {
			rc = atomic_load(&fs->stop) || atomic_load(&fs->lease.lost)
				     ? -ECANCELED
				     : copy_data(r, &v.v[i]);
			throttle(r);
		}
	}
	extvec_free(&v);
	return rc;
}

static int online_copy(struct rebuild *r)
{
	struct rp_fs *fs = r->fs;
	struct rp_extvec inos = { 0 };
	int rc = 0;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	for (size_t b = 0; b < fs->it.nb && rc == 0; b++)
		for (struct rp_inode *in = fs->it.b[b]; in && rc == 0; in = in->hnext)
			if (S_ISREG(in->mode) && in->map.n)
				rc = extvec_push(&inos, &(struct rp_extent){ .block = in->ino });
	rp_mutex_unlock(&fs->mu);
	for (size_t i = 0; i < inos.n && rc == 0; i++) {
		if (atomic_load(&fs->stop))
			rc = -ECANCELED;
		else
			rc = online_copy_inode(r, inos.v[i].block);
	}
	extvec_free(&inos);
	if (rc == 0)
		rc = online_copy_held(r);
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	/* blocks skipped as unmapped are so for good only once the records
	 * saying so are durable: before the pool is recorded current (a crash
	 * would map them again, on a pool that never got them) */
	if (rc == 0)
		rc = log_flush(fs, &fs->log);
	/* the log: no flush meanwhile; and what was freed since the held
	 * copy's last round (the flush just made the deferred ones held) */
	for (size_t i = 0; i < fs->log.segs.n && rc == 0; i++)
		rc = copy_data(r, &fs->log.segs.v[i]);
	if (rc == 0 && fs->log.have_spare) /* zeroed: the log continues there */
		rc = copy_data(r, &fs->log.spare);
	for (size_t i = r->held_from; i < fs->held.n && rc == 0 && fs->rebuild.holding; i++)
		rc = copy_data(r, &fs->held.v[i].e);
	fs->rebuild.holding = false;
	rp_mutex_unlock(&fs->mu);
	return rc;
}

/* Mark the pool current, in the placement record first. */
static int online_finish(struct rebuild *r)
{
	struct rp_fs *fs = r->fs;
	struct rp_pool *p = &fs->ps->pools[r->pool];
	int rc;
	rp_mutex_lock(&fs->place.mu, RP_LK_PLACE);
	if (p->stale) { /* a write to it failed meanwhile (set under place.mu) */
		rp_mutex_unlock(&fs->place.mu);
		return -EIO;
	}
	int i = place_ring_index(&fs->place.vol, r->pool);
	struct rp_volplace next = fs->place.vol;
	next.stale &= ~(1u << i);
	rc = lease_guard(fs);
	if (rc == 0)
		rc = place_write(fs->ps, fs->slot, &next, false);
	if (rc == 0)
		fs->place.vol = next;
	rp_mutex_unlock(&fs->place.mu);
	if (rc < 0)
		return rc;
	p->filling = false;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	if (fs->pool_ids) {
		fs->pool_ids[r->pool].known = true;
		memcpy(fs->pool_ids[r->pool].uuid, p->sb.pool_uuid, 16);
	}
	/* a new log that names the pool it holds now from its first records
	 * (and a volume record whose head_tag matches): a replay never meets
	 * the old pool's uuid before records written since */
	rc = checkpoint(fs);
	rp_mutex_unlock(&fs->mu);
	/* current again: the frees it missed while away (its old contents
	 * still mark those blocks), given back now rather than left to fsck */
	if (rc == 0 && !r->fresh)
		rp_pool_missed_flush(fs->ps);
	return rc;
}

static int online_pool(struct rebuild *r)
{
	struct rp_fs *fs = r->fs;
	struct rp_pool *p = &fs->ps->pools[r->pool];
	char err[320];
	uint8_t before[16];
	bool knew = p->sb.magic != 0;
	memcpy(before, p->sb.pool_uuid, 16);
	/* under fs->mu: adopting rewrites the pool's identity (its uuid),
	 * which checkpoints and the records of pools read under it */
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	/* a checkpoint in doubt first: the rebuild claims and copies the log
	 * in charge, which until then may be either */
	int rc = checkpoint_settle(fs);
	if (rc < 0)
		snprintf(err, sizeof(err), "a checkpoint's record is still in doubt");
	else
		rc = rp_pool_adopt(fs->ps, r->pool, NULL, err, sizeof(err));
	/* an empty pool in the old one's place: nothing of ours is on it yet.
	 * Told by the uuid the records name, as rebuild_pool does: one
	 * replaced before this mount opened the pools is the one it knew, and
	 * taken for ours it had its bits, another volume's since, accepted
	 * as this volume's and its blocks overwritten by the copy (fstest 102) */
	bool named = fs->pool_ids && fs->pool_ids[r->pool].known;
	r->fresh = named ? memcmp(fs->pool_ids[r->pool].uuid, p->sb.pool_uuid, 16) != 0
			 : knew && memcmp(before, p->sb.pool_uuid, 16) != 0;
	rp_mutex_unlock(&fs->mu);
	if (rc < 0) {
		rp_warn("volume \"%s\": rebuild: %s", fs->vol.name, err);
		return rc;
	}
	r->done = 0;
	r->start_ms = r->last_ms = rp_now_ms();
	rp_info("volume \"%s\": rebuilding peer %u (%s) while mounted", fs->vol.name, r->pool,
		r->fresh ? "a new, empty pool" : "back with its old contents");
	rc = online_claim(r);
	bool claimed = rc == 0;
	if (rc == 0)
		rc = online_copy(r);
	progress(r, true);
	if (rc == 0)
		rc = online_finish(r);
	if (rc < 0) {
		/* stale before filling ends: in between, a reader would take the
		 * half-filled pool for a current copy. If online_finish had
		 * recorded it current already (the checkpoint after failed), the
		 * record is made stale again, as a failed write does; when that
		 * cannot be (its last current copy of other blocks) the pool, filled
		 * whole by then, stays current. */
		struct rp_volplace pl = place_snapshot(fs);
		int ri = place_ring_index(&pl, r->pool);
		bool recorded_current = ri >= 0 && !(pl.stale & (1u << ri));
		if (claimed && r->fresh && !recorded_current) {
			online_give_back(r); /* (stale first, under the lists' locks) */
		} else {
			if (!recorded_current ||
			    fs->ps->place.lost(fs->ps->place.lost_arg, r->pool, rc) == 0)
				p->stale = true;
			p->filling = false;
		}
		rp_err("volume \"%s\": rebuilding peer %u failed: %s", fs->vol.name, r->pool,
		       strerror(-rc));
	} else {
		rp_info("volume \"%s\": peer %u rebuilt while mounted: %llu blocks in %llu ms",
			fs->vol.name, r->pool, (unsigned long long)r->done,
			(unsigned long long)(rp_now_ms() - r->start_ms));
	}
	return rc;
}

static void rebuild_run(struct rp_fs *fs, uint64_t w);

static void *rebuild_main(void *arg)
{
	struct rp_fs *fs = arg;
	rebuild_run(fs, fs->rebuild.word);
	atomic_store(&fs->rebuild.busy, false);
	return NULL;
}

void rebuild_join(struct rp_fs *fs)
{
	if (fs->rebuild.started)
		pthread_join(fs->rebuild.thread, NULL);
	fs->rebuild.started = false;
}

void rebuild_poll(struct rp_fs *fs)
{
	uint64_t w;
	if (fs->rebuild.started) {
		if (atomic_load(&fs->rebuild.busy))
			return; /* the request is being served */
		rebuild_join(fs);
	}
	/* unreplicated volumes too: the request also resyncs the volume table */
	if (fs->ro || atomic_load(&fs->lease.lost) || vol_rebuild_word(fs->ps, fs->slot, &w) < 0 ||
	    (w & 0xff) != REBUILD_ASKED)
		return;
	fs->rebuild.word = w;
	atomic_store(&fs->rebuild.busy, true);
	if (pthread_create(&fs->rebuild.thread, NULL, rebuild_main, fs) == 0) {
		fs->rebuild.started = true;
		return;
	}
	atomic_store(&fs->rebuild.busy, false);
	rebuild_run(fs, w); /* no thread to be had: here, as before */
}

static void rebuild_run(struct rp_fs *fs, uint64_t w)
{
	struct rebuild r = { .fs = fs, .publish = true, .piecewise = true,
			     .rate_mib = (uint32_t)(w >> 8) & 0xffffff };
	unsigned left = 0;
	int rc = home_resync(fs->ps, NULL);
	if (rc < 0)
		rp_warn("volume \"%s\": rebuild: bringing the volume table's copies in sync: %s",
			fs->vol.name, strerror(-rc));
	r.buf = malloc(COPY_CHUNK);
	if (!r.buf)
		rc = -ENOMEM;
	struct rp_volplace pl = place_snapshot(fs); /* stale marks come and go meanwhile */
	for (uint32_t i = 0; rc == 0 && i < pl.nring && !atomic_load(&fs->stop); i++) {
		r.pool = pl.ring[i];
		if (pl.stale & (1u << i))
			left += online_pool(&r) < 0;
	}
	free(r.buf);
	/* again, now that the pools rebuilt are connected: an empty
	 * replacement is connected only by its rebuild, and until its home
	 * copy joins, the copies in sync may be too few for a majority */
	int hrc;
	if (rc == 0 && pl.stale && !atomic_load(&fs->stop) && (hrc = home_resync(fs->ps, NULL)) < 0)
		rp_warn("volume \"%s\": rebuild: bringing the volume table's copies in sync: %s "
			"(the data copies are rebuilt)", fs->vol.name, strerror(-hrc));
	uint64_t state = rc == 0 && left == 0 ? REBUILD_DONE : REBUILD_FAILED;
	vol_rebuild_swap(fs->ps, fs->slot, w, (w & ~0xffull) | state);
}
