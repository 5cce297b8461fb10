/* Keeping the read-write lease, and not writing without it.
 *
 * A thread of its own renews the lease word every half period, never
 * behind the filesystem lock or a flush, from mount (before replay) to
 * unmount (after the last flush). Every write into the pools first passes
 * lease_guard: the lease must have been renewed recently enough that no
 * other mounter can have taken it over (a takeover needs the word to stay
 * put for LEASE_EXPIRY_PERIODS; we stop at one period less). A writer that
 * was stalled (SIGSTOP, a long pause) finds its lease old, has it renewed
 * before it writes, and learns that way that it was taken over. Each log
 * write also compares the fence word with our writer epoch, which every
 * new holder increments. See rdmapool(7), LEASE and "Fencing". */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Tests only (fstest 074): a writer that skips its own lease checks, as
 * one whose checks passed just before a takeover does, to show that the
 * pools fence it by themselves. RP_TEST_IGNORE_LEASE=1, read at start;
 * compiled out of packages (configure --disable-test-hooks). */
#ifdef RP_TEST_HOOKS
static atomic_bool ignore_lease;
#define IGNORING_LEASE() atomic_load(&ignore_lease)
static void read_test_hooks(void)
{
	const char *v = getenv("RP_TEST_IGNORE_LEASE");
	if (v && strcmp(v, "1") == 0) {
		rp_warn("RP_TEST_IGNORE_LEASE=1: this writer skips its lease checks (tests only)");
		atomic_store(&ignore_lease, true);
	}
}
#else
#define IGNORING_LEASE() false
static void read_test_hooks(void) {}
#endif

static void set_fresh(struct rp_fs *fs)
{
	uint64_t until = fs->lease.held.last_renew_ms +
			 (uint64_t)fs->lease.held.period_ms * (LEASE_EXPIRY_PERIODS - 1);
	atomic_store(&fs->lease.fresh_until, until);
}

/* Called with lease.mu held. */
static void lost(struct rp_fs *fs, const char *why)
{
	static atomic_bool told;
	if (IGNORING_LEASE()) {
		if (!atomic_exchange(&told, true))
			rp_err("volume \"%s\": %s (ignored: RP_TEST_IGNORE_LEASE=1)", fs->lease.held.vol_name,
			       why);
		return;
	}
	if (!atomic_exchange(&fs->lease.lost, true))
		rp_err("volume \"%s\": %s (writer epoch %llu); refusing all further changes",
		       fs->lease.held.vol_name, why, (unsigned long long)fs->lease.held.epoch);
	atomic_store(&fs->lease.fresh_until, 0);
	pthread_cond_broadcast(&fs->lease.cv);
}

static void wait_until(struct rp_fs *fs, uint64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t ns = (uint64_t)ts.tv_nsec + ms * 1000000ull;
	ts.tv_sec += (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	pthread_cond_timedwait(&fs->lease.cv, &fs->lease.mu, &ts);
}

static void *lease_main(void *arg)
{
	struct rp_fs *fs = arg;
	uint32_t half = fs->lease.held.period_ms / 2 ? fs->lease.held.period_ms / 2 : 1;
	bool warned = false;

	rp_mutex_lock(&fs->lease.mu, RP_LK_LEASE);
	while (!fs->lease.stop && !atomic_load(&fs->lease.lost)) {
		if (!fs->lease.kick)
			wait_until(fs, half);
		if (fs->lease.stop)
			break;
		fs->lease.kick = false;
		uint64_t t0 = rp_now_ns();
		int rc = lease_renew(fs->ps, &fs->lease.held);
		if (rc == 0)
			rp_hist_observe(&fs->stats.lease_renew, rp_now_ns() - t0);
		if (rc == 0) {
			set_fresh(fs);
			if (warned)
				rp_info("volume \"%s\": the lease is renewed again", fs->lease.held.vol_name);
			warned = false;
		} else if (rc == -ESTALE) {
			lost(fs, "the lease was taken over by another mounter");
		} else if (rp_poolset_fenced(fs->ps)) {
			lost(fs, "fenced: a pool refuses us for a newer holder of the lease");
		} else if (!warned) {
			/* writes wait in lease_guard; the word tells later whether
			 * anyone took over meanwhile */
			rp_warn("volume \"%s\": cannot renew the lease: %s", fs->lease.held.vol_name,
				strerror(-rc));
			warned = true;
		}
		pthread_cond_broadcast(&fs->lease.cv);
	}
	rp_mutex_unlock(&fs->lease.mu);
	return NULL;
}

/* The pool layer asks it before it sends an io a second time (io.c). */
static int retry_guard(void *arg)
{
	return lease_guard(arg);
}

int lease_start(struct rp_fs *fs)
{
	read_test_hooks();
	snprintf(fs->lease.held.vol_name, sizeof(fs->lease.held.vol_name), "%s", fs->vol.name);
	set_fresh(fs);
	fs->lease.stop = false;
	/* set once, before any other thread does I/O; after lease_stop the
	 * guard passes (no lease to keep) and nothing is written any more */
	fs->ps->retry_arg = fs;
	fs->ps->retry_guard = retry_guard;
	if (pthread_create(&fs->lease.thread, NULL, lease_main, fs) != 0)
		return -EAGAIN;
	fs->lease.running = true;
	return 0;
}

void lease_stop(struct rp_fs *fs)
{
	if (!fs->lease.running)
		return;
	rp_mutex_lock(&fs->lease.mu, RP_LK_LEASE);
	fs->lease.stop = true;
	pthread_cond_broadcast(&fs->lease.cv);
	rp_mutex_unlock(&fs->lease.mu);
	pthread_join(fs->lease.thread, NULL);
	fs->lease.running = false;
}

int lease_guard(struct rp_fs *fs)
{
	/* lease.running changes only before the filesystem serves and after */
	if (!fs->lease.running || IGNORING_LEASE())
		return 0; /* no lease to keep: making a volume */
	if (atomic_load(&fs->lease.lost))
		return -EIO;
	if (rp_poolset_fenced(fs->ps)) {
		/* said now, by the write that found it, not at the next renewal */
		rp_mutex_lock(&fs->lease.mu, RP_LK_LEASE);
		lost(fs, "fenced: a pool refuses us for a newer holder of the lease");
		rp_mutex_unlock(&fs->lease.mu);
		return -EIO;
	}
	if (rp_boot_ms() < atomic_load(&fs->lease.fresh_until))
		return 0;
	/* old: have it renewed now and wait to see. Long enough for the renewal
	 * to finish on a busy machine (its CAS and the home copies' mirror
	 * writes each end within the op timeout): a renewal that succeeds late
	 * is as good a proof as one in time, and failing the write instead
	 * would be an EIO that only a slow CPU caused. */
	uint64_t deadline = rp_now_ms() + (fs->lease.held.period_ms ? fs->lease.held.period_ms : 1000) +
			    2ull * fs->ps->op_timeout_ms;
	rp_mutex_lock(&fs->lease.mu, RP_LK_LEASE);
	fs->lease.kick = true;
	pthread_cond_broadcast(&fs->lease.cv);
	while (!atomic_load(&fs->lease.lost) &&
	       rp_boot_ms() >= atomic_load(&fs->lease.fresh_until) && rp_now_ms() < deadline)
		wait_until(fs, deadline - rp_now_ms());
	rp_mutex_unlock(&fs->lease.mu);
	return rp_boot_ms() < atomic_load(&fs->lease.fresh_until) ? 0 : -EIO;
}

int lease_fence(struct rp_fs *fs)
{
	int rc;
	if (!fs->lease.running || IGNORING_LEASE())
		return 0;
	if ((rc = lease_guard(fs)) < 0)
		return rc;
	rc = lease_fence_check(fs->ps, &fs->lease.held);
	if (rc == -ESTALE) {
		rp_mutex_lock(&fs->lease.mu, RP_LK_LEASE);
		lost(fs, "fenced: another mounter has taken the volume over");
		rp_mutex_unlock(&fs->lease.mu);
		return -EIO;
	}
	return rc;
}
