/* Frees that wait for the read-only mounts. A read-only mount follows the
 * writer's log and reads file data through the block maps it has applied,
 * so a block released by a record must not be reused while some reader
 * has not applied that record yet: it could read another file's bytes.
 * Released extents are held with the log position at which they became
 * free, and go back to the pools once every live reader's position (in its
 * reader slot, volume.c) is past it. Without readers they go back at once. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int held_add(struct rp_fs *fs, const struct rp_extent *e, uint64_t pos)
{
	struct rp_heldvec *h = &fs->held;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct rp_held *nv = realloc(h->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		h->v = nv;
		h->cap = cap;
	}
	h->v[h->n++] = (struct rp_held){ .e = *e, .pos = pos };
	return 0;
}

int held_add_deferred(struct rp_fs *fs, const struct rp_logw *w)
{
	uint64_t pos = reader_pos(w->epoch, w->seq);
	size_t k = 0;
	int rc = 0;
	for (; k < fs->deferred.n && rc == 0; k++)
		rc = held_add(fs, &fs->deferred.v[k], pos);
	if (rc < 0)
		k--; /* (the one that failed stays deferred) */
	/* those held leave the deferred list now: added again by the next
	 * flush, they would go back to the pools twice */
	memmove(fs->deferred.v, fs->deferred.v + k, (fs->deferred.n - k) * sizeof(*fs->deferred.v));
	fs->deferred.n -= k;
	return rc;
}

void held_release(struct rp_fs *fs)
{
	struct rp_heldvec *h = &fs->held;
	uint64_t min = 0;
	if (h->n == 0 || fs->rebuild.holding)
		return; /* (an online rebuild copies them: rebuild.c) */
	/* read after the records are durable: a reader that registers later
	 * loads a log that already has them (see reader_register) */
	uint32_t period = fs->lease.held.period_ms ? fs->lease.held.period_ms : 1000;
	if (readers_scan(fs->ps, fs->slot, &fs->readers, period, &min) < 0)
		return; /* keep holding; the next flush or tick tries again */
	/* all that no reader can see any more, in one batch (a large delete
	 * frees thousands of extents, and the caller holds fs->mu) */
	struct rp_extent *go = malloc(h->n * sizeof(*go));
	if (!go)
		return; /* keep holding; the next flush or tick tries again */
	size_t kept = 0, ngo = 0;
	bool plain = !rp_poolset_replicated(fs->ps);
	for (size_t k = 0; k < h->n; k++) {
		/* a free to a pool that is down is never sent, so it can wait
		 * for the pool to come back */
		if (h->v[k].pos > min || (plain && !rp_pool_connected(fs->ps, h->v[k].e.pool)))
			h->v[kept++] = h->v[k];
		else
			go[ngo++] = h->v[k].e;
	}
	h->n = kept;
	/* of a batch that fails, what was never sent is held again (no
	 * reader can see it: position 0); the rest is in doubt (its CAS may
	 * have landed, the blocks given out again since): dropped, leaked */
	struct rp_extent_list unsent = { 0 };
	int rc = ngo ? rp_pool_free_many_keep(fs->ps, go, ngo, plain ? &unsent : NULL) : 0;
	size_t again = 0;
	while (again < unsent.n && held_add(fs, &unsent.v[again], 0) == 0)
		again++;
	if (rc < 0)
		rp_err("freeing the blocks of %zu extents: %s (%zu runs never sent are held to "
		       "free again; any whose change was sent and not answered stay allocated: "
		       "'rdmapool fsck --repair' frees them)", ngo, strerror(-rc), again);
	free(unsent.v);
	free(go);
}

void held_drain(struct rp_fs *fs, uint32_t ms)
{
	uint64_t deadline = rp_now_ms() + ms;
	for (;;) {
		held_release(fs);
		if (fs->held.n == 0 || rp_now_ms() >= deadline)
			break;
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (fs->held.n)
		rp_warn("volume \"%s\": %zu extents still seen by read-only mounts, or waiting for "
			"their pool to answer, stay allocated ('rdmapool fsck --repair' frees them)",
			fs->vol.name, fs->held.n);
	free(fs->held.v);
	memset(&fs->held, 0, sizeof(fs->held));
}
