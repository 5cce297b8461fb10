/* The home area (volume table, placement records, leases, reader slots) is
 * kept on every pool, so that no peer is special: it is found on any pool
 * that survives. Each copy carries a home epoch word and, for that epoch,
 * a record of the copies in sync at it (its members) and of its authority,
 * where compare-and-swap and fetch-and-add happen (their transitions then
 * go to the other copies by compare-and-swap) and reads come from. A write
 * that misses an in-sync copy moves the epoch of the others up, with the
 * missed copy no longer a member, so a pool that comes back with an old
 * home area is never in sync again until 'rdmapool rebuild' fills it while
 * it takes every write (joining) and moves the epoch again, with it a
 * member.
 *
 * An epoch number is one ballot: a mover claims it on each copy it moves
 * (the record slot's tag, by compare-and-swap, with a number of its own),
 * and with three peers or more moves nothing unless it holds the claim on
 * a majority; a claim is never taken over, so at most one mover moves
 * copies to an epoch and they all hold its record. A move is never undone:
 * one cut short leaves a minority at the new epoch (strays), which
 * elections leave out once the record shows it never had a majority. So a
 * process that finds every member of the top epoch answering, or (three
 * peers or more) a majority of the ring, knows that no copy anywhere is
 * newer; one that does not may be looking at copies others have left
 * behind, and waits, then refuses (rdmapool(7): the home epoch, invariants
 * (1) to (7)). With two peers a copy that misses a write is still dropped,
 * so that one pool keeps the volume writable: two clients cut off from
 * each other's pool can then each go on. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/layout.h>
#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOME_EPOCH_OFF (RP_HOME_OFFSET + VOL_HOME_EPOCH_OFF)
/* how many times a resync filled this copy: an atomic redone on "the same"
 * authority must not count a transition a fill put there meanwhile */
#define HOME_FILLS_OFF (HOME_EPOCH_OFF + 8)
/* An epoch's members: seven slots, by the epoch mod 7, so that the current
 * record stands while movers claim and record the next six. Each: a tag
 * word (the epoch it records in its low 40 bits and the number its mover
 * drew in the bits above), a count (le32), the epoch's authority plus one
 * (le32), the tag again (a record body that a mover stalled past the
 * slot's next claim writes late carries its own tag: not taken for the
 * claimer's), the epoch the move came from (0: not known), then the peer
 * ids (le16). Tables from before claims: the
 * number 0, no second tag (the ids at 16), an authority of 0 in older ones
 * still (the lowest member), and two slots, by the epoch's parity: a
 * record not found in its slot is looked for there. */
#define HOME_MEMBERS_OFF (HOME_EPOCH_OFF + 64)
#define MEMBERS_SLOTS 7
#define MEMBERS_SLOT 1024
#define MEMBERS_LEN (32 + 2 * RP_MAX_PEERS)
#define TAG_EPOCH(t) ((t) & ((1ull << 40) - 1))
/* The epoch word of a copy a resync is filling, with the epoch it held
 * before in the bits below: it takes every write (no one waits for it or
 * drops it) and counts for nothing until it joins. 0 below: an empty copy,
 * or one marked by a version that did not keep it. */
#define HOME_JOINING (1ull << 63)
#define HOME_RECHECK_MS 1000
#define QUORUM_POLL_MS 200

/* a set of peer ids (ids reach 65535: no bitmap) */
struct home_set {
	uint32_t n;
	uint16_t id[RP_MAX_PEERS];
};

#ifdef RP_TEST_HOOKS
static void (*test_move)(uint32_t id, uint32_t auth, uint64_t to);
void home_test_move(void (*fn)(uint32_t id, uint32_t auth, uint64_t to))
{
	test_move = fn;
}
#define TEST_MOVE(id, a, to) (test_move ? test_move((id), (a), (to)) : (void)0)
#else
#define TEST_MOVE(id, a, to) ((void)0)
#endif

struct home_view {
	uint64_t *epochs; /* per listed peer (ids[k]); UINT64_MAX: no answer */
	uint64_t top;
	uint32_t auth;
	size_t answered;
	struct home_set members; /* of top, as the authority records them */
	bool recorded;           /* false: it records none (an older table) */
	struct home_set missing; /* members that did not answer */
	struct home_set present; /* members that answer at the top epoch */
	int64_t rauth;           /* the top epoch's recorded authority, or -1 */
	bool conflict;           /* copies at the top record different members */
	uint64_t from;           /* the epoch the top's move came from (0: not known) */
	uint64_t *before;        /* per listed peer: a joining copy's epoch before */
	struct home_set stray;   /* copies a move cut short left above the top */
	struct home_set unsure;  /* empty members the top's majority rests on */
	uint64_t stray_top;      /* the highest epoch of those */
};

static bool set_has(const struct home_set *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return true;
	return false;
}

static void set_add(struct home_set *s, uint32_t id)
{
	if (!set_has(s, id) && s->n < RP_MAX_PEERS)
		s->id[s->n++] = (uint16_t)id;
}

static void set_print(const struct home_set *s, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < s->n && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%u", n ? ", " : "", s->id[i]);
}

/* Does a set of copies this large decide for the ring? With three peers or
 * more, a majority of them; with one or two, all (a copy that misses a write
 * is still dropped there: availability over a majority, rdmapool(7)). */
static bool quorum(const struct rp_poolset *ps, size_t n)
{
	return ps->npeers < 3 ? n >= 1 : n > ps->npeers / 2;
}

static uint64_t slot_off(uint64_t e)
{
	return HOME_MEMBERS_OFF + e % MEMBERS_SLOTS * MEMBERS_SLOT;
}

/* A mover's claim tag for epoch e: its own number above the epoch, drawn
 * for each move (never 0, which marks a tag from before claims). */
static uint64_t claim_tag(uint64_t e)
{
	uint32_t r = 0;
	rp_random_bytes(&r, sizeof(r)); /* (a failure leaves a weaker number) */
	r ^= (uint32_t)rp_now_ms() ^ (uint32_t)getpid() << 8;
	return e | ((uint64_t)(r % ((1u << 23) - 1)) + 1) << 40;
}

/* Claim epoch TAG_EPOCH(tag)'s record slot on copy id, which a move from
 * epoch from is to take, for the mover whose tag it is: by compare-and-swap
 * from a tag of an epoch before from (returned in prev, for claim_release).
 * A slot that another mover claimed for that epoch (alive or dead), one
 * past it, or one holding a record of from or later (an older table's, by
 * parity) is not taken over: -EAGAIN (rdmapool(7) (1)); only a forced drop
 * takes over another's claim for the epoch. */
static int members_claim(struct rp_poolset *ps, uint32_t id, uint64_t tag, uint64_t from,
			 bool force, uint64_t *prev)
{
	uint64_t e = TAG_EPOCH(tag), old;
	int rc = rp_pool_faa(ps, id, slot_off(e), 0, prev);
	if (rc < 0 || *prev == tag)
		return rc;
	if (TAG_EPOCH(*prev) > e || (TAG_EPOCH(*prev) == e && !force) ||
	    (TAG_EPOCH(*prev) < e && TAG_EPOCH(*prev) >= from && TAG_EPOCH(*prev) != 0))
		return -EAGAIN;
	rc = rp_pool_cas(ps, id, slot_off(e), *prev, tag, &old);
	return rc < 0 ? rc : old == *prev ? 0 : -EAGAIN;
}

/* Write the record of the epoch in tag, moved to from epoch from, into the
 * slot this process claimed on id. */
static int members_write(struct rp_poolset *ps, uint32_t id, uint64_t tag, uint64_t from,
			 const struct home_set *s, uint32_t auth)
{
	uint8_t buf[MEMBERS_LEN - 8];
	rp_put_le32(buf, s->n);
	rp_put_le32(buf + 4, auth + 1);
	memcpy(buf + 8, &tag, 8);
	rp_put_le64(buf + 16, from);
	for (uint32_t i = 0; i < s->n; i++)
		rp_put_le16(buf + 24 + 2 * i, s->id[i]);
	return rp_pool_write(ps, id, slot_off(TAG_EPOCH(tag)) + 8, buf, 24 + 2 * s->n);
}

/* Read the slot at off: does it record epoch e (its tag in *tag)? Where
 * the ids start: after the second tag, in a record of a mover's own. */
static int members_slot(struct rp_poolset *ps, uint32_t id, uint64_t off, uint64_t e,
			uint8_t *buf, uint64_t *tag, size_t *ids)
{
	uint64_t again;
	int rc = rp_pool_read(ps, id, off, buf, MEMBERS_LEN);
	memcpy(tag, buf, 8); /* words the atomics keep in host order */
	memcpy(&again, buf + 16, 8);
	*ids = *tag >> 40 ? 32 : 16;
	/* (a new pool's zeros record nothing: epoch 0 is never recorded) */
	if (rc < 0 || e == 0 || TAG_EPOCH(*tag) != e || rp_get_le32(buf + 8) > RP_MAX_PEERS ||
	    (*tag >> 40 && again != *tag))
		*ids = 0;
	return rc;
}

/* The members of epoch e as copy id records them (the epoch its move came
 * from in *fromp, when given; 0: not known); every listed peer when it
 * records none for e (a table from before members were kept: then only all
 * of them answering shows that no copy is newer). */
static int members_read(struct rp_poolset *ps, uint32_t id, uint64_t e, struct home_set *s,
			bool *recorded, int64_t *rauth, uint64_t *fromp)
{
	uint8_t buf[MEMBERS_LEN];
	uint64_t legacy = HOME_MEMBERS_OFF + e % 2 * MEMBERS_SLOT, tag;
	size_t ids;
	int rc = members_slot(ps, id, slot_off(e), e, buf, &tag, &ids);
	if (rc == 0 && !ids && legacy != slot_off(e))
		rc = members_slot(ps, id, legacy, e, buf, &tag, &ids);
	if (rc < 0)
		return rc;
	*recorded = ids != 0;
	*rauth = *recorded ? (int64_t)rp_get_le32(buf + 12) - 1 : -1;
	if (fromp)
		*fromp = *recorded && ids == 32 ? rp_get_le64(buf + 24) : 0;
	s->n = 0;
	if (*recorded) {
		uint32_t n = rp_get_le32(buf + 8);
		for (uint32_t i = 0; i < n; i++)
			set_add(s, rp_get_le16(buf + ids + 2 * i));
		return 0;
	}
	for (size_t k = 0; k < ps->npeers; k++)
		set_add(s, ps->ids[k]);
	return 0;
}

static bool set_same(const struct home_set *a, const struct home_set *b)
{
	for (uint32_t i = 0; i < a->n; i++)
		if (!set_has(b, a->id[i]))
			return false;
	return a->n == b->n;
}

/* Do the copies at the top epoch record the same members and authority?
 * With claims one mover records each epoch (rdmapool(7) (1)); copies that
 * differ (two movers of one epoch before claims, or a record overwritten
 * by hand) elect none (the process waits, then refuses) rather than one
 * that may miss acknowledged updates. */
static bool records_agree(struct rp_poolset *ps, const struct home_view *v)
{
	struct home_set other;
	bool recorded;
	int64_t rauth;
	for (size_t k = 0; k < ps->npeers; k++)
		if (v->epochs[k] == v->top &&
		    members_read(ps, ps->ids[k], v->top, &other, &recorded, &rauth, NULL) == 0 &&
		    (recorded != v->recorded || rauth != v->rauth || !set_same(&other, &v->members)))
			return false;
	return true;
}

/* Could member k of the listed peers have reached the top epoch? 0: no
 * (it answers at a lower epoch: epochs only go up; or it is joining and
 * held a lower one when its fill began), 1: yes, or it does not answer,
 * or answers above the top (its way there is not known), 2: empty (a
 * replacement, or joining with its epoch before unknown): it may have,
 * and what it held is gone. */
static int member_could(const struct home_view *v, size_t k)
{
	uint64_t e = v->epochs[k], before = v->before[k] & ~HOME_JOINING;
	if (v->before[k] & HOME_JOINING)
		return before == 0 ? 2 : before >= v->top;
	return e == 0 ? 2 : e == UINT64_MAX || e >= v->top;
}

/* May members that came back empty decide for the top epoch? When every
 * peer answers and none holds an epoch between the one the top's move came
 * from and the top: then no other move from there can have had a majority
 * (another process's, whose copies the empty ones may have been), and what
 * answers is all there is. */
static bool empties_may_decide(const struct rp_poolset *ps, const struct home_view *v)
{
	for (size_t k = 0; k < ps->npeers; k++) {
		uint64_t e = v->before[k] & HOME_JOINING ? v->before[k] & ~HOME_JOINING
							 : v->epochs[k];
		if (e == UINT64_MAX || (e != 0 && e > v->from && e < v->top))
			return false;
	}
	return true;
}

/* Could a majority of the peers have reached the top epoch? A record that
 * lists no majority itself (a forced drop's, or a smaller ring's) is taken
 * as it is. With one or two peers a single copy decides. Members that are
 * empty now and without which there would be no majority go into unsure
 * (waited for, then refused), unless empties_may_decide. */
static bool top_could_hold(const struct rp_poolset *ps, struct home_view *v)
{
	size_t could = 0, empty = 0;
	struct home_set empties = { 0 };
	v->unsure.n = 0;
	if (!quorum(ps, v->members.n))
		return true;
	for (uint32_t i = 0; i < v->members.n; i++) {
		size_t k = 0;
		int c = 1;
		while (k < ps->npeers && ps->ids[k] != v->members.id[i])
			k++;
		if (k < ps->npeers && (c = member_could(v, k)) == 2)
			set_add(&empties, v->members.id[i]);
		could += c == 1;
		empty += c == 2;
	}
	if (!quorum(ps, could) && quorum(ps, could + empty) && !empties_may_decide(ps, v))
		v->unsure = empties;
	return quorum(ps, could + empty);
}

/* The top epoch among the copies that answer and are not strays, a copy at
 * it and its record. */
static int scan_top(struct rp_poolset *ps, struct home_view *v)
{
	bool any = false;
	v->top = 0;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint64_t e = v->epochs[k];
		if (e == UINT64_MAX || set_has(&v->stray, ps->ids[k]) || (any && e <= v->top))
			continue;
		v->top = e;
		v->auth = ps->ids[k];
		any = true;
	}
	if (!any)
		return -ENOTCONN;
	return members_read(ps, v->auth, v->top, &v->members, &v->recorded, &v->rauth, &v->from);
}

/* The epochs of every connected pool, the authority and the top epoch's
 * members. Copies out of sync are read too: another process's resync may
 * have brought them back, and every process must elect the same
 * authority. A top epoch that no majority can have reached (a move cut
 * short, three peers or more) is left out: its copies are strays, out of
 * sync, and the election moves the epoch past them. */
static int home_scan(struct rp_poolset *ps, struct home_view *v)
{
	v->answered = 0;
	v->conflict = false;
	v->stray.n = v->unsure.n = 0;
	v->stray_top = 0;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		uint64_t e;
		v->epochs[k] = UINT64_MAX;
		v->before[k] = 0;
		/* a pool that is not connected is not waited for (its
		 * reconnect is the data path's business, or home_elect's) */
		if (!rp_pool_connected(ps, id) || rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &e) < 0)
			continue;
		if (e & HOME_JOINING) {
			v->before[k] = e;
			e = 0; /* (being filled: as good as empty) */
		}
		/* (an empty replacement answers for no copy: not counted) */
		if (e)
			v->answered++;
		v->epochs[k] = e;
	}
	int rc;
	while ((rc = scan_top(ps, v)) == 0 && ps->npeers >= 3 && v->recorded &&
	       !top_could_hold(ps, v)) {
		for (size_t k = 0; k < ps->npeers; k++)
			if (v->epochs[k] == v->top)
				set_add(&v->stray, ps->ids[k]);
		if (v->top > v->stray_top)
			v->stray_top = v->top;
	}
	if (rc < 0)
		return rc;
	v->missing.n = v->present.n = 0;
	if (v->top == 0) {
		/* no answering copy holds a volume table: new only if every
		 * peer says so (one that does not may hold it) */
		for (size_t k = 0; k < ps->npeers; k++)
			if (v->epochs[k] == UINT64_MAX)
				set_add(&v->missing, ps->ids[k]);
		return 0;
	}
	uint32_t read_from = v->auth;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		bool member = set_has(&v->members, id);
		if (v->epochs[k] == UINT64_MAX) {
			if (member)
				set_add(&v->missing, id);
			continue;
		}
		/* in sync: at the top epoch and one of its members */
		ps->pools[id].home_out = v->epochs[k] != v->top || !member;
		if (!ps->pools[id].home_out) {
			set_add(&v->present, id);
			if (v->present.n == 1 || id < v->auth)
				v->auth = id; /* the lowest member */
		}
	}
	/* (waited for as if they did not answer: what they held is gone) */
	for (uint32_t i = 0; i < v->unsure.n; i++)
		set_add(&v->missing, v->unsure.id[i]);
	/* (records of an older version name no authority: not compared) */
	v->conflict = v->rauth >= 0 && !records_agree(ps, v);
	if (v->rauth >= 0 && set_has(&v->present, (uint32_t)v->rauth))
		v->auth = (uint32_t)v->rauth; /* (else: gone, or out; the lowest) */
	if (!v->present.n)
		v->auth = read_from; /* (a record that lists none of them) */
	return 0;
}

static struct home_view *view_new(const struct rp_poolset *ps)
{
	struct home_view *v = calloc(1, sizeof(*v));
	if (v && (!(v->epochs = calloc(ps->npeers, sizeof(*v->epochs))) ||
		  !(v->before = calloc(ps->npeers, sizeof(*v->before))))) {
		free(v->epochs);
		free(v);
		v = NULL;
	}
	return v;
}

static void view_free(struct home_view *v)
{
	if (v) {
		free(v->epochs);
		free(v->before);
	}
	free(v);
}

/* The epoch this process knows only goes up (threads elect at once). */
static void known_raise(struct rp_poolset *ps, uint64_t e)
{
	uint64_t cur = atomic_load(&ps->home_epoch);
	while (cur < e && !atomic_compare_exchange_weak(&ps->home_epoch, &cur, e))
		;
}

/* The authority an epoch records: the one before it while it stays a
 * member (a copy that joins is never the authority at once: its words are
 * checked by the transitions after it joined), else the lowest member. */
static uint32_t set_pick(const struct home_set *s, int64_t prefer)
{
	uint32_t low = UINT32_MAX;
	if (prefer >= 0 && set_has(s, (uint32_t)prefer))
		return (uint32_t)prefer;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->id[i] < low)
			low = s->id[i];
	return low;
}

/* The copies of keep that may move from e (at it, or joining: a resync's)
 * and the claims on them for epoch TAG_EPOCH(tag). */
struct home_claims {
	struct home_set may, claimed, joining;
	uint64_t tag, prev[RP_MAX_PEERS]; /* the tag each claimed slot held */
};

static void claim_round(struct rp_poolset *ps, uint64_t e, const struct home_set *keep,
			uint64_t tag, bool force, struct home_claims *c)
{
	uint64_t at, prev;
	c->may.n = c->claimed.n = c->joining.n = 0;
	c->tag = tag;
	for (uint32_t i = 0; i < keep->n; i++) {
		uint32_t id = keep->id[i];
		bool joining;
		if (rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &at) < 0 ||
		    (at != e && !(at & HOME_JOINING)))
			continue; /* (a copy already past e keeps its own move) */
		set_add(&c->may, id);
		if ((joining = at & HOME_JOINING))
			set_add(&c->joining, id);
		/* (a joining copy's records are not kept: any older one goes) */
		if (members_claim(ps, id, tag, joining ? TAG_EPOCH(tag) : e, force, &prev) == 0) {
			c->prev[c->claimed.n] = prev;
			set_add(&c->claimed, id);
		}
	}
}

/* Give back the claims of a round that reached too few (nothing was
 * recorded or moved under them): two movers that split the copies between
 * them would otherwise leave the epoch claimed for good. A release that
 * does not land (the copy stopped) leaves a dead claim: that epoch is
 * skipped. */
static void claim_release(struct rp_poolset *ps, const struct home_claims *c)
{
	uint64_t old;
	for (uint32_t i = 0; i < c->claimed.n; i++)
		rp_pool_cas(ps, c->claimed.id[i], slot_off(TAG_EPOCH(c->tag)), c->tag, c->prev[i],
			    &old);
}

/* Record the move to TAG_EPOCH(tag) on claimed copy id and move it from e
 * (a joining copy: record only), trying again what fails at once (a reset
 * connection) within the operation timeout: a move left short is not
 * undone. 1: done, 0: not, -1: not known (a compare-and-swap that may
 * still land). */
static int move_one(struct rp_poolset *ps, uint32_t id, uint64_t tag, const struct home_set *keep,
		    uint32_t auth, uint64_t e, bool joining)
{
	uint64_t deadline = rp_now_ms() + ps->op_timeout_ms, old, next = TAG_EPOCH(tag);
	int rc;
	while ((rc = members_write(ps, id, tag, e, keep, auth)) < 0 && rp_now_ms() < deadline)
		rp_sleep_ms(50);
	if (rc < 0 || joining)
		return rc == 0; /* (a late body has a tag no one reads: harmless) */
	while ((rc = rp_pool_cas(ps, id, HOME_EPOCH_OFF, e, next, &old)) < 0 &&
	       rp_now_ms() < deadline)
		rp_sleep_ms(50);
	/* (at next already: a try that timed out landed; claimed: ours) */
	return rc < 0 ? -1 : old == e || old == next;
}

/* How many claims a move needs: a majority of the peers; any one, never
 * taking another mover's (the one copy every peer's answers left in sync,
 * home_drop_missing); any one, taking others' over (rebuild --force). */
enum move_mode { MOVE_MAJORITY, MOVE_ALONE, MOVE_FORCE };

/* Move the copies in keep that are at epoch e to a new epoch, with keep as
 * its members and the authority set_pick gives. The epoch is one ballot
 * (rdmapool(7) (1)): claimed first on every copy it moves, and taken only
 * when the claims reach a majority (any copy with one or two peers, or
 * with force); else the claims it got are given back and the next epoch
 * tried (up to six above e: the slot of e's record is the seventh); mode
 * says how many claims it needs and whether it takes others' over. Then
 * the record is written on each copy claimed and the copy moved by
 * compare-and-swap from e (move_one); one that is joining (a resync's)
 * gets the record only. Nothing is undone: a move that reaches too few
 * leaves strays (home_scan); when nothing moved the claims go back. Returns
 * the epoch; the copies moved go into moved, those recorded into recorded
 * (when given). -EAGAIN: too few of keep are still at e (another process
 * moved them first); -EBUSY: every epoch it may take is claimed. */
static int home_move(struct rp_poolset *ps, uint64_t e, uint64_t first, const struct home_set *keep,
		     int64_t auth, enum move_mode mode, struct home_set *moved,
		     struct home_set *recorded, uint64_t *to)
{
	struct home_claims c;
	bool any = mode != MOVE_MAJORITY;
	moved->n = 0;
	for (uint64_t next = first > e ? first : e + 1; next < e + MEMBERS_SLOTS; next++) {
		uint64_t tag = claim_tag(next);
		claim_round(ps, e, keep, tag, mode == MOVE_FORCE, &c);
		if (!(any ? c.claimed.n > 0 : quorum(ps, c.claimed.n))) {
			claim_release(ps, &c);
			if (!(any ? c.may.n > 0 : quorum(ps, c.may.n)))
				return -EAGAIN;
			continue; /* (claimed by another mover, live or dead) */
		}
		/* the authority the record names: auth if claimed, else the
		 * lowest claimed copy that is not joining (one that joins is
		 * never the authority at once); moved first, and the others
		 * only once it has: it must never lag behind the other members
		 * at the new epoch (an election meanwhile would take another,
		 * and once it arrived another process would elect it: two
		 * authorities of one epoch) */
		struct home_set cand = { 0 };
		for (uint32_t i = 0; i < c.claimed.n; i++)
			if (!set_has(&c.joining, c.claimed.id[i]))
				set_add(&cand, c.claimed.id[i]);
		uint32_t a = cand.n ? set_pick(&cand, auth) : set_pick(keep, auth);
		bool unsure = false, first_moved = !set_has(&cand, a);
		for (uint32_t i = 0; i <= c.claimed.n; i++) {
			uint32_t id = i == 0 ? a : c.claimed.id[i - 1];
			if ((i == 0 && first_moved) || (i > 0 && id == a))
				continue;
			if (i > 0 && !first_moved)
				break;
			bool joining = set_has(&c.joining, id);
			TEST_MOVE(id, a, next); /* (tests: the order of the moves) */
			int done = move_one(ps, id, tag, keep, a, e, joining);
			unsure |= done < 0;
			if (done > 0 && recorded)
				set_add(recorded, id);
			if (done > 0 && !joining)
				set_add(moved, id);
			if (i == 0)
				first_moved = done > 0;
		}
		/* nothing moved (nor may move later): no epoch is left behind,
		 * and the claims go back as for a round that reached too few */
		if (!moved->n && !unsure)
			claim_release(ps, &c);
		*to = next;
		return 0;
	}
	return -EBUSY;
}

/* --force: go on without the members that do not answer, saying what that
 * may lose. */
static int home_force_drop(struct rp_poolset *ps, struct home_view *v)
{
	struct home_set keep = { 0 }, moved;
	uint64_t to;
	char gone[512];
	for (size_t k = 0; k < ps->npeers; k++)
		if (v->epochs[k] == v->top && (v->top == 0 || set_has(&v->members, ps->ids[k])))
			set_add(&keep, ps->ids[k]);
	set_print(&v->missing, gone, sizeof(gone));
	rp_warn("volume table: --force: going on without peer(s) %s, which do not answer; any "
		"update of the volume table that only they hold is lost%s", gone,
		quorum(ps, keep.n) ? "" : ", and if they come back while these copies do not, "
		"they are taken as the newer ones");
	if (home_move(ps, v->top, v->stray_top + 1, &keep, v->auth, MOVE_FORCE, &moved, NULL, &to) < 0 ||
	    !moved.n)
		return -EAGAIN;
	known_raise(ps, to);
	return 0;
}

static void home_refuse(struct rp_poolset *ps, const struct home_view *v)
{
	char gone[512];
	set_print(&v->missing, gone, sizeof(gone));
	if (v->conflict) {
		rp_err("volume table: the copies at home epoch %llu record different members (two "
		       "processes moved them at once): none is used. Run 'rdmapool rebuild --force' "
		       "to go on with the lowest peer's", (unsigned long long)v->top);
		return;
	}
	if (!v->missing.n && v->stray.n) {
		rp_err("volume table: copies at home epoch %llu were left by a move that reached no "
		       "majority, and the members of epoch %llu that answer are no majority of the "
		       "%zu peers: none is used. Run 'rdmapool rebuild --force' to go on with them",
		       (unsigned long long)v->stray_top, (unsigned long long)v->top, ps->npeers);
		return;
	}
	if (v->top == 0) {
		rp_err("volume table: peer(s) %s do not answer, and the peers that do hold no volume "
		       "table: those may. Bring them back, or run 'rdmapool rebuild --force' to go "
		       "on without them", gone);
		return;
	}
	rp_err("volume table: peer(s) %s, in sync at home epoch %llu, do not answer (or came "
	       "back empty), and the "
	       "copies that do are no majority of the %zu peers: they may be older than those "
	       "and are not used. Bring those peers back, or run 'rdmapool rebuild --force' to go "
	       "on without them", gone, (unsigned long long)v->top, ps->npeers);
}

/* Is this offset of the home area the copy's own (its epoch word and its
 * members records), not the volume table's? */
static bool own_word(size_t off)
{
	return off >= VOL_HOME_EPOCH_OFF &&
	       off < VOL_HOME_EPOCH_OFF + 64 + MEMBERS_SLOTS * MEMBERS_SLOT;
}

/* Bring copy id to the authority's words while every process's writes go
 * on reaching it: each word that differs is set by compare-and-swap from
 * what the copy held, read before the authority's, so that a newer value
 * some writer put on the copy meanwhile is never overwritten with the older
 * one read from the authority (a writer updates the authority before the
 * copies). The gap (rdmapool(7) BUGS): a word that goes back to a value it
 * held (A, B, A) within the pass. Returns how many words differed, or a
 * negative errno; -EAGAIN when the copy's epoch word is no longer e or the
 * authority's no longer top. */
static int home_copy_words(struct rp_poolset *ps, uint32_t auth, uint64_t top, uint32_t id,
			   uint8_t *mine, uint8_t *theirs, uint64_t e)
{
	uint64_t now, old;
	int rc = rp_pool_read(ps, id, RP_HOME_OFFSET, mine, RP_HOME_SIZE), differ = 0;
	if (rc == 0)
		rc = rp_pool_read(ps, auth, RP_HOME_OFFSET, theirs, RP_HOME_SIZE);
	/* (an authority others left behind meanwhile is no source) */
	if (rc == 0 && (rc = rp_pool_faa(ps, auth, HOME_EPOCH_OFF, 0, &now)) == 0 && now != top)
		rc = -EAGAIN;
	if (rc == 0 && (rc = rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &now)) == 0 && now != e)
		rc = -EAGAIN;
	for (size_t off = 0; rc == 0 && off < RP_HOME_SIZE; off += 8) {
		uint64_t a, b;
		memcpy(&a, mine + off, 8);
		memcpy(&b, theirs + off, 8);
		if (a != b && !own_word(off)) {
			rc = rp_pool_cas(ps, id, RP_HOME_OFFSET + off, a, b, &old);
			differ++;
		}
	}
	return rc < 0 ? rc : differ;
}

/* Fill a copy out of sync: marked joining first (its epoch word then
 * HOME_JOINING with the epoch it held, returned in *jw for the join), so
 * that every process's writes reach it from then on, then its words copied
 * until a pass finds none that differ (or a few passes: the one after the
 * join repeats it). */
static int home_fill(struct rp_poolset *ps, uint32_t auth, uint64_t top, uint32_t id,
		     uint64_t seen, uint8_t *mine, uint8_t *theirs, uint64_t *jw)
{
	uint64_t e = 0, old;
	int rc = rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &e);
	/* only from the epoch the scan saw (0 for one joining already): one
	 * that moved since (another resync joined it) is not ours */
	if (rc == 0 && !(e & HOME_JOINING) && (e != seen || e > top))
		rc = -EAGAIN; /* (one above the top: a move under way, or strays) */
	*jw = e & HOME_JOINING ? e : HOME_JOINING | e;
	if (rc == 0 && !(e & HOME_JOINING) &&
	    (rc = rp_pool_cas(ps, id, HOME_EPOCH_OFF, e, *jw, &old)) == 0 && old != e)
		rc = -EAGAIN;
	if (rc == 0)
		rc = rp_pool_faa(ps, id, HOME_FILLS_OFF, 1, &old);
	for (int pass = 0; rc == 0 && pass < 4; pass++)
		if ((rc = home_copy_words(ps, auth, top, id, mine, theirs, *jw)) == 0)
			return 0;
		else if (rc > 0)
			rc = 0;
	return rc < 0 ? rc : -EAGAIN; /* (still changing: next time) */
}

/* Does every listed peer answer with what it holds (none down, none empty
 * or being filled, no empty member the top rests on)? Then, with one
 * member left at the top, no copy anywhere is newer than it: a stray above
 * it took no acknowledged update (one counts only when a majority holds it
 * at its epoch, (2)), and a mover still at work that could yet give a stray
 * its majority needs that one member too (the compare-and-swap on it
 * decides between us); copies out of sync are older. (With two or more
 * left at the top, a live mover could complete a stray on one of them while
 * we move the other: not taken.) */
static bool all_seen(const struct rp_poolset *ps, const struct home_view *v)
{
	if (v->unsure.n || v->present.n != 1)
		return false;
	for (size_t k = 0; k < ps->npeers; k++)
		if (v->epochs[k] == UINT64_MAX || v->epochs[k] == 0)
			return false;
	return true;
}

/* Members that do not answer while enough do, and strays: the epoch moves
 * on without them (past the strays), so that the authority is one that
 * answers, the same for every process (one still using a dropped one finds
 * the others past it: home_ahead). 0 when moved, 1 when another process
 * moved first (scan again); <0 when it cannot move. */
static int home_drop_missing(struct rp_poolset *ps, const struct home_view *v)
{
	struct home_set moved;
	uint64_t to;
	char gone[512];
	/* (fewer than a majority at the top: only the case all_seen allows,
	 * e.g. a stray on one member of three with the third out of sync; the
	 * move then needs that one copy's claim, as any other mover would) */
	bool few = !quorum(ps, v->present.n);
	if (few && !all_seen(ps, v))
		return -ENOLINK;
	int rc = home_move(ps, v->top, v->stray_top + 1, &v->present, v->auth,
			   few ? MOVE_ALONE : MOVE_MAJORITY, &moved, NULL, &to);
	if (rc == -EAGAIN || (rc == 0 && !moved.n))
		return 1;
	if (rc < 0 || (!few && !quorum(ps, moved.n)))
		return rc < 0 ? rc : -ENOLINK; /* (what moved are strays now) */
	if (few)
		rp_warn("volume table: every peer answers and only peer %u of home epoch %llu "
			"holds it: moved on with it alone to %llu; updates need the others filled "
			"again (a mount's background resync, or 'rdmapool rebuild')",
			moved.id[0], (unsigned long long)v->top, (unsigned long long)to);
	set_print(&v->missing, gone, sizeof(gone));
	if (v->missing.n)
		rp_warn("volume table: peer(s) %s do not answer; out of sync until a mount's "
			"background resync or 'rdmapool rebuild' fills them", gone);
	if (v->stray.n)
		rp_info("volume table: home epoch %llu had no majority (a move cut short): moved "
			"past it to %llu", (unsigned long long)v->stray_top,
			(unsigned long long)to);
	known_raise(ps, to);
	return 0;
}

/* Elect the authority: the one the top epoch records. With every
 * member answering, that epoch is the top one anywhere. Else a majority of
 * the ring answering (three peers or more), or this process knowing the
 * epoch (it elected at it or moved the copies to it), shows that no copy
 * is newer: the members that do not answer are dropped (the epoch moves
 * on without them). Else the answering copies may be older than the
 * others: wait for them (or for a holder to drop them), then refuse.
 * Strays above the top are moved past once the top may be elected and
 * they have stayed for an operation timeout (a move under way looks the
 * same for a moment). */
static int home_elect(struct rp_poolset *ps, uint32_t *auth)
{
	struct home_view *v = view_new(ps);
	uint64_t deadline = rp_now_ms() + 2ull * ps->op_timeout_ms + 2000, strays = 0, since = 0;
	int rc = v ? 0 : -ENOMEM, drc;
	while (rc == 0) {
		uint64_t known = atomic_load(&ps->home_epoch);
		if ((rc = home_scan(ps, v)) < 0)
			break;
		if (known > v->top) {
			rc = -ENOTCONN; /* it moved past every copy that answers */
			break;
		}
		if (v->missing.n == 0 && v->stray.n == 0 && !v->conflict)
			break;
		if (v->stray.n && v->stray_top != strays) {
			strays = v->stray_top;
			since = rp_now_ms();
			if (deadline < since + ps->op_timeout_ms + 2000)
				deadline = since + ps->op_timeout_ms + 2000;
		}
		/* (a table from before members were kept may have moved on
		 * fewer than a majority: all of it) */
		bool newest = !v->conflict &&
			      (v->missing.n == 0 || (known && v->top == known) ||
			       (ps->npeers >= 3 && v->recorded && quorum(ps, v->answered)));
		/* a read-only mount reads from the top without moving it (its
		 * writes miss the members that do not answer and fail, until
		 * the writer drops them) when a majority answers: knowing the
		 * epoch proves nothing for a process that moves none (the
		 * writer may have moved on without the copies it reaches).
		 * Strays it waits for the writer to move past. */
		if (ps->home_no_drop && !v->conflict && !v->stray.n && v->present.n &&
		    ps->npeers >= 3 && v->recorded && quorum(ps, v->answered))
			break;
		if (!ps->home_no_drop && newest &&
		    (!v->stray.n || rp_now_ms() - since >= ps->op_timeout_ms) &&
		    rp_now_ms() < deadline && (drc = home_drop_missing(ps, v)) >= 0) {
			if (drc)
				rp_sleep_ms(10); /* (raced: let the other finish) */
			continue;
		}
		if (rp_now_ms() >= deadline && ps->home_force) {
			rc = home_force_drop(ps, v);
			continue;
		}
		if (rp_now_ms() >= deadline) {
			home_refuse(ps, v);
			rc = -EHOSTUNREACH;
			break;
		}
		/* (re)connect, if it is back; one down since the open only
		 * when its adoption (a connect, the superblock and the count)
		 * ends before the deadline */
		for (uint32_t i = 0; i < v->missing.n; i++) {
			uint64_t takes = ps->connect_timeout_ms + 2ull * ps->op_timeout_ms;
			if (rp_now_ms() + takes < deadline)
				rp_pool_reach(ps, v->missing.id[i]);
			else
				rp_pool_ensure(ps, v->missing.id[i]);
		}
		rp_sleep_ms(QUORUM_POLL_MS);
	}
	if (rc == 0) {
		*auth = v->auth;
		atomic_store(&ps->home_rauth_out,
			     v->rauth >= 0 && (uint32_t)v->rauth != v->auth ? v->rauth : -1);
		known_raise(ps, v->top);
	}
	view_free(v);
	return rc;
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
	int rc = home_elect(ps, pool);
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

/* After a write that missed in-sync copies: the copies that took it move
 * to a new epoch without the others. -ESTALE when none moved (another
 * process moved the epoch first: elect again, write again), -ENOLINK when
 * too few took it or moved (three peers or more: no majority; a move that
 * did not make one leaves strays, which elections move past). */
static int home_drop(struct rp_poolset *ps, const bool *missed, const struct home_set *took,
		     uint64_t e, uint32_t auth)
{
	struct home_set moved;
	home_forget(ps);
	if (!quorum(ps, took->n)) {
		rp_err("volume table: an update reached %u of %zu peers, no majority: failed",
		       took->n, ps->npeers);
		return -ENOLINK;
	}
	uint64_t to;
	int rc = home_move(ps, e, e + 1, took, auth, MOVE_MAJORITY, &moved, NULL, &to);
	if (rc == -EAGAIN || (rc == 0 && !moved.n))
		return -ESTALE;
	if (rc < 0) {
		rp_err("volume table: home epochs %llu to %llu are all claimed by other movers on "
		       "too many copies: cannot drop a copy; failed", (unsigned long long)e + 1,
		       (unsigned long long)e + MEMBERS_SLOTS - 1);
		return -ENOLINK;
	}
	if (!quorum(ps, moved.n)) {
		/* (not undone: the copies moved are strays, home_scan) */
		rp_err("volume table: only %u of %zu peers moved to home epoch %llu, no majority: "
		       "failed", moved.n, ps->npeers, (unsigned long long)to);
		return -ENOLINK;
	}
	known_raise(ps, to);
	for (size_t k = 0; k < ps->npeers; k++)
		if (missed[k]) {
			ps->pools[ps->ids[k]].home_out = true;
			rp_warn("volume table: peer %u missed an update; it is out of sync until "
				"a mount's background resync or 'rdmapool rebuild' fills it",
				ps->ids[k]);
		}
	return 0;
}

/* After a read-only mount's write that missed in-sync copies: it fails, and
 * nothing moves. Only the writer decides that a copy is out of sync: a
 * follower's view of a pool (its connection, its backoff, the pool it
 * refuses as another until the writer has rebuilt it) is not the writer's,
 * and two processes dropping copies on two views split them (seed
 * 20261206). The copies that missed it lag in this one word until its next
 * transition rolls them forward (copy_transition) or the writer drops them. */
static int home_keep(struct rp_poolset *ps, const bool *missed)
{
	uint64_t now = rp_now_ms();
	home_forget(ps);
	if (now - ps->home_kept_warn_ms < 5000)
		return -ENOLINK;
	ps->home_kept_warn_ms = now;
	for (size_t k = 0; k < ps->npeers; k++)
		if (missed[k])
			rp_warn("volume table: peer %u missed an update of this read-only mount, "
				"which drops no copy (the writer does): the update failed",
				ps->ids[k]);
	return -ENOLINK;
}

/* A copy past the authority's epoch: another process moved on. -ESTALE when
 * the authority was left behind (elect again, redo it there), else the
 * epoch to go on with (both moved meanwhile). */
static int home_ahead(struct rp_poolset *ps, uint32_t auth, uint32_t id, uint64_t pe, uint64_t *e)
{
	uint64_t now;
	int rc = rp_pool_faa(ps, auth, HOME_EPOCH_OFF, 0, &now);
	if (rc < 0)
		return rc;
	if (now >= pe) {
		*e = now;
		return 0;
	}
	rp_info("volume table: peer %u is at home epoch %llu, past peer %u's %llu: electing again",
		id, (unsigned long long)pe, auth, (unsigned long long)now);
	return -ESTALE;
}

/* What a mirror puts on each copy: bytes, or an atomic's transition (old
 * to new word on the authority). */
struct home_update {
	uint64_t off;
	const void *buf;
	size_t len;
	bool atomic;
	uint64_t from, to;
	bool redo; /* the same transition again: copies at to took it already */
};

/* A transition goes to a copy by compare-and-swap, never by a write: two
 * processes' transitions of one word reach the copies in any order, and a
 * write of the older result landing last would roll the copy back (a value
 * handed out twice once it is the authority). A copy not at the old word
 * yet waits for the transition before it (another process's, in flight).
 * One that never gets there within op_timeout_ms lacks a transition the
 * authority made for a process that died or stalls before it reached this
 * copy: the authority's word is the one that counts (it made every
 * transition of this epoch, in order), so the copy is rolled forward to the
 * authority's word as it is then, if it is still at the authority's epoch.
 * One already at the new word counts as taking it only on a redo:
 * otherwise another process made the same transition on another authority,
 * and each copy counts for the one whose compare-and-swap it took, so that
 * only one of them finds a majority. */
static int copy_transition(struct rp_poolset *ps, uint32_t auth, uint32_t id,
			   const struct home_update *u, uint64_t e)
{
	uint64_t deadline = rp_now_ms() + ps->op_timeout_ms, old, now, w;
	for (;;) {
		int rc = rp_pool_cas(ps, id, u->off, u->from, u->to, &old);
		if (rc < 0 || old == u->from || (u->redo && old == u->to))
			return rc;
		if (rp_now_ms() >= deadline)
			break;
		rp_sleep_ms(1);
	}
	/* the authority's word, read after the copy's: never older than it
	 * (the authority takes every transition first), so the roll goes
	 * forward only; a copy already there took ours with the others */
	if (rp_pool_faa(ps, auth, u->off, 0, &w) == 0 &&
	    rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &now) == 0 && now == e &&
	    (old == w || (rp_pool_cas(ps, id, u->off, old, w, &now) == 0 && now == old))) {
		if (old != w)
			rp_info("volume table: peer %u lacked a transition at %#llx (%#llx, not "
				"%#llx): rolled forward to the authority's %#llx", id,
				(unsigned long long)u->off, (unsigned long long)old,
				(unsigned long long)u->from, (unsigned long long)w);
		return 0;
	}
	rp_warn("volume table: peer %u holds %#llx at %#llx, not the authority's %#llx before "
		"%#llx: diverged", id, (unsigned long long)old, (unsigned long long)u->off,
		(unsigned long long)u->from, (unsigned long long)u->to);
	return -EIO;
}

static int copy_update(struct rp_poolset *ps, uint32_t auth, uint32_t id,
		       const struct home_update *u, uint64_t e)
{
	return u->atomic ? copy_transition(ps, auth, id, u, e)
			 : rp_pool_write(ps, id, u->off, u->buf, u->len);
}

/* A copy being filled gets each update once, without waiting: one it
 * misses the fill's compare-and-swap pass brings over. */
static void copy_join_update(struct rp_poolset *ps, uint32_t id, const struct home_update *u)
{
	uint64_t old;
	if (u->atomic)
		rp_pool_cas(ps, id, u->off, u->from, u->to, &old);
	else
		rp_pool_write(ps, id, u->off, u->buf, u->len);
}

/* Copies this process found out of sync that it cannot reach now: another
 * process's resync may have brought them back. Members of e as the
 * authority records them missed the update (true: drop them). */
static bool unsure_missed(struct rp_poolset *ps, uint32_t auth, uint64_t e,
			  const struct home_set *unsure, bool *missed)
{
	struct home_set members;
	bool recorded, any = false;
	int64_t rauth;
	/* (unreadable: any of them may be a member) */
	bool all = members_read(ps, auth, e, &members, &recorded, &rauth, NULL) < 0;
	for (size_t k = 0; k < ps->npeers; k++)
		if (set_has(unsure, ps->ids[k]) && (all || set_has(&members, ps->ids[k])))
			missed[k] = any = true;
	return any;
}

/* Wait until deadline (the operation timeout, as copy_transition waits for
 * the transition before its own) for copy id, below e, to arrive at e; *pe
 * its epoch word then. -ESTALE once the authority has left e (another
 * process moved on: elect again). */
static int copy_arrive(struct rp_poolset *ps, uint32_t auth, uint32_t id, uint64_t e,
		       uint64_t deadline, uint64_t *pe)
{
	uint64_t ae;
	int rc;
	for (unsigned i = 1; (rc = rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, pe)) == 0 && *pe < e &&
			     rp_now_ms() < deadline;
	     i++) {
		/* (the authority gone or past e: elect again, not the
		 * member's fault) */
		if (i % 16 == 0 && (rp_pool_faa(ps, auth, HOME_EPOCH_OFF, 0, &ae) < 0 || ae != e))
			return -ESTALE;
		rp_sleep_ms(1);
	}
	return rc;
}

/* Copies that answered below e. A member of e among them is one that a
 * move to e has not reached yet: it would arrive without this update
 * (fstest 085). It is waited for (all of them within one operation
 * timeout) and updated at e, else it counts as missing the update; the
 * others are out of sync. The authority e's record names, lagging while
 * another is in use (the election's fallback, the lowest present), counts
 * as missing it at once: it must not arrive and be elected beside this
 * one, two authorities of one epoch. With e's record unreadable or
 * unrecorded, any may be a member: each counts as missing it (no wait on
 * every write for a copy that may never come). -ESTALE: one arrived past
 * e, or the authority left e (elect again, redo it). */
static int lagging(struct rp_poolset *ps, uint32_t auth, uint64_t e, const struct home_update *u,
		   const struct home_set *below, struct home_set *took, bool *missed, bool *any)
{
	struct home_set members;
	bool recorded = false;
	int64_t rauth = -1;
	bool known = members_read(ps, auth, e, &members, &recorded, &rauth, NULL) == 0 && recorded;
	uint64_t deadline = rp_now_ms() + ps->op_timeout_ms;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		uint64_t pe = 0;
		if (!set_has(below, id))
			continue;
		ps->pools[id].home_out = true;
		if (known && !set_has(&members, id))
			continue; /* out of sync already */
		int prc = known && rauth != (int64_t)id ? copy_arrive(ps, auth, id, e, deadline, &pe)
							: -EAGAIN;
		if (prc == -ESTALE)
			return prc;
		if (prc == 0 && (pe & HOME_JOINING)) {
			copy_join_update(ps, id, u); /* (what it misses, the fill copies) */
			continue;
		}
		if (prc == 0 && pe > e) {
			int arc = home_ahead(ps, auth, id, pe, &e);
			return arc < 0 ? arc : -ESTALE;
		}
		if (prc == 0 && pe < e)
			prc = -ETIMEDOUT;
		if (prc == 0)
			prc = copy_update(ps, auth, id, u, e);
		if (prc == -ENOLCK)
			return prc; /* fenced: a newer holder decides, drop nothing */
		if (prc == 0) {
			set_add(took, id);
			ps->pools[id].home_out = false;
		} else {
			missed[k] = *any = true;
		}
	}
	return 0;
}

/* Copy id answered epoch pe to an update at e: is it the authority e's
 * record names, which the election passed over (not at the epoch then: a
 * move from an older version, which did not move it first, or a scan that
 * read it just before this version's move took it, first, and the others
 * after), arrived since? Others elect it now: elect again before touching
 * any other copy (two authorities of one epoch else, each counting the
 * copies that hold the other's equal change: one value handed out twice,
 * fstest 085 step 6). */
static bool rauth_now_at(struct rp_poolset *ps, uint32_t id, uint64_t pe, uint64_t e,
			 const char *when)
{
	if (pe != e || atomic_load(&ps->home_rauth_out) != (int64_t)id)
		return false;
	rp_info("volume table: peer %u, the authority home epoch %llu records, %s: electing "
		"again", (unsigned)id, (unsigned long long)e, when);
	atomic_store(&ps->home_rauth_out, -1);
	return true;
}

/* The same check for the recorded authority wherever it is: before an
 * update on auth, and again by the update's mirror before it reaches any
 * other copy (it may have arrived between the first and the atomic); the
 * mirror then makes it for every copy it reads. */
static bool rauth_arrived(struct rp_poolset *ps, uint32_t auth, const char *when)
{
	int64_t r = atomic_load(&ps->home_rauth_out);
	uint64_t re, ae;
	if (r < 0 || (uint32_t)r == auth || rp_pool_faa(ps, (uint32_t)r, HOME_EPOCH_OFF, 0, &re) < 0 ||
	    rp_pool_faa(ps, auth, HOME_EPOCH_OFF, 0, &ae) < 0 ||
	    !rauth_now_at(ps, (uint32_t)r, re, ae, when))
		return false;
	home_forget(ps);
	return true;
}

/* Write to the authority and to every copy in sync with it (same epoch,
 * read now: another thread, or another process's resync, may just have
 * moved it); the authority's write decides the result. A copy this process
 * found out of sync is read again only while it is connected (a pool that
 * is down is not waited for on every write). -ESTALE: the authority was
 * left behind by another process (what landed went to copies out of sync):
 * elect again, redo it; with *arrived set, the recorded authority arrived
 * (another process may have made the same change there, and copies that
 * hold it count for neither): elect again, and the change made on this
 * authority is in doubt (not to be redone there). */
static int home_mirror_locked(struct rp_poolset *ps, uint32_t auth, const struct home_update *u,
			      bool *arrived)
{
	bool *missed = calloc(ps->npeers, sizeof(*missed)), any = false;
	struct home_set *took = calloc(1, sizeof(*took)); /* the copies that hold it at e */
	struct home_set unsure = { 0 }; /* out of sync when last seen, and gone */
	struct home_set below = { 0 };  /* answered below e */
	uint64_t e;
	int rc = missed && took ? rp_pool_faa(ps, auth, HOME_EPOCH_OFF, 0, &e) : -ENOMEM;
	if (rc == 0 && !u->atomic)
		rc = rp_pool_write(ps, auth, u->off, u->buf, u->len);
	if (rc == 0)
		set_add(took, auth);
	*arrived = rc == 0 && rauth_arrived(ps, auth, "arrived during an update");
	if (*arrived)
		rc = -ESTALE; /* (no copy but the authority has it yet) */
	for (size_t k = 0; rc == 0 && k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		uint64_t pe;
		if (id == auth || !ps->pools[id].present)
			continue;
		if (ps->pools[id].home_out && !rp_pool_connected(ps, id)) {
			set_add(&unsure, id);
			continue;
		}
		/* (rp_pool_faa reconnects a dropped connection first, at most
		 * once per backoff period) */
		int prc = rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &pe);
		if (prc == 0 && (pe & HOME_JOINING)) {
			copy_join_update(ps, id, u); /* (what it misses, the fill copies) */
			continue;
		}
		if (prc == 0 && pe > e && (rc = home_ahead(ps, auth, id, pe, &e)) < 0)
			break;
		/* (after home_ahead: it may have come with a move) */
		if (prc == 0 && rauth_now_at(ps, id, pe, e, "arrived during an update")) {
			*arrived = true;
			rc = -ESTALE;
			break;
		}
		/* (a reader, which drops nothing, asks whether one that does
		 * not answer is a member at all: one a writer dropped while it
		 * was down is not, and misses nothing) */
		if (prc < 0 && (ps->pools[id].home_out || ps->home_no_drop)) {
			set_add(&unsure, id);
			continue;
		}
		if (prc == 0 && pe < e) {
			/* out of sync already, or a member of e that a move
			 * has not reached yet (lagging decides) */
			set_add(&below, id);
			continue;
		}
		if (prc == 0)
			prc = copy_update(ps, auth, id, u, e);
		if (prc == 0) {
			set_add(took, id);
			ps->pools[id].home_out = false; /* (a resync brought it back) */
		} else if (prc == -ENOLCK)
			rc = prc; /* fenced: a newer holder decides, drop nothing */
		else
			missed[k] = any = true; /* it may have been in sync: drop it */
	}
	if (rc == 0 && below.n)
		rc = lagging(ps, auth, e, u, &below, took, missed, &any);
	if (rc == 0 && unsure.n)
		any |= unsure_missed(ps, auth, e, &unsure, missed);
	if (any && rc == 0)
		rc = ps->home_no_drop ? home_keep(ps, missed) : home_drop(ps, missed, took, e, auth);
	else if (rc == 0 && !quorum(ps, took->n)) {
		rp_err("volume table: an update reached %u of %zu peers, no majority: failed",
		       took->n, ps->npeers);
		rc = -ENOLINK;
	}
	free(missed);
	free(took);
	if (rc < 0)
		home_forget(ps);
	return rc;
}

#ifdef RP_TEST_HOOKS
static void (*test_stall)(uint64_t off);
void home_test_stall(void (*fn)(uint64_t off))
{
	test_stall = fn;
}
#define TEST_STALL(off) (test_stall ? test_stall(off) : (void)0)
#else
#define TEST_STALL(off) ((void)0)
#endif

/* One mirror (epoch read, writes, drop) and one election at a time in this
 * process: two threads dropping copies at once would move the epochs apart. */
static pthread_mutex_t mirror_mu = PTHREAD_MUTEX_INITIALIZER;

int vol_home_read(struct rp_poolset *ps, uint64_t off, void *buf, size_t len)
{
	for (int tries = 0; tries < 2; tries++) {
		uint32_t auth;
		rp_mutex_lock(&mirror_mu, RP_LK_HOME);
		int rc = home_pool(ps, &auth);
		rp_mutex_unlock(&mirror_mu);
		if (rc == -EHOSTUNREACH)
			return rc; /* waited for already */
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
	int rc = -ESTALE;
	for (int tries = 0; tries < 3 && rc == -ESTALE; tries++) {
		uint32_t auth;
		rp_mutex_lock(&mirror_mu, RP_LK_HOME);
		rc = home_pool(ps, &auth);
		struct home_update u = { .off = off, .buf = buf, .len = len };
		bool arrived = false; /* (a write is the same again wherever it lands) */
		if (rc == 0 && rauth_arrived(ps, auth, "is in sync now"))
			rc = -ESTALE;
		else if (rc == 0)
			rc = home_mirror_locked(ps, auth, &u, &arrived);
		rp_mutex_unlock(&mirror_mu);
	}
	return rc == -ESTALE ? -EIO : rc; /* (-ESTALE means more to callers) */
}

/* An atomic on the authority; a changed word's transition then goes to
 * the others (copy_transition). When the mirror finds the authority left
 * behind: on a new authority the atomic again (the old one's result counts
 * for nothing), on the same one (both moved meanwhile) the transition
 * mirrored again. When the mirror finds the recorded authority arrived:
 * the atomic anew on it, and -EIO (in doubt) if the same authority is
 * elected again. An atomic that changes nothing is not mirrored, and so
 * not checked against other copies. */
static int home_atomic_locked(struct rp_poolset *ps, bool cas, uint64_t off, uint64_t a,
			      uint64_t b, uint64_t *old)
{
	int64_t done_on = -1;
	struct home_set doubted = { 0 }; /* authorities whose change is in doubt */
	uint64_t fills = 0, now;
	struct home_update u = { .off = off, .atomic = true };
	bool changed = false;
	int last = -EIO;
	for (int tries = 0; tries < 3; tries++) {
		uint32_t auth;
		int rc = home_pool(ps, &auth);
		if (rc < 0)
			return rc == -ESTALE ? -EIO : rc;
		if (set_has(&doubted, auth))
			return -EIO; /* (its change there is in doubt, and stays) */
		if (done_on != (int64_t)auth && rauth_arrived(ps, auth, "is in sync now")) {
			last = -EIO;
			continue; /* (nothing done yet: elect again) */
		}
		/* the same authority, not filled again meanwhile: the same
		 * transition mirrored again; else the atomic anew */
		if (done_on == (int64_t)auth &&
		    (rp_pool_faa(ps, auth, HOME_FILLS_OFF, 0, &now) < 0 || now != fills))
			done_on = -1;
		if (done_on != (int64_t)auth) {
			rc = cas ? rp_pool_cas(ps, auth, off, a, b, old)
				 : rp_pool_faa(ps, auth, off, a, old);
			if (rc == -ENOLCK)
				return rc; /* fenced: not to be tried on another copy */
			if (rc < 0) {
				home_forget(ps);
				done_on = -1;
				last = rc == -ESTALE ? -EIO : rc;
				continue;
			}
			done_on = auth;
			changed = cas ? *old == a && a != b : a != 0;
			u.from = *old;
			u.to = cas ? b : *old + a;
			u.redo = false;
		}
		if (changed)
			TEST_STALL(off); /* (tests: the authority has it, no copy yet) */
		bool arrived = false;
		rc = changed ? home_mirror_locked(ps, auth, &u, &arrived) : 0;
		if (rc == -ESTALE && arrived) {
			/* the recorded authority arrived: on it the atomic
			 * anew; this one's change is never redone as ours
			 * (copies at its result may hold the other's) */
			set_add(&doubted, auth);
			done_on = -1;
			last = -EIO;
			continue;
		}
		if (rc != -ESTALE)
			return rc;
		u.redo = true; /* (if the same authority is elected again) */
		/* its fill count now, off the common path: a resync fills a
		 * copy only after it was left behind, which is what -ESTALE
		 * just said */
		if (rp_pool_faa(ps, auth, HOME_FILLS_OFF, 0, &fills) < 0)
			done_on = -1;
		last = -EIO; /* (-ESTALE means more to callers) */
	}
	return last;
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

/* Member id of e (not the authority) holds v at e, or is brought there:
 * a transition still on its way is waited for (up to the operation
 * timeout), then a copy still at 0 is rolled forward to the authority's
 * word, as copy_transition does for a process that died before it got
 * there (only from 0: the word is set once). */
static int member_holds(struct rp_poolset *ps, uint32_t id, uint64_t e, uint64_t off, uint64_t v)
{
	uint64_t deadline = rp_now_ms() + ps->op_timeout_ms, w, now;
	int rc;
	while ((rc = rp_pool_faa(ps, id, off, 0, &w)) == 0 && w != v && rp_now_ms() < deadline)
		rp_sleep_ms(1);
	if (rc < 0 || w == v)
		return rc;
	if (w != 0)
		return -EAGAIN; /* (a word set once: never rolled from one value to another) */
	if ((rc = rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &now)) < 0)
		return rc;
	if (now != e || (rc = rp_pool_cas(ps, id, off, w, v, &now)) < 0)
		return rc < 0 ? rc : -EAGAIN;
	if (now != w)
		return -EAGAIN; /* (it moved meanwhile) */
	rp_info("volume table: peer %u lacked a transition at %#llx: rolled forward to the "
		"authority's %#llx", id, (unsigned long long)off, (unsigned long long)v);
	return 0;
}

static int home_read_settled_locked(struct rp_poolset *ps, uint64_t off, uint64_t *v)
{
	struct home_set members;
	bool recorded = false;
	int64_t rauth;
	uint32_t auth;
	uint64_t e, e2, v2;
	int rc = home_pool(ps, &auth);
	if (rc == 0 && (rc = rp_pool_faa(ps, auth, HOME_EPOCH_OFF, 0, &e)) == 0)
		rc = rp_pool_faa(ps, auth, off, 0, v);
	if (rc == 0 && (rc = members_read(ps, auth, e, &members, &recorded, &rauth, NULL)) == 0 &&
	    !recorded)
		rc = -EAGAIN; /* (no members recorded: which copies count is not known) */
	if (rc == 0 && rauth >= 0 && (uint32_t)rauth != auth) {
		/* (the election passed the record's over: once it is at e,
		 * elect again) */
		uint64_t re;
		if (rp_pool_faa(ps, (uint32_t)rauth, HOME_EPOCH_OFF, 0, &re) == 0 && re == e)
			home_forget(ps);
		rc = -EAGAIN;
	}
	for (uint32_t i = 0; rc == 0 && i < members.n; i++) {
		uint64_t me;
		uint32_t id = members.id[i];
		if (id == auth || id >= ps->n || !ps->pools[id].present)
			continue;
		/* (one that does not answer: the next update drops it) */
		if (rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &me) < 0 || me != e)
			rc = -EAGAIN;
		else if ((rc = member_holds(ps, id, e, off, *v)) < 0 && rc != -ENOLCK)
			rc = -EAGAIN;
	}
	/* the authority still there, at e, with v: nothing moved meanwhile */
	if (rc == 0 && (rc = rp_pool_faa(ps, auth, HOME_EPOCH_OFF, 0, &e2)) == 0 &&
	    (rc = rp_pool_faa(ps, auth, off, 0, &v2)) == 0 && (e2 != e || v2 != *v))
		rc = -EAGAIN;
	if (rc < 0 && rc != -EAGAIN)
		home_forget(ps);
	return rc;
}

int home_read_settled(struct rp_poolset *ps, uint64_t off, uint64_t *v)
{
	rp_mutex_lock(&mirror_mu, RP_LK_HOME);
	int rc = home_read_settled_locked(ps, off, v);
	rp_mutex_unlock(&mirror_mu);
	return rc;
}

/* The copies out of sync that answer are filled from the authority
 * (home_fill); then the next epoch has them as members too: the members
 * move first, then the filled copies join (writes reach them all along). */
static int home_resync_locked(struct rp_poolset *ps, FILE *out)
{
	struct home_view *v = view_new(ps);
	struct home_set *keep = calloc(1, sizeof(*keep)), filled = { 0 }, moved = { 0 },
			recorded = { 0 };
	uint8_t *mine = malloc(RP_HOME_SIZE), *theirs = malloc(RP_HOME_SIZE);
	uint64_t *jw = calloc(ps->npeers, sizeof(*jw)); /* by filled's index */
	uint32_t auth;
	int rc = v && keep && mine && theirs && jw ? home_elect(ps, &auth) : -ENOMEM;
	if (rc == 0)
		rc = home_scan(ps, v);
	/* a move under way (or strays the election has not moved past yet):
	 * the copies it leaves at the top may lack its updates */
	if (rc == 0 && v->stray.n)
		rc = -EAGAIN;
	for (size_t k = 0; rc == 0 && k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		if (v->epochs[k] == UINT64_MAX)
			continue;
		if (v->epochs[k] == v->top && set_has(&v->members, id))
			set_add(keep, id);
		else if (home_fill(ps, v->auth, v->top, id, v->epochs[k], mine, theirs,
				   &jw[filled.n]) == 0)
			set_add(&filled, id);
	}
	for (uint32_t i = 0; i < filled.n; i++)
		set_add(keep, filled.id[i]);
	uint64_t next = 0, old;
	if (rc == 0 && filled.n) {
		rc = home_move(ps, v->top, v->stray_top + 1, keep, v->auth, MOVE_MAJORITY, &moved, &recorded,
			       &next);
		if (rc == 0 && !moved.n)
			rc = -EAGAIN; /* another process moved the epoch first */
	}
	for (uint32_t i = 0; rc == 0 && i < filled.n; i++) {
		uint32_t id = filled.id[i];
		if (!set_has(&recorded, id))
			continue; /* it would join without its record */
		if ((rc = rp_pool_cas(ps, id, HOME_EPOCH_OFF, jw[i], next, &old)) < 0)
			break;
		if (old != jw[i])
			continue; /* another resync took it over */
		ps->pools[id].home_out = false; /* mirrored to from now on */
		/* once more: a transition that reached it out of order while
		 * it was joining was lost (joining copies do not wait) */
		home_copy_words(ps, v->auth, next, id, mine, theirs, next);
		set_add(&moved, id);
		rp_info("volume table: peer %u copied from peer %u, in sync at home epoch %llu", id,
			v->auth, (unsigned long long)next);
		if (out)
			fprintf(out, "peer %u: volume table copied from peer %u\n", id, v->auth);
	}
	if (rc == 0 && filled.n && !quorum(ps, moved.n))
		rc = -ENOLINK; /* (what did join stays: more copies, not fewer) */
	if (rc == 0 && filled.n)
		known_raise(ps, next);
	if (rc < 0)
		rp_warn("volume table: resync: %s", strerror(-rc));
	home_forget(ps);
	view_free(v);
	free(keep);
	free(mine);
	free(theirs);
	free(jw);
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

bool home_any_out(struct rp_poolset *ps)
{
	for (size_t k = 0; k < ps->npeers; k++)
		if (atomic_load(&ps->pools[ps->ids[k]].home_out) && rp_pool_connected(ps, ps->ids[k]))
			return true;
	return false;
}

/* Epochs start at 1 once a volume exists, with every copy that answers a
 * member: a pool replaced by an empty one (epoch 0) is then out of sync,
 * never the authority. A table from before members were kept gets them
 * recorded once elected (every peer answered). */
static int home_init_locked(struct rp_poolset *ps)
{
	struct home_view *v = view_new(ps);
	struct home_set *keep = calloc(1, sizeof(*keep));
	uint32_t auth;
	int rc = v && keep ? home_elect(ps, &auth) : -ENOMEM;
	if (rc == 0)
		rc = home_scan(ps, v);
	for (size_t k = 0; rc == 0 && k < ps->npeers; k++)
		if (v->epochs[k] == v->top)
			set_add(keep, ps->ids[k]);
	struct home_set moved;
	uint64_t to, prev, tag = 0;
	if (rc == 0 && v->top == 0) {
		if (home_move(ps, 0, 1, keep, -1, MOVE_MAJORITY, &moved, NULL, &to) == 0 && moved.n)
			known_raise(ps, to);
	} else if (rc == 0 && !v->recorded && (tag = claim_tag(v->top)))
		for (uint32_t i = 0; i < keep->n; i++)
			if (members_claim(ps, keep->id[i], tag, v->top, false, &prev) == 0)
				members_write(ps, keep->id[i], tag, 0, keep, v->auth);
	home_forget(ps);
	view_free(v);
	free(keep);
	return rc;
}

int home_init(struct rp_poolset *ps)
{
	rp_mutex_lock(&mirror_mu, RP_LK_HOME);
	int rc = home_init_locked(ps);
	rp_mutex_unlock(&mirror_mu);
	return rc;
}

/* Every copy's home epoch word and member records, for a test or an
 * operator to see why a volume table is refused. */
void home_describe(struct rp_poolset *ps, FILE *out)
{
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		uint64_t e = 0;
		uint8_t buf[MEMBERS_LEN];
		int rc = rp_pool_faa(ps, id, HOME_EPOCH_OFF, 0, &e);
		if (rc < 0) {
			fprintf(out, "peer %u: home epoch unreadable: %s\n", id, strerror(-rc));
			continue;
		}
		fprintf(out, "peer %u: home epoch %llu%s\n", id,
			(unsigned long long)(e & ~HOME_JOINING), e & HOME_JOINING ? " (joining)" : "");
		for (uint64_t slot = 0; slot < MEMBERS_SLOTS; slot++) {
			uint64_t tag;
			if (rp_pool_read(ps, id, HOME_MEMBERS_OFF + slot * MEMBERS_SLOT, buf, sizeof(buf)) < 0)
				break;
			memcpy(&tag, buf, 8);
			if (!tag)
				continue;
			uint32_t n = RP_MIN(rp_get_le32(buf + 8), 16u);
			fprintf(out, "  slot %llu: epoch %llu mover %llu, from %llu, authority %d, %u members:",
				(unsigned long long)slot, (unsigned long long)TAG_EPOCH(tag),
				(unsigned long long)(tag >> 40), (unsigned long long)rp_get_le64(buf + 24),
				(int)rp_get_le32(buf + 12) - 1, rp_get_le32(buf + 8));
			for (uint32_t i = 0; i < n; i++)
				fprintf(out, " %u", rp_get_le16(buf + (tag >> 40 ? 32 : 16) + 2 * i));
			fprintf(out, "\n");
		}
	}
}
