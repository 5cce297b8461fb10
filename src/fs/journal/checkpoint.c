/* Checkpoints: the whole namespace written as a fresh log of a new epoch;
 * the volume record then points at it and the old log's segments are freed.
 * A crash before the switch leaves the old log in charge (the new segments
 * leak, which fsck finds); after it, the new one. A record write that
 * fails may have landed: then nothing is logged until it is written for
 * sure (checkpoint_settle). */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define IMAGE_FLUSH_BYTES (512u * 1024)

#ifdef RP_TEST_HOOKS
/* Tests only (fstest 091): RP_TEST_CKPT_DOUBT=N reports this process's
 * Nth checkpoint record write failed after it landed, as a home copy that
 * applied it past the timeout would; compiled out of packages. */
static int test_doubt(int rc)
{
	static atomic_uint n;
	const char *v = getenv("RP_TEST_CKPT_DOUBT");
	if (rc == 0 && v && strtoul(v, NULL, 10) == atomic_fetch_add(&n, 1) + 1) {
		rp_warn("RP_TEST_CKPT_DOUBT: a checkpoint's record is reported failed after it "
			"was written (tests only)");
		return -ETIMEDOUT;
	}
	return rc;
}
#else
#define test_doubt(rc) (rc)
#endif

static int put(struct rp_fs *fs, struct rp_logw *w, struct rp_rec *r)
{
	r->flags = REC_F_END;
	int rc = log_append(fs, w, r);
	if (rc == 0 && w->pend_bytes >= IMAGE_FLUSH_BYTES)
		rc = log_flush(fs, w);
	return rc;
}

int checkpoint_write_image(struct rp_fs *fs, struct rp_logw *w)
{
	struct rp_rec r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.type = REC_NEXT_INO;
	r.ino = fs->next_ino;
	if ((rc = put(fs, w, &r)) < 0)
		return rc;
	/* the pools by identity, first: a later mount refuses a peer that
	 * holds another pool than the one the extents below point into */
	for (uint32_t id = 0; id < fs->ps->n; id++) {
		const struct rp_pool *p = &fs->ps->pools[id];
		bool known = fs->pool_ids && fs->pool_ids[id].known;
		/* a stale copy's server may hold a new, empty pool: the volume's
		 * data is still named by the pool it was on, until rebuilt (and
		 * filled: a read-only mount takes up the pool the records name,
		 * follow.c, and a crash in the middle of a fill must leave the
		 * next rebuild an empty pool, not a current one) */
		bool lost = p->stale || p->filling;
		const uint8_t *uuid = known && lost ? fs->pool_ids[id].uuid
				      : !lost && p->present && p->sb.magic ? p->sb.pool_uuid
				      : known ? fs->pool_ids[id].uuid : NULL;
		if (!uuid)
			continue;
		memset(&r, 0, sizeof(r));
		r.type = REC_POOL;
		r.ext.pool = id;
		r.value = uuid;
		r.value_len = 16;
		if ((rc = put(fs, w, &r)) < 0)
			return rc;
	}
	/* every inode first, so that directory entries find their targets */
	for (size_t b = 0; b < fs->it.nb; b++) {
		for (struct rp_inode *in = fs->it.b[b]; in; in = in->hnext) {
			fs_rec_attr(in, &r);
			if ((rc = put(fs, w, &r)) < 0)
				return rc;
			if (in->target) {
				memset(&r, 0, sizeof(r));
				r.type = REC_SYMLINK;
				r.ino = in->ino;
				r.name = in->target;
				r.name_len = (uint32_t)strlen(in->target);
				if ((rc = put(fs, w, &r)) < 0)
					return rc;
			}
			for (size_t i = 0; i < in->nxattrs; i++) {
				memset(&r, 0, sizeof(r));
				r.type = REC_XATTR_SET;
				r.ino = in->ino;
				r.name = in->xattrs[i].name;
				r.name_len = (uint32_t)strlen(in->xattrs[i].name);
				r.value = in->xattrs[i].value;
				r.value_len = (uint32_t)in->xattrs[i].len;
				if ((rc = put(fs, w, &r)) < 0)
					return rc;
			}
			for (size_t i = 0; i < in->map.n; i++) {
				memset(&r, 0, sizeof(r));
				r.type = REC_EXT_SET;
				r.ino = in->ino;
				r.fblock = in->map.v[i].fblock;
				r.ext = (struct rp_extent){ .pool = in->map.v[i].pool,
							    .block = in->map.v[i].pblock,
							    .count = in->map.v[i].count };
				if ((rc = put(fs, w, &r)) < 0)
					return rc;
			}
		}
	}
	for (size_t b = 0; b < fs->it.nb; b++) {
		for (struct rp_inode *in = fs->it.b[b]; in; in = in->hnext) {
			if (!in->dir)
				continue;
			for (size_t i = 0; i < in->dir->n; i++) {
				const struct rp_dirent *e = &in->dir->ents[i];
				if (!e->name)
					continue;
				memset(&r, 0, sizeof(r));
				r.type = REC_DIRENT_ADD;
				r.ino = in->ino;
				r.ino2 = e->ino;
				r.name = e->name;
				r.name_len = (uint32_t)strlen(e->name);
				if ((rc = put(fs, w, &r)) < 0)
					return rc;
			}
		}
	}
	/* last, so that a binary from before these records (which takes the
	 * first for the end of the log) still finds the namespace: the
	 * requests whose changes are done, for one the kernel sends again, and
	 * the write intent */
	if ((rc = fs_requests_write(fs, put, w)) < 0 || (rc = intent_write_image(fs, put, w)) < 0)
		return rc;
	return log_flush(fs, w);
}

bool checkpoint_due(const struct rp_fs *fs)
{
	/* cheap, for every commit: the log is more than twice the last image */
	return !fs->ro && fs->log.segs.n > 2 * (size_t)fs->log_segments_at_ckpt + 8;
}

/* Segments an image of the namespace would take now, roughly. */
static size_t image_segments(const struct rp_fs *fs)
{
	uint64_t bytes = 0;
	for (size_t b = 0; b < fs->it.nb; b++)
		for (const struct rp_inode *in = fs->it.b[b]; in; in = in->hnext) {
			bytes += 128 + in->map.n * 48 + (in->target ? 48 + strlen(in->target) : 0);
			for (size_t i = 0; i < in->nxattrs; i++)
				bytes += 48 + strlen(in->xattrs[i].name) + in->xattrs[i].len;
			if (in->dir)
				bytes += in->dir->live * 64;
		}
	return (size_t)(bytes / ((uint64_t)SEG_BLOCKS * fs->block_size)) + 1;
}

bool checkpoint_in_reserve(struct rp_fs *fs)
{
	/* The reserve holds the log at the last checkpoint plus slack of at
	 * least SLACK_MIN_SEGMENTS: growth by a quarter of that is safe. */
	return !fs->ro && fs->log.segs.n >= (size_t)fs->log_segments_at_ckpt + 4 &&
	       !space_available(fs, 0);
}

bool checkpoint_worthwhile(const struct rp_fs *fs)
{
	/* for the background thread: deletions shrink the image without
	 * growing the log much, so compare with what an image would take now */
	if (fs->ro || fs->log.segs.n <= 4)
		return false;
	return checkpoint_due(fs) || fs->log.segs.n > 2 * image_segments(fs) + 2;
}

/* The new log is in charge: the old one's segments are garbage once no
 * read-only mount is still reading them. */
static void checkpoint_switch(struct rp_fs *fs, struct rp_logw *nw, const struct rp_volrec *nv)
{
	for (size_t i = 0; i < fs->log.segs.n; i++)
		if (held_add(fs, &fs->log.segs.v[i], reader_pos(nw->epoch, 0)) < 0)
			rp_warn("volume \"%s\": a segment of the old log stays allocated",
				fs->vol.name);
	/* its spare goes with it (log.c) */
	if (fs->log.have_spare && held_add(fs, &fs->log.spare, reader_pos(nw->epoch, 0)) < 0)
		rp_warn("volume \"%s\": the old log's spare segment stays allocated", fs->vol.name);
	log_discard(fs, &fs->log, false);
	held_release(fs);
	fs->log = *nw;
	vol_update(&fs->vol, nv);
	fs->log_segments_at_ckpt = (uint32_t)nw->segs.n;
	rp_count(&fs->stats.checkpoints, 1);
	atomic_store(&fs->log_segments, nw->segs.n);
}

int checkpoint_settle(struct rp_fs *fs)
{
	if (!fs->ckpt_doubt.pending)
		return 0;
	/* each try may wait out an operation timeout under fs->mu */
	if (rp_now_ms() < fs->ckpt_doubt.retry_ms)
		return -EIO;
	/* the same sequence number, so the same slot: written again whole */
	struct rp_volrec nv = fs->ckpt_doubt.vol;
	int rc = vol_write(fs->ps, fs->slot, &nv);
	if (rc < 0) {
		rp_err("volume \"%s\": the record of a checkpoint still cannot be written "
		       "(%s): no change until it is", fs->vol.name, strerror(-rc));
		fs->ckpt_doubt.retry_ms = rp_now_ms() + 1000;
		return -EIO;
	}
	fs->ckpt_doubt.pending = false;
	rp_info("volume \"%s\": the checkpoint's record is written", fs->vol.name);
	checkpoint_switch(fs, &fs->ckpt_doubt.log, &nv);
	return 0;
}

void checkpoint_forget_doubt(struct rp_fs *fs)
{
	if (!fs->ckpt_doubt.pending)
		return;
	rp_warn("volume \"%s\": a checkpoint's record may or may not have been written; "
		"both logs stay allocated ('rdmapool fsck --repair' frees the one not in use)",
		fs->vol.name);
	log_discard(fs, &fs->ckpt_doubt.log, false);
	fs->ckpt_doubt.pending = false;
}

int checkpoint(struct rp_fs *fs)
{
	struct rp_logw nw;
	int rc;

	if (fs->ro)
		return 0;
	if (atomic_load(&fs->state_lost))
		return -EIO; /* (the state is not the log's: only a replay is) */
	if (fs->ckpt_doubt.pending)
		return checkpoint_settle(fs);
	if ((rc = log_flush(fs, &fs->log)) < 0)
		return rc;
	if ((rc = log_init(fs, &nw, fs->vol.epoch + 1)) < 0)
		return rc;
	if ((rc = checkpoint_write_image(fs, &nw)) < 0) {
		rp_err("checkpoint of volume \"%s\" failed: %s; keeping the current log",
		       fs->vol.name, strerror(-rc));
		log_discard(fs, &nw, true);
		return rc;
	}
	struct rp_volrec nv = fs->vol;
	nv.epoch = nw.epoch;
	nv.head = nw.segs.v[0];
	struct rp_volrec before = nv;
	if ((rc = test_doubt(vol_write(fs->ps, fs->slot, &nv))) < 0) {
		/* a home copy may hold it (a timeout, a copy that answered
		 * late): the old log and the new one say the same until a
		 * change is logged, so none is until the record is sure */
		rp_err("checkpoint of volume \"%s\": writing its record failed: %s; no change "
		       "until it is written", fs->vol.name, strerror(-rc));
		fs->ckpt_doubt.pending = true;
		fs->ckpt_doubt.log = nw;
		fs->ckpt_doubt.vol = before;
		fs->ckpt_doubt.retry_ms = 0;
		return rc;
	}
	checkpoint_switch(fs, &nw, &nv);
	rp_debug("volume \"%s\": checkpoint, epoch %llu, %zu segments", fs->vol.name,
		 (unsigned long long)fs->vol.epoch, nw.segs.n);
	return 0;
}
