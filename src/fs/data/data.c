/* File data: reads and writes as batches of one-sided operations straight
 * into the pool blocks that a file's map names, with new blocks taken from
 * the pools stripe by stripe. Invariant: inside a mapped block, bytes past
 * the end of the file are zero (new blocks are zero-filled around what is
 * written; truncation zeroes the tail it cuts), so holes and tails read as
 * zeros without any bookkeeping. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* as tmpfs and the kernel's FUSE client: 2^63 - 1 bytes (a block's end,
 * at most 2^63 for every power-of-two block size, stays below 2^64 in
 * every computation) */
#define MAX_FILE_SIZE ((uint64_t)INT64_MAX)

/* Reads and writes hold a buffer while they wait for fs->mu; the log flush
 * takes one with fs->mu held. So reads and writes never take the last one:
 * however many threads serve, a flush always finds a buffer. */
int bufpool_get(struct rp_fs *fs, struct rp_buf **out, bool for_log)
{
	struct rp_bufpool *bp = &fs->bufs;
	size_t keep = for_log ? 0 : 1;
	rp_mutex_lock(&bp->mu, RP_LK_FS_BUFS);
	while (bp->nfree + (BUFPOOL_MAX - bp->total) <= keep)
		pthread_cond_wait(&bp->cv, &bp->mu);
	if (bp->nfree) {
		*out = bp->free[--bp->nfree];
		rp_mutex_unlock(&bp->mu);
		return 0;
	}
	bp->total++;
	rp_mutex_unlock(&bp->mu);
	int rc = rp_buf_alloc(fs->ps, bp->size, out);
	if (rc < 0) {
		rp_mutex_lock(&bp->mu, RP_LK_FS_BUFS);
		bp->total--;
		pthread_cond_broadcast(&bp->cv);
		rp_mutex_unlock(&bp->mu);
	}
	return rc;
}

void bufpool_put(struct rp_fs *fs, struct rp_buf *b)
{
	struct rp_bufpool *bp = &fs->bufs;
	rp_mutex_lock(&bp->mu, RP_LK_FS_BUFS);
	bp->free[bp->nfree++] = b;
	pthread_cond_broadcast(&bp->cv); /* the flush may wait among readers */
	rp_mutex_unlock(&bp->mu);
}

int fs_zero_range(struct rp_fs *fs, uint32_t pool, uint64_t off, uint64_t len)
{
	while (len > 0) {
		struct rp_io ios[64];
		size_t n = 0;
		while (len > 0 && n < 64) {
			uint32_t chunk = (uint32_t)RP_MIN(len, (uint64_t)ZERO_BUF_SIZE);
			ios[n++] = (struct rp_io){ .pool = pool, .off = off, .buf = fs->zero, .len = chunk };
			off += chunk;
			len -= chunk;
		}
		int rc = lease_guard(fs);
		if (rc == 0)
			rc = rp_poolset_rw(fs->ps, RP_OP_WRITE, ios, n);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int zero_mapped(struct rp_fs *fs, struct rp_inode *in, uint64_t from, uint64_t to);
/* Where a read's bytes go: copied to dst, or, when they fit in one I/O
 * buffer, handed to sink straight from it (no copy). */
struct read_out {
	void *dst;
	rp_read_sink sink;
	void *ctx;
};
static ssize_t read_file(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len,
			 const struct read_out *out);

/* Where file byte pos lives: pool and byte offset, or a hole (-1). */
struct piece {
	uint64_t fpos;   /* file offset */
	uint32_t len;
	int32_t pool;    /* -1: hole */
	uint64_t poff;   /* byte offset in the pool */
};

/* Split [off, off+len) along the map into pieces; at most max. */
static size_t map_pieces(struct rp_fs *fs, const struct rp_inode *in, uint64_t off, uint64_t len,
			 struct piece *out, size_t max)
{
	const uint64_t B = fs->block_size;
	size_t n = 0;
	uint64_t pos = off, end = off + len;
	size_t i = emap_find(&in->map, off / B);
	while (pos < end && n < max) {
		const struct rp_fext *x = i < in->map.n ? &in->map.v[i] : NULL;
		uint64_t xs = x ? x->fblock * B : UINT64_MAX, xe = x ? (x->fblock + x->count) * B : UINT64_MAX;
		struct piece *p = &out[n++];
		p->fpos = pos;
		if (pos < xs) {
			p->pool = -1;
			p->poff = 0;
			p->len = (uint32_t)RP_MIN(RP_MIN(end, xs) - pos, (uint64_t)UINT32_MAX);
		} else {
			const struct rp_pool_sb *sb = &fs->ps->pools[x->pool].sb;
			p->pool = (int32_t)x->pool;
			p->poff = rp_block_offset(sb, x->pblock) + (pos - xs);
			p->len = (uint32_t)RP_MIN(RP_MIN(end, xe) - pos, (uint64_t)UINT32_MAX);
			i++;
		}
		pos += p->len;
	}
	return n;
}

static int map_err(int rc)
{
	/* whatever went wrong below, an application sees an I/O error */
	switch (rc) {
	case -ENOSPC: case -ENOMEM: case -EFBIG: case -EROFS: case -ENOENT:
		return rc;
	default:
		return rc < 0 ? -EIO : rc;
	}
}

/* Move one request's pieces between the pools and buf; pieces cover
 * [off, off+len) with len <= the buffer size. */
static int post(struct rp_fs *fs, enum rp_opcode opc, struct rp_io *ios, size_t n)
{
	int rc = opc == RP_OP_WRITE ? lease_guard(fs) : 0;
	return rc < 0 ? rc : rp_poolset_rw(fs->ps, opc, ios, n);
}

/* Zeroing of new blocks around what a write covers: small pieces that ride
 * along in the write's first batch instead of costing a round trip. */
#define ZERO_RIDE_MAX 8
struct zeroes {
	struct rp_io io[ZERO_RIDE_MAX];
	size_t n;
};

static int transfer(struct rp_fs *fs, enum rp_opcode opc, struct piece *ps, size_t n, uint64_t off,
		    struct rp_buf *b, struct zeroes *z)
{
	struct rp_io ios[64];
	size_t k = 0;
	int rc = 0;
	for (; z && k < z->n; k++)
		ios[k] = z->io[k];
	if (z)
		z->n = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (ps[i].pool < 0) {
			if (opc == RP_OP_READ)
				memset((uint8_t *)rp_buf_data(b) + (ps[i].fpos - off), 0, ps[i].len);
			continue;
		}
		ios[k++] = (struct rp_io){ .pool = (uint32_t)ps[i].pool, .off = ps[i].poff, .buf = b,
					   .buf_off = ps[i].fpos - off, .len = ps[i].len };
		if (k == 64) {
			rc = post(fs, opc, ios, k);
			k = 0;
		}
	}
	if (rc == 0 && k)
		rc = post(fs, opc, ios, k);
	return rc;
}

/* The inode of a regular file, or the errno read/write give for others. */
static int regular_file(struct rp_fs *fs, uint64_t ino, struct rp_inode **out)
{
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	uint32_t mode = in ? in->mode : 0; /* under mu: a chmod's record rewrites it */
	rp_mutex_unlock(&fs->mu);
	if (!in)
		return -ENOENT;
	if (S_ISDIR(mode))
		return -EISDIR;
	if (!S_ISREG(mode))
		return -EINVAL;
	*out = in;
	return 0;
}

static bool ts_le(struct timespec a, struct timespec b)
{
	return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
}

static ssize_t read_any(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len,
			const struct read_out *out)
{
	if (!fs->ro) {
		/* a writer that may have been taken over reads through maps whose
		 * blocks the new holder may have given to other files */
		int rc = lease_guard(fs);
		return rc < 0 ? rc : read_file(fs, ino, off, len, out);
	}
	/* A read-only mount reads through the maps it has applied: no record
	 * is applied meanwhile, and none of it once the writer may have given
	 * our blocks away (follow.c). */
	rp_rwlock_rdlock(&fs->follow.apply, RP_LK_APPLY);
	/* asked under the lock: a read that waited for a transaction to be
	 * applied may have waited past the writer's patience with us */
	ssize_t n = follow_fresh(fs) ? read_file(fs, ino, off, len, out) : -EIO;
	rp_rwlock_unlock(&fs->follow.apply);
	/* the writer deleted a file open here: its blocks may be another
	 * file's by now (as on NFS) */
	return n == -ENOENT ? -ESTALE : n;
}

ssize_t rp_fs_read(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len, void *dst)
{
	struct read_out out = { .dst = dst };
	return read_any(fs, ino, off, len, &out);
}

int rp_fs_read_to(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len, rp_read_sink sink,
		  void *ctx)
{
	if (len <= fs->bufs.size) {
		struct read_out out = { .sink = sink, .ctx = ctx };
		ssize_t n = read_any(fs, ino, off, len, &out);
		return n < 0 ? (int)n : 0;
	}
	void *tmp = malloc(len);
	if (!tmp)
		return -ENOMEM;
	ssize_t n = rp_fs_read(fs, ino, off, len, tmp);
	if (n >= 0)
		sink(ctx, tmp, (size_t)n);
	free(tmp);
	return n < 0 ? (int)n : 0;
}

static ssize_t read_file(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len,
			 const struct read_out *out)
{
	struct piece ps[256];
	struct rp_buf *b;
	size_t done = 0, held = 0; /* held: bytes in b not yet delivered */
	int rc = 0;

	struct rp_inode *in;
	if ((rc = regular_file(fs, ino, &in)) < 0)
		return rc;
	if ((rc = bufpool_get(fs, &b, false)) < 0)
		return rc;
	rp_rwlock_rdlock(&in->io, RP_LK_INODE_IO);
	while (done < len && rc == 0) {
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		uint64_t size = in->size, pos = off + done;
		if (pos >= size) {
			rp_mutex_unlock(&fs->mu);
			break;
		}
		uint64_t room = rp_buf_len(b) - held;
		uint64_t chunk = RP_MIN(RP_MIN((uint64_t)(len - done), size - pos), room);
		size_t n = map_pieces(fs, in, pos, chunk, ps, 256);
		chunk = ps[n - 1].fpos + ps[n - 1].len - pos; /* fewer pieces than needed: shorter */
		rp_mutex_unlock(&fs->mu);
		/* the bytes land after those already held */
		rc = transfer(fs, RP_OP_READ, ps, n, pos - held, b, NULL);
		if (rc < 0)
			break;
		done += chunk;
		held += chunk;
		if (out->dst && (held == rp_buf_len(b) || done == len)) {
			memcpy((uint8_t *)out->dst + done - held, rp_buf_data(b), held);
			held = 0;
		}
	}
	if (rc == 0 && out->dst && held)
		memcpy((uint8_t *)out->dst + done - held, rp_buf_data(b), held);
	rp_rwlock_unlock(&in->io);
	/* The sink answers the kernel, which may then close, unlink and forget
	 * the file at once: from here on the inode may be purged and freed
	 * (fs_maybe_purge), so it is looked up again by number below. */
	in = NULL;
	if (rc == 0 && out->sink)
		out->sink(out->ctx, rp_buf_data(b), held);
	bufpool_put(fs, b);
	if (rc < 0) {
		rp_warn("read of inode %llu at %llu: %s", (unsigned long long)ino,
			(unsigned long long)off, strerror(-rc));
		return map_err(rc);
	}
	if (done && !fs->ro && fs_writable(fs) == 0) {
		/* relatime: note an access when atime is older than the last change
		 * or more than a day old */
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		struct timespec now = fs_now();
		/* a daemon never hands a number out twice: found, it is the file
		 * read; gone, no record (an ATTR of a purged number would bring a
		 * ghost inode back) */
		if ((in = fs_inode(fs, ino)) &&
		    (ts_le(in->atime, in->mtime) || ts_le(in->atime, in->ctime) ||
		     now.tv_sec - in->atime.tv_sec > 86400)) {
			struct rp_rec r;
			fs_rec_attr(in, &r);
			r.atime = now;
			fs_commit(fs, &r, 1);
		}
		rp_mutex_unlock(&fs->mu);
	}
	return (ssize_t)done;
}

/* One run from the stripe's pool, else any pool (a full or unreachable pool
 * does not stop writes). Small requests come from the blocks claimed ahead
 * (prealloc.c), and claim a whole word's run ahead while there is room. */
static int try_alloc(struct rp_fs *fs, uint32_t pool, uint32_t want, struct rp_extent *e)
{
	int rc;
	/* data never takes the reserve (space.c); blocks kept ahead count as
	 * free space, so they are inside this check too */
	if (!space_available(fs, want)) {
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		rc = space_check_locked(fs, want);
		rp_mutex_unlock(&fs->mu);
		if (rc < 0)
			return rc;
	}
	/* (not from a pool known to be down: the write would fail, and the
	 * stripe moves on to the next pool) */
	if (want < 64 && rp_pool_connected(fs->ps, pool) && prealloc_take(fs, pool, want, e)) {
		space_taken(fs, e->count);
		return 0;
	}
	uint32_t ask = want < 64 && prealloc_enabled(fs) && space_available(fs, 64) ? 64 : want;
	rc = rp_pool_alloc(fs->ps, pool, ask, e);
	if (rc < 0 && fs->ps->npeers > 1)
		rc = rp_poolset_alloc(fs->ps, pool + 1, ask, e);
	if (rc == -ENOSPC && prealloc_take_any(fs, want, e))
		rc = 0; /* the bitmaps are full, but some were kept ahead */
	if (rc == 0) {
		/* what is kept ahead stays free space (prealloc.c) */
		space_taken(fs, RP_MIN(e->count, want));
		if (e->count > want) {
			struct rp_extent rest = { .pool = e->pool, .block = e->block + want,
						  .count = e->count - want };
			e->count = want;
			prealloc_keep(fs, &rest);
		}
	}
	return rc;
}

/* try_alloc, but before giving up with ENOSPC, flush the log: blocks of
 * files just deleted are freed only once their records are durable (and
 * read-only mounts have followed), and the kernel forgets deleted inodes a
 * moment after unlink returns. */
static int alloc_blocks(struct rp_fs *fs, uint32_t pool, uint32_t want, struct rp_extent *e)
{
	uint64_t start = rp_now_ms();
	for (unsigned attempt = 0;; attempt++) {
		int rc = try_alloc(fs, pool, want, e);
		if (rc != -ENOSPC || !space_settle(fs, attempt, start))
			return rc;
	}
}

/* Allocate blocks for the unmapped parts of file blocks [fb, fb+count),
 * stripe by stripe; the new runs are returned in runs (not yet mapped). */
static int alloc_range(struct rp_fs *fs, struct rp_inode *in, uint64_t fb, uint64_t count,
		       struct rp_fext **runs, size_t *nruns)
{
	size_t cap = 0;
	*runs = NULL;
	*nruns = 0;
	uint64_t end = fb + count, b = fb;
	while (b < end) {
		/* skip what is mapped */
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		size_t i = emap_find(&in->map, b);
		uint64_t next_mapped = i < in->map.n ? in->map.v[i].fblock : UINT64_MAX;
		uint64_t mapped_end = i < in->map.n ? in->map.v[i].fblock + in->map.v[i].count : 0;
		rp_mutex_unlock(&fs->mu);
		if (next_mapped <= b) {
			b = mapped_end;
			continue;
		}
		uint64_t gap_end = RP_MIN(end, next_mapped);
		while (b < gap_end) {
			uint64_t stripe = b / fs->stripe_blocks;
			uint64_t stripe_end = (stripe + 1) * fs->stripe_blocks;
			uint32_t want = (uint32_t)RP_MIN(RP_MIN(gap_end, stripe_end) - b, 64);
			/* successive inodes start on successive pools (it was
			 * ino * 7: every file on the first of 7 or 14 pools;
			 * the same as this for 2, 3 and 6 pools) */
			uint32_t pool = rp_poolset_pick(fs->ps, in->ino + stripe);
			struct rp_extent e;
			int rc = alloc_blocks(fs, pool, want, &e);
			if (rc < 0)
				return rc;
			if (*nruns == cap) {
				cap = cap ? cap * 2 : 8;
				struct rp_fext *nr = realloc(*runs, cap * sizeof(*nr));
				if (!nr) {
					rp_pool_free(fs->ps, &e);
					return -ENOMEM;
				}
				*runs = nr;
			}
			(*runs)[(*nruns)++] = (struct rp_fext){ .fblock = b, .pblock = e.block,
							       .pool = e.pool, .count = e.count };
			b += e.count;
		}
	}
	return 0;
}

/* Runs no record maps, given back; call without fs->mu. A pool that is
 * down (or stalls) under a failed write is the usual reason for the
 * failure: what could not be sent to it is held (position 0: no reader
 * ever saw it) and goes back once the pool does (held_release), instead of
 * staying allocated until fsck --repair. */
static void free_runs(struct rp_fs *fs, struct rp_fext *runs, size_t n)
{
	struct rp_extent *v = malloc((n ? n : 1) * sizeof(*v));
	struct rp_extent_list unsent = { 0 };
	/* (a logged record the state could not take may map them: kept for
	 * the remount's fsck to find, never given to another file) */
	for (size_t i = 0; i < n && !atomic_load(&fs->state_lost); i++) {
		struct rp_extent e = { .pool = runs[i].pool, .block = runs[i].pblock,
				       .count = runs[i].count };
		if (v)
			v[i] = e;
		else
			rp_pool_free(fs->ps, &e); /* (no memory for a batch: one by one) */
	}
	if (v && n && !atomic_load(&fs->state_lost))
		rp_pool_free_many_keep(fs->ps, v, n, &unsent);
	if (unsent.n) {
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		for (size_t i = 0; i < unsent.n; i++)
			if (held_add(fs, &unsent.v[i], 0) < 0)
				break; /* (the rest stays allocated: fsck --repair) */
		rp_mutex_unlock(&fs->mu);
	}
	free(unsent.v);
	free(v);
	free(runs);
}

/* Zero [off, off+len) of a pool now, or, when it is small and z has room,
 * with z's batch. */
static int zero_piece(struct rp_fs *fs, uint32_t pool, uint64_t off, uint64_t len, struct zeroes *z)
{
	if (!z || z->n == ZERO_RIDE_MAX || len > ZERO_BUF_SIZE)
		return fs_zero_range(fs, pool, off, len);
	z->io[z->n++] = (struct rp_io){ .pool = pool, .off = off, .buf = fs->zero,
					.len = (uint32_t)len };
	return 0;
}

/* Zero the parts of new runs that [keep_off, keep_end) will not cover. */
static int zero_new(struct rp_fs *fs, const struct rp_fext *runs, size_t n, uint64_t keep_off,
		    uint64_t keep_end, struct zeroes *z)
{
	const uint64_t B = fs->block_size;
	for (size_t i = 0; i < n; i++) {
		const struct rp_pool_sb *sb = &fs->ps->pools[runs[i].pool].sb;
		uint32_t pool = runs[i].pool;
		uint64_t s = runs[i].fblock * B, e = (runs[i].fblock + runs[i].count) * B;
		uint64_t base = rp_block_offset(sb, runs[i].pblock);
		uint64_t z1 = RP_MIN(RP_MAX(keep_off, s), e), z2 = RP_MAX(RP_MIN(keep_end, e), s);
		int rc = 0;
		if (keep_end <= s || keep_off >= e)
			rc = zero_piece(fs, pool, base, e - s, z);
		else {
			if (z1 > s)
				rc = zero_piece(fs, pool, base, z1 - s, z);
			if (rc == 0 && z2 < e)
				rc = zero_piece(fs, pool, base + (z2 - s), e - z2, z);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Log the new runs (and new size/times), with fs->mu held. */
static int commit_runs(struct rp_fs *fs, struct rp_inode *in, const struct rp_fext *runs, size_t n,
		       uint64_t new_size, bool touch)
{
	size_t total = n + 1;
	struct rp_rec *recs = calloc(total, sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		recs[i].type = REC_EXT_SET;
		recs[i].ino = in->ino;
		recs[i].fblock = runs[i].fblock;
		recs[i].ext = (struct rp_extent){ .pool = runs[i].pool, .block = runs[i].pblock,
						  .count = runs[i].count };
	}
	fs_rec_attr(in, &recs[n]);
	recs[n].size = RP_MAX(in->size, new_size);
	/* set-id bits are the kernel's to drop (it sends a mode change first) */
	if (touch)
		recs[n].mtime = recs[n].ctime = fs_now();
	int rc = fs_commit(fs, recs, total);
	free(recs);
	return rc;
}

/* A write inside the file's size over mapped blocks changes neither map nor
 * size, so such overwrites share the file's lock with each other and with
 * reads (as O_DIRECT overwrites do on local filesystems); the rest take it
 * alone. Returns true with in->io read-locked for an overwrite. Not with
 * copies: each copy's pool applies writes in the order they reach it, and
 * two overlapping writes (or one's second try of a copy, seconds later)
 * could reach the copies in different orders and leave them different. */
static bool lock_overwrite(struct rp_fs *fs, struct rp_inode *in, uint64_t off, size_t len)
{
	const uint64_t B = fs->block_size;
	if (off >= MAX_FILE_SIZE || len > MAX_FILE_SIZE - off || rp_poolset_replicated(fs->ps))
		return false;
	rp_rwlock_rdlock(&in->io, RP_LK_INODE_IO);
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	uint64_t b = off / B, end = (off + len + B - 1) / B;
	bool inside = off + len <= in->size;
	for (size_t i = emap_find(&in->map, b); inside && b < end; i++) {
		if (i >= in->map.n || in->map.v[i].fblock > b)
			inside = false; /* a hole */
		else
			b = in->map.v[i].fblock + in->map.v[i].count;
	}
	rp_mutex_unlock(&fs->mu);
	if (!inside)
		rp_rwlock_unlock(&in->io);
	return inside;
}

ssize_t rp_fs_write(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len, const void *src,
		    bool append, uint64_t *end_off)
{
	const uint64_t B = fs->block_size;
	struct piece ps[256];
	struct rp_fext *runs = NULL;
	size_t nruns = 0;
	struct rp_buf *b = NULL;
	struct zeroes z = { .n = 0 };
	bool intended = false;
	int rc;

	struct rp_inode *in;
	if ((rc = fs_writable(fs)) || (rc = regular_file(fs, ino, &in)) < 0)
		return rc;
	if (len == 0)
		return 0;
	if (append || !lock_overwrite(fs, in, off, len))
		rp_rwlock_wrlock(&in->io, RP_LK_INODE_IO);
	if (append) {
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		off = in->size;
		rp_mutex_unlock(&fs->mu);
	}
	if (off >= MAX_FILE_SIZE || len > MAX_FILE_SIZE - off) {
		rc = -EFBIG;
		goto out;
	}
	if ((rc = alloc_range(fs, in, off / B, (off + len + B - 1) / B - off / B, &runs, &nruns)) < 0)
		goto out;
	/* blocks the log maps already are overwritten in place: a crash in
	 * the middle may leave their copies different (intent.c) */
	uint64_t fresh = 0;
	for (size_t r = 0; r < nruns; r++)
		fresh += runs[r].count;
	if (fresh < (off + len + B - 1) / B - off / B) {
		if ((rc = intent_begin(fs, ino, off, len, false)) < 0)
			goto out;
		intended = true;
	}
	if ((rc = zero_new(fs, runs, nruns, off, off + len, &z)) < 0)
		goto out;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	rc = data_zero_tail(fs, in, off + len);
	rp_mutex_unlock(&fs->mu);
	if (rc < 0)
		goto out;
	if ((rc = bufpool_get(fs, &b, false)) < 0)
		goto out;
	for (size_t done = 0; done < len && rc == 0;) {
		uint64_t pos = off + done, chunk = RP_MIN((uint64_t)(len - done), (uint64_t)rp_buf_len(b));
		/* the pieces come from the current map plus the new runs */
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		size_t n = map_pieces(fs, in, pos, chunk, ps, 256);
		rp_mutex_unlock(&fs->mu);
		for (size_t i = 0; i < n; i++) {
			if (ps[i].pool >= 0)
				continue;
			for (size_t r = 0; r < nruns; r++) {
				uint64_t rs = runs[r].fblock * B, re = (runs[r].fblock + runs[r].count) * B;
				if (ps[i].fpos >= rs && ps[i].fpos < re) {
					const struct rp_pool_sb *sb = &fs->ps->pools[runs[r].pool].sb;
					uint32_t take = (uint32_t)RP_MIN((uint64_t)ps[i].len, re - ps[i].fpos);
					if (take < ps[i].len) {
						/* split: the rest is handled in the next round */
						chunk = ps[i].fpos + take - pos;
						n = i + 1;
					}
					ps[i].pool = (int32_t)runs[r].pool;
					ps[i].poff = rp_block_offset(sb, runs[r].pblock) + (ps[i].fpos - rs);
					ps[i].len = take;
					break;
				}
			}
		}
		chunk = RP_MIN(chunk, ps[n - 1].fpos + ps[n - 1].len - pos);
		memcpy(rp_buf_data(b), (const uint8_t *)src + done, chunk);
		rc = transfer(fs, RP_OP_WRITE, ps, n, pos, b, &z);
		done += chunk;
	}
	bufpool_put(fs, b);
	if (rc < 0)
		goto out;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	rc = commit_runs(fs, in, runs, nruns, off + len, true);
	rp_mutex_unlock(&fs->mu);
	if (rc == 0) {
		free(runs);
		runs = NULL;
		nruns = 0;
	}
out:
	if (runs)
		free_runs(fs, runs, nruns); /* never logged: give them back */
	rp_rwlock_unlock(&in->io);
	/* the data, or the zeroing around it or past the old end, may have
	 * reached some copies only */
	if (rc < 0 && rc != -ENOSPC && rc != -EFBIG && fs->ps->place.replicas > 1) {
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		uint64_t from = RP_MIN(off, in->size);
		rp_mutex_unlock(&fs->mu);
		diverged_note(fs, ino, from, off + len - from);
	}
	if (intended)
		intent_end(fs, ino, off, len, rc);
	if (rc < 0) {
		if (rc != -ENOSPC && rc != -EFBIG)
			rp_warn("write of inode %llu at %llu: %s", (unsigned long long)ino,
				(unsigned long long)off, strerror(-rc));
		return map_err(rc);
	}
	if (end_off)
		*end_off = off + len;
	return (ssize_t)len;
}

/* Zero [from, to) of the file where it is mapped; with fs->mu held. */
static int zero_mapped(struct rp_fs *fs, struct rp_inode *in, uint64_t from, uint64_t to)
{
	struct piece ps[64];
	const uint64_t start = from;
	int rc = from < to ? intent_begin(fs, in->ino, from, to - from, true) : 0;
	if (rc < 0)
		return rc;
	while (from < to && rc == 0) {
		/* holes are skipped whole: a range of 2^63 bytes would
		 * otherwise be walked in 4 GiB pieces, for seconds, under
		 * fs->mu */
		size_t x = emap_find(&in->map, from / fs->block_size);
		if (x == in->map.n)
			break;
		from = RP_MAX(from, in->map.v[x].fblock * fs->block_size);
		if (from >= to)
			break;
		size_t n = map_pieces(fs, in, from, to - from, ps, 64);
		for (size_t i = 0; i < n && rc == 0; i++)
			if (ps[i].pool >= 0)
				rc = fs_zero_range(fs, (uint32_t)ps[i].pool, ps[i].poff, ps[i].len);
		from = ps[n - 1].fpos + ps[n - 1].len;
	}
	if (start < to)
		intent_end(fs, in->ino, start, to - start, rc);
	return rc;
}

/* Bytes past the end of a file in its last block may be stale: truncation
 * leaves them there, because zeroing them before the record that shrinks
 * the file is durable would destroy data a crash must keep. So whatever
 * makes the file grow from in->size to new_size zeroes them first (they are
 * past the end, so zeroing them early is harmless). With fs->mu held. */
int data_zero_tail(struct rp_fs *fs, struct rp_inode *in, uint64_t new_size)
{
	const uint64_t B = fs->block_size;
	uint64_t s = in->size;
	if (new_size <= s || s % B == 0 || !in->tail_stale)
		return 0;
	/* The truncate that left the tail may still be pending: until it is
	 * durable, a crash brings back the old size, and those bytes are data
	 * again (fsync'ed data, perhaps). Make it durable before zeroing. */
	int rc = log_flush(fs, &fs->log);
	if (rc < 0)
		return rc;
	/* to the end of the block, so that nothing stale is left past the
	 * end whatever the new size */
	rc = zero_mapped(fs, in, s, (s / B + 1) * B);
	if (rc == 0)
		in->tail_stale = false;
	return rc;
}

int data_truncate(struct rp_fs *fs, struct rp_inode *in, uint64_t size)
{
	const uint64_t B = fs->block_size;
	struct rp_rec recs[2];
	size_t n = 0;
	int rc;

	if (size > MAX_FILE_SIZE)
		return -EFBIG;
	if (size > in->size && (rc = data_zero_tail(fs, in, size)) < 0)
		return map_err(rc);
	if (size < in->size) {
		/* whole blocks past the new end are unmapped (and freed once the
		 * record is durable); the cut part of the last block stays as it
		 * is until the file grows again (data_zero_tail) */
		uint64_t keep = (size + B - 1) / B;
		in->tail_stale = true;
		memset(&recs[n], 0, sizeof(recs[n]));
		recs[n].type = REC_EXT_CLEAR;
		recs[n].ino = in->ino;
		recs[n].fblock = keep;
		recs[n].count = UINT64_MAX - keep;
		n++;
	}
	fs_rec_attr(in, &recs[n]);
	recs[n].size = size;
	recs[n].mtime = recs[n].ctime = fs_now();
	n++;
	return fs_commit(fs, recs, n);
}

/* Punch: zero the partial blocks at the edges in place, unmap the whole
 * blocks between (freed once the record is durable). fs->mu held. */
static int punch_hole(struct rp_fs *fs, struct rp_inode *in, uint64_t off, uint64_t len)
{
	const uint64_t B = fs->block_size;
	uint64_t end = RP_MIN(off + len, in->size);
	uint64_t first = (off + B - 1) / B, last = end / B; /* whole blocks [first, last) */
	struct rp_rec recs[2];
	size_t n = 0;
	int rc = 0;
	if (off < end) {
		if (first >= last) {
			rc = zero_mapped(fs, in, off, end);
		} else {
			if (off < first * B)
				rc = zero_mapped(fs, in, off, first * B);
			if (rc == 0 && last * B < end)
				rc = zero_mapped(fs, in, last * B, end);
		}
	}
	if (rc < 0)
		return rc;
	if (off < end && first < last) {
		memset(&recs[n], 0, sizeof(recs[n]));
		recs[n].type = REC_EXT_CLEAR;
		recs[n].ino = in->ino;
		recs[n].fblock = first;
		recs[n].count = last - first;
		n++;
	}
	fs_rec_attr(in, &recs[n]);
	recs[n].mtime = recs[n].ctime = fs_now();
	n++;
	return fs_commit(fs, recs, n);
}

/* Allocate (zeroed) blocks for [off, off+len); with zero, also zero what is
 * mapped there already (FALLOC_FL_ZERO_RANGE). The size grows unless
 * keep_size. */
static int allocate(struct rp_fs *fs, struct rp_inode *in, uint64_t off, uint64_t len,
		    bool keep_size, bool zero)
{
	const uint64_t B = fs->block_size;
	struct rp_fext *runs = NULL;
	size_t nruns = 0;
	int rc = 0;
	rc = alloc_range(fs, in, off / B, (off + len + B - 1) / B - off / B, &runs, &nruns);
	if (rc == 0 && zero) {
		/* once the blocks are had (an ENOSPC changes no byte), and
		 * before the new ones are mapped, so only old ones are zeroed */
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		rc = zero_mapped(fs, in, off, off + len);
		rp_mutex_unlock(&fs->mu);
	}
	if (rc == 0)
		rc = zero_new(fs, runs, nruns, 0, 0, NULL);
	if (rc == 0) {
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		uint64_t size = keep_size ? in->size : RP_MAX(in->size, off + len);
		rc = data_zero_tail(fs, in, size);
		if (rc == 0)
			rc = commit_runs(fs, in, runs, nruns, size, !keep_size || zero);
		rp_mutex_unlock(&fs->mu);
	}
	if (rc < 0)
		free_runs(fs, runs, nruns);
	else
		free(runs);
	return rc;
}

int rp_fs_fallocate(struct rp_fs *fs, uint64_t ino, unsigned mode, uint64_t off, uint64_t len)
{
	const unsigned known = RP_FALLOC_KEEP_SIZE | RP_FALLOC_PUNCH_HOLE | RP_FALLOC_ZERO_RANGE;
	int rc;

	if ((rc = fs_may_change(fs)))
		return rc;
	if (mode & ~known)
		return -EOPNOTSUPP;
	/* as fallocate(2): punch needs KEEP_SIZE and excludes ZERO_RANGE */
	if ((mode & RP_FALLOC_PUNCH_HOLE) &&
	    (!(mode & RP_FALLOC_KEEP_SIZE) || (mode & RP_FALLOC_ZERO_RANGE)))
		return -EOPNOTSUPP;
	if (len == 0)
		return -EINVAL;
	if (off >= MAX_FILE_SIZE || len > MAX_FILE_SIZE - off)
		return -EFBIG;
	struct rp_inode *in;
	if ((rc = regular_file(fs, ino, &in)) < 0)
		return rc == -EINVAL ? -ENODEV : rc; /* fallocate(2) says ENODEV for those */
	rp_rwlock_wrlock(&in->io, RP_LK_INODE_IO);
	if (mode & RP_FALLOC_PUNCH_HOLE) {
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		rc = punch_hole(fs, in, off, len);
		rp_mutex_unlock(&fs->mu);
	} else {
		rc = allocate(fs, in, off, len, mode & RP_FALLOC_KEEP_SIZE,
			      mode & RP_FALLOC_ZERO_RANGE);
	}
	rp_rwlock_unlock(&in->io);
	/* zeroing that failed on a copy may have reached the others */
	if (rc < 0 && rc != -ENOSPC && fs->ps->place.replicas > 1)
		diverged_note(fs, ino, off, len);
	return map_err(rc);
}

int rp_fs_lseek(struct rp_fs *fs, uint64_t ino, uint64_t off, int whence, uint64_t *out)
{
	const uint64_t B = fs->block_size;
	int rc = 0;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	if (!in) {
		rc = -ENOENT;
		goto done;
	}
	if (off >= in->size) {
		rc = -ENXIO;
		goto done;
	}
	size_t i = emap_find(&in->map, off / B);
	if (whence == SEEK_DATA) {
		if (i == in->map.n || in->map.v[i].fblock * B >= in->size) {
			rc = -ENXIO;
			goto done;
		}
		*out = RP_MAX(off, in->map.v[i].fblock * B);
	} else if (whence == SEEK_HOLE) {
		uint64_t pos = off;
		while (i < in->map.n && in->map.v[i].fblock * B <= pos) {
			pos = (in->map.v[i].fblock + in->map.v[i].count) * B;
			i++;
		}
		*out = RP_MIN(pos, in->size);
	} else {
		rc = -EINVAL;
	}
done:
	rp_mutex_unlock(&fs->mu);
	return rc;
}
