/* The home area (volume table, placement records, leases, reader slots) is
 * kept on every pool, so that no peer is special: it is found on any pool
 * that survives. Each copy carries a home epoch word. The copies with the
 * highest epoch among the reachable pools are in sync; the lowest peer id
 * among them is the authority, where compare-and-swap and fetch-and-add
 * happen (their results are then written to the other copies) and reads
 * come from. A write that misses an in-sync copy moves the epoch of the
 * others up, so a pool that comes back with an old home area is never the
 * authority again until 'rdmapool rebuild' copies the area over.
 *
 * Without a quorum this does not survive a partition that leaves two sides
 * each with clients: both would find an authority (rdmapool(7)). */
#include "config.h"
#include "fs_impl.h"

#include <rdmapool/layout.h>
#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define HOME_EPOCH_OFF (RP_HOME_OFFSET + VOL_HOME_EPOCH_OFF)
#define HOME_RECHECK_MS 1000

/* The epochs of every listed pool (UINT64_MAX: unreachable); the authority. */
static int home_scan(struct rp_poolset *ps, uint64_t *epochs, uint32_t *auth, uint64_t *top,
		     bool all)
{
	bool any = false;
	*top = 0;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		uint64_t e;
		epochs[k] = UINT64_MAX;
		/* a copy out of sync stays so until resynced; a pool that is
		 * not connected is not waited for (its reconnect is the data
		 * path's business) */
		if ((ps->pools[id].home_out && !all) || !rp_pool_connected(ps, id) ||
		    rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &e) < 0)
			continue;
		epochs[k] = e;
		ps->pools[id].home_out = false; /* until compared with the top below */
		if (!any || e > *top) {
			*top = e;
			*auth = id;
		}
		any = true;
	}
	for (size_t k = 0; k < ps->npeers; k++)
		if (epochs[k] != UINT64_MAX && epochs[k] != *top)
			ps->pools[ps->ids[k]].home_out = true;
	return any ? 0 : -ENOTCONN;
}

/* The authority, from the cache while it is recent. */
static int home_pool(struct rp_poolset *ps, uint32_t *pool)
{
	uint64_t now = rp_now_ms();
	int64_t cached = atomic_load(&ps->home_pool);
	if (cached >= 0 && now - atomic_load(&ps->home_checked_ms) < HOME_RECHECK_MS) {
		*pool = (uint32_t)cached;
		return 0;
	}
	uint64_t *ep = calloc(ps->npeers, sizeof(*ep)), top;
	if (!ep)
		return -ENOMEM;
	int rc = home_scan(ps, ep, pool, &top, false);
	free(ep);
	if (rc < 0)
		return rc;
	if (cached >= 0 && (uint32_t)cached != *pool)
		rp_warn("volume table: now kept on peer %u (was peer %lld)", *pool,
			(long long)cached);
	atomic_store(&ps->home_pool, (int64_t)*pool);
	atomic_store(&ps->home_checked_ms, now);
	return 0;
}

static void home_forget(struct rp_poolset *ps)
{
	atomic_store(&ps->home_pool, -1);
}

/* After a write that missed in-sync copies: those are out of sync from now
 * on (the epoch of the others moves up by one). */
static void home_drop(struct rp_poolset *ps, const bool *missed, uint64_t e)
{
	uint64_t old;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		if (!missed[k] && !ps->pools[id].home_out && rp_pool_connected(ps, id))
			rp_pool_cas(ps, id, HOME_EPOCH_OFF, e, e + 1, &old);
	}
	for (size_t k = 0; k < ps->npeers; k++)
		if (missed[k]) {
			ps->pools[ps->ids[k]].home_out = true;
			rp_warn("volume table: peer %u missed an update; it is out of sync until "
				"'rdmapool rebuild'", ps->ids[k]);
		}
	home_forget(ps);
}

/* Write to the authority and to every copy in sync with it (same epoch,
 * read now: another thread may just have moved it); the authority's write
 * decides the result. */
static int home_mirror_locked(struct rp_poolset *ps, uint32_t auth, uint64_t off, const void *buf,
			      size_t len, bool skip_auth)
{
	bool *missed = calloc(ps->npeers, sizeof(*missed)), any = false;
	uint64_t e;
	int rc = missed ? rp_pool_faa(ps, auth, HOME_EPOCH_OFF, 0, &e) : -ENOMEM;
	if (rc == 0 && !skip_auth)
		rc = rp_pool_write(ps, auth, off, buf, len);
	for (size_t k = 0; rc == 0 && k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		uint64_t pe;
		if (id == auth || ps->pools[id].home_out || !ps->pools[id].present)
			continue;
		/* (rp_pool_faa reconnects a dropped connection first, at most
		 * once per backoff period) */
		int prc = rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &pe);
		if (prc == 0 && pe != e)
			continue; /* out of sync already */
		if (prc == 0)
			prc = rp_pool_write(ps, id, off, buf, len);
		if (prc == -ENOLCK)
			rc = prc; /* fenced: a newer holder decides, drop nothing */
		else if (prc < 0)
			missed[k] = any = true; /* it may have been in sync: drop it */
	}
	if (any && rc == 0)
		home_drop(ps, missed, e);
	free(missed);
	if (rc < 0)
		home_forget(ps);
	return rc;
}

/* One mirror (epoch read, writes, drop) at a time in this process: two
 * threads dropping copies at once would move the epochs apart. */
static pthread_mutex_t mirror_mu = PTHREAD_MUTEX_INITIALIZER;

static int home_mirror(struct rp_poolset *ps, uint32_t auth, uint64_t off, const void *buf,
		       size_t len, bool skip_auth)
{
	rp_mutex_lock(&mirror_mu, RP_LK_HOME);
	int rc = home_mirror_locked(ps, auth, off, buf, len, skip_auth);
	rp_mutex_unlock(&mirror_mu);
	return rc;
}

int vol_home_read(struct rp_poolset *ps, uint64_t off, void *buf, size_t len)
{
	for (int tries = 0; tries < 2; tries++) {
		uint32_t auth;
		int rc = home_pool(ps, &auth);
		if (rc == 0 && (rc = rp_pool_read(ps, auth, off, buf, len)) == 0)
			return 0;
		home_forget(ps);
		if (tries)
			return rc;
	}
	return -EIO;
}

int vol_home_write(struct rp_poolset *ps, uint64_t off, const void *buf, size_t len)
{
	uint32_t auth;
	int rc = home_pool(ps, &auth);
	return rc < 0 ? rc : home_mirror(ps, auth, off, buf, len, false);
}

/* An atomic on the authority; a changed word is then written to the others
 * (under mirror_mu, so that the copies get the values in the same order). */
static int home_atomic_locked(struct rp_poolset *ps, bool cas, uint64_t off, uint64_t a,
			      uint64_t b, uint64_t *old)
{
	for (int tries = 0; tries < 2; tries++) {
		uint32_t auth;
		int rc = home_pool(ps, &auth);
		if (rc < 0)
			return rc;
		rc = cas ? rp_pool_cas(ps, auth, off, a, b, old) : rp_pool_faa(ps, auth, off, a, old);
		if (rc == -ENOLCK)
			return rc; /* fenced: not to be tried on another copy */
		if (rc < 0) {
			home_forget(ps);
			if (tries)
				return rc;
			continue;
		}
		bool changed = cas ? *old == a && a != b : a != 0;
		uint64_t now = cas ? b : *old + a;
		return changed ? home_mirror_locked(ps, auth, off, &now, 8, true) : 0;
	}
	return -EIO;
}

static int home_atomic(struct rp_poolset *ps, bool cas, uint64_t off, uint64_t a, uint64_t b,
		       uint64_t *old)
{
	rp_mutex_lock(&mirror_mu, RP_LK_HOME);
	int rc = home_atomic_locked(ps, cas, off, a, b, old);
	rp_mutex_unlock(&mirror_mu);
	return rc;
}

int home_cas(struct rp_poolset *ps, uint64_t off, uint64_t expect, uint64_t desired, uint64_t *old)
{
	return home_atomic(ps, true, off, expect, desired, old);
}

int home_faa(struct rp_poolset *ps, uint64_t off, uint64_t add, uint64_t *old)
{
	return home_atomic(ps, false, off, add, 0, old);
}

static int home_resync_locked(struct rp_poolset *ps, FILE *out)
{
	uint64_t *ep = calloc(ps->npeers, sizeof(*ep)), top;
	uint8_t *area = malloc(RP_HOME_SIZE);
	uint32_t auth;
	int rc = ep && area ? home_scan(ps, ep, &auth, &top, true) : -ENOMEM;
	if (rc == 0)
		rc = rp_pool_read(ps, auth, RP_HOME_OFFSET, area, RP_HOME_SIZE);
	for (size_t k = 0; rc == 0 && k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		if (ep[k] == UINT64_MAX || ep[k] == top)
			continue;
		/* the area (with its old epoch), then the epoch: the copy
		 * joins only when complete */
		memcpy(area + VOL_HOME_EPOCH_OFF, &ep[k], 8);
		rc = rp_pool_write(ps, id, RP_HOME_OFFSET, area, RP_HOME_SIZE);
		if (rc == 0)
			rc = rp_pool_write(ps, id, HOME_EPOCH_OFF, &top, 8);
		if (rc == 0)
			ps->pools[id].home_out = false; /* mirrored to from now on */
		if (rc == 0 && out)
			fprintf(out, "peer %u: volume table copied from peer %u\n", id, auth);
	}
	home_forget(ps);
	free(ep);
	free(area);
	return rc;
}

/* Under mirror_mu: no write of this process lands between the snapshot
 * and the copy. Only the holder of the lease (or a process that holds it
 * for an offline rebuild) resyncs: a copy brought back by another process
 * would carry the top epoch while this process, which had dropped it,
 * never writes to it again, and other processes would then read its stale
 * words as the authority's (a live lease that looks silent). */
int home_resync(struct rp_poolset *ps, FILE *out)
{
	rp_mutex_lock(&mirror_mu, RP_LK_HOME);
	int rc = home_resync_locked(ps, out);
	rp_mutex_unlock(&mirror_mu);
	return rc;
}

int home_init(struct rp_poolset *ps)
{
	uint64_t *ep = calloc(ps->npeers, sizeof(*ep)), top, old;
	uint32_t auth;
	int rc = ep ? home_scan(ps, ep, &auth, &top, true) : -ENOMEM;
	/* epochs start at 1 once a volume exists: a pool replaced by an empty
	 * one (epoch 0) is then out of sync, never the authority */
	for (size_t k = 0; rc == 0 && top == 0 && k < ps->npeers; k++)
		if (ep[k] == 0)
			rp_pool_cas(ps, ps->ids[k], HOME_EPOCH_OFF, 0, 1, &old);
	home_forget(ps);
	free(ep);
	return rc;
}
