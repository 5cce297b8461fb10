/* The volume table's protocol under concurrent processes (fstest 077):
 * each racer adds 1 to a counter word of the home area, through the same
 * path the leases take (home_faa: the authority's fetch-and-add, mirrored
 * to every copy in sync), and prints the old value of every addition that
 * was acknowledged. A volume table that lost an acknowledged update or
 * rolled back to a copy left behind hands out one old value twice; the
 * test's checker sees that. A racer given 'resync' also copies the area
 * onto copies out of sync now and then, as rebuild does, while the others
 * write.
 *   home_race CLUSTER run SECONDS [resync | until FILE | stall FILE | reader]
 *                                           -> "ack OLD MS" and "err RC MS" lines
 *                                              (reader: as a read-only mount,
 *                                              which moves no epoch, fstest 088)
 *                                              (until: between a read, which
 *                                              elects, and its first update,
 *                                              a wait for FILE to exist;
 *                                              stall: the first update's
 *                                              atomic done on the authority,
 *                                              "stalled", and a wait for FILE
 *                                              before its mirror)
 *   home_race CLUSTER check [moves]         -> "value V": an addition's old value
 *                                              (exit 1 when none is acknowledged
 *                                              or then the copies differ)
 * and, for fstest 078, what a mover killed in the middle of a move leaves
 * (rdmapool(7) (1), (2)), written with the layout's offsets:
 *   home_race CLUSTER strand PEER MEMBER... [@AUTH]
 *                                           PEER alone moved to the next
 *                                              epoch, recording MEMBERs (and
 *                                              AUTH the authority: else the
 *                                              first)
 *   home_race CLUSTER claim PEER...          the next epoch claimed on the
 *                                              PEERs, nothing moved
 * and, for fstest 085, whether every copy at the top epoch holds the same
 * counter (a copy that holds the authority's epoch holds every update
 * acknowledged at it, rdmapool(7) (4)), read as it is, nothing resynced:
 *   home_race CLUSTER tops                   -> "peer P: epoch E counter V record
 *                                              MOVER/AUTH:MEMBERS" */
#include "config.h"
#include "../../../src/fs/fs_impl.h"
#include "../../helpers/helper.h"

#include <rdmapool/layout.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* a word of the home area no format uses (past the members records) */
#define COUNTER_OFF (RP_HOME_OFFSET + 55 * 1024 + 512)

/* the home epoch word and the members records (home.c's layout, which
 * this test pins down: tags are the epoch, and above bit 40 a mover's
 * number; seven slots by the epoch mod 7, two by parity before) */
#define EPOCH_OFF (RP_HOME_OFFSET + VOL_HOME_EPOCH_OFF)
#define SLOT_OFF(e, n) (EPOCH_OFF + 64 + (e) % (n) * 1024)

/* Record epoch e on copy id: the tag as a table from before claims wrote
 * it (found in both layouts), the members, the authority (the first member,
 * or the one given as a last argument @ID, so that every copy a move
 * reaches holds the same record). */
static int record(struct rp_poolset *ps, uint32_t id, uint64_t e, char **members, int n)
{
	uint8_t buf[16 + 2 * RP_MAX_PEERS] = { 0 };
	uint32_t auth = n ? (uint32_t)atoi(members[0]) : id;
	if (n && members[n - 1][0] == '@')
		auth = (uint32_t)atoi(members[--n] + 1);
	memcpy(buf, &e, 8);
	rp_put_le32(buf + 8, (uint32_t)n);
	rp_put_le32(buf + 12, auth + 1);
	for (int i = 0; i < n; i++)
		rp_put_le16(buf + 16 + 2 * i, (uint16_t)atoi(members[i]));
	int rc = rp_pool_write(ps, id, SLOT_OFF(e, 7), buf, 16 + 2 * (size_t)n);
	if (rc == 0 && SLOT_OFF(e, 2) != SLOT_OFF(e, 7))
		rc = rp_pool_write(ps, id, SLOT_OFF(e, 2), buf, 16 + 2 * (size_t)n);
	return rc;
}

static int strand(struct rp_poolset *ps, uint32_t id, char **members, int n)
{
	uint64_t e, old;
	int rc = rp_pool_faa(ps, id, EPOCH_OFF, 0, &e);
	if (rc == 0)
		rc = record(ps, id, e + 1, members, n);
	if (rc == 0)
		rc = rp_pool_cas(ps, id, EPOCH_OFF, e, e + 1, &old);
	printf("peer %u: epoch %llu -> %llu\n", id, (unsigned long long)e,
	       (unsigned long long)e + 1);
	return rc < 0 ? 1 : 0;
}

/* a claim of another mover (number 12345), never followed by its move */
static int claim(struct rp_poolset *ps, char **peers, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t id = (uint32_t)atoi(peers[i]);
		uint64_t e, tag;
		if (rp_pool_faa(ps, id, EPOCH_OFF, 0, &e) < 0)
			return 1;
		tag = (e + 1) | 12345ull << 40;
		if (rp_pool_write(ps, id, SLOT_OFF(e + 1, 7), &tag, 8) < 0)
			return 1;
		printf("peer %u: epoch %llu claimed\n", id, (unsigned long long)e + 1);
	}
	return 0;
}

static void wait_for(const char *file)
{
	struct timespec ts = { 0, 2 * 1000000L };
	for (int i = 0; i < 5000 && access(file, F_OK) != 0; i++)
		nanosleep(&ts, NULL);
}

#ifdef RP_TEST_HOOKS
/* (the file a stalled racer waits for) */
static const char *stall_file;

static void stall_once(uint64_t off)
{
	(void)off;
	if (!stall_file)
		return;
	printf("stalled\n");
	fflush(stdout);
	wait_for(stall_file);
	stall_file = NULL;
}
#endif

/* A racer starts as a mount does: its election may fail (a pool that
 * does not answer may hold the table, and on new pools none exists until
 * one is made), and then it opens the pools and elects again, as a user
 * mounting again would, until its end. (A pool down when the pools were
 * opened is not reconnected by the election: with no table yet, one try
 * per process never made it. 077 under ASan: each racer's one try met a
 * fault, no table was made, nothing was acknowledged in the whole run;
 * 099.) */
static struct rp_poolset *init_racer(const char *cluster_file, struct rp_poolset *ps,
				     struct rp_cluster **cl, uint64_t end)
{
	bool no_drop = ps->home_no_drop;
	int rc;
	while ((rc = home_init(ps)) < 0 && rp_now_ms() < end) {
		printf("err %d %llu\n", rc, (unsigned long long)rp_now_ms() % 1000000);
		fflush(stdout);
		fprintf(stderr, "home_race: home_init: %s: the pools opened again\n", strerror(-rc));
		rp_sleep_ms(50);
		rp_poolset_close(ps);
		rp_cluster_free(*cl);
		ps = helper_open_flags(cluster_file, RP_POOLSET_ALLOW_DOWN, cl);
		ps->home_no_drop = no_drop;
	}
	return ps;
}

static int run(struct rp_poolset *ps, uint64_t end, bool resync, const char *until)
{
	if (until) {
		/* a read first (it elects, and the authority is kept for a
		 * second), then a wait for the test's go (file until made, up
		 * to 10 s), then the updates */
		uint64_t w;
		printf("%s\n", vol_home_read(ps, COUNTER_OFF, &w, 8) == 0 ? "elected" : "read failed");
		fflush(stdout);
		wait_for(until);
	}
	uint64_t next_resync = 0;
	long acks = 0, errs = 0;
	while (rp_now_ms() < end) {
		uint64_t old;
		int rc = home_faa(ps, COUNTER_OFF, 1, &old);
		if (rc == 0) {
			printf("ack %llu %llu\n", (unsigned long long)old,
			       (unsigned long long)rp_now_ms() % 1000000);
			fflush(stdout);
			acks++;
		} else {
			printf("err %d %llu\n", rc, (unsigned long long)rp_now_ms() % 1000000);
			errs++;
			struct timespec ts = { 0, 50 * 1000000L };
			nanosleep(&ts, NULL);
		}
		if (resync && rp_now_ms() >= next_resync) {
			home_resync(ps, NULL);
			next_resync = rp_now_ms() + 700;
		}
	}
	fprintf(stderr, "home_race: %ld acknowledged, %ld failed\n", acks, errs);
	return 0;
}

/* After the faults, every pool back: an addition must be acknowledged
 * within a bound (its old value is the counter, which the caller checks
 * against every value acknowledged before), and after a resync every copy
 * must hold the result (an addition drops a copy that differs, the resync
 * fills it again). */
static int check(struct rp_poolset *ps, const struct rp_cluster *cl)
{
	uint64_t v = 0, w, end = rp_now_ms() + 30000;
	int rc = -EAGAIN, bad = 0;
	while (rc < 0 && rp_now_ms() < end) {
		home_resync(ps, NULL);
		if ((rc = home_faa(ps, COUNTER_OFF, 1, &v)) < 0) {
			struct timespec ts = { 0, 200 * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	if (rc == 0)
		rc = home_resync(ps, NULL);
	if (rc < 0) {
		fprintf(stderr, "home_race: check: %s\n", strerror(-rc));
		home_describe(ps, stderr); /* (what the copies say) */
		return 1;
	}
	printf("value %llu\n", (unsigned long long)v);
	for (size_t k = 0; k < cl->npeers; k++) {
		uint32_t id = cl->peers[k].id;
		if ((rc = rp_pool_read(ps, id, COUNTER_OFF, &w, 8)) < 0) {
			printf("peer %u: unreadable: %s\n", id, strerror(-rc));
			bad = 1;
		} else if (w != v + 1) {
			printf("peer %u holds %llu, the authority %llu\n", id,
			       (unsigned long long)w, (unsigned long long)v + 1);
			bad = 1;
		}
	}
	return bad;
}

/* The record of epoch e in copy id's slot, as one word: its mover's
 * number, the authority and the members ("-" when the slot records
 * another epoch), so that copies that went on apart at one epoch differ. */
static void record_describe(struct rp_poolset *ps, uint32_t id, uint64_t e, char *out, size_t len)
{
	uint8_t buf[32 + 2 * RP_MAX_PEERS];
	uint64_t tag;
	snprintf(out, len, "-");
	if (rp_pool_read(ps, id, SLOT_OFF(e, 7), buf, sizeof(buf)) < 0)
		return;
	memcpy(&tag, buf, 8);
	uint32_t n = rp_get_le32(buf + 8), at = tag >> 40 ? 32 : 16;
	if ((tag & ((1ull << 40) - 1)) != e || n > RP_MAX_PEERS)
		return;
	size_t o = (size_t)snprintf(out, len, "%llu/%d:", (unsigned long long)(tag >> 40),
				    (int)rp_get_le32(buf + 12) - 1);
	for (uint32_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%u", i ? "," : "",
				      rp_get_le16(buf + at + 2 * i));
}

static int tops(struct rp_poolset *ps, const struct rp_cluster *cl)
{
	uint64_t top = 0, e[RP_MAX_PEERS] = { 0 }, v[RP_MAX_PEERS] = { 0 };
	bool ok[RP_MAX_PEERS] = { false };
	for (size_t k = 0; k < cl->npeers && k < RP_MAX_PEERS; k++) {
		uint32_t id = cl->peers[k].id;
		ok[k] = rp_pool_faa(ps, id, EPOCH_OFF, 0, &e[k]) == 0 &&
			rp_pool_read(ps, id, COUNTER_OFF, &v[k], 8) == 0;
		if (ok[k] && e[k] > top)
			top = e[k];
	}
	int bad = 0, first = -1;
	for (size_t k = 0; k < cl->npeers && k < RP_MAX_PEERS; k++) {
		if (!ok[k]) {
			printf("peer %u: unreadable\n", cl->peers[k].id);
			bad = 1;
			continue;
		}
		char rec[16 + 8 * RP_MAX_PEERS];
		record_describe(ps, cl->peers[k].id, e[k], rec, sizeof(rec));
		printf("peer %u: epoch %llu counter %llu record %s\n", cl->peers[k].id,
		       (unsigned long long)e[k], (unsigned long long)v[k], rec);
		if (e[k] != top)
			continue;
		if (first < 0)
			first = (int)k;
		else if (v[k] != v[first])
			bad = 1;
	}
	return bad;
}

/* check with "moves": each copy a move (the resync's) takes, in order */
#ifdef RP_TEST_HOOKS
static void print_move(uint32_t id, uint32_t auth, uint64_t to)
{
	printf("move peer %u to %llu (authority %u)\n", id, (unsigned long long)to, auth);
}
#endif

int main(int argc, char **argv)
{
	struct rp_cluster *cl;
	if (argc < 3 || (strcmp(argv[2], "run") == 0 && argc < 4)) {
		fprintf(stderr, "usage: home_race CLUSTER run SECONDS [resync | until FILE | stall FILE "
				"| reader] | check | strand PEER MEMBER... | claim PEER... | tops\n");
		return 2;
	}
	/* a racer starts as a mount does, with a pool down if one is (seed
	 * 476631 stopped one at t=0: every racer quit at its connect) */
	bool racer = strcmp(argv[2], "run") == 0;
	/* check moves: every move traced, the election's at the start too
	 * (a pool stopped on purpose then) */
	bool moves = argc > 3 && strcmp(argv[2], "check") == 0 && strcmp(argv[3], "moves") == 0;
#ifdef RP_TEST_HOOKS
	if (moves)
		home_test_move(print_move);
#endif
	struct rp_poolset *ps =
		helper_open_flags(argv[1], racer || moves ? RP_POOLSET_ALLOW_DOWN : 0, &cl);
	/* strand, claim and tops write and read the layout as they find it:
	 * no election first (one would move strays a step left on purpose) */
	bool raw = strcmp(argv[2], "strand") == 0 || strcmp(argv[2], "claim") == 0 ||
		   strcmp(argv[2], "tops") == 0;
	ps->home_no_drop = racer && argc > 4 && strcmp(argv[4], "reader") == 0;
	uint64_t end = racer ? rp_now_ms() + (uint64_t)atol(argv[3]) * 1000 : 0;
	int rc = 0;
	if (racer)
		ps = init_racer(argv[1], ps, &cl, end);
	else if (!raw && (rc = home_init(ps)) < 0)
		fprintf(stderr, "home_race: home_init: %s\n", strerror(-rc));
#ifdef RP_TEST_HOOKS
	if (racer && argc > 5 && strcmp(argv[4], "stall") == 0) {
		stall_file = argv[5];
		home_test_stall(stall_once);
	}
#endif
	if (strcmp(argv[2], "run") == 0)
		rc = run(ps, end, argc > 4 && strcmp(argv[4], "resync") == 0,
			 argc > 5 && strcmp(argv[4], "until") == 0 ? argv[5] : NULL);
	else if (strcmp(argv[2], "strand") == 0 && argc > 4)
		rc = strand(ps, (uint32_t)atoi(argv[3]), argv + 4, argc - 4);
	else if (strcmp(argv[2], "claim") == 0)
		rc = claim(ps, argv + 3, argc - 3);
	else if (strcmp(argv[2], "tops") == 0)
		rc = tops(ps, cl);
	else
		rc = check(ps, cl);
	rp_poolset_close(ps);
	rp_cluster_free(cl);
	return rc;
}
