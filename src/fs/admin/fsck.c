/* fsck: every volume's log is replayed read-only and every block it
 * references (file data and log segments) is checked against the pool
 * bitmaps: inside its pool, referenced once, and marked allocated; on
 * every current copy, for replicated volumes, whose copies must match. Blocks
 * marked allocated that nothing references are leaks (a crash between an
 * allocation and the log record naming it leaves them); --repair frees them,
 * but only while no volume is mounted read-write, whose unflushed allocations
 * would look the same. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/bitmap.h>
#include <rdmapool/log.h>
#include <rdmapool/progress.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct fsck {
	struct rp_poolset *ps;
	FILE *out;
	struct rp_fsck_report *rep;
	uint64_t **refs; /* per pool: one bit per block, set when referenced */
	/* per pool: blocks a stale copy on a pool back with its old contents
	 * holds: neither checked nor ever freed as leaks (a stale copy on a
	 * replacement is not the volume's: not counted at all) */
	uint64_t **soft;
	bool soft_nomem; /* one could not be made: no leak is freed */
	/* the volume being checked: the pools its records name (NULL: not
	 * known), so that a replacement's blocks are not taken for its own */
	const struct rp_pool_id *ids;
	uint64_t **bitmap;
	/* per pool: its used-block count, read just before and after its
	 * bitmap (UINT64_MAX: not known, or it moved meanwhile) */
	uint64_t *count;
	const char *vol;
	int live_volumes;
	int unread_volumes; /* whose logs did not replay: their blocks look leaked */
	int rc;
	struct rp_progress *pr;
	uint64_t done, total; /* blocks checked, of those marked in the bitmaps */
	/* --repair: every volume's lease, held (and renewed) from before the
	 * bitmaps are read until the last free: a holder that was only silent
	 * is fenced, not raced */
	bool repair;
	struct rp_lease leases[VOL_SLOTS];
	int nleases;
	uint64_t seen; /* slots take_lease went through (held, or counted live) */
	uint64_t held; /* slots whose lease it holds: their copies may be mended */
	bool *fenced;  /* per pool: took every held lease's fence (refence) */
	int slot;      /* of the volume being checked */
};

static int take_lease(void *arg, int slot, const struct rp_volrec *vol)
{
	struct fsck *f = arg;
	char err[512];
	struct rp_lease *l = &f->leases[f->nleases];
	memset(l, 0, sizeof(*l));
	f->seen |= 1ull << slot;
	int rc = lease_acquire(f->ps, slot, vol_lease_period(vol),
			       "rdmapool fsck --repair", l, err, sizeof(err));
	if (rc == -EBUSY) {
		fprintf(f->out, "volume \"%s\": %s\n", vol->name, err);
		f->live_volumes++;
		return 0;
	}
	if (rc < 0) {
		fprintf(f->out, "volume \"%s\": taking its lease: %s\n", vol->name, strerror(-rc));
		return rc;
	}
	f->nleases++;
	f->held |= 1ull << slot;
	return 0;
}

/* Renew the leases taken once half a period has gone by; -ESTALE once one
 * is lost (the repair must stop: someone else may use the blocks). */
static int renew_leases(struct fsck *f)
{
	uint64_t now = rp_boot_ms();
	for (int i = 0; i < f->nleases; i++) {
		struct rp_lease *l = &f->leases[i];
		if (now - l->last_renew_ms < l->period_ms / 2)
			continue;
		if (lease_renew(f->ps, l) < 0)
			return -ESTALE;
	}
	return 0;
}

static void release_leases(struct fsck *f)
{
	for (int i = 0; i < f->nleases; i++)
		lease_release(f->ps, &f->leases[i]);
	f->nleases = 0;
}

static bool test_set(uint64_t *bits, uint64_t b)
{
	bool was = bits[b / 64] >> (b % 64) & 1;
	bits[b / 64] |= 1ull << (b % 64);
	return was;
}

/* Mark one copy's blocks referenced, checking them against its bitmap. */
static void reference_copy(struct fsck *f, const struct rp_extent *e, const char *what,
			   uint64_t ino);

/* --repair: copy k of e made the same as the first (bytes a), as a
 * takeover's resync does; only where fsck holds the volume's lease, renewed
 * first, so no writer runs meanwhile. What is said of it (with a ": "). */
static const char *mend_copy(struct fsck *f, const struct rp_extent *e, const uint32_t *m,
			     unsigned k, const void *a, size_t len)
{
	if (!f->repair)
		return "";
	if (!(f->held >> f->slot & 1))
		return ": not made the same: the volume's lease is not held";
	if (renew_leases(f) < 0)
		return ": not made the same: the volume's lease was lost";
	const struct rp_pool_sb *sb = &f->ps->pools[e->pool].sb;
	uint64_t off = rp_replica_offset(f->ps, e->pool, m[k], rp_block_offset(sb, e->block));
	if (rp_pool_write(f->ps, m[k], off, a, len) < 0)
		return ": not made the same: the write failed";
	return NULL;
}

/* Replicated volumes: every current copy must hold the same bytes. */
static void compare_copies(struct fsck *f, const struct rp_extent *e, const char *what,
			   uint64_t ino)
{
	uint32_t m[RP_MAX_REPLICAS];
	unsigned nm = rp_replica_members(f->ps, e->pool, m);
	const struct rp_pool_sb *sb = &f->ps->pools[e->pool].sb;
	size_t len = (size_t)e->count * sb->block_size;
	uint8_t *a = malloc(len), *b = malloc(len);
	int first = -1;
	for (unsigned k = 0; a && b && k < nm; k++) {
		if (f->ps->pools[m[k]].stale)
			continue;
		uint8_t *dst = first < 0 ? a : b;
		int rc = rp_pool_read_copy(f->ps, e->pool, k, rp_block_offset(sb, e->block), dst, len);
		if (rc < 0) {
			fprintf(f->out, "volume \"%s\": peer %u: reading the copy of the %s of inode "
				"%llu: %s\n", f->vol, m[k], what, (unsigned long long)ino, strerror(-rc));
			f->rep->errors++;
			continue;
		}
		if (first < 0) {
			first = (int)k;
		} else if (memcmp(a, b, len) != 0) {
			const char *fail = mend_copy(f, e, m, k, a, len);
			fprintf(f->out, "volume \"%s\": the copies of the %s of inode %llu on peers "
				"%u and %u differ (blocks %llu+%u)%s\n", f->vol, what,
				(unsigned long long)ino, m[first], m[k], (unsigned long long)e->block,
				e->count, fail ? fail : ": made the same from the first");
			if (fail)
				f->rep->errors++;
		}
	}
	free(a);
	free(b);
}

/* A stale copy's blocks on a pool back with its old contents: kept as the
 * volume's, neither checked nor leaks (the bitmap made on first use: most
 * volumes have no stale copy). */
static void soft_reference(struct fsck *f, const struct rp_extent *c)
{
	uint64_t **soft = &f->soft[c->pool];
	if (!*soft && !(*soft = calloc(f->ps->pools[c->pool].sb.bitmap_words, 8))) {
		if (!f->soft_nomem)
			fprintf(f->out, "peer %u: out of memory for its stale copies' blocks: the "
				"leaks found may be the volume's, none is freed\n", c->pool);
		f->soft_nomem = true;
		f->rep->errors++;
		return;
	}
	for (uint64_t b = c->block; b < c->block + c->count; b++)
		test_set(*soft, b);
}

static void reference(struct fsck *f, const struct rp_extent *e, const char *what, uint64_t ino)
{
	uint32_t m[RP_MAX_REPLICAS];
	unsigned nm = rp_replica_members(f->ps, e->pool, m);
	for (unsigned k = 0; k < nm; k++) {
		struct rp_extent c = *e;
		c.pool = m[k];
		const struct rp_pool *p = &f->ps->pools[m[k]];
		bool replaced = f->ids && f->ids[m[k]].known &&
				memcmp(f->ids[m[k]].uuid, p->sb.pool_uuid, 16) != 0;
		if (!p->stale)
			reference_copy(f, &c, what, ino);
		else if (!replaced && extent_in_pools(f->ps, &c))
			soft_reference(f, &c);
	}
	if (nm > 1 && extent_in_pools(f->ps, e))
		compare_copies(f, e, what, ino);
	f->done += (uint64_t)e->count * nm;
	rp_progress_report(f->pr, "checking", f->done, f->total, f->ps->block_size);
}

static void reference_copy(struct fsck *f, const struct rp_extent *e, const char *what,
			   uint64_t ino)
{
	if (!extent_in_pools(f->ps, e)) {
		fprintf(f->out, "volume \"%s\": %s of inode %llu points outside the pools "
			"(peer %u block %llu+%u%s)\n", f->vol, what, (unsigned long long)ino, e->pool,
			(unsigned long long)e->block, e->count,
			rp_poolset_has(f->ps, e->pool) ? "" : ", a peer the cluster file does not list");
		f->rep->errors++;
		return;
	}
	for (uint64_t b = e->block; b < e->block + e->count; b++) {
		if (test_set(f->refs[e->pool], b)) {
			fprintf(f->out, "volume \"%s\": pool %u block %llu referenced twice (again by "
				"the %s of inode %llu)\n", f->vol, e->pool, (unsigned long long)b, what,
				(unsigned long long)ino);
			f->rep->errors++;
		}
		if (!(f->bitmap[e->pool][b / 64] >> (b % 64) & 1)) {
			fprintf(f->out, "volume \"%s\": pool %u block %llu is used by the %s of inode "
				"%llu but marked free\n", f->vol, e->pool, (unsigned long long)b, what,
				(unsigned long long)ino);
			f->rep->errors++;
		}
	}
}

static void check_links(struct fsck *f, struct rp_fs *fs)
{
	/* count the names each inode has, and each directory's subdirectories */
	for (size_t b = 0; b < fs->it.nb; b++)
		for (struct rp_inode *in = fs->it.b[b]; in; in = in->hnext)
			in->nlookup = 0; /* reused as a counter: nothing else runs here */
	for (size_t b = 0; b < fs->it.nb; b++)
		for (struct rp_inode *in = fs->it.b[b]; in; in = in->hnext) {
			if (!in->dir)
				continue;
			for (size_t i = 0; i < in->dir->n; i++) {
				if (!in->dir->ents[i].name)
					continue;
				struct rp_inode *c = itable_get(&fs->it, in->dir->ents[i].ino);
				if (!c) { /* the log deleted the inode but not this name */
					fprintf(f->out, "volume \"%s\": directory %llu: \"%s\" names "
						"inode %llu, which does not exist\n", f->vol,
						(unsigned long long)in->ino, in->dir->ents[i].name,
						(unsigned long long)in->dir->ents[i].ino);
					f->rep->errors++;
					continue;
				}
				c->nlookup += c->dir ? 2 : 1; /* a directory also has its "." */
				if (c->dir)
					in->nlookup++; /* the child's ".." */
			}
		}
	for (size_t b = 0; b < fs->it.nb; b++)
		for (struct rp_inode *in = fs->it.b[b]; in; in = in->hnext) {
			uint64_t want = in->nlookup;
			if (in->ino == RP_ROOT_INO)
				want += 2; /* its own "." and the ".." of the mount point */
			if (in->nlink == 0 && want == 0)
				continue; /* orphan: freed at the next read-write mount */
			if (want != in->nlink) {
				fprintf(f->out, "volume \"%s\": inode %llu has link count %u but %llu "
					"links\n", f->vol, (unsigned long long)in->ino, in->nlink,
					(unsigned long long)want);
				f->rep->errors++;
			}
		}
}

void fsck_check_names(struct rp_fs *fs, const char *vol, FILE *out, struct rp_fsck_report *rep)
{
	struct fsck f = { .out = out, .rep = rep, .vol = vol };
	check_links(&f, fs);
}

static int check_volume(void *arg, int slot, const struct rp_volrec *vol)
{
	struct fsck *f = arg;
	struct rp_fs *fs;
	struct rp_extvec segs = { 0 };
	char err[512], holder[64];

	if (rp_progress_stopped(f->pr))
		return -EINTR; /* between volumes: nothing half done */
	if (renew_leases(f) < 0)
		return -ESTALE;
	f->vol = vol->name;
	f->slot = slot;
	f->rep->volumes++;
	/* --repair holds the leases (take_lease counted the live ones); a
	 * volume made since then is not held: it counts as live */
	int live = f->repair ? !(f->seen >> slot & 1)
			     : lease_probe(f->ps, slot, vol_lease_period(vol), holder,
					   sizeof(holder));
	if (f->repair && live)
		snprintf(holder, sizeof(holder), "a mount that began during the repair");
	if (live > 0) {
		fprintf(f->out, "volume \"%s\" is mounted read-write by %s: its newest changes may "
			"not be in the log yet\n", vol->name, holder);
		f->live_volumes++;
	}
	int rc = fs_new(f->ps, &fs);
	if (rc < 0)
		return rc;
	fs->ro = true;
	fs->vol = *vol;
	fs->slot = slot;
	rc = fs_use_placement(fs, err, sizeof(err));
	if (rc == 0 && fs->place.vol.stale) {
		place_describe(&fs->place.vol, err, sizeof(err));
		fprintf(f->out, "volume \"%s\": %s: stale copies are not checked\n", vol->name, err);
	}
	if (rc == 0)
		rc = state_load(fs, &segs, err, sizeof(err));
	if (rc < 0) {
		fprintf(f->out, "%s\n", err);
		f->rep->errors++;
		f->unread_volumes++;
	}
	f->ids = rc == 0 ? fs->pool_ids : NULL;
	for (size_t i = 0; i < segs.n; i++) {
		reference(f, &segs.v[i], "metadata log", 0);
		f->rep->log_blocks += segs.v[i].count;
	}
	if (rc == 0) {
		for (size_t b = 0; b < fs->it.nb; b++)
			for (struct rp_inode *in = fs->it.b[b]; in; in = in->hnext) {
				f->rep->inodes++;
				f->rep->files += S_ISREG(in->mode);
				f->rep->dirs += S_ISDIR(in->mode);
				for (size_t i = 0; i < in->map.n; i++) {
					struct rp_extent e = { .pool = in->map.v[i].pool,
							       .block = in->map.v[i].pblock,
							       .count = in->map.v[i].count };
					reference(f, &e, "data", in->ino);
					f->rep->data_blocks += e.count;
				}
			}
		check_links(f, fs);
	}
	f->ids = NULL;
	extvec_free(&segs);
	fs_delete(fs);
	return 0;
}

/* Every pool's bitmap, and an empty reference map beside it. */
static int read_bitmaps(struct fsck *f, char *err, size_t errlen)
{
	struct rp_poolset *ps = f->ps;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t i = ps->ids[k];
		uint64_t before = UINT64_MAX, after = 0;
		if (rp_pool_used(ps, i, &before) < 0)
			before = UINT64_MAX;
		int rc = rp_pool_read_bitmap(ps, i, &f->bitmap[i]);
		if (rc == 0 && rp_pool_used(ps, i, &after) == 0 && after == before)
			f->count[i] = before;
		if (rc < 0) {
			snprintf(err, errlen, "%s", ps->pools[i].err[0] ? ps->pools[i].err : strerror(-rc));
			return rc;
		}
		f->refs[i] = calloc(ps->pools[i].sb.bitmap_words, 8);
		if (!f->refs[i])
			return -ENOMEM;
		/* bits past the last block are set by design */
		uint64_t words = ps->pools[i].sb.bitmap_words;
		if (words)
			f->refs[i][words - 1] |= rp_layout_tail_mask(&ps->pools[i].sb);
		for (uint64_t w = 0; w < words; w++)
			f->total += (uint64_t)__builtin_popcountll(f->bitmap[i][w] & ~f->refs[i][w]);
	}
	return 0;
}

/* Before leaks are freed: the connections carry one lease's fence tag, the
 * last taken, so a pool that was down (or restarted empty of connections)
 * when another volume's lease was taken has not seen that one's, and its
 * old holder could still write blocks freed here. Every lease's fence is
 * set again on every pool connected now, which each pool remembers
 * (rdmapool(7), Fencing), and leaks are freed only on pools that were
 * connected throughout (a pool down is not reconnected in between).
 * -ENOLCK when a pool knows a newer holder of one of the volumes. */
static int refence(struct fsck *f)
{
	struct rp_poolset *ps = f->ps;
	if (!(f->fenced = calloc(ps->n, sizeof(*f->fenced))))
		return -ENOMEM;
	for (size_t p = 0; p < ps->n; p++)
		f->fenced[p] = ps->pools[p].present && rp_pool_connected(ps, (uint32_t)p);
	for (int i = 0; i < f->nleases; i++) {
		int rc = lease_fence_pools(ps, &f->leases[i]);
		if (rc < 0)
			return rc;
	}
	for (size_t p = 0; p < ps->n; p++)
		f->fenced[p] = f->fenced[p] && rp_pool_connected(ps, (uint32_t)p);
	return 0;
}

/* Blocks marked allocated that nothing references; freed with repair.
 * Stopping (Ctrl-C) leaves the runs freed so far freed, the rest leaked. */
static int find_leaks(struct fsck *f, bool repair, char *err, size_t errlen)
{
	struct rp_poolset *ps = f->ps;
	struct rp_fsck_report *rep = f->rep;
	int rc = 0;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t p = ps->ids[k];
		const struct rp_pool_sb *sb = &ps->pools[p].sb;
		for (uint64_t w = 0; f->soft[p] && w < sb->bitmap_words; w++)
			f->refs[p][w] |= f->soft[p][w]; /* (a stale copy's: kept) */
		for (uint64_t b = 0; b < sb->nblocks;) {
			bool used = f->bitmap[p][b / 64] >> (b % 64) & 1;
			bool ref = f->refs[p][b / 64] >> (b % 64) & 1;
			if (!used || ref) {
				b++;
				continue;
			}
			/* a run of leaked blocks, at most 64 and inside one word */
			uint64_t s = b;
			while (b < sb->nblocks && b - s < 64 && (b == s || b % 64) &&
			       (f->bitmap[p][b / 64] >> (b % 64) & 1) && !(f->refs[p][b / 64] >> (b % 64) & 1))
				b++;
			rep->leaked += b - s;
			bool free_here = repair && f->fenced[p];
			fprintf(f->out, "peer %u: blocks %llu..%llu are allocated but unreferenced%s\n", p,
				(unsigned long long)s, (unsigned long long)(b - 1),
				free_here ? ": freed"
				: repair  ? ": not freed (the pool was not connected when the leases' "
					    "fences were set again)"
					  : "");
			if (!free_here)
				continue;
			if (rp_progress_stopped(f->pr))
				return -EINTR;
			if ((rc = renew_leases(f)) < 0) {
				snprintf(err, errlen, "a volume's lease was lost while repairing: the "
					 "rest is listed, not freed");
				repair = false;
				continue;
			}
			struct rp_extent e = { .pool = p, .block = s, .count = (uint32_t)(b - s) };
			if ((rc = rp_pool_free(ps, &e)) < 0) {
				snprintf(err, errlen, "freeing leaked blocks: %s", strerror(-rc));
				repair = false; /* the rest is listed, not freed */
				continue;
			}
			rep->repaired += e.count;
			rp_progress_report(f->pr, "repairing", rep->repaired, rep->repaired,
					   ps->block_size);
		}
	}
	return rc;
}

/* Each pool's used-block count against its bitmap. A count that differs
 * is no damage (a client died between a CAS and counting it; it moves only
 * the free space read far from full): said, and set right with repair. Not compared
 * while a volume is mounted read-write: its mounter's last changes may
 * not be counted yet. Leaks freed meanwhile moved both alike. */
static void check_counts(struct fsck *f, bool repair)
{
	struct rp_poolset *ps = f->ps;
	for (size_t k = 0; k < ps->npeers && !f->live_volumes; k++) {
		uint32_t p = ps->ids[k];
		const struct rp_pool_sb *sb = &ps->pools[p].sb;
		if (f->count[p] == UINT64_MAX)
			continue;
		uint64_t free_bits = rp_bitmap_count_free(f->bitmap[p], sb->bitmap_words);
		uint64_t used = sb->nblocks - RP_MIN(free_bits, sb->nblocks);
		if (f->count[p] == used)
			continue;
		int64_t d = (int64_t)(used - f->count[p]);
		bool set = repair && rp_pool_count_adjust(ps, p, d) == 0;
		f->rep->counts_off++;
		f->rep->counts_set += set;
		fprintf(f->out, "peer %u: its used-block count says %llu blocks, its bitmap %llu%s\n",
			p, (unsigned long long)f->count[p], (unsigned long long)used,
			set ? ": set right" : repair ? ": could not be set" : "");
	}
}

int rp_fs_fsck(struct rp_poolset *ps, bool repair, FILE *out, struct rp_fsck_report *rep,
	       struct rp_progress *pr, char *err, size_t errlen)
{
	struct fsck f = { .ps = ps, .out = out, .rep = rep, .pr = pr, .repair = repair };
	int rc = 0;

	memset(rep, 0, sizeof(*rep));
	if (repair && (rc = vol_each(ps, take_lease, &f)) < 0) {
		snprintf(err, errlen, "taking the volumes' leases: %s", strerror(-rc));
		goto out;
	}
	f.refs = calloc(ps->n, sizeof(*f.refs));
	f.soft = calloc(ps->n, sizeof(*f.soft));
	f.bitmap = calloc(ps->n, sizeof(*f.bitmap));
	f.count = malloc(ps->n * sizeof(*f.count));
	for (size_t i = 0; f.count && i < ps->n; i++)
		f.count[i] = UINT64_MAX;
	if (!f.refs || !f.soft || !f.bitmap || !f.count || (rc = read_bitmaps(&f, err, errlen)) < 0) {
		rc = rc ? rc : -ENOMEM;
		goto out;
	}
	if ((rc = vol_each(ps, check_volume, &f)) < 0) {
		if (rc == -EINTR)
			snprintf(err, errlen, "interrupted: %llu volumes checked, nothing changed",
				 (unsigned long long)rep->volumes);
		else if (rc == -ESTALE)
			snprintf(err, errlen, "a volume's lease was lost while checking: nothing changed");
		else
			snprintf(err, errlen, "reading the volume table: %s", strerror(-rc));
		goto out;
	}
	rp_progress_report(pr, "checking", f.total, f.total, ps->block_size);
	if (repair && f.live_volumes) {
		snprintf(err, errlen, "refusing to repair while %d volume(s) are mounted read-write",
			 f.live_volumes);
		rc = -EBUSY;
	} else if (repair && f.unread_volumes) {
		/* what such a volume references is not known: freeing "leaks"
		 * would free its data */
		snprintf(err, errlen, "refusing to repair: %d volume(s) could not be read, and "
			 "their blocks would be taken for leaks", f.unread_volumes);
		rc = -EUCLEAN;
	}
	if (repair && rc == 0 && (rc = refence(&f)) < 0)
		snprintf(err, errlen, "setting the leases' fences again before freeing leaks: %s%s",
			 strerror(-rc), rc == -ENOLCK ? " (a newer holder: nothing freed)" : "");
	int lrc = find_leaks(&f, repair && rc == 0 && !f.soft_nomem, err, errlen);
	if (lrc == -EINTR)
		snprintf(err, errlen, "interrupted: %llu leaked blocks freed, the rest left as they were",
			 (unsigned long long)rep->repaired);
	if (rc == 0)
		rc = lrc;
	check_counts(&f, repair && rc == 0);
out:
	release_leases(&f);
	free(f.fenced);
	for (size_t i = 0; f.refs && i < ps->n; i++)
		free(f.refs[i]);
	for (size_t i = 0; f.soft && i < ps->n; i++)
		free(f.soft[i]);
	free(f.soft);
	for (size_t i = 0; f.bitmap && i < ps->n; i++)
		free(f.bitmap[i]);
	free(f.refs);
	free(f.bitmap);
	free(f.count);
	return rc;
}
