/* The volume table and the read-write lease.
 *
 * The home area (kept on every pool, home.c) holds 512-byte volume slots:
 *   0   state word (0 free, VOL_USED taken: claimed with compare-and-swap)
 *   8   lease word (0 free, else holder id << 32 | heartbeat counter)
 *   16  holder description (host:pid), for messages
 *   64  volume record copy A, 288 copy B
 *   216 fence word: the writer epoch, one more on every lease acquisition;
 *       a writer compares it before each log write, so one that was taken
 *       over stops instead of writing into a log the new holder has freed
 *   224 rebuild request (id << 32 | MiB/s << 8 | state), 232 blocks copied,
 *       240 of total:
 *       'rdmapool rebuild' asks the read-write holder to rebuild (rebuild.c)
 *   440 four reader slots of 16 bytes (read-only mounts, see below)
 * A record is rewritten into the copy it did not come from, with a higher
 * sequence number and a checksum, so a torn update leaves the other copy. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/crypto.h>
#include <rdmapool/layout.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOT_SIZE 512
#define NSLOTS VOL_SLOTS
#define VOL_USED 0x444553554c4f5652ull /* "RVOLUSED" */
#define REC_MAGIC_VOL 0x4c565052u       /* "RPVL" */
#define OFF_STATE 0
#define OFF_LEASE 8
#define OFF_HOLDER 16
#define HOLDER_LEN 48
#define OFF_COPY(i) (64 + (i) * 224)
#define COPY_LEN VOLREC_LEN
/* a volume's fence session in the pools, per volume table slot (wire.h,
 * rdmapool(7) "Fencing"); a client's random session is another with odds
 * of 2^-64 */
#define FENCE_SESSION 0x52505646454e0000ull /* "RPVFEN" */
#define OFF_FENCE 216 /* between copy A (64..212) and copy B */
#define OFF_REBUILD 224 /* 224..248: an online rebuild request and its progress */
#define OFF_READERS 440 /* to 504 */

static uint64_t slot_off(int slot, unsigned field)
{
	return RP_HOME_OFFSET + (uint64_t)slot * SLOT_SIZE + field;
}

void volrec_encode(const struct rp_volrec *r, uint8_t *b)
{
	memset(b, 0, COPY_LEN);
	rp_put_le32(b, REC_MAGIC_VOL);
	rp_put_le32(b + 4, 1);
	rp_put_le64(b + 8, r->seq);
	memcpy(b + 16, r->name, strnlen(r->name, RP_VOLUME_NAME_MAX));
	memcpy(b + 80, r->uuid, 16);
	rp_put_le64(b + 96, r->epoch);
	rp_put_le32(b + 104, r->head.pool);
	rp_put_le32(b + 108, r->head.count);
	rp_put_le64(b + 112, r->head.block);
	rp_put_le32(b + 120, r->block_size);
	rp_put_le32(b + 124, r->stripe_blocks);
	rp_put_le32(b + 128, r->lease_ms);
	rp_put_le32(b + 132, r->head_tag);
	rp_put_le64(b + 136, r->created_ns);
	rp_put_le32(b + 144, rp_crc32c(0, b, 144));
}

int volrec_decode(const uint8_t *b, struct rp_volrec *r)
{
	if (rp_get_le32(b) != REC_MAGIC_VOL || rp_get_le32(b + 4) != 1 ||
	    rp_get_le32(b + 144) != rp_crc32c(0, b, 144))
		return -EBADMSG;
	memset(r, 0, sizeof(*r));
	r->seq = rp_get_le64(b + 8);
	memcpy(r->name, b + 16, RP_VOLUME_NAME_MAX);
	/* the name ends at its first NUL: nothing after it is kept (the
	 * record in memory is the one encode writes back) */
	size_t nl = strnlen(r->name, RP_VOLUME_NAME_MAX);
	memset(r->name + nl, 0, sizeof(r->name) - nl);
	memcpy(r->uuid, b + 80, 16);
	r->epoch = rp_get_le64(b + 96);
	r->head.pool = rp_get_le32(b + 104);
	r->head.count = rp_get_le32(b + 108);
	r->head.block = rp_get_le64(b + 112);
	r->block_size = rp_get_le32(b + 120);
	r->stripe_blocks = rp_get_le32(b + 124);
	r->lease_ms = rp_get_le32(b + 128);
	r->head_tag = rp_get_le32(b + 132);
	r->created_ns = rp_get_le64(b + 136);
	return 0;
}

/* The newer valid copy of a slot. */
static int slot_record(const uint8_t *slot, struct rp_volrec *r)
{
	struct rp_volrec a, b;
	int ra = volrec_decode(slot + OFF_COPY(0), &a), rb = volrec_decode(slot + OFF_COPY(1), &b);
	if (ra < 0 && rb < 0)
		return -ENODATA;
	*r = (ra == 0 && (rb < 0 || a.seq > b.seq)) ? a : b;
	return 0;
}

int vol_each(struct rp_poolset *ps, int (*fn)(void *, int, const struct rp_volrec *), void *arg)
{
	uint8_t *home = malloc(RP_HOME_SIZE);
	if (!home)
		return -ENOMEM;
	int rc = vol_home_read(ps, RP_HOME_OFFSET, home, RP_HOME_SIZE);
	for (int s = 0; rc == 0 && s < NSLOTS; s++) {
		const uint8_t *slot = home + s * SLOT_SIZE;
		struct rp_volrec r;
		if (rp_get_le64(slot + OFF_STATE) != VOL_USED || slot_record(slot, &r) < 0)
			continue;
		rc = fn(arg, s, &r);
	}
	free(home);
	return rc < 0 ? rc : 0;
}

struct find_ctx {
	const char *name;
	int slot;
	struct rp_volrec rec;
};

static int find_cb(void *arg, int slot, const struct rp_volrec *r)
{
	struct find_ctx *f = arg;
	if (f->slot < 0 && strcmp(r->name, f->name) == 0) {
		f->slot = slot;
		f->rec = *r;
	}
	return 0;
}

int vol_find(struct rp_poolset *ps, const char *name, int *slot, struct rp_volrec *rec)
{
	struct find_ctx f = { .name = name, .slot = -1 };
	int rc = vol_each(ps, find_cb, &f);
	if (rc < 0)
		return rc;
	if (f.slot < 0)
		return -ENOENT;
	*slot = f.slot;
	if (rec)
		*rec = f.rec;
	return 0;
}

int vol_claim(struct rp_poolset *ps, const char *name, int *slot)
{
	(void)name;
	for (int s = 0; s < NSLOTS; s++) {
		uint64_t old;
		int rc = home_cas(ps, slot_off(s, OFF_STATE), 0, VOL_USED, &old);
		if (rc < 0)
			return rc;
		if (old == 0) {
			uint8_t clear[SLOT_SIZE] = { 0 };
			/* a slot freed earlier may hold an old record: wipe it, all
			 * but the fence word: writer epochs of a slot only grow, as
			 * the pools remember the newest (rdmapool(7), Fencing) */
			rc = vol_home_write(ps, slot_off(s, 8), clear, OFF_FENCE - 8);
			if (rc == 0)
				rc = vol_home_write(ps, slot_off(s, OFF_FENCE + 8), clear,
						    SLOT_SIZE - OFF_FENCE - 8);
			if (rc < 0)
				return rc;
			*slot = s;
			return 0;
		}
	}
	return -ENOSPC;
}

int vol_release_slot(struct rp_poolset *ps, int slot)
{
	uint64_t old;
	return home_cas(ps, slot_off(slot, OFF_STATE), VOL_USED, 0, &old);
}

uint32_t vol_head_tag(const struct rp_poolset *ps, const struct rp_extent *head)
{
	if (!rp_poolset_has(ps, head->pool) || !ps->pools[head->pool].sb.magic)
		return 0;
	uint32_t tag = rp_get_le32(ps->pools[head->pool].sb.pool_uuid);
	return tag ? tag : 1; /* 0 means unknown */
}

int vol_write(struct rp_poolset *ps, int slot, struct rp_volrec *rec)
{
	uint8_t b[COPY_LEN];
	rec->seq++;
	rec->head_tag = vol_head_tag(ps, &rec->head);
	volrec_encode(rec, b);
	return vol_home_write(ps, slot_off(slot, OFF_COPY(rec->seq % 2)), b, sizeof(b));
}

/* ---- lease ---- */

static int read_word(struct rp_poolset *ps, int slot, uint64_t *v)
{
	return home_faa(ps, slot_off(slot, OFF_LEASE), 0, v); /* atomic read */
}

static void read_holder(struct rp_poolset *ps, int slot, char *out, size_t len)
{
	char h[HOLDER_LEN + 1] = { 0 };
	if (vol_home_read(ps, slot_off(slot, OFF_HOLDER), h, HOLDER_LEN) < 0 || !h[0])
		snprintf(h, sizeof(h), "an unknown client");
	snprintf(out, len, "%s", h);
}

/* Watch a held lease word: 1 when it moves (holder alive), 0 when it stays
 * put for the expiry time (holder gone). */
static int watch(struct rp_poolset *ps, int slot, uint64_t v, uint32_t period_ms)
{
	uint64_t deadline = rp_now_ms() + (uint64_t)period_ms * LEASE_EXPIRY_PERIODS;
	while (rp_now_ms() < deadline) {
		uint64_t now_v;
		rp_sleep_ms(period_ms / 2 ? period_ms / 2 : 1);
		int rc = read_word(ps, slot, &now_v);
		if (rc < 0)
			return rc;
		if (now_v != v)
			return 1;
	}
	return 0;
}

/* What a mounter finds in a held lease word, watched for a while. */
enum lease_seen { SEEN_FREE, SEEN_LIVE, SEEN_SILENT };

/* Watch a held lease word until it is free (0), or its holder is shown to be
 * alive and not leaving (it renews for LIVE_GRACE_PERIODS without marking a
 * release: then SEEN_LIVE), or silent for the expiry time (SEEN_SILENT). A
 * holder that marks the word as releasing (a clean unmount finishing its
 * last flush) is waited for, up to RELEASE_WAIT_MS, with one message. */
static int lease_wait(struct rp_poolset *ps, int slot, uint64_t *v, uint32_t period_ms,
		      const char *who)
{
	uint64_t start = rp_now_ms(), last_change = start;
	bool told = false;
	for (;;) {
		uint64_t now = rp_now_ms();
		if (*v == 0)
			return SEEN_FREE;
		if (now - last_change >= (uint64_t)period_ms * LEASE_EXPIRY_PERIODS)
			return SEEN_SILENT;
		if (*v & LEASE_RELEASING) {
			if (!told)
				rp_info("waiting for %s to finish unmounting", who);
			told = true;
			if (now - start >= RELEASE_WAIT_MS)
				return SEEN_LIVE;
		} else if (now - start >= (uint64_t)period_ms * LIVE_GRACE_PERIODS &&
			   last_change != start) {
			return SEEN_LIVE;
		}
		rp_sleep_ms(period_ms / 4 ? period_ms / 4 : 1);
		uint64_t nv;
		int rc = read_word(ps, slot, &nv);
		if (rc < 0)
			return rc;
		if (nv != *v)
			last_change = rp_now_ms();
		*v = nv;
	}
}

int lease_fence_pools(struct rp_poolset *ps, const struct rp_lease *l)
{
	return rp_poolset_fence(ps, FENCE_SESSION | (uint64_t)l->slot, l->epoch);
}

int lease_acquire(struct rp_poolset *ps, int slot, uint32_t period_ms, const char *holder,
		  struct rp_lease *l, char *err, size_t errlen)
{
	uint32_t id = 0;
	uint64_t v, old, sent;
	char who[HOLDER_LEN + 1];
	int rc;

	while (id == 0)
		rp_random_bytes(&id, sizeof(id));
	uint64_t mine = ((uint64_t)id << 32) | 1;
	if ((rc = read_word(ps, slot, &v)) < 0)
		return rc;
	for (;;) {
		if (v != 0 && l->dead && v >> 32 == l->dead >> 32) { /* its holder id */
			read_holder(ps, slot, who, sizeof(who));
			rp_warn("taking over the lease of %s, whose process has died", who);
		} else if (v != 0) {
			read_holder(ps, slot, who, sizeof(who));
			rc = lease_wait(ps, slot, &v, period_ms, who);
			if (rc < 0)
				return rc;
			if (rc == SEEN_LIVE) {
				snprintf(err, errlen, "volume is mounted read-write by %s "
					 "(mount it with -o ro, or unmount it there)", who);
				return -EBUSY;
			}
			if (rc == SEEN_SILENT)
				rp_warn("taking over the lease of %s, silent for %u ms", who,
					period_ms * LEASE_EXPIRY_PERIODS);
		}
		sent = rp_boot_ms();
		if ((rc = home_cas(ps, slot_off(slot, OFF_LEASE), v, mine, &old)) < 0)
			return rc;
		if (old == v)
			break;
		v = old; /* someone else moved first: look again */
	}
	l->slot = slot;
	l->took_over = v != 0;
	l->word = mine;
	l->period_ms = period_ms;
	l->last_renew_ms = sent;
	/* a new writer epoch fences whoever held the volume before */
	uint64_t fence;
	char h[HOLDER_LEN] = { 0 };
	snprintf(h, sizeof(h), "%s", holder);
	if ((rc = home_faa(ps, slot_off(slot, OFF_FENCE), 1, &fence)) < 0 ||
	    (rc = vol_home_write(ps, slot_off(slot, OFF_HOLDER), h, sizeof(h))) < 0) {
		lease_release(ps, l);
		return rc;
	}
	l->epoch = fence + 1;
	if (l->epoch > UINT32_MAX) {
		/* the pools order holders by 32 bits of it (wire.h) */
		snprintf(err, errlen, "writer epoch %llu is past what the pools can order",
			 (unsigned long long)l->epoch);
		lease_release(ps, l);
		return -EOVERFLOW;
	}
	/* and the pools cut every older holder's connections before we read
	 * or write anything there (rdmapool(7), "Fencing") */
	if (lease_fence_pools(ps, l) == -ENOLCK) {
		snprintf(err, errlen, "a pool refuses writer epoch %llu: a holder with a newer "
			 "epoch has connected to it, yet the volume table's fence word says "
			 "this one is the newest (see rdmapool(7), BUGS)",
			 (unsigned long long)l->epoch);
		lease_release(ps, l);
		return -EBUSY;
	}
	return 0;
}

/* After a compare-and-swap of the lease word that failed in transit (it may
 * or may not have landed): the word says which. 0 landed, -ESTALE another
 * holder, else rc (not landed, try again). */
static int cas_outcome(struct rp_poolset *ps, const struct rp_lease *l, uint64_t next, int rc)
{
	uint64_t now_v;
	/* (-ENOLINK: the word may have landed, but on too few copies) */
	if (rc == -ENOLINK || read_word(ps, l->slot, &now_v) < 0)
		return rc;
	if (now_v == next)
		return 0;
	return now_v == l->word ? rc : -ESTALE;
}

static int lease_swap(struct rp_poolset *ps, struct rp_lease *l, uint64_t next)
{
	uint64_t old;
	int rc = home_cas(ps, slot_off(l->slot, OFF_LEASE), l->word, next, &old);
	if (rc == 0 && old != l->word && old >> 32 == l->word >> 32 && old != 0) {
		/* our own older word: the home area moved to a copy that had
		 * missed our last renewal (home.c); renew from it */
		uint64_t was = old;
		rc = home_cas(ps, slot_off(l->slot, OFF_LEASE), was, next, &old);
		if (rc == 0 && old == was)
			old = l->word;
	}
	if (rc < 0)
		rc = cas_outcome(ps, l, next, rc);
	else if (old != l->word)
		rc = -ESTALE; /* someone took the volume over */
	if (rc == 0)
		l->word = next;
	return rc;
}

int lease_renew(struct rp_poolset *ps, struct rp_lease *l)
{
	/* the counter wraps inside its 31 bits; the releasing mark stays */
	uint64_t ctr = l->word & LEASE_COUNTER;
	uint64_t next = (l->word & ~LEASE_COUNTER) | (ctr == LEASE_COUNTER ? 1 : ctr + 1);
	/* the time before the swap is sent: the lease runs from no later */
	uint64_t sent = rp_boot_ms();
	int rc = lease_swap(ps, l, next);
	if (rc == 0)
		l->last_renew_ms = sent;
	return rc;
}

int lease_mark_releasing(struct rp_poolset *ps, struct rp_lease *l)
{
	return lease_swap(ps, l, l->word | LEASE_RELEASING);
}

int lease_fence_check(struct rp_poolset *ps, const struct rp_lease *l)
{
	uint64_t old;
	/* a swap of the epoch with itself: an atomic compare */
	int rc = home_cas(ps, slot_off(l->slot, OFF_FENCE), l->epoch, l->epoch, &old);
	if (rc < 0)
		return rc;
	return old == l->epoch ? 0 : -ESTALE;
}

void lease_release(struct rp_poolset *ps, struct rp_lease *l)
{
	uint64_t old;
	if (l->word)
		home_cas(ps, slot_off(l->slot, OFF_LEASE), l->word, 0, &old);
	l->word = 0;
}

int lease_probe(struct rp_poolset *ps, int slot, uint32_t period_ms, char *holder, size_t len)
{
	uint64_t v;
	int rc = read_word(ps, slot, &v);
	if (rc < 0)
		return rc;
	if (v == 0)
		return 0;
	read_holder(ps, slot, holder, len);
	return watch(ps, slot, v, period_ms);
}

int vol_read(struct rp_poolset *ps, int slot, struct rp_volrec *rec)
{
	uint8_t b[SLOT_SIZE];
	int rc = vol_home_read(ps, slot_off(slot, 0), b, sizeof(b));
	if (rc < 0)
		return rc;
	if (rp_get_le64(b + OFF_STATE) != VOL_USED)
		return -ENOENT;
	return slot_record(b, rec);
}

/* ---- read-only mounts: reader slots ----
 * Each volume slot has READER_SLOTS pairs of words at OFF_READERS: a
 * heartbeat (reader id << 32 | counter, 0 when free) and the reader's
 * position, the first log record it has not applied (epoch << 40 | seq).
 * The writer frees a block only once every live reader is past the record
 * that released it; a reader whose heartbeat stays put for the expiry time
 * is dead, and the writer clears its slot (the reader, if it wakes up,
 * finds its heartbeat gone and loads the volume afresh). */

static uint64_t reader_off(int slot, int r, int word)
{
	return slot_off(slot, OFF_READERS + (unsigned)r * 16 + (unsigned)word * 8);
}

int vol_peek(struct rp_poolset *ps, int slot, struct vol_state *out)
{
	uint64_t hb;
	int rc;
	memset(out, 0, sizeof(*out));
	if ((rc = read_word(ps, slot, &out->lease)) < 0 ||
	    (rc = home_faa(ps, slot_off(slot, OFF_FENCE), 0, &out->writer_epoch)) < 0)
		return rc;
	if (out->lease)
		read_holder(ps, slot, out->holder, sizeof(out->holder));
	for (int r = 0; r < READER_SLOTS; r++) {
		if ((rc = home_faa(ps, reader_off(slot, r, 0), 0, &hb)) < 0)
			return rc;
		out->reader_hb[r] = hb;
		out->readers += hb != 0;
	}
	return 0;
}

int reader_register(struct rp_poolset *ps, int slot, struct rp_reader *rd)
{
	uint32_t id = 0;
	while (id == 0)
		rp_random_bytes(&id, sizeof(id));
	for (int r = 0; r < READER_SLOTS; r++) {
		uint64_t old, hb = ((uint64_t)id << 32) | 1, zero = 0;
		/* position 0 before the heartbeat shows: from then on the writer
		 * holds every free until we have loaded and said where we are (a
		 * lost race for the slot only makes its owner look behind) */
		int rc = home_faa(ps, reader_off(slot, r, 0), 0, &old);
		if (rc < 0)
			return rc;
		if (old != 0)
			continue;
		if ((rc = vol_home_write(ps, reader_off(slot, r, 1), &zero, 8)) < 0)
			return rc;
		/* the time before the swap is sent: the writer may count the
		 * heartbeat from no earlier (its copying to the other home
		 * copies can take a while) */
		uint64_t sent = rp_boot_ms();
		if ((rc = home_cas(ps, reader_off(slot, r, 0), 0, hb, &old)) < 0)
			return rc;
		if (old != 0)
			continue;
		rd->slot = slot;
		rd->index = r;
		rd->hb = hb;
		rd->last_renew_ms = sent;
		return 0;
	}
	return -EUSERS;
}

static uint64_t beat_after(uint64_t hb)
{
	uint64_t ctr = hb & 0xffffffffu;
	return (hb & ~0xffffffffull) | (ctr == 0xffffffffu ? 1 : ctr + 1);
}

int reader_renew(struct rp_poolset *ps, struct rp_reader *rd)
{
	uint64_t from = rd->hb, old;
	uint64_t sent = rp_boot_ms(); /* as in reader_register */
	for (int tries = 0; tries < 2; tries++) {
		uint64_t next = beat_after(from);
		int rc = home_cas(ps, reader_off(rd->slot, rd->index, 0), from, next, &old);
		if (rc < 0)
			return rc;
		if (old == from) {
			rd->hb = next;
			rd->last_renew_ms = sent;
			return 0;
		}
		/* heartbeats of ours that failed (they missed a copy of the
		 * volume table, which a read-only mount does not drop) may have
		 * landed on the authority all the same: a word with our id
		 * (the writer clears it to 0, another reader has its own) is
		 * ours to move on from */
		if (tries || old == 0 || old >> 32 != rd->hb >> 32)
			break;
		from = old;
	}
	return -ESTALE; /* expired by the writer */
}

int reader_set_pos(struct rp_poolset *ps, const struct rp_reader *rd, uint64_t epoch, uint64_t seq)
{
	uint64_t pos = reader_pos(epoch, seq);
	return vol_home_write(ps, reader_off(rd->slot, rd->index, 1), &pos, 8);
}

void reader_release(struct rp_poolset *ps, struct rp_reader *rd)
{
	uint64_t old, off = reader_off(rd->slot, rd->index, 0);
	/* (heartbeats that failed may have landed past rd->hb: a word with
	 * our id is ours) */
	if (rd->hb && home_cas(ps, off, rd->hb, 0, &old) == 0 && old != rd->hb && old &&
	    old >> 32 == rd->hb >> 32)
		home_cas(ps, off, old, 0, &old);
	rd->hb = 0;
}

int readers_scan(struct rp_poolset *ps, int slot, struct rp_reader_watch *w, uint32_t period_ms,
		 uint64_t *min_pos)
{
	uint64_t words[READER_SLOTS * 2], now = rp_now_ms();
	int rc = vol_home_read(ps, reader_off(slot, 0, 0), words, sizeof(words));
	if (rc < 0)
		return rc;
	*min_pos = UINT64_MAX;
	for (int r = 0; r < READER_SLOTS; r++) {
		uint64_t hb = words[2 * r], pos = words[2 * r + 1];
		if (hb != w->hb[r]) {
			w->hb[r] = hb;
			w->changed_ms[r] = now;
		}
		if (hb == 0)
			continue;
		if (now - w->changed_ms[r] >= (uint64_t)period_ms * LEASE_EXPIRY_PERIODS) {
			/* dead: clear it (a reader that wakes up reloads) */
			uint64_t old = hb;
			if (home_cas(ps, reader_off(slot, r, 0), hb, 0, &old) == 0 && old == hb) {
				rp_warn("read-only mount in reader slot %d stopped answering; no "
					"longer waiting for it", r);
				continue;
			}
			/* its heartbeat landed meanwhile (live again), or the
			 * clearing failed (tried again at the next scan): its
			 * position still counts */
			if (old != hb) {
				w->hb[r] = old;
				w->changed_ms[r] = now;
			}
		}
		if (pos < *min_pos)
			*min_pos = pos;
	}
	return 0;
}

/* ---- online rebuild requests ---- */

int vol_rebuild_word(struct rp_poolset *ps, int slot, uint64_t *v)
{
	return home_faa(ps, slot_off(slot, OFF_REBUILD), 0, v);
}

int vol_rebuild_swap(struct rp_poolset *ps, int slot, uint64_t expect, uint64_t v)
{
	uint64_t old;
	int rc = home_cas(ps, slot_off(slot, OFF_REBUILD), expect, v, &old);
	return rc < 0 ? rc : old == expect ? 0 : -EAGAIN;
}

int vol_rebuild_progress(struct rp_poolset *ps, int slot, uint64_t done, uint64_t total)
{
	uint64_t w[2] = { done, total };
	return vol_home_write(ps, slot_off(slot, OFF_REBUILD + 8), w, sizeof(w));
}

int vol_rebuild_read_progress(struct rp_poolset *ps, int slot, uint64_t *done, uint64_t *total)
{
	uint64_t w[2];
	int rc = vol_home_read(ps, slot_off(slot, OFF_REBUILD + 8), w, sizeof(w));
	if (rc == 0) {
		*done = w[0];
		*total = w[1];
	}
	return rc;
}
