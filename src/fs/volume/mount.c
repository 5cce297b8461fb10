/* Making, mounting and unmounting volumes, and the background work of a
 * mount: renewing the lease, flushing the log every commit interval, and
 * checkpointing when the log has grown. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CKPT_RETRY_MS 10000
#define HOME_RESYNC_MS 5000 /* how often the holder looks for home copies out of sync */
#define HOME_RESYNC_MAX_MS 60000
#define HELD_DRAIN_MS 3000

static int check_volume_name(const char *name, char *err, size_t errlen)
{
	size_t n = strlen(name);
	if (n == 0 || n > RP_VOLUME_NAME_MAX) {
		snprintf(err, errlen, "volume name must be 1..%d bytes", RP_VOLUME_NAME_MAX);
		return -ENAMETOOLONG;
	}
	return 0;
}

int fs_new(struct rp_poolset *ps, struct rp_fs **out)
{
	struct rp_fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->ps = ps;
	fs->slot = -1;
	pthread_mutex_init(&fs->mu, NULL);
	pthread_mutex_init(&fs->place.mu, NULL);
	pthread_mutex_init(&fs->bg.mu, NULL);
	pthread_mutex_init(&fs->lease.mu, NULL);
	pthread_mutex_init(&fs->space.ring_mu, NULL);
	/* timed waits on the monotonic clock: a step of the wall clock is
	 * neither a lease renewal missed nor a background tick */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->lease.cv, &ca);
	pthread_cond_init(&fs->bg.cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_rwlock_init(&fs->follow.apply, NULL);
	pthread_mutex_init(&fs->bufs.mu, NULL);
	pthread_cond_init(&fs->bufs.cv, NULL);
	fs->bufs.size = IO_BUF_SIZE;
	fs->bufs.free = calloc(BUFPOOL_MAX, sizeof(*fs->bufs.free));
	int rc = fs->bufs.free ? rp_buf_alloc(ps, ZERO_BUF_SIZE, &fs->zero) : -ENOMEM;
	if (rc == 0 && (rc = prealloc_init(fs)) < 0)
		rp_buf_free(fs->zero);
	if (rc == 0)
		diverged_init(fs);
	if (rc < 0) {
		free(fs->bufs.free);
		free(fs);
		return rc;
	}
	memset(rp_buf_data(fs->zero), 0, ZERO_BUF_SIZE);
	fs->block_size = ps->block_size;
	fs->stripe_blocks = 64;
	fs->alloc_counter = (uint64_t)getpid();
	*out = fs;
	return 0;
}

void fs_delete(struct rp_fs *fs)
{
	rp_metrics_drop(fs); /* before what they point at goes */
	/* every thread of ours is gone: the pool set outlives us (the admin
	 * tool mounts again with it) and must not call into freed memory */
	if (fs->ps && fs->ps->retry_arg == fs) {
		fs->ps->retry_guard = NULL;
		fs->ps->retry_arg = NULL;
	}
	place_uninstall(fs);
	state_free(fs);
	extvec_free(&fs->deferred);
	for (size_t i = 0; i < fs->bufs.nfree; i++)
		rp_buf_free(fs->bufs.free[i]);
	free(fs->bufs.free);
	rp_buf_free(fs->zero);
	prealloc_fini(fs);
	diverged_fini(fs);
	pthread_mutex_destroy(&fs->mu);
	pthread_mutex_destroy(&fs->place.mu);
	pthread_mutex_destroy(&fs->bg.mu);
	pthread_mutex_destroy(&fs->lease.mu);
	pthread_mutex_destroy(&fs->space.ring_mu);
	pthread_cond_destroy(&fs->lease.cv);
	pthread_rwlock_destroy(&fs->follow.apply);
	free(fs->held.v);
	pthread_cond_destroy(&fs->bg.cv);
	pthread_mutex_destroy(&fs->bufs.mu);
	pthread_cond_destroy(&fs->bufs.cv);
	free(fs);
}

/* The volume's copies and stale pools, before anything is read from it. */
int fs_use_placement(struct rp_fs *fs, char *err, size_t errlen)
{
	struct rp_volplace pl;
	int rc = place_read(fs->ps, fs->slot, &pl);
	if (rc == -ENODATA)
		return 0; /* made before replicas: one copy */
	if (rc == 0)
		rc = place_install(fs, &pl);
	if (rc < 0) {
		snprintf(err, errlen, "volume \"%s\": reading the placement of its copies: %s",
			 fs->vol.name, strerror(-rc));
		return rc;
	}
	if (pl.stale) {
		char d[256];
		place_describe(&pl, d, sizeof(d));
		rp_warn("volume \"%s\": %s", fs->vol.name, d);
	}
	return 0;
}

/* The first pool that is down, as the error to report; 0 when all are up. */
static int first_down(struct rp_poolset *ps, char *err, size_t errlen)
{
	for (size_t k = 0; k < ps->npeers; k++) {
		const struct rp_pool *p = &ps->pools[ps->ids[k]];
		if (p->error < 0) {
			snprintf(err, errlen, "%s", p->err);
			return p->error;
		}
	}
	return 0;
}

/* Without replicas every pool holds a share of the files: all must be up. */
static int pools_needed(struct rp_fs *fs, char *err, size_t errlen)
{
	return rp_poolset_replicated(fs->ps) ? 0 : first_down(fs->ps, err, errlen);
}

static void default_holder(char *buf, size_t len)
{
	char host[64] = "?";
	gethostname(host, sizeof(host) - 1);
	snprintf(buf, len, "%.40s:%ld", host, (long)getpid()); /* fits a holder word */
}

/* Free every block an existing volume holds: its files' and its log's. */
static int destroy_volume(struct rp_fs *old, char *err, size_t errlen)
{
	struct rp_extvec segs = { 0 };
	int rc = state_load(old, &segs, err, errlen);
	if (rc < 0)
		return rc;
	for (size_t b = 0; b < old->it.nb; b++)
		for (struct rp_inode *in = old->it.b[b]; in; in = in->hnext)
			for (size_t i = 0; i < in->map.n; i++) {
				struct rp_extent e = { .pool = in->map.v[i].pool,
						       .block = in->map.v[i].pblock,
						       .count = in->map.v[i].count };
				rp_pool_free(old->ps, &e);
			}
	for (size_t i = 0; i < segs.n; i++)
		rp_pool_free(old->ps, &segs.v[i]);
	extvec_free(&segs);
	return 0;
}

/* mkfs --force: the old volume's lease is taken first (a holder that is
 * only silent, stopped or suspended, is fenced rather than left writing
 * into blocks given away), then its blocks are given back. The lease is
 * held until the new volume is written. */
static int replace_existing(struct rp_poolset *ps, int slot, const struct rp_volrec *existing,
			    struct rp_lease *lease, char *err, size_t errlen)
{
	struct rp_fs *old;
	int rc = lease_acquire(ps, slot, vol_lease_period(existing),
			       "rdmapool mkfs --force", lease, err, errlen);
	if (rc < 0) {
		if (rc != -EBUSY)
			snprintf(err, errlen, "volume \"%s\": taking its lease: %s", existing->name,
				 strerror(-rc));
		return rc;
	}
	if ((rc = fs_new(ps, &old)) < 0)
		return rc;
	old->vol = *existing;
	old->ro = true;
	old->slot = slot;
	rc = fs_use_placement(old, err, errlen);
	if (rc == 0)
		rc = destroy_volume(old, err, errlen);
	fs_delete(old);
	return rc;
}

int rp_fs_mkfs(struct rp_poolset *ps, const struct rp_mkfs_opts *o, char *err, size_t errlen)
{
	const char *name = o->volume ? o->volume : RP_DEFAULT_VOLUME;
	struct rp_fs *fs;
	struct rp_lease lease = { 0 };
	struct rp_volrec existing;
	int slot = -1, rc;

	memset(&existing, 0, sizeof(existing));
	if ((rc = check_volume_name(name, err, errlen)))
		return rc;
	home_init(ps);
	rc = vol_find(ps, name, &slot, &existing);
	bool exists = rc == 0;
	if (exists && !o->force) {
		snprintf(err, errlen, "volume \"%s\" already exists (use --force to replace it and "
			 "lose its files)", name);
		return -EEXIST;
	}
	if (rc < 0 && rc != -ENOENT) {
		snprintf(err, errlen, "reading the volume table: %s", strerror(-rc));
		return rc;
	}
	if ((rc = fs_new(ps, &fs)) < 0)
		return rc;
	if (exists) {
		if ((rc = replace_existing(ps, slot, &existing, &lease, err, errlen)) < 0) {
			lease_release(ps, &lease);
			fs_delete(fs);
			return rc;
		}
	} else {
		slot = -1;
		if ((rc = vol_claim(ps, name, &slot)) < 0) {
			snprintf(err, errlen, "claiming a volume slot: %s",
				 rc == -ENOSPC ? "the volume table is full" : strerror(-rc));
			fs_delete(fs);
			return rc;
		}
	}
	fs->slot = slot;
	/* the placement first: the new log is written with its copies */
	struct rp_volplace pl;
	if ((rc = place_new(ps, o->replicas, &pl, err, errlen)) < 0)
		goto fail;
	if ((rc = place_install(fs, &pl)) < 0 || (rc = place_write(ps, slot, &pl, true)) < 0) {
		snprintf(err, errlen, "writing the placement of the copies: %s", strerror(-rc));
		goto fail;
	}
	memset(&fs->vol, 0, sizeof(fs->vol));
	snprintf(fs->vol.name, sizeof(fs->vol.name), "%s", name);
	rp_random_bytes(fs->vol.uuid, sizeof(fs->vol.uuid));
	fs->vol.epoch = 1;
	fs->vol.block_size = ps->block_size;
	fs->vol.stripe_blocks = o->stripe_blocks ? o->stripe_blocks : 64;
	fs->vol.lease_ms = o->lease_ms ? o->lease_ms : 1000;
	fs->vol.created_ns = rp_wall_ns();
	fs->vol.seq = existing.seq; /* keep counting up in a reused slot */

	/* The first log: the root directory. */
	struct rp_logw w;
	if ((rc = log_init(fs, &w, fs->vol.epoch)) < 0) {
		snprintf(err, errlen, "allocating the metadata log: %s", strerror(-rc));
		goto fail;
	}
	struct timespec now = fs_now();
	struct rp_rec r = { .type = REC_ATTR, .flags = REC_F_END, .ino = RP_ROOT_INO,
			    .mode = S_IFDIR | 0755, .uid = o->uid, .gid = o->gid, .nlink = 2,
			    .gen = 1, .atime = now, .mtime = now, .ctime = now };
	struct rp_rec ni = { .type = REC_NEXT_INO, .flags = REC_F_END, .ino = RP_ROOT_INO + 1 };
	rc = log_append(fs, &w, &ni);
	if (rc == 0)
		rc = log_append(fs, &w, &r);
	if (rc == 0)
		rc = log_flush(fs, &w);
	/* the spare goes before the volume is written: after, a mount may
	 * already have retired this log, the spare with it */
	if (rc == 0)
		rc = log_release_spare(fs, &w);
	if (rc == 0) {
		fs->vol.head = w.segs.v[0];
		rc = vol_write(ps, slot, &fs->vol);
	}
	if (rc < 0) {
		snprintf(err, errlen, "writing the new volume: %s", strerror(-rc));
		log_discard(fs, &w, true);
		goto fail;
	}
	log_discard(fs, &w, false);
	fs_delete(fs);
	lease_release(ps, &lease);
	return 0;
fail:
	vol_release_slot(ps, slot);
	lease_release(ps, &lease);
	fs_delete(fs);
	return rc;
}

static void *bg_main(void *arg)
{
	struct rp_fs *fs = arg;
	uint64_t last_flush = rp_now_ms(), last_clear = last_flush, next_home = last_flush;
	uint64_t home_wait = HOME_RESYNC_MS;
	uint32_t tick = fs->lease.held.period_ms ? fs->lease.held.period_ms : 1000;
	if (fs->commit_ms < tick)
		tick = fs->commit_ms;
	if (fs->ro)
		tick = fs->follow.ms;

	rp_mutex_lock(&fs->bg.mu, RP_LK_BG);
	while (!atomic_load(&fs->stop)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)tick * 1000000ull;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		pthread_cond_timedwait(&fs->bg.cv, &fs->bg.mu, &ts);
		if (atomic_load(&fs->stop))
			break;
		rp_mutex_unlock(&fs->bg.mu);
		if (fs->ro) {
			follow_step(fs);
			rp_mutex_lock(&fs->bg.mu, RP_LK_BG);
			continue;
		}

		uint64_t now = rp_now_ms();
		place_note_down(fs); /* a copy that went away: degraded from now on */
		rebuild_poll(fs);    /* 'rdmapool rebuild' asked us to fill stale copies */
		/* home copies dropped by a hiccup come back by themselves: a
		 * second failure then still finds a majority in sync (only as
		 * the holder, while its lease is fresh; a resync that fails
		 * waits twice as long before the next, up to a minute: it
		 * holds the lock the lease's renewals take) */
		if (!atomic_load(&fs->lease.lost) && rp_boot_ms() < atomic_load(&fs->lease.fresh_until) &&
		    now >= next_home) {
			bool out = home_any_out(fs->ps);
			home_wait = out && home_resync(fs->ps, NULL) < 0
					    ? RP_MIN(home_wait * 2, HOME_RESYNC_MAX_MS)
					    : HOME_RESYNC_MS;
			next_home = now + home_wait;
		}
		if (!atomic_load(&fs->lease.lost))
			diverged_resync(fs); /* copies a failed write left different */
		space_refresh_if_old(fs);
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		if (!atomic_load(&fs->lease.lost)) {
			if (now - last_flush >= fs->commit_ms) {
				log_flush(fs, &fs->log);
				last_flush = now;
			}
			/* a failed checkpoint (pools unreachable) is retried later,
			 * not on every tick */
			if (now >= fs->ckpt_retry_ms &&
			    (fs->ckpt_doubt.pending || checkpoint_worthwhile(fs)) && checkpoint(fs) < 0)
				fs->ckpt_retry_ms = now + CKPT_RETRY_MS;
			if (now - last_clear >= INTENT_TICK_MS) {
				intent_clear_idle(fs); /* after diverged_resync: failed writes' stay */
				last_clear = now;
			}
			held_release(fs); /* readers that moved on since the last flush */
		}
		rp_mutex_unlock(&fs->mu);
		rp_mutex_lock(&fs->bg.mu, RP_LK_BG);
	}
	rp_mutex_unlock(&fs->bg.mu);
	return NULL;
}

/* Copies a writer that stopped in the middle of writes may have left
 * different are made the same before we serve: the chunks its write intent
 * names, or, if its log kept none (an older writer), everything. */
static int copies_after_crash(struct rp_fs *fs)
{
	if (!rp_poolset_replicated(fs->ps))
		return 0;
	int rc = 0;
	if (fs->lease.held.took_over || intent_any(fs))
		rc = copies_resync(fs, fs->lease.held.took_over && !fs->intent.known, fs->lease.held.took_over);
	if (rc == 0)
		intent_reset(fs); /* the new log starts with none */
	return rc;
}

/* Read-write: take the lease, replay, and continue in a new epoch (a
 * checkpoint leaves whatever a crash left past the end of the old log
 * behind for good); free inodes unlinked while open at the last stop. */
static int start_writer(struct rp_fs *fs, const struct rp_mount_opts *o, char *err, size_t errlen)
{
	struct rp_extvec segs = { 0 };
	char holder[64];
	int rc;

	if (!o->holder)
		default_holder(holder, sizeof(holder));
	fs->lease.held.dead = o->dead_lease;
	rc = lease_acquire(fs->ps, fs->slot, vol_lease_period(&fs->vol),
			   o->holder ? o->holder : holder, &fs->lease.held, err, errlen);
	if (rc < 0) {
		if (rc != -EBUSY)
			snprintf(err, errlen, "taking the volume's lease: %s", strerror(-rc));
		return rc;
	}
	/* renewing from now on: replay and the first checkpoint may be long */
	if ((rc = lease_start(fs)) < 0) {
		snprintf(err, errlen, "cannot start the lease thread");
		goto fail_lease;
	}
	/* the records may have changed while we waited for a stale lease */
	if ((rc = vol_read(fs->ps, fs->slot, &fs->vol)) < 0) {
		snprintf(err, errlen, "re-reading the volume: %s", strerror(-rc));
		goto fail_lease;
	}
	if ((rc = fs_use_placement(fs, err, errlen)) < 0)
		goto fail_lease;
	home_init(fs->ps);
	if ((rc = state_load(fs, &segs, err, errlen)) < 0)
		goto fail_lease;
	/* not fatal: a pool that holds the last current copy of some blocks
	 * stays current (writes to those blocks fail until it is back) */
	place_note_down(fs);
	fs->log.segs = segs;
	segs = (struct rp_extvec){ 0 };
	fs->log.epoch = fs->vol.epoch;
	if (o->rebuild && (rc = rebuild_stale(fs, o->rebuild_rate_mib, o->progress, o->rebuild_progress,
						err, errlen)) < 0) {
		extvec_free(&fs->log.segs);
		goto fail_lease;
	}
	atomic_store(&fs->log_segments, fs->log.segs.n);
	space_refresh(fs);
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	rc = copies_after_crash(fs);
	if (rc == 0)
		rc = checkpoint(fs);
	if (rc == 0) {
		size_t orphans = 0;
		for (size_t b = 0; b < fs->it.nb; b++) {
			struct rp_inode *in = fs->it.b[b], *next;
			for (; in; in = next) {
				next = in->hnext;
				if (o->kernel_knows) {
					in->nlookup = 1; /* the kernel may hold it: its forget frees */
					continue;
				}
				if (in->nlink == 0 && in->ino != RP_ROOT_INO) {
					fs_maybe_purge(fs, in);
					orphans++;
				}
			}
		}
		if (orphans)
			rp_info("volume \"%s\": freed %zu orphaned inodes", fs->vol.name, orphans);
		rc = log_flush(fs, &fs->log);
	}
	rp_mutex_unlock(&fs->mu);
	if (rc < 0) {
		snprintf(err, errlen, "volume \"%s\": starting a new log: %s", fs->vol.name,
			 strerror(-rc));
		goto fail_log;
	}
	return 0;
fail_log:
	checkpoint_forget_doubt(fs);
	if (fs->log.scratch)
		log_discard(fs, &fs->log, false);
	else
		extvec_free(&fs->log.segs);
fail_lease:
	extvec_free(&segs);
	lease_stop(fs);
	/* a lease taken over from a writer that died is left to expire: the
	 * next mount takes it over too, and so knows to make the copies the
	 * same (a released one would look cleanly unmounted) */
	if (fs->lease.held.took_over && rp_poolset_replicated(fs->ps))
		rp_info("volume \"%s\": the lease is left to expire: the next mount takes it over "
			"and makes the copies the same", fs->vol.name);
	else
		lease_release(fs->ps, &fs->lease.held);
	return rc;
}

/* Read-only: a reader slot first (the writer holds frees from then on),
 * then the volume as its log says now; the follower keeps up from there. */
/* A reader slot; when all are taken, watch them for the expiry time: slots
 * of readers that died without a writer to expire them are taken over. */
static int take_reader_slot(struct rp_fs *fs)
{
	uint32_t period = vol_lease_period(&fs->vol);
	uint64_t deadline = rp_now_ms() + (uint64_t)period * (LEASE_EXPIRY_PERIODS + 1);
	struct rp_reader_watch w;
	memset(&w, 0, sizeof(w));
	for (;;) {
		int rc = reader_register(fs->ps, fs->slot, &fs->follow.reader);
		uint64_t min;
		if (rc == 0)
			follow_set_fresh(fs);
		if (rc != -EUSERS || rp_now_ms() >= deadline)
			return rc;
		if ((rc = readers_scan(fs->ps, fs->slot, &w, period, &min)) < 0)
			return rc;
		struct timespec ts = { 0, (long)period * 250000L };
		nanosleep(&ts, NULL);
	}
}

static int start_reader(struct rp_fs *fs, const struct rp_mount_opts *o, char *err, size_t errlen)
{
	struct rp_extvec segs = { 0 };
	int rc = take_reader_slot(fs);
	if (rc < 0) {
		if (rc == -EUSERS)
			snprintf(err, errlen, "volume \"%s\" has %d read-only mounts already",
				 fs->vol.name, READER_SLOTS);
		else
			snprintf(err, errlen, "volume \"%s\": taking a reader slot: %s", fs->vol.name,
				 strerror(-rc));
		return rc;
	}
	fs->follow.ms = o->follow_ms ? o->follow_ms : RP_DEFAULT_FOLLOW_MS;
	if ((rc = vol_read(fs->ps, fs->slot, &fs->vol)) < 0) {
		snprintf(err, errlen, "re-reading the volume: %s", strerror(-rc));
	} else if ((rc = state_load(fs, &segs, err, errlen)) == 0 &&
		   (rc = reader_set_pos(fs->ps, &fs->follow.reader, fs->follow.tail.epoch, fs->follow.tail.seq)) < 0) {
		snprintf(err, errlen, "volume \"%s\": publishing the reader position: %s",
			 fs->vol.name, strerror(-rc));
	}
	extvec_free(&segs);
	if (rc < 0)
		reader_release(fs->ps, &fs->follow.reader);
	return rc;
}

int rp_fs_mount(struct rp_poolset *ps, const struct rp_mount_opts *o, struct rp_fs **out,
		char *err, size_t errlen)
{
	const char *name = o->volume ? o->volume : RP_DEFAULT_VOLUME;
	struct rp_fs *fs;
	int rc;

	*out = NULL;
	if ((rc = check_volume_name(name, err, errlen)))
		return rc;
	if ((rc = fs_new(ps, &fs)) < 0)
		return rc;
	fs->ro = o->readonly;
	ps->home_no_drop = o->readonly; /* (the writer decides who is in sync) */
	fs->commit_ms = o->commit_ms ? o->commit_ms : 1000;
	/* a pool down at the open is connected while the election waits for
	 * it (a brief stall at mount time), never after: its identity is then
	 * checked against the records as every pool's (state_load) */
	atomic_store(&ps->reach_down, true);
	rc = vol_find(ps, name, &fs->slot, &fs->vol);
	atomic_store(&ps->reach_down, false);
	if (rc < 0 && rc != -ENOENT && first_down(ps, err, errlen) < 0)
		goto fail; /* the volume table is on no pool that answers */
	if (rc < 0) {
		snprintf(err, errlen, rc == -ENOENT ? "no volume \"%s\" in this cluster (make it with "
			 "'rdmapool mkfs')" : "reading the volume table: %s",
			 rc == -ENOENT ? name : strerror(-rc));
		goto fail;
	}
	if (fs->vol.block_size != ps->block_size) {
		snprintf(err, errlen, "volume \"%s\" has %u-byte blocks, the pools %u", name,
			 fs->vol.block_size, ps->block_size);
		rc = -EINVAL;
		goto fail;
	}
	fs->stripe_blocks = fs->vol.stripe_blocks ? fs->vol.stripe_blocks : 64;
	if ((rc = fs_use_placement(fs, err, errlen)) < 0 || (rc = pools_needed(fs, err, errlen)) < 0)
		goto fail;
	if ((rc = fs->ro ? start_reader(fs, o, err, errlen) : start_writer(fs, o, err, errlen)) < 0)
		goto fail;
	if (pthread_create(&fs->bg.thread, NULL, bg_main, fs) != 0) {
		rc = -EAGAIN;
		snprintf(err, errlen, "cannot start the background thread");
		goto fail_started;
	}
	fs->bg.running = true;
	*out = fs;
	return 0;
fail_started:
	if (fs->ro) {
		reader_release(ps, &fs->follow.reader);
	} else {
		checkpoint_forget_doubt(fs);
		log_discard(fs, &fs->log, false);
		lease_stop(fs);
		lease_release(ps, &fs->lease.held);
	}
fail:
	fs_delete(fs);
	return rc;
}

static void bg_stop(struct rp_fs *fs)
{
	if (!fs->bg.running)
		return;
	rp_mutex_lock(&fs->bg.mu, RP_LK_BG);
	atomic_store(&fs->stop, true);
	pthread_cond_signal(&fs->bg.cv);
	rp_mutex_unlock(&fs->bg.mu);
	pthread_join(fs->bg.thread, NULL);
	fs->bg.running = false;
	rebuild_join(fs); /* it stops between pieces, seeing fs->stop */
}

int rp_fs_unmount(struct rp_fs *fs)
{
	int rc = 0;
	if (!fs)
		return 0;
	if (!fs->ro && !atomic_load(&fs->lease.lost)) {
		/* A mounter that comes now waits for us instead of refusing; the
		 * lease thread keeps renewing through the last flush, which may be
		 * long after a large delete. */
		rp_mutex_lock(&fs->lease.mu, RP_LK_LEASE);
		if (lease_mark_releasing(fs->ps, &fs->lease.held) < 0)
			rp_warn("volume \"%s\": could not mark the lease as releasing",
				fs->vol.name);
		rp_mutex_unlock(&fs->lease.mu);
	}
	/* The background thread and an online rebuild before the final
	 * flush: a rebuild that finished after it would checkpoint a log that
	 * the unmount then no longer looks after (its old segments leaked). */
	bg_stop(fs);
	if (!fs->ro && !atomic_load(&fs->lease.lost)) {
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		fs->ckpt_doubt.retry_ms = 0; /* (a last try) */
		rc = checkpoint_settle(fs);
		if (rc == 0)
			rc = log_flush(fs, &fs->log);
		if (rc < 0)
			rp_err("volume \"%s\": final flush failed: %s", fs->vol.name, strerror(-rc));
		else if (log_release_spare(fs, &fs->log) < 0)
			rp_warn("volume \"%s\": the log's spare segment stays allocated until the "
				"next mount", fs->vol.name);
		/* read-only mounts follow within their interval: give them time
		 * to move past the last frees */
		held_drain(fs, HELD_DRAIN_MS);
		rp_mutex_unlock(&fs->mu);
		prealloc_return(fs);
		/* the pools' used-block counts get our last changes while the
		 * lease is ours: an fsck --repair after it sees them final */
		rp_poolset_count_flush(fs->ps);
	}
	/* what the background thread's last round left is tried once more
	 * while the lease is still ours */
	size_t left = !fs->ro && !atomic_load(&fs->lease.lost) ? diverged_resync(fs) : 0;
	if (left)
		rp_warn("volume \"%s\": %zu range(s) of files whose writes failed may still "
			"differ between copies (a peer is down); 'rdmapool fsck' names them",
			fs->vol.name, left);
	lease_stop(fs);
	if (fs->ro) {
		reader_release(fs->ps, &fs->follow.reader);
		reader_release(fs->ps, &fs->follow.abandoned); /* (a slot given up) */
	}
	if (!fs->ro) {
		/* the log stays (with its spare if it could not be let go):
		 * it is the volume (log.c) */
		checkpoint_forget_doubt(fs);
		log_discard(fs, &fs->log, false);
		if (!atomic_load(&fs->lease.lost))
			lease_release(fs->ps, &fs->lease.held);
	}
	fs_delete(fs);
	return rc;
}

uint64_t rp_fs_lease_word(struct rp_fs *fs)
{
	if (fs->ro)
		return 0;
	rp_mutex_lock(&fs->lease.mu, RP_LK_LEASE); /* the lease thread renews it */
	uint64_t w = fs->lease.held.word;
	rp_mutex_unlock(&fs->lease.mu);
	return w;
}

int rp_fs_inode_numbers(struct rp_fs *fs, uint64_t **out, size_t *n)
{
	size_t k = 0, cap = 64;
	uint64_t *v = malloc(cap * sizeof(*v));
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	for (size_t b = 0; v && b < fs->it.nb; b++)
		for (struct rp_inode *in = fs->it.b[b]; in && v; in = in->hnext) {
			if (k == cap) {
				uint64_t *nv = realloc(v, (cap *= 2) * sizeof(*v));
				if (!nv) {
					free(v);
					v = NULL;
					break;
				}
				v = nv;
			}
			v[k++] = in->ino;
		}
	rp_mutex_unlock(&fs->mu);
	if (!v)
		return -ENOMEM;
	*out = v;
	*n = k;
	return 0;
}

int rp_fs_sync(struct rp_fs *fs)
{
	int rc;
	if (fs->ro)
		return 0;
	if ((rc = fs_writable(fs)))
		return rc;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	rc = log_flush(fs, &fs->log);
	rp_mutex_unlock(&fs->mu);
	return rc < 0 ? -EIO : 0;
}

int rp_fs_fsync(struct rp_fs *fs, uint64_t ino)
{
	(void)ino; /* data is in the pools once write returns; the log holds the rest */
	return rp_fs_sync(fs);
}

int rp_fs_statfs(struct rp_fs *fs, struct statvfs *st)
{
	if (!fs->ro && fs_writable(fs) == 0) {
		/* blocks released by logged deletions are free once the log is out */
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		log_flush(fs, &fs->log);
		rp_mutex_unlock(&fs->mu);
	}
	space_refresh_within(fs, SPACE_STATFS_MAX_AGE_MS);
	uint64_t total = atomic_load(&fs->space.total), nfree = atomic_load(&fs->space.free);
	/* the reserve counts as used (space.c): Size = Used + Avail */
	uint64_t reserve = fs->ro ? 0 : space_reserve(fs);
	uint64_t avail = nfree > reserve ? nfree - reserve : 0;
	memset(st, 0, sizeof(*st));
	st->f_bsize = fs->block_size;
	st->f_frsize = fs->block_size;
	st->f_blocks = total;
	st->f_bfree = avail;
	st->f_bavail = avail;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	st->f_files = avail + fs->it.n;
	st->f_ffree = avail;
	rp_mutex_unlock(&fs->mu);
	st->f_namemax = 255;
	return 0;
}
