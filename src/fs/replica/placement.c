/* A volume's placement: how many copies of every block it keeps, on which
 * ring of pools, and which pools are stale (missed writes while down, so
 * they are not read until rebuilt). The record lives in the home area
 * next to the volume record, in two copies written alternately with a
 * sequence number and a checksum, as the volume record:
 *   home + PLACE_OFF + slot * 256: copy A (128 bytes), copy B
 *   0 magic "RPPL", 4 version, 8 seq, 16 replicas, 20 nring, 24 stale
 *   (bit i: ring[i]), 28 ring as 16-bit peer ids (RP_RING_MAX), 124 crc32c
 * A volume without a record (made before replicas existed) has one copy. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/crypto.h>
#include <rdmapool/layout.h>
#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PLACE_MAGIC 0x4c505052u /* "RPPL" */
#define PLACE_SIZE 256
#define PLACE_COPY PLACE_COPY_LEN

static uint64_t place_off(int slot, unsigned copy)
{
	return RP_HOME_OFFSET + VOL_PLACE_OFF + (uint64_t)slot * PLACE_SIZE + copy * PLACE_COPY;
}

void place_encode(const struct rp_volplace *pl, uint8_t *b)
{
	memset(b, 0, PLACE_COPY);
	rp_put_le32(b, PLACE_MAGIC);
	rp_put_le32(b + 4, 1);
	rp_put_le64(b + 8, pl->seq);
	rp_put_le32(b + 16, pl->replicas);
	rp_put_le32(b + 20, pl->nring);
	rp_put_le32(b + 24, pl->stale);
	for (uint32_t i = 0; i < pl->nring && i < RP_RING_MAX; i++) {
		b[28 + 2 * i] = (uint8_t)pl->ring[i];
		b[29 + 2 * i] = (uint8_t)(pl->ring[i] >> 8);
	}
	rp_put_le32(b + 124, rp_crc32c(0, b, 124));
}

int place_decode(const uint8_t *b, struct rp_volplace *pl)
{
	if (rp_get_le32(b) != PLACE_MAGIC || rp_get_le32(b + 4) != 1 ||
	    rp_get_le32(b + 124) != rp_crc32c(0, b, 124))
		return -ENODATA;
	memset(pl, 0, sizeof(*pl));
	pl->seq = rp_get_le64(b + 8);
	pl->replicas = rp_get_le32(b + 16);
	pl->nring = rp_get_le32(b + 20);
	pl->stale = rp_get_le32(b + 24);
	if (pl->replicas < 1 || pl->replicas > RP_MAX_REPLICAS || pl->nring > RP_RING_MAX ||
	    (pl->replicas > 1 && pl->nring < pl->replicas))
		return -EBADMSG;
	for (uint32_t i = 0; i < pl->nring; i++)
		pl->ring[i] = b[28 + 2 * i] | (uint32_t)b[29 + 2 * i] << 8;
	return 0;
}

int place_read(struct rp_poolset *ps, int slot, struct rp_volplace *pl)
{
	uint8_t b[PLACE_SIZE];
	struct rp_volplace a, c;
	int rc = vol_home_read(ps, place_off(slot, 0), b, sizeof(b));
	if (rc < 0)
		return rc;
	int ra = place_decode(b, &a), rc2 = place_decode(b + PLACE_COPY, &c);
	if (ra < 0 && rc2 < 0) {
		memset(pl, 0, sizeof(*pl));
		pl->replicas = 1;
		return ra == -EBADMSG || rc2 == -EBADMSG ? -EBADMSG : -ENODATA;
	}
	*pl = (ra == 0 && (rc2 < 0 || a.seq > c.seq)) ? a : c;
	return 0;
}

int place_write(struct rp_poolset *ps, int slot, struct rp_volplace *pl, bool both)
{
	uint8_t b[PLACE_COPY];
	pl->seq++;
	place_encode(pl, b);
	int rc = vol_home_write(ps, place_off(slot, pl->seq % 2), b, sizeof(b));
	if (rc == 0 && both)
		rc = vol_home_write(ps, place_off(slot, (pl->seq + 1) % 2), b, sizeof(b));
	return rc;
}

int place_new(struct rp_poolset *ps, uint32_t replicas, struct rp_volplace *pl, char *err,
	      size_t errlen)
{
	uint32_t ids[RP_RING_MAX];
	const char *zones[RP_RING_MAX];
	size_t n = RP_MIN(ps->npeers, (size_t)RP_RING_MAX);
	memset(pl, 0, sizeof(*pl));
	pl->replicas = replicas ? replicas : 1;
	if (pl->replicas == 1)
		return 0;
	if (pl->replicas > RP_MAX_REPLICAS || pl->replicas > n) {
		snprintf(err, errlen, "--replicas %u: at most %d, and at most the %zu peers of the "
			 "cluster file", pl->replicas, RP_MAX_REPLICAS, n);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		ids[i] = ps->ids[i];
		zones[i] = ps->pools[ids[i]].peer.zone;
	}
	rp_placement_ring(ids, zones, n, pl->ring);
	pl->nring = (uint32_t)n;
	return 0;
}

int place_ring_index(const struct rp_volplace *pl, uint32_t pool)
{
	for (uint32_t i = 0; i < pl->nring; i++)
		if (pl->ring[i] == pool)
			return (int)i;
	return -1;
}

/* Would marking ring[i] stale leave some blocks without a current copy?
 * (Every extent on ring[j] has copies on ring[j..j+replicas-1].) */
static bool last_copy(const struct rp_volplace *pl, int i)
{
	uint32_t stale = pl->stale | 1u << i;
	for (uint32_t back = 0; back < pl->replicas; back++) {
		uint32_t j = ((uint32_t)i + pl->nring - back) % pl->nring, current = 0;
		for (uint32_t k = 0; k < pl->replicas; k++)
			current += !((stale >> ((j + k) % pl->nring)) & 1);
		if (current == 0)
			return true;
	}
	return false;
}

/* A write missed pool: record it as stale (once), before the write counts.
 * Not when it holds the only current copy of some blocks: then the write
 * fails (EIO), as on a disk, and the pool stays the copy to read. */
static int lost_copy(void *arg, uint32_t pool, int err)
{
	struct rp_fs *fs = arg;
	if (fs->ro)
		return 0;
	/* fs->place.vol is read under place.mu too: other writers replace it */
	rp_mutex_lock(&fs->place.mu, RP_LK_PLACE);
	int i = place_ring_index(&fs->place.vol, pool), rc = 0;
	if (i < 0 || fs->place.vol.replicas < 2) {
		rp_mutex_unlock(&fs->place.mu);
		return err;
	}
	if (!(fs->place.vol.stale & (1u << i)) && last_copy(&fs->place.vol, i)) {
		rc = err < 0 ? err : -EIO;
		if (!(fs->place.warned & (1u << i)))
			rp_err("volume \"%s\": peer %u failed (%s) and holds the last current copy "
			       "of some blocks: writes to them fail until it is back", fs->vol.name,
			       pool, strerror(-err));
		fs->place.warned |= 1u << i;
	} else if (!(fs->place.vol.stale & (1u << i))) {
		struct rp_volplace next = fs->place.vol;
		next.stale |= 1u << i;
		rc = lease_guard(fs);
		if (rc == 0)
			rc = place_write(fs->ps, fs->slot, &next, false);
		if (rc == 0) {
			fs->place.vol = next;
			rp_warn("volume \"%s\": peer %u missed a write (%s): running degraded, its "
				"copies are stale until 'rdmapool rebuild'", fs->vol.name, pool,
				strerror(-err));
		} else {
			rp_err("volume \"%s\": peer %u missed a write (%s) and that could not be "
			       "recorded (%s)", fs->vol.name, pool, strerror(-err), strerror(-rc));
		}
	}
	/* stale from now on, said under place.mu: an online rebuild that
	 * marks the pool current checks it under the same lock */
	if (rc == 0)
		fs->ps->pools[pool].stale = true;
	rp_mutex_unlock(&fs->place.mu);
	return rc;
}

struct rp_volplace place_snapshot(struct rp_fs *fs)
{
	rp_mutex_lock(&fs->place.mu, RP_LK_PLACE);
	struct rp_volplace pl = fs->place.vol;
	rp_mutex_unlock(&fs->place.mu);
	return pl;
}

int place_note_down(struct rp_fs *fs)
{
	int rc = 0;
	/* a snapshot: writers' lost_copy changes fs->place.vol under place.mu,
	 * and re-checks the stale mark itself */
	struct rp_volplace pl = place_snapshot(fs);
	for (uint32_t i = 0; i < pl.nring && pl.replicas > 1; i++) {
		uint32_t id = pl.ring[i];
		if (pl.stale & (1u << i))
			continue;
		/* replaced by a new pool (seen at replay), or down now */
		int up = fs->ps->pools[id].stale ? -ESTALE : rp_pool_ensure(fs->ps, id);
		int lrc = up < 0 ? lost_copy(fs, id, up) : 0;
		if (up < 0 && lrc == 0)
			fs->ps->pools[id].stale = true;
		if (lrc < 0 && rc == 0)
			rc = lrc;
	}
	return rc;
}

int place_install(struct rp_fs *fs, const struct rp_volplace *pl)
{
	struct rp_placement p = { .replicas = pl->replicas, .nring = pl->nring,
				  .lost = lost_copy, .lost_arg = fs };
	memcpy(p.ring, pl->ring, sizeof(p.ring));
	int rc = rp_poolset_set_placement(fs->ps, &p);
	if (rc < 0)
		return rc;
	fs->place.vol = *pl;
	fs->place.installed = true;
	for (uint32_t i = 0; i < pl->nring; i++)
		fs->ps->pools[pl->ring[i]].stale = (pl->stale >> i) & 1;
	return 0;
}

/* This mount holds another pool at ring pool id than the records name (a
 * replacement the writer has not noticed, or cannot record: it holds the
 * last current copy of some blocks), or reached it late and no record names
 * it: no copy to read, whatever the writer's placement says (as replay
 * decided, pool_identity; review 52). reached_late is never cleared: once a
 * record names the pool, ids[id] decides (checkpoints name every known
 * pool again). In a reload, ids are the new log's, while the old namespace
 * is still served: safe, as the writer names a new pool only once it is
 * current and filled, blocks held for readers included. */
static bool held_is_other(const struct rp_fs *fs, const struct rp_pool_id *ids, uint32_t id)
{
	const struct rp_pool *p = &fs->ps->pools[id];
	if (!ids || !ids[id].known)
		return atomic_load(&p->reached_late);
	return fs_pool_holds_other(p, ids[id].uuid);
}

int place_follow(struct rp_fs *fs, const struct rp_pool_id *ids)
{
	struct rp_volplace pl;
	if (!fs->place.installed || fs->place.vol.replicas < 2)
		return 0;
	int rc = place_read(fs->ps, fs->slot, &pl);
	if (rc < 0)
		return rc;
	/* (the ring never changes: one that differs is not this volume's) */
	if (pl.seq == fs->place.vol.seq || pl.nring != fs->place.vol.nring ||
	    memcmp(pl.ring, fs->place.vol.ring, pl.nring * sizeof(pl.ring[0])) != 0)
		return 0;
	rp_mutex_lock(&fs->place.mu, RP_LK_PLACE);
	fs->place.vol = pl;
	rp_mutex_unlock(&fs->place.mu);
	for (uint32_t i = 0; i < pl.nring; i++)
		fs->ps->pools[pl.ring[i]].stale = ((pl.stale >> i) & 1) ||
						  held_is_other(fs, ids, pl.ring[i]);
	char d[256];
	place_describe(&pl, d, sizeof(d));
	rp_info("volume \"%s\": the writer's placement %llu: %s", fs->vol.name,
		(unsigned long long)pl.seq, d);
	return 0;
}

void place_uninstall(struct rp_fs *fs)
{
	if (!fs->place.installed)
		return;
	for (uint32_t i = 0; i < fs->place.vol.nring; i++)
		fs->ps->pools[fs->place.vol.ring[i]].stale = false;
	struct rp_placement none = { .replicas = 1 };
	rp_poolset_set_placement(fs->ps, &none);
	fs->place.installed = false;
}

void place_describe(const struct rp_volplace *pl, char *buf, size_t len)
{
	size_t o = 0;
	if (pl->replicas <= 1) {
		snprintf(buf, len, "replicas 1");
		return;
	}
	o += (size_t)snprintf(buf + o, len - o, "replicas %u", pl->replicas);
	if (!pl->stale) {
		snprintf(buf + o, len - o, ", all copies current");
		return;
	}
	o += (size_t)snprintf(buf + o, len - o, ", DEGRADED: stale peer(s)");
	for (uint32_t i = 0; i < pl->nring && o < len; i++)
		if (pl->stale & (1u << i))
			o += (size_t)snprintf(buf + o, len - o, " %u", pl->ring[i]);
	if (o < len)
		snprintf(buf + o, len - o, " (run 'rdmapool rebuild')");
}

static int describe_cb(void *arg, int slot, const struct rp_volrec *vol)
{
	struct { struct rp_poolset *ps; FILE *out; } *c = arg;
	struct rp_volplace pl;
	char d[256];
	int rc = place_read(c->ps, slot, &pl);
	if (rc == -ENODATA || (rc == 0 && pl.replicas <= 1))
		return 0; /* one copy: the volume table (rdmapool volumes) says it all */
	if (rc < 0)
		snprintf(d, sizeof(d), "placement unreadable: %s", strerror(-rc));
	else
		place_describe(&pl, d, sizeof(d));
	uint64_t w, done, total;
	if (vol_rebuild_word(c->ps, slot, &w) == 0 && (w & 0xff) == REBUILD_ASKED &&
	    vol_rebuild_read_progress(c->ps, slot, &done, &total) == 0)
		fprintf(c->out, "volume \"%s\": %s; rebuild under way: %llu/%llu blocks\n",
			vol->name, d, (unsigned long long)done, (unsigned long long)total);
	else
		fprintf(c->out, "volume \"%s\": %s\n", vol->name, d);
	return 0;
}

int rp_fs_describe_volumes(struct rp_poolset *ps, FILE *out)
{
	struct { struct rp_poolset *ps; FILE *out; } c = { ps, out };
	return vol_each(ps, describe_cb, &c);
}
