/* Read-only mounts follow the writer. Every follow interval the follower
 * renews its reader slot's heartbeat, applies the transactions the writer
 * has made durable since the last look, and publishes how far it got, so
 * the writer knows which freed blocks it may reuse (held.c). When the
 * writer checkpoints (a new epoch), the follower loads the new log whole.
 * Records are applied a transaction at a time under fs->follow.apply (exclusive)
 * and fs->mu, so a data read never runs with a block map that changes
 * under it. A follower that could not renew for a while stops serving
 * data (EIO) before the writer can give its blocks away; one the writer
 * expired loads everything afresh. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* lease periods of failed heartbeats before a reader gives its slot up:
 * two stop its reads (follow_set_fresh), five expire it at the writer */
#define GIVE_UP_PERIODS 3
#define ADOPT_RETRY_MS 5000 /* between tries to take a rebuilt pool up */
#define OLDER_WAIT_MS 2500  /* past two elections of the volume table's authority */

struct follow_ctx {
	struct rp_fs *fs;
	bool locked;
	int err;
};

/* The log callback: lock at a transaction's first record, unlock after its
 * last (log_tail_read hands over complete transactions only). */
static int follow_apply(void *arg, const struct rp_rec *r)
{
	struct follow_ctx *c = arg;
	if (!c->locked) {
		/* The writer marks a copy stale before the write that missed it
		 * counts, so before the records naming the new data are durable:
		 * the placement read now, after those records were read, knows
		 * every copy they must not be read from (read before them, it
		 * could be older than the mark, and the copy would return the
		 * block's previous owner's bytes). Read before the locks (a
		 * network read must not hold up data reads), and a failed read
		 * stops here: the transaction is applied on the next look. */
		int rc = place_follow(c->fs, c->fs->pool_ids);
		if (rc < 0)
			return rc;
		rp_rwlock_wrlock(&c->fs->follow.apply, RP_LK_APPLY);
		rp_mutex_lock(&c->fs->mu, RP_LK_FS);
		c->locked = true;
	}
	int rc = state_apply(c->fs, r, NULL);
	if (rc < 0)
		atomic_store(&c->fs->follow.stale, true); /* (loaded afresh next) */
	if (rc < 0 && !c->err) {
		rp_err("volume \"%s\": following the log: record %llu (type %u) does not apply: %s",
		       c->fs->vol.name, (unsigned long long)r->seq, r->type, strerror(-rc));
		c->err = rc;
	}
	if (r->flags & REC_F_END) {
		rp_mutex_unlock(&c->fs->mu);
		rp_rwlock_unlock(&c->fs->follow.apply);
		c->locked = false;
	}
	return 0; /* one bad record does not stop the others */
}

/* A pool the records (ids) name under another uuid than the one this mount
 * knows (or knows none of: down when it mounted): with copies, the writer
 * rebuilt a replacement there, and its records name the pool a copy holds
 * only once it is filled and current (checkpoint.c). Taken up (connected
 * under that uuid, if the server holds it) so that reads and the volume
 * table's updates reach it again; until then it was refused as another
 * pool, for good. Which copies may be read is the placement's to say, read
 * after the records. One try per adopt_wait (ADOPT_RETRY_MS, doubled after
 * each failure up to a minute), the pools in turn; the server is asked
 * first (a connect timeout, in this thread: a pool down since the mount,
 * whose pool this mount never knew, is asked only by a mount without a
 * slot, which serves nothing), and only a pool it holds is taken up with
 * data reads held off (they read the superblock, which that rewrites).
 * Follow thread only. */
static void follow_adopt(struct rp_fs *fs, const struct rp_pool_id *ids, bool slotless)
{
	uint64_t now = rp_now_ms();
	size_t n = fs->ps->n;
	uint32_t wait = fs->follow.adopt_wait ? fs->follow.adopt_wait : ADOPT_RETRY_MS;
	if (!ids || (fs->follow.adopt_ms && now - fs->follow.adopt_ms < wait))
		return;
	for (size_t k = 0; k < n; k++) {
		uint32_t id = (uint32_t)((fs->follow.adopt_turn + k) % n);
		struct rp_pool *p = &fs->ps->pools[id];
		if (!rp_poolset_has(fs->ps, id) || !ids[id].known ||
		    memcmp(p->sb.pool_uuid, ids[id].uuid, 16) == 0 || (!p->sb.magic && !slotless))
			continue;
		fs->follow.adopt_ms = now;
		fs->follow.adopt_turn = id + 1;
		char err[320] = "";
		int rc = rp_pool_holds(fs->ps, id, ids[id].uuid);
		if (rc == 0) {
			struct rp_volplace pl = place_snapshot(fs);
			int ri = place_ring_index(&pl, id);
			rp_rwlock_wrlock(&fs->follow.apply, RP_LK_APPLY);
			rp_mutex_lock(&fs->mu, RP_LK_FS);
			rc = rp_pool_adopt(fs->ps, id, ids[id].uuid, err, sizeof(err));
			if (rc == 0 && ri >= 0 && pl.replicas > 1)
				p->stale = (pl.stale >> ri) & 1;
			rp_mutex_unlock(&fs->mu);
			rp_rwlock_unlock(&fs->follow.apply);
		}
		fs->follow.adopt_wait = rc < 0 ? (wait >= 30000 ? 60000 : 2 * wait) : ADOPT_RETRY_MS;
		if (rc < 0)
			rp_warn("volume \"%s\": peer %u, which the records name under another pool, "
				"is not taken up (again in %u s): %s", fs->vol.name, id,
				fs->follow.adopt_wait / 1000, err[0] ? err : strerror(-rc));
		else
			rp_info("volume \"%s\": peer %u is the pool the records name: read again%s",
				fs->vol.name, id, p->stale ? " (once current)" : "");
		return;
	}
}

/* The volume v whole, in a namespace of its own (NULL: could not, said). */
static struct rp_fs *follow_load(struct rp_fs *fs, const struct rp_volrec *v)
{
	struct rp_fs *tmp = calloc(1, sizeof(*tmp));
	char err[256];
	if (!tmp)
		return NULL;
	tmp->ps = fs->ps;
	tmp->vol = *v;
	tmp->ro = true;
	/* the ring, for records naming a replaced pool (a lost copy, not a
	 * refusal: state.c) */
	tmp->place.vol = place_snapshot(fs);
	struct rp_extvec segs = { 0 };
	int rc = state_load(tmp, &segs, err, sizeof(err));
	extvec_free(&segs);
	if (rc == 0)
		return tmp;
	rp_warn("%s", err);
	state_free(tmp);
	free(tmp);
	return NULL;
}

/* Load the volume whole (after a checkpoint, or after being expired) into
 * a fresh namespace, then swap it in. */
static int follow_reload(struct rp_fs *fs, const struct rp_volrec *v)
{
	struct rp_fs *tmp = follow_load(fs, v);
	if (!tmp)
		return -EIO;
	/* as in follow_apply: the placement read after the log, before the locks */
	int rc = place_follow(fs, tmp->pool_ids);
	if (rc < 0)
		rp_warn("volume \"%s\": reading the placement: %s", v->name, strerror(-rc));
	if (rc == 0) {
		rp_rwlock_wrlock(&fs->follow.apply, RP_LK_APPLY);
		rp_mutex_lock(&fs->mu, RP_LK_FS);
		struct rp_itable it = fs->it;
		fs->it = tmp->it;
		tmp->it = it;
		fs->next_ino = tmp->next_ino;
		vol_update(&fs->vol, v);
		fs->follow.tail = tmp->follow.tail;
		struct rp_pool_id *ids = fs->pool_ids;
		fs->pool_ids = tmp->pool_ids;
		tmp->pool_ids = ids;
		rp_mutex_unlock(&fs->mu);
		rp_rwlock_unlock(&fs->follow.apply);
	}
	state_free(tmp);
	free(tmp);
	return rc;
}

/* Without a slot the writer holds nothing for this mount: its log may be
 * freed and reused under a read, so nothing is applied to the namespace
 * served. What may let a slot be taken again (the heartbeats' copy of the
 * volume table on a pool refused as another, which the writer has rebuilt
 * since) is looked for in a load of its own: a garbled one only names a
 * pool no server holds. */
static void follow_probe(struct rp_fs *fs)
{
	bool refused = false;
	uint64_t now = rp_now_ms();
	for (size_t id = 0; id < fs->ps->n; id++)
		refused |= rp_poolset_has(fs->ps, (uint32_t)id) &&
			   atomic_load(&fs->ps->pools[id].error) == -ESTALE;
	struct rp_volrec v;
	if (!refused || (fs->follow.probe_ms && now - fs->follow.probe_ms < ADOPT_RETRY_MS))
		return;
	fs->follow.probe_ms = now;
	if (vol_read(fs->ps, fs->slot, &v) < 0)
		return;
	struct rp_fs *tmp = follow_load(fs, &v);
	if (!tmp)
		return;
	follow_adopt(fs, tmp->pool_ids, true);
	state_free(tmp);
	free(tmp);
}

void follow_set_fresh(struct rp_fs *fs)
{
	/* two periods without a heartbeat: three are left before the writer
	 * may expire us, for reads already under way to finish */
	uint32_t period = vol_lease_period(&fs->vol);
	atomic_store(&fs->follow.fresh_until, fs->follow.reader.last_renew_ms + 2ull * period);
}

/* Heartbeats that keep failing may still land on the authority (a copy in
 * sync misses them, and a reader drops no copy): the writer would see this
 * mount alive and hold every free for a position it cannot publish. It
 * stops beating instead (the writer expires the slot), and takes a slot
 * anew once updates land. */
static void follow_give_up(struct rp_fs *fs, int rc)
{
	rp_warn("volume \"%s\": the read-only mount's heartbeats failed %u times in a row (%s): "
		"giving its reader slot up until the volume table takes updates again",
		fs->vol.name, fs->follow.fails, strerror(-rc));
	fs->follow.abandoned = fs->follow.reader;
	fs->follow.reader.hb = 0;
	atomic_store(&fs->follow.stale, true);
}

/* Heartbeat; after an expiry, a new slot and a whole load (the slot again
 * on later steps while taking one fails: reader.hb 0). Runs on the follow
 * thread only: fs->follow.reader and fs->vol are its to read. */
static int follow_renew(struct rp_fs *fs, bool *reload)
{
	uint32_t period = vol_lease_period(&fs->vol);
	bool slot = fs->follow.reader.hb != 0;
	if (slot && rp_boot_ms() - fs->follow.reader.last_renew_ms < period / 2)
		return 0;
	int rc = slot ? reader_renew(fs->ps, &fs->follow.reader) : -ESTALE;
	fs->follow.fails = rc == 0 || rc == -ESTALE ? 0 : fs->follow.fails + 1;
	if (rc == 0)
		follow_set_fresh(fs);
	if (rc < 0 && rc != -ESTALE && fs->follow.fails >= GIVE_UP_PERIODS &&
	    rp_boot_ms() - fs->follow.reader.last_renew_ms > GIVE_UP_PERIODS * period) {
		follow_give_up(fs, rc);
		return rc;
	}
	if (rc != -ESTALE)
		return rc;
	if (slot)
		rp_warn("volume \"%s\": the writer gave up waiting for this read-only mount; "
			"loading the volume again", fs->vol.name);
	atomic_store(&fs->follow.stale, true);
	fs->follow.reader.hb = 0;
	if ((rc = reader_register(fs->ps, fs->slot, &fs->follow.reader)) < 0)
		return rc;
	reader_release(fs->ps, &fs->follow.abandoned); /* (else the writer expires it) */
	follow_set_fresh(fs);
	*reload = true;
	return 0;
}

/* A volume record older than the log followed: epochs only go up, so it
 * comes from a copy the writer has left behind, read for a moment (the
 * authority is elected again within a second), or from a checkpoint the
 * writer gave up after it landed (then its old log is kept). Reads stop at
 * once (stale); the record is ignored for OLDER_WAIT_MS, long enough for
 * the authority to have been elected afresh, and loaded if it stays: an
 * older log loaded from a copy left behind may have been freed. */
static bool follow_older(struct rp_fs *fs, const struct rp_volrec *v)
{
	uint64_t now = rp_now_ms();
	if (v->epoch >= fs->follow.tail.epoch) {
		fs->follow.older_ms = 0;
		return false;
	}
	atomic_store(&fs->follow.stale, true);
	if (!fs->follow.older_ms) {
		fs->follow.older_ms = now;
		rp_warn("volume \"%s\": the volume table names epoch %llu, older than the log "
			"followed (%llu): reads stop; loaded if it stays %u ms", fs->vol.name,
			(unsigned long long)v->epoch, (unsigned long long)fs->follow.tail.epoch,
			OLDER_WAIT_MS);
		/* a position no further than its start: the writer, if it is
		 * back there, holds what it frees from then on for us */
		reader_set_pos(fs->ps, &fs->follow.reader, v->epoch, 0);
	}
	return now - fs->follow.older_ms < OLDER_WAIT_MS;
}

void follow_step(struct rp_fs *fs)
{
	bool reload = false;
	/* A heartbeat that failed stops reads by itself (follow_fresh); with a
	 * slot the log is followed all the same (the writer holds what it
	 * frees for our last position), since what it records may be what
	 * lets the next one land (a rebuilt replacement, follow_adopt). */
	int beat = follow_renew(fs, &reload);
	if (!fs->follow.reader.hb) {
		follow_adopt(fs, fs->pool_ids, true);
		follow_probe(fs);
		return;
	}
	if (atomic_load(&fs->follow.stale))
		reload = true;
	struct rp_volrec v;
	if (vol_read(fs->ps, fs->slot, &v) < 0 || follow_older(fs, &v))
		return;
	place_follow(fs, fs->pool_ids); /* copies the writer found stale (and came back) */
	int rc = 0;
	/* (a checkpoint the writer gave up may have reused the epoch: the
	 * head says which log it is) */
	bool other_log = v.epoch != fs->follow.tail.epoch || v.head_tag != fs->vol.head_tag ||
			 v.head.pool != fs->vol.head.pool || v.head.block != fs->vol.head.block;
	if (other_log && v.epoch == fs->follow.tail.epoch)
		rp_warn("volume \"%s\": epoch %llu has another log than the one followed (a "
			"checkpoint the writer gave up): loading it", fs->vol.name,
			(unsigned long long)v.epoch);
	if (reload || atomic_load(&fs->follow.stale) || other_log) {
		rc = follow_reload(fs, &v);
	} else {
		struct follow_ctx c = { .fs = fs };
		uint64_t n;
		rc = log_tail_read(fs->ps, &fs->follow.tail, follow_apply, &c, NULL, &n);
		if (c.locked) {
			rp_mutex_unlock(&fs->mu);
			rp_rwlock_unlock(&fs->follow.apply);
		}
		if (rc == 0 && c.err)
			rc = c.err; /* (stale: loaded afresh at the next step) */
	}
	follow_adopt(fs, fs->pool_ids, false);
	/* the slot still ours: a load that outlasted the expiry could find
	 * it given to another reader, whose position this would overwrite */
	uint32_t period = vol_lease_period(&fs->vol);
	bool ours = rp_boot_ms() - fs->follow.reader.last_renew_ms <
		    (uint64_t)(LEASE_EXPIRY_PERIODS - 1) * period;
	if (rc == 0 && beat == 0 && ours &&
	    reader_set_pos(fs->ps, &fs->follow.reader, fs->follow.tail.epoch, fs->follow.tail.seq) == 0)
		atomic_store(&fs->follow.stale, false);
}

/* Any thread: the follow thread's fields are read only through atomics. */
bool follow_fresh(struct rp_fs *fs)
{
	return !atomic_load(&fs->follow.stale) &&
	       rp_boot_ms() < atomic_load(&fs->follow.fresh_until);
}
