/* Rebuild: bring the stale copies of a replicated volume up to date. The
 * volume is mounted read-write by the rebuild itself (it holds the lease,
 * so nothing writes the volume meanwhile); every extent with a copy on a
 * stale pool that answers again is claimed on that pool's bitmap and copied
 * from a current copy; then the pool is marked current in the placement
 * record. The home area (volume table) is brought in sync first. */
#include "config.h"
#include "fs_impl.h"

#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COPY_CHUNK (1u << 20)

struct rebuild {
	struct rp_fs *fs;
	uint32_t pool;        /* the stale pool being filled */
	bool fresh;           /* an empty pool in its place: nothing of ours on it */
	uint64_t done, total; /* blocks */
	uint64_t start_ms, last_ms;
	uint32_t rate_mib;    /* 0: no limit */
	FILE *out;
	uint8_t *buf;
};

static void progress(struct rebuild *r, bool last)
{
	uint64_t now = rp_now_ms();
	if (!r->out || (!last && now - r->last_ms < 1000))
		return;
	r->last_ms = now;
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
		if (m[j] != r->pool && !r->fs->ps->pools[m[j]].stale) {
			*k = j;
			return 0;
		}
	return -ENODATA;
}

static int copy_extent(struct rebuild *r, const struct rp_extent *e)
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
	if ((rc = rp_pool_claim_exact(ps, r->pool, e->block, e->count, r->fresh)) < 0) {
		rp_err("peer %u: cannot claim blocks %llu+%u for a copy (%s)%s", r->pool,
		       (unsigned long long)e->block, e->count, strerror(-rc),
		       rc == -EEXIST ? ": another volume took them on the new pool" : "");
		return rc;
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
		throttle(r);
		progress(r, false);
	}
	return 0;
}

/* Every extent the volume holds: file data, log segments, the log's spare
 * and frees still held for read-only mounts. */
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
	for (size_t i = 0; i < fs->log.segs.n && rc == 0; i++)
		rc = fn(r, &fs->log.segs.v[i]);
	if (rc == 0 && fs->log.have_spare)
		rc = fn(r, &fs->log.spare);
	for (size_t i = 0; i < fs->held.n && rc == 0; i++)
		rc = fn(r, &fs->held.v[i].e);
	for (size_t i = 0; i < fs->deferred.n && rc == 0; i++)
		rc = fn(r, &fs->deferred.v[i]);
	return rc;
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

/* Fill one stale pool, then mark it current (fs->mu held). */
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
	if (rc < 0)
		return rc;
	/* current from now on: written with the others, and readable */
	int i = place_ring_index(&fs->place, r->pool);
	struct rp_volplace next = fs->place;
	next.stale &= ~(1u << i);
	if ((rc = place_write(fs->ps, fs->slot, &next, false)) < 0)
		return rc;
	pthread_mutex_lock(&fs->place_mu);
	fs->place = next;
	pthread_mutex_unlock(&fs->place_mu);
	p->stale = false;
	if (fs->pool_ids) {
		fs->pool_ids[r->pool].known = true;
		memcpy(fs->pool_ids[r->pool].uuid, p->sb.pool_uuid, 16);
	}
	/* the log names the pool it now trusts (a checkpoint writes it too) */
	struct rp_rec rec = { .type = REC_POOL, .flags = REC_F_END, .ext = { .pool = r->pool },
			      .value = p->sb.pool_uuid, .value_len = 16 };
	if ((rc = fs_commit(fs, &rec, 1)) == 0)
		rc = log_flush(fs, &fs->log);
	return rc;
}

int rp_fs_rebuild(struct rp_poolset *ps, const char *volume, uint32_t rate_mib, FILE *out,
		  char *err, size_t errlen)
{
	struct rp_fs *fs;
	struct rp_mount_opts mo = { .volume = volume, .holder = "rdmapool rebuild" };
	int rc = home_resync(ps, out);
	if (rc < 0) {
		snprintf(err, errlen, "bringing the volume table's copies in sync: %s", strerror(-rc));
		return rc;
	}
	if ((rc = rp_fs_mount(ps, &mo, &fs, err, errlen)) < 0)
		return rc;
	struct rebuild r = { .fs = fs, .rate_mib = rate_mib, .out = out };
	unsigned rebuilt = 0, left = 0;
	r.buf = malloc(COPY_CHUNK);
	if (!r.buf)
		rc = -ENOMEM;
	pthread_mutex_lock(&fs->mu);
	for (uint32_t i = 0; rc == 0 && i < fs->place.nring; i++) {
		r.pool = fs->place.ring[i];
		if (!(fs->place.stale & (1u << i)))
			continue;
		if (rp_pool_ensure(ps, r.pool) < 0 || fs->ps->pools[r.pool].error) {
			if (out)
				fprintf(out, "peer %u: still unreachable, not rebuilt\n", r.pool);
			left++;
			continue;
		}
		if ((rc = rebuild_pool(&r)) < 0)
			snprintf(err, errlen, "rebuilding peer %u: %s", r.pool, strerror(-rc));
		else
			rebuilt++;
	}
	pthread_mutex_unlock(&fs->mu);
	free(r.buf);
	if (out && rc == 0)
		fprintf(out, "volume \"%s\": %u peer(s) rebuilt%s\n", fs->vol.name, rebuilt,
			left ? ", some still unreachable (still degraded)" : ", all copies current");
	int urc = rp_fs_unmount(fs);
	if (rc == 0 && left) {
		snprintf(err, errlen, "%u stale peer(s) still unreachable: the volume stays degraded",
			 left);
		rc = -EAGAIN;
	}
	return rc < 0 ? rc : urc;
}
