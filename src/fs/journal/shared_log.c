/* The shared log's slots and its two protocols: append (reserve, write the
 * bodies, claim the headers) and read (decide each position in order,
 * junking holes). rdmapool(7), SEVERAL WRITERS, (M1) and (M2). */
#include "config.h"
#include "shared_log.h"
#include "../fs_impl.h"

#include <rdmapool/crypto.h>
#include <rdmapool/layout.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A slot: a header word, then a payload of the record's total length
 * (le32, 0 in later parts), 4 bytes of 0 and SLOG_PART_DATA bytes. The
 * header is 0 (empty), HDR_JUNK, or a claim: the tag, the part and the
 * number of parts, the appender's member number and a CRC-32C over the
 * position, those and the payload, so that a payload of another position
 * or a torn one is no claim. */
#define PAYLOAD (SLOG_SLOT - 8)
#define HDR_TAG 0xa5ull
#define HDR_JUNK UINT64_MAX
#define APPEND_TRIES 4
#define READ_AHEAD 32 /* slots a reader reads at once (16 KiB) */
/* a directory word: the segment's pool plus one (17 bits: ids reach
 * 65535), above its first block */
#define DIR_WORD(pool, block) ((uint64_t)((pool) + 1) << 47 | (block))
#define DIR_POOL(w) ((uint32_t)((w) >> 47) - 1)
#define DIR_BLOCK(w) ((w) & ((1ull << 47) - 1))

struct slog {
	struct rp_poolset *ps;
	struct slog_anchor a;
	uint32_t member;
	uint64_t hole_ms;
	uint64_t per_seg;  /* slots per segment */
	uint64_t *dir;     /* directory words seen (0: none yet) */
	uint64_t tail;     /* the tail as last read */
	uint64_t next;     /* the reader's cursor */
	/* Hole timing by tail, not by position: every position below a tail
	 * read at time t was reserved by t, so once t + hole_ms has passed,
	 * each of them still empty is a hole (a run of holes costs one wait,
	 * not one per position). due_tail: positions below it are due; the
	 * tail read at pend_ms (0: none) becomes due_tail when it is old. */
	uint64_t due_tail;
	uint64_t pend_tail, pend_ms;
	uint8_t slot[SLOG_SLOT];
	/* Slots read ahead, [ra_pos, ra_pos + ra_n): a claimed or junked
	 * header never changes (write once), so those are served from here;
	 * an empty one is read again */
	uint64_t ra_pos;
	uint32_t ra_n;
	uint8_t ra[READ_AHEAD * SLOG_SLOT];
#ifdef RP_TEST_HOOKS
	void (*stall)(void *arg, uint64_t pos, unsigned part);
	void *stall_arg;
#endif
};

#ifdef RP_TEST_HOOKS
void slog_test_stall(struct slog *l, void (*fn)(void *arg, uint64_t pos, unsigned part), void *arg)
{
	l->stall = fn;
	l->stall_arg = arg;
}
#define STALL(l, pos, part) ((l)->stall ? (l)->stall((l)->stall_arg, (pos), (part)) : (void)0)
#else
#define STALL(l, pos, part) ((void)0)
#endif

struct hdr {
	unsigned part, nparts;
	uint32_t member, crc;
};

static uint32_t hdr_crc(uint64_t pos, const struct hdr *h, const uint8_t *payload)
{
	uint8_t meta[16];
	rp_put_le64(meta, pos);
	rp_put_le32(meta + 8, h->member);
	meta[12] = (uint8_t)h->part;
	meta[13] = (uint8_t)h->nparts;
	meta[14] = meta[15] = 0;
	return rp_crc32c(rp_crc32c(0, meta, sizeof(meta)), payload, PAYLOAD);
}

static uint64_t hdr_word(const struct hdr *h)
{
	return HDR_TAG << 56 | (uint64_t)(h->part & 15) << 52 | (uint64_t)((h->nparts - 1) & 15) << 48 |
	       (uint64_t)(h->member & 0xff) << 40 | h->crc;
}

/* Is slot (header w, payload) at pos a claim? Its fields in *h. */
static bool hdr_claim(uint64_t w, uint64_t pos, const uint8_t *payload, struct hdr *h)
{
	if (w >> 56 != HDR_TAG || (w >> 32 & 0xff))
		return false;
	h->part = (unsigned)(w >> 52 & 15);
	h->nparts = (unsigned)(w >> 48 & 15) + 1;
	h->member = (uint32_t)(w >> 40 & 0xff);
	h->crc = (uint32_t)w;
	return h->part < h->nparts && hdr_crc(pos, h, payload) == h->crc;
}

int slog_open(struct rp_poolset *ps, const struct slog_anchor *a, uint32_t member,
	      uint64_t hole_ms, struct slog **out)
{
	if (member == 0 || member > 255 || a->dir_n == 0)
		return -EINVAL;
	if (rp_poolset_replicated(ps))
		return -EOPNOTSUPP;
	struct slog *l = calloc(1, sizeof(*l));
	if (!l || !(l->dir = calloc(a->dir_n, sizeof(*l->dir)))) {
		free(l);
		return -ENOMEM;
	}
	l->ps = ps;
	l->a = *a;
	l->member = member;
	l->hole_ms = hole_ms;
	l->per_seg = (uint64_t)SEG_BLOCKS * ps->block_size / SLOG_SLOT;
	*out = l;
	return 0;
}

void slog_close(struct slog *l)
{
	if (l) {
		free(l->dir);
		free(l);
	}
}

uint64_t slog_cursor(const struct slog *l)
{
	return l->next;
}

/* A new segment for directory entry d, zeroed (blocks of an old one hold
 * headers), published by compare-and-swap; the one that wins is in
 * l->dir[d] either way. An extent whose zeroing or publication may still
 * land (an error: in doubt) is left allocated, never freed to be reused
 * under a late write: fsck's leak pass. */
/* A run of a segment's length: an allocation may grant less (the rest of
 * a bitmap word another client took part of), so a few more are asked for
 * while the short ones are held, then those go back. */
static int seg_alloc(struct slog *l, uint32_t d, struct rp_extent *ext)
{
	struct rp_extent shorts[8];
	unsigned n = 0;
	int rc;
	while ((rc = rp_poolset_alloc(l->ps, l->member + d + n, SEG_BLOCKS, ext)) == 0 &&
	       ext->count < SEG_BLOCKS && n < 8)
		shorts[n++] = *ext;
	if (rc == 0 && ext->count < SEG_BLOCKS) {
		rp_pool_free(l->ps, ext);
		rc = -ENOSPC; /* (no run of a segment's length) */
	}
	for (unsigned i = 0; i < n; i++)
		rp_pool_free(l->ps, &shorts[i]);
	return rc;
}

static int seg_create(struct slog *l, uint32_t d)
{
	struct rp_extent ext = { 0 };
	uint64_t w, old = 0, len = (uint64_t)SEG_BLOCKS * l->ps->block_size;
	int rc = seg_alloc(l, d, &ext);
	if (rc < 0)
		return rc;
	uint8_t *zero = calloc(1, len);
	if (!zero) {
		rp_pool_free(l->ps, &ext);
		return -ENOMEM;
	}
	rc = rp_pool_write(l->ps, ext.pool, rp_block_offset(&l->ps->pools[ext.pool].sb, ext.block),
			   zero, len);
	free(zero);
	if (rc < 0)
		return rc; /* (its blocks stay allocated: in doubt) */
	w = DIR_WORD(ext.pool, ext.block);
	if ((rc = home_cas(l->ps, l->a.dir_off + 8ull * d, 0, w, &old)) < 0)
		return rc; /* (in doubt: the word is read again next time) */
	/* ours, acknowledged (every copy in sync holds it); our own value
	 * back (the atomic redone on a new authority that the first try's
	 * transition had reached: nothing was mirrored) and another
	 * member's are read again, settled, by the caller: what the
	 * authority shows of them may not have reached the other copies */
	if (old && old != w)
		rp_pool_free(l->ps, &ext);
	else if (!old)
		l->dir[d] = w;
	return 0;
}

/* Directory word d into l->dir[d], as every copy of the volume table holds
 * it (home_read_settled): a word on the authority alone could be lost with
 * it, and a reader that used it would decide positions in a segment that
 * another member then replaces. create: publish a segment when there is
 * none; wait (up to the operation timeout) for one under way to settle.
 * -EAGAIN: none yet (not create); -EINPROGRESS: not settled yet. */
static int dir_word(struct slog *l, uint64_t d, bool create)
{
	uint64_t deadline = rp_now_ms() + l->ps->op_timeout_ms;
	bool waits = create; /* (a reader asks again later instead) */
	for (;;) {
		uint64_t w = 0;
		int rc = home_read_settled(l->ps, l->a.dir_off + 8 * d, &w);
		if (rc == 0 && w) {
			l->dir[d] = w;
			return 0;
		}
		if (rc == 0 && !create)
			return waits ? -EINPROGRESS : -EAGAIN; /* (an appender's: another's, lost) */
		if (rc == 0) {
			/* (one try: a segment in doubt stays allocated, so
			 * no loop of them) */
			if ((rc = seg_create(l, (uint32_t)d)) < 0)
				return rc == -EAGAIN ? -EINPROGRESS : rc;
			if (l->dir[d])
				return 0;
			create = false; /* another member's: read it settled */
			continue;
		}
		if (rc != -EAGAIN)
			return rc;
		if (!waits || rp_now_ms() >= deadline)
			return -EINPROGRESS;
		rp_sleep_ms(1);
	}
}

/* Where pos's slot is: -ENOSPC past the directory, -EAGAIN when its
 * segment is not published yet (create: publish one), -EINPROGRESS when
 * its publication has not settled yet. */
static int slot_locate(struct slog *l, uint64_t pos, bool create, uint32_t *pool, uint64_t *off)
{
	uint64_t d = pos / l->per_seg;
	int rc = 0;
	if (d >= l->a.dir_n)
		return -ENOSPC;
	if (!l->dir[d] && (rc = dir_word(l, d, create)) < 0)
		return rc;
	uint64_t w = l->dir[d];
	if (DIR_POOL(w) >= l->ps->n || DIR_BLOCK(w) + SEG_BLOCKS > rp_pool_nblocks(l->ps, DIR_POOL(w)))
		return -EIO; /* (a directory word no member wrote) */
	*pool = DIR_POOL(w);
	*off = rp_block_offset(&l->ps->pools[*pool].sb, DIR_BLOCK(w)) + pos % l->per_seg * SLOG_SLOT;
	return 0;
}

/* Claim the header at (pool, off) from empty to want. 0: claimed; 1: junked
 * first (the record is dead); <0: an error, the outcome not known. */
static int header_claim(struct slog *l, uint32_t pool, uint64_t off, uint64_t want)
{
	uint64_t old = 0;
	int rc = 0;
	for (int tries = 0; tries < 2; tries++) {
		if ((rc = rp_pool_cas(l->ps, pool, off, 0, want, &old)) == 0 && old == 0)
			return 0;
		/* (no answer: what the header holds now tells; an error of
		 * that read leaves the outcome unknown, whatever it says: a
		 * reconnect's -EAGAIN is not "junked first") */
		if (rc < 0 && (rc = rp_pool_faa(l->ps, pool, off, 0, &old)) < 0)
			return rc == -EAGAIN ? -ETIMEDOUT : rc;
		if (old == want)
			return 0; /* (a try that timed out had landed) */
		if (old != 0)
			return old == HDR_JUNK ? 1 : -EIO; /* (another claim at our position: never) */
	}
	return -ETIMEDOUT;
}

/* Junk what is still empty of positions [from, to): nobody waits for them
 * (best effort: a reader junks them after the hole bound anyway). */
static void junk_rest(struct slog *l, uint64_t from, uint64_t to)
{
	for (uint64_t q = from; q < to; q++) {
		uint32_t pool;
		uint64_t off, old;
		if (slot_locate(l, q, true, &pool, &off) < 0)
			return; /* (no segment to junk in: the readers wait for it) */
		rp_pool_cas(l->ps, pool, off, 0, HDR_JUNK, &old);
	}
}

/* Write the record's n payloads at positions p.. then claim their headers
 * in order. -EAGAIN: a part was junked first (the record is dead there). */
static int append_at(struct slog *l, uint64_t p, const uint8_t *body, size_t len, unsigned n)
{
	uint8_t payload[PAYLOAD];
	uint64_t words[SLOG_MAX_PARTS], offs[SLOG_MAX_PARTS];
	uint32_t pools[SLOG_MAX_PARTS];
	int rc = 0;
	for (unsigned i = 0; i < n && rc == 0; i++) {
		size_t at = (size_t)i * SLOG_PART_DATA, k = RP_MIN(len - at, (size_t)SLOG_PART_DATA);
		memset(payload, 0, sizeof(payload));
		rp_put_le32(payload, i == 0 ? (uint32_t)len : 0);
		memcpy(payload + 8, body + at, k);
		struct hdr h = { .part = i, .nparts = n, .member = l->member };
		h.crc = hdr_crc(p + i, &h, payload);
		words[i] = hdr_word(&h);
		if ((rc = slot_locate(l, p + i, true, &pools[i], &offs[i])) == 0)
			rc = rp_pool_write(l->ps, pools[i], offs[i] + 8, payload, PAYLOAD);
	}
	for (unsigned i = 0; i < n && rc == 0; i++) {
		STALL(l, p, i); /* (tests: after the bodies, between claims) */
		if ((rc = header_claim(l, pools[i], offs[i], words[i])) == 1)
			rc = -EAGAIN;
	}
	if (rc < 0 && rc != -ENOSPC)
		junk_rest(l, p, p + n); /* (claimed parts stay: the record is dead all the same) */
	return rc;
}

static unsigned parts_of(size_t len)
{
	return (unsigned)((len + SLOG_PART_DATA - 1) / SLOG_PART_DATA);
}

int slog_reserve(struct slog *l, size_t len, uint64_t *pos)
{
	if (len == 0 || len > SLOG_MAX_RECORD)
		return -EINVAL;
	return home_faa(l->ps, l->a.tail_off, parts_of(len), pos);
}

int slog_put(struct slog *l, uint64_t pos, const void *body, size_t len)
{
	if (len == 0 || len > SLOG_MAX_RECORD)
		return -EINVAL;
	return append_at(l, pos, body, len, parts_of(len));
}

int slog_append(struct slog *l, const void *body, size_t len, uint64_t *pos)
{
	int rc = -EAGAIN;
	for (int tries = 0; tries < APPEND_TRIES && rc == -EAGAIN; tries++) {
		uint64_t p;
		if ((rc = slog_reserve(l, len, &p)) < 0)
			return rc; /* (reserved or not: a reader junks it) */
		if ((rc = slog_put(l, p, body, len)) == 0)
			*pos = p;
	}
	return rc;
}

/* Was empty position q (below l->tail) reserved at least the hole bound
 * ago? */
static bool hole_due(struct slog *l, uint64_t q)
{
	uint64_t now = rp_now_ms();
	if (l->pend_ms && now - l->pend_ms >= l->hole_ms) {
		l->due_tail = RP_MAX(l->due_tail, l->pend_tail);
		l->pend_ms = 0;
	}
	if (q < l->due_tail)
		return true;
	if (!l->pend_ms) {
		l->pend_tail = l->tail; /* (read before now: q is below it) */
		l->pend_ms = now;
	}
	return false;
}

/* Slot q (at pool, off) into l->slot: from what was read ahead when its
 * header was set there, else read with the slots after it, up to the
 * segment's end and the tail. */
static int slot_read(struct slog *l, uint64_t q, uint32_t pool, uint64_t off)
{
	uint64_t w = 0;
	if (q >= l->ra_pos && q < l->ra_pos + l->ra_n) {
		memcpy(&w, l->ra + (q - l->ra_pos) * SLOG_SLOT, 8);
		if (w) {
			memcpy(l->slot, l->ra + (q - l->ra_pos) * SLOG_SLOT, SLOG_SLOT);
			return 0;
		}
	}
	uint64_t n = RP_MIN(RP_MIN((uint64_t)READ_AHEAD, l->per_seg - q % l->per_seg),
			    l->tail > q ? l->tail - q : 1);
	l->ra_n = 0;
	int rc = rp_pool_read(l->ps, pool, off, l->ra, n * SLOG_SLOT);
	if (rc < 0)
		return rc;
	l->ra_pos = q;
	l->ra_n = (uint32_t)n;
	memcpy(l->slot, l->ra, SLOG_SLOT);
	return 0;
}

/* Decide position q: 1 with a claim's slot in l->slot and its fields in
 * *h, 2 for junk (or a header that claims nothing, read twice), 0 when not
 * decided yet (empty within the hole bound), <0 an error. */
static int decide(struct slog *l, uint64_t q, struct hdr *h)
{
	uint32_t pool;
	uint64_t off, w, old;
	int rc = slot_locate(l, q, false, &pool, &off);
	if (rc == -EAGAIN && hole_due(l, q))
		rc = slot_locate(l, q, true, &pool, &off); /* (to junk it) */
	if (rc < 0)
		return rc == -EAGAIN || rc == -EINPROGRESS ? 0 : rc;
	bool fresh = false;
	for (int tries = 0; tries < 3; tries++) {
		if ((rc = slot_read(l, q, pool, off)) < 0)
			return rc;
		memcpy(&w, l->slot, 8);
		if (w == HDR_JUNK)
			return 2;
		if (w != 0 && hdr_claim(w, q, l->slot + 8, h))
			return 1;
		/* A header that claims nothing may be a torn read: one read
		 * need not see the body, written before the claim, when it
		 * sees the claim (nor a header word whole). A read issued after
		 * it sees the claim and the body written, final: decide on
		 * that one. */
		if (w != 0 && fresh)
			return 2;
		if (w != 0) {
			fresh = true;
			l->ra_n = 0;
			continue;
		}
		if (!hole_due(l, q))
			return 0;
		if ((rc = rp_pool_cas(l->ps, pool, off, 0, HDR_JUNK, &old)) < 0)
			return rc;
		l->ra_n = 0; /* (what the junking lost to is read afresh) */
	}
	return 0;
}

/* The record whose first part is at l->next, its first slot read (h):
 * 1 with it in *e, 2 when a part is junk or not its own (the record is
 * dead: its n positions were reserved together), 0 not decided yet. */
static int gather(struct slog *l, const struct hdr *h0, struct slog_entry *e)
{
	uint32_t len = rp_get_le32(l->slot + 8);
	if (len == 0 || len > (uint32_t)h0->nparts * SLOG_PART_DATA ||
	    len <= (uint32_t)(h0->nparts - 1) * SLOG_PART_DATA)
		return 2;
	e->pos = l->next;
	e->member = h0->member;
	e->len = len;
	for (unsigned i = 0; i < h0->nparts; i++) {
		struct hdr h = *h0;
		int rc = i ? decide(l, l->next + i, &h) : 1;
		if (rc <= 0)
			return rc;
		if (rc == 2 || h.part != i || h.nparts != h0->nparts || h.member != h0->member)
			return 2;
		size_t at = (size_t)i * SLOG_PART_DATA;
		memcpy(e->body + at, l->slot + 16, RP_MIN((size_t)len - at, (size_t)SLOG_PART_DATA));
	}
	return 1;
}

int slog_next(struct slog *l, struct slog_entry *e)
{
	for (;;) {
		struct hdr h;
		int rc;
		if (l->next >= l->tail &&
		    ((rc = vol_home_read(l->ps, l->a.tail_off, &l->tail, 8)) < 0 || l->next >= l->tail))
			return rc < 0 ? rc : 0;
		if ((rc = decide(l, l->next, &h)) <= 0)
			return rc;
		if (rc == 2 || h.part != 0) {
			l->next++; /* junk, or a part whose first part was junked */
			continue;
		}
		if ((rc = gather(l, &h, e)) <= 0)
			return rc;
		l->next += h.nparts;
		if (rc == 1)
			return 1;
	}
}

int slog_describe(struct slog *l, uint64_t pos, char *buf, size_t len)
{
	uint32_t pool = 0;
	uint64_t off = 0, w = 0;
	int rc = slot_locate(l, pos, false, &pool, &off);
	if (rc == 0)
		rc = rp_pool_read(l->ps, pool, off, &w, 8);
	snprintf(buf, len, "position %llu: segment word %#llx, peer %u offset %llu, header %#llx (%s)",
		 (unsigned long long)pos, (unsigned long long)l->dir[pos / l->per_seg % l->a.dir_n],
		 pool, (unsigned long long)off, (unsigned long long)w, rc < 0 ? strerror(-rc) : "read");
	return rc;
}
