/* The shared log's protocol under racing appenders and faults (fstest 083,
 * rdmapool(7) SEVERAL WRITERS (M1), (M2)). Each racer appends records that
 * describe themselves (racer, generation, number, length, and bytes drawn
 * from those) and reads the log from its start as every member will, in
 * order, printing what it applied; the check reads the whole log twice with
 * fresh readers. The test's checker then knows every record:
 *   slog_race CLUSTER run RACER GEN SECONDS  -> "ack GEN SEQ POS", "err GEN SEQ RC",
 *                                               "apply POS RACER GEN SEQ", "bad POS ..."
 *   slog_race CLUSTER check                  -> "rec POS RACER GEN SEQ" for every
 *                                               record, "differs ..." when the
 *                                               second pass decided otherwise
 * The log's words are test anchors in a part of the home area no format
 * uses (the volume record does not carry them yet). */
#include "config.h"
#include "../../../src/fs/fs_impl.h"
#include "../../../src/fs/journal/shared_log.h"
#include "../../helpers/helper.h"

#include <rdmapool/layout.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAIL_OFF (RP_HOME_OFFSET + 56384)
#define DIR_OFF (TAIL_OFF + 8)
#define DIR_N 48
#define HOLE_MS 600
#define BODY_HEAD 20 /* racer (le32), generation (le32), number (le64), length (le32) */

static const struct slog_anchor anchor = { TAIL_OFF, DIR_OFF, DIR_N };

static uint8_t pattern(uint32_t r, uint32_t g, uint64_t s, size_t i)
{
	uint64_t x = (s * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)r << 40) ^ ((uint64_t)g << 20) ^ i;
	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ull >> 56);
}

/* a record's length, 1 to 4 slots' worth, drawn from its identity */
static size_t body_len(uint32_t r, uint32_t g, uint64_t s)
{
	return BODY_HEAD + (size_t)(pattern(r, g, s, 9999) * 7) % (4 * SLOG_PART_DATA - BODY_HEAD);
}

static void body_make(uint8_t *b, uint32_t r, uint32_t g, uint64_t s, size_t len)
{
	rp_put_le32(b, r);
	rp_put_le32(b + 4, g);
	rp_put_le64(b + 8, s);
	rp_put_le32(b + 16, (uint32_t)len);
	for (size_t i = BODY_HEAD; i < len; i++)
		b[i] = pattern(r, g, s, i);
}

/* Does the entry describe itself right? Its identity in r, g, s. */
static bool body_ok(const struct slog_entry *e, uint32_t *r, uint32_t *g, uint64_t *s)
{
	if (e->len < BODY_HEAD)
		return false;
	*r = rp_get_le32(e->body);
	*g = rp_get_le32(e->body + 4);
	*s = rp_get_le64(e->body + 8);
	if (rp_get_le32(e->body + 16) != e->len || e->len != body_len(*r, *g, *s) || e->member != *r)
		return false;
	for (size_t i = BODY_HEAD; i < e->len; i++)
		if (e->body[i] != pattern(*r, *g, *s, i))
			return false;
	return true;
}

/* Print what the reader decides next: 1 a record, 0 nothing yet, <0. */
static int read_one(struct slog *l, struct slog_entry *e, FILE *out, const char *what)
{
	uint32_t r, g;
	uint64_t s;
	int rc = slog_next(l, e);
	if (rc == 1 && body_ok(e, &r, &g, &s))
		fprintf(out, "%s %llu %u %u %llu\n", what, (unsigned long long)e->pos, r, g,
		       (unsigned long long)s);
	else if (rc == 1)
		fprintf(out, "bad %llu: member %u, %u bytes that do not describe themselves\n",
		       (unsigned long long)e->pos, e->member, e->len);
	return rc;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };
	nanosleep(&ts, NULL);
}

/* Stalls inside an append (test hook): racer 2 after writing every body,
 * before its first claim; racer 3 between the first part's claim and the
 * second's. A reader junks the slot the stalled claim wanted; the record,
 * dead there (its first part claimed, for racer 3), goes to a new
 * position. */
struct stall {
	unsigned part;  /* the claim to stall before */
	bool armed, hit;
	uint64_t pos;   /* the append's position when it stalled */
};

static void stall_fn(void *arg, uint64_t pos, unsigned part)
{
	struct stall *st = arg;
	if (!st->armed || part != st->part)
		return;
	st->armed = false;
	st->hit = true;
	st->pos = pos;
	nap_ms(2 * HOLE_MS);
}

/* Racer r stalls once in every third second, its own ((r - 1) mod 3): the
 * others read meanwhile and junk what it holds back (stalls drawn by
 * record number lined up, the racers starting together, and nobody read). */
static bool stall_due(uint32_t r, uint64_t *cycle)
{
	uint64_t sec = rp_now_ms() / 1000;
	if (sec % 3 != (r - 1) % 3 || sec / 3 + 1 == *cycle)
		return false;
	*cycle = sec / 3 + 1;
	return true;
}

/* Arm the stall inside the append for racer 2 or 3 (record length len);
 * after the append, stall_report says where it died when it stalled and
 * ended elsewhere. */
static void stall_arm(struct stall *st, uint32_t r, size_t len, uint64_t *cycle)
{
	st->hit = false;
	st->part = r == 3;
	st->armed = (r == 2 || (r == 3 && len > SLOG_PART_DATA)) && stall_due(r, cycle);
}

static void stall_report(const struct stall *st, uint32_t r, uint32_t g, uint64_t s, int rc,
			 uint64_t pos)
{
	/* (-EAGAIN is the one failure that says where the record is not:
	 * a reader junked a part first; a claim in doubt may have landed) */
	if (st->hit && ((rc == 0 && pos != st->pos) || rc == -EAGAIN))
		printf("%s %u %llu %llu %d\n", r == 2 ? "junked-before-claims" : "junked-between-claims",
		       g, (unsigned long long)s, (unsigned long long)st->pos, rc);
}

static int run(struct rp_poolset *ps, uint32_t r, uint32_t g, long secs)
{
	struct stall st = { 0 };
	uint64_t cycle = 0;
	struct slog *l;
	struct slog_entry *e = malloc(sizeof(*e));
	uint8_t *b = malloc(SLOG_MAX_RECORD);
	int rc = e && b ? slog_open(ps, &anchor, r, HOLE_MS, &l) : -ENOMEM;
	if (rc < 0) {
		fprintf(stderr, "slog_race: open: %s\n", strerror(-rc));
		return 1;
	}
#ifdef RP_TEST_HOOKS
	slog_test_stall(l, stall_fn, &st);
#endif
	uint64_t end = rp_now_ms() + (uint64_t)secs * 1000, pos = 0;
	long acks = 0, errs = 0;
	bool full = false;
	for (uint64_t s = 0; rp_now_ms() < end; s++) {
		size_t len = body_len(r, g, s);
		body_make(b, r, g, s, len);
		/* now and then (racer 1, while the others read) an appender
		 * stalled past the hole bound between its reservation and its
		 * claims: a reader junks the slots, the claim must fail, and the
		 * record goes to a new position (only then: a claim in doubt may
		 * have landed) */
		int put = 1;
		stall_arm(&st, r, len, &cycle);
		if (!full && r == 1 && stall_due(r, &cycle) && (put = slog_reserve(l, len, &pos)) == 0) {
			nap_ms(2 * HOLE_MS);
			put = slog_put(l, pos, b, len);
			printf("%s %u %llu %llu %d\n", put == -EAGAIN ? "junked" : "stalled", g,
			       (unsigned long long)s, (unsigned long long)pos, put);
		}
		if (!full && (put == 1 || put == -EAGAIN)) {
			put = slog_append(l, b, len, &pos);
			stall_report(&st, r, g, s, put, pos);
		}
		if (!full && put == 0) {
			printf("ack %u %llu %llu\n", g, (unsigned long long)s, (unsigned long long)pos);
			acks++;
		} else if (!full) {
			printf("err %u %llu %d\n", g, (unsigned long long)s, put);
			full = put == -ENOSPC;
			errs++;
		}
		fflush(stdout);
		while ((rc = read_one(l, e, stdout, "apply")) == 1)
			;
		nap_ms(2 + (long)(s % 9));
	}
	fprintf(stderr, "slog_race: racer %u: %ld acknowledged, %ld failed\n", r, acks, errs);
	slog_close(l);
	free(e);
	free(b);
	return 0;
}

/* One pass over the whole log with a fresh reader (member m), to the tail
 * as it is now; the records' positions into *v. */
static int pass(struct rp_poolset *ps, uint32_t m, FILE *out, uint64_t **v, size_t *n)
{
	struct slog *l;
	struct slog_entry *e = malloc(sizeof(*e));
	uint64_t tail = 0, end = rp_now_ms() + 60000;
	int rc = e ? slog_open(ps, &anchor, m, HOLE_MS, &l) : -ENOMEM;
	if (rc < 0) {
		fprintf(stderr, "slog_race: check: %s\n", strerror(-rc));
		free(e);
		return rc;
	}
	rc = vol_home_read(ps, TAIL_OFF, &tail, 8);
	*n = 0;
	*v = rc == 0 ? calloc(tail + 1, sizeof(**v)) : NULL;
	while (rc >= 0 && *v && slog_cursor(l) < tail && rp_now_ms() < end) {
		if ((rc = read_one(l, e, out, "rec")) == 1)
			(*v)[(*n)++] = e->pos;
		else if (rc == 0)
			nap_ms(20);
	}
	if (rc >= 0 && slog_cursor(l) < tail)
		rc = -ETIMEDOUT;
	if (rc < 0 && rc != -ENOSPC) {
		char what[256];
		fprintf(stderr, "slog_race: check: at %llu of %llu: %s\n",
			(unsigned long long)slog_cursor(l), (unsigned long long)tail, strerror(-rc));
		if (tail == 0)
			home_describe(ps, stderr); /* (no tail read: the volume table) */
		for (uint64_t q = slog_cursor(l); q < slog_cursor(l) + 5 && q < tail; q++) {
			slog_describe(l, q, what, sizeof(what));
			fprintf(stderr, "slog_race: %s\n", what);
		}
	}
	if (rc == 0 || rc == -ENOSPC)
		rc = 0;
	slog_close(l);
	free(e);
	return rc;
}

static int check(struct rp_poolset *ps)
{
	uint64_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int bad = pass(ps, 201, stdout, &a, &na) < 0;
	FILE *quiet = fopen("/dev/null", "w"); /* (the second pass: compared here) */
	bad |= !quiet || pass(ps, 202, quiet, &b, &nb) < 0;
	if (quiet)
		fclose(quiet);
	for (size_t i = 0; !bad && i < RP_MAX(na, nb); i++)
		if (i >= na || i >= nb || a[i] != b[i]) {
			printf("differs: record %zu at %llu in the first pass, %llu in the second\n", i,
			       i < na ? (unsigned long long)a[i] : 0ull,
			       i < nb ? (unsigned long long)b[i] : 0ull);
			bad = 1;
		}
	free(a);
	free(b);
	return bad;
}

/* fstest 086: an appender (member 10: its segment on pool 1 of 3) whose
 * publication of the first segment lands on the volume table's authority
 * and then stalls (test hook) before it goes to the other copies; it says
 * so, then waits to be killed. */
static long stall_ms;
static void publish_stall(uint64_t off)
{
	if (off != DIR_OFF)
		return;
	printf("published on the authority\n");
	nap_ms(stall_ms);
}

static int stallpub(struct rp_poolset *ps, long ms)
{
	struct slog *l;
	uint8_t *b = malloc(SLOG_MAX_RECORD);
	uint64_t pos;
	size_t len = body_len(10, 1, 0);
	stall_ms = ms;
#ifdef RP_TEST_HOOKS
	home_test_stall(publish_stall);
#endif
	int rc = b ? slog_open(ps, &anchor, 10, HOLE_MS, &l) : -ENOMEM;
	if (rc == 0) {
		body_make(b, 10, 1, 0, len);
		rc = slog_append(l, b, len, &pos);
		printf("append: %d\n", rc);
		slog_close(l);
	}
	free(b);
	return rc < 0;
}

/* A member that only reads, for SECONDS: what it applies, then its cursor
 * (every position below it decided). */
static int read_only(struct rp_poolset *ps, uint32_t m, long secs)
{
	struct slog *l;
	struct slog_entry *e = malloc(sizeof(*e));
	uint64_t end = rp_now_ms() + (uint64_t)secs * 1000;
	int rc = e ? slog_open(ps, &anchor, m, HOLE_MS, &l) : -ENOMEM;
	if (rc < 0) {
		free(e);
		return 1;
	}
	while (rp_now_ms() < end)
		if ((rc = read_one(l, e, stdout, "apply")) != 1)
			nap_ms(20);
	printf("cursor %llu\n", (unsigned long long)slog_cursor(l));
	slog_close(l);
	free(e);
	return 0;
}

int main(int argc, char **argv)
{
	struct rp_cluster *cl;
	if (argc == 3 && strcmp(argv[2], "hooks") == 0) {
#ifdef RP_TEST_HOOKS
		return 0; /* (built with the test hooks the stalls need) */
#else
		return 1;
#endif
	}
	bool racer = argc >= 6 && strcmp(argv[2], "run") == 0;
	bool stall = argc == 4 && strcmp(argv[2], "stallpub") == 0;
	bool reader = argc == 4 && strcmp(argv[2], "read") == 0;
	if (!racer && !stall && !reader && !(argc == 3 && strcmp(argv[2], "check") == 0)) {
		fprintf(stderr, "usage: slog_race CLUSTER run RACER GEN SECONDS | check | "
				"stallpub MS | read SECONDS | hooks\n");
		return 2;
	}
	/* (line by line: a racer killed with -9 leaves whole lines) */
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct rp_poolset *ps =
		helper_open_flags(argv[1], racer || reader ? RP_POOLSET_ALLOW_DOWN : 0, &cl);
	int rc = home_init(ps);
	if (rc < 0)
		fprintf(stderr, "slog_race: home_init: %s\n", strerror(-rc));
	if (racer)
		rc = run(ps, (uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]), atol(argv[5]));
	else if (stall)
		rc = stallpub(ps, atol(argv[3]));
	else if (reader)
		rc = read_only(ps, 7, atol(argv[3]));
	else
		rc = check(ps);
	rp_poolset_close(ps);
	rp_cluster_free(cl);
	return rc;
}
