/* Listing and removing volumes (rdmapool volumes, status, rmvol). A volume
 * is looked at the way fsck looks at it: its log replayed into memory,
 * without a lease or a reader slot, so a mounted volume is described as of
 * its last flushed records. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The namespace of the volume in slot, loaded read-only; segs gets the
 * log's segments. */
static int load(struct rp_poolset *ps, int slot, const struct rp_volrec *vol, struct rp_fs **out,
		struct rp_extvec *segs, char *err, size_t errlen)
{
	struct rp_fs *fs;
	int rc = fs_new(ps, &fs);
	if (rc < 0)
		return rc;
	fs->ro = true;
	fs->vol = *vol;
	fs->slot = slot;
	if ((rc = fs_use_placement(fs, err, errlen)) < 0 ||
	    (rc = state_load(fs, segs, err, errlen)) < 0) {
		fs_delete(fs);
		return rc;
	}
	*out = fs;
	return 0;
}

struct list {
	struct rp_poolset *ps;
	struct rp_volinfo *v;
	size_t n, cap;
};

static void describe(struct rp_poolset *ps, int slot, const struct rp_volrec *vol,
		     struct rp_volinfo *vi)
{
	struct rp_fs *fs;
	struct rp_extvec segs = { 0 };
	struct vol_state st;
	struct rp_volplace pl;

	snprintf(vi->name, sizeof(vi->name), "%s", vol->name);
	vi->replicas = place_read(ps, slot, &pl) == 0 ? pl.replicas : 1;
	vi->stale_pools = vi->replicas > 1 ? (unsigned)__builtin_popcount(pl.stale) : 0;
	if ((vi->error = vol_peek(ps, slot, &st)) == 0) {
		vi->leased = st.lease != 0;
		snprintf(vi->holder, sizeof(vi->holder), "%s", st.lease ? st.holder : "");
		vi->writer_epoch = st.writer_epoch;
		vi->readers = st.readers;
	}
	if (vi->error == 0 &&
	    (vi->error = load(ps, slot, vol, &fs, &segs, vi->err, sizeof(vi->err))) == 0) {
		for (size_t b = 0; b < fs->it.nb; b++)
			for (struct rp_inode *in = fs->it.b[b]; in; in = in->hnext) {
				vi->files += S_ISREG(in->mode);
				vi->dirs += S_ISDIR(in->mode);
				for (size_t i = 0; i < in->map.n; i++)
					vi->data_blocks += in->map.v[i].count;
			}
		for (size_t i = 0; i < segs.n; i++)
			vi->log_blocks += segs.v[i].count;
		vi->log_segments = segs.n;
		fs_delete(fs);
	}
	if (vi->error < 0 && !vi->err[0])
		snprintf(vi->err, sizeof(vi->err), "%s", strerror(-vi->error));
	extvec_free(&segs);
}

static int list_cb(void *arg, int slot, const struct rp_volrec *vol)
{
	struct list *l = arg;
	if (l->n == l->cap) {
		struct rp_volinfo *v = realloc(l->v, (l->cap = l->cap * 2 + 8) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
	}
	struct rp_volinfo *vi = &l->v[l->n++];
	memset(vi, 0, sizeof(*vi));
	describe(l->ps, slot, vol, vi);
	return 0;
}

int rp_fs_volumes(struct rp_poolset *ps, struct rp_volinfo **out, size_t *n)
{
	struct list l = { .ps = ps };
	int rc = vol_each(ps, list_cb, &l);
	if (rc < 0) {
		free(l.v);
		return rc;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

/* ---- removing ---- */

/* Any read-only mount still alive? Heartbeats that move within the expiry
 * time say so; slots left by dead readers do not count. */
static int readers_alive(struct rp_poolset *ps, int slot, uint32_t period_ms)
{
	struct vol_state a, b;
	int rc = vol_peek(ps, slot, &a);
	if (rc < 0 || a.readers == 0)
		return rc;
	uint64_t until = rp_now_ms() + (uint64_t)period_ms * LEASE_EXPIRY_PERIODS;
	while (rp_now_ms() < until) {
		struct timespec ts = { .tv_nsec = 100 * 1000000L };
		nanosleep(&ts, NULL);
		if ((rc = vol_peek(ps, slot, &b)) < 0)
			return rc;
		for (int r = 0; r < READER_SLOTS; r++)
			if (b.reader_hb[r] && b.reader_hb[r] != a.reader_hb[r])
				return 1;
	}
	return 0;
}

/* Every block the volume references: its files' extents and its log. */
static int collect(struct rp_fs *fs, const struct rp_extvec *segs, struct rp_extvec *all)
{
	int rc = 0;
	for (size_t b = 0; b < fs->it.nb && rc == 0; b++)
		for (struct rp_inode *in = fs->it.b[b]; in && rc == 0; in = in->hnext)
			for (size_t i = 0; i < in->map.n && rc == 0; i++) {
				struct rp_extent e = { .pool = in->map.v[i].pool,
						       .block = in->map.v[i].pblock,
						       .count = in->map.v[i].count };
				rc = extvec_push(all, &e);
			}
	for (size_t i = 0; i < segs->n && rc == 0; i++)
		rc = extvec_push(all, &segs->v[i]);
	return rc;
}

int rp_fs_rmvol(struct rp_poolset *ps, const char *name, uint64_t *freed, char *err,
		size_t errlen)
{
	struct rp_volrec vol;
	struct rp_lease lease = { 0 };
	struct rp_fs *fs = NULL;
	struct rp_extvec segs = { 0 }, all = { 0 };
	int slot, rc;

	*freed = 0;
	if ((rc = vol_find(ps, name, &slot, &vol)) < 0) {
		snprintf(err, errlen, rc == -ENOENT ? "no volume \"%s\"" : "volume \"%s\": %s", name,
			 strerror(-rc));
		return rc;
	}
	uint32_t period = vol_lease_period(&vol);
	/* the lease keeps a read-write mount out while we work (and waits
	 * out one that died) */
	if ((rc = lease_acquire(ps, slot, period, "rdmapool rmvol", &lease, err, errlen)) < 0) {
		if (rc != -EBUSY)
			snprintf(err, errlen, "volume \"%s\": taking its lease: %s", name, strerror(-rc));
		return rc;
	}
	if ((rc = readers_alive(ps, slot, period)) != 0) {
		if (rc > 0)
			snprintf(err, errlen, "volume \"%s\" is mounted read-only somewhere: unmount "
				 "it there first", name);
		rc = rc > 0 ? -EBUSY : rc;
		goto out;
	}
	if ((rc = load(ps, slot, &vol, &fs, &segs, err, errlen)) < 0 ||
	    (rc = collect(fs, &segs, &all)) < 0)
		goto out;
	/* The slot goes first: from then on nothing can mount the volume, and a
	 * crash before the frees below only leaks blocks (fsck --repair). */
	if ((rc = vol_release_slot(ps, slot)) < 0) {
		snprintf(err, errlen, "volume \"%s\": freeing its slot: %s", name, strerror(-rc));
		goto out;
	}
	lease.word = 0; /* the slot is free: nothing to release */
	if ((rc = rp_pool_free_many(ps, all.v, all.n)) < 0)
		snprintf(err, errlen, "volume \"%s\" is gone, but freeing its blocks failed: %s; "
			 "'rdmapool fsck --repair' returns them", name, strerror(-rc));
	for (size_t i = 0; rc == 0 && i < all.n; i++)
		*freed += all.v[i].count;
out:
	if (fs)
		fs_delete(fs);
	extvec_free(&segs);
	extvec_free(&all);
	lease_release(ps, &lease);
	return rc;
}
