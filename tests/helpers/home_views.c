/* Two processes' views of the home area (the volume table's copies on
 * every pool) must agree on which copies are in sync: each poolset here
 * stands for one process (its own connections and its own memory of which
 * copies are out), the pools are real servers. Over three pools:
 *   1. view B looks while a drop is half done: peer 0's epoch has moved
 *      up, peer 1's not yet (peer 2 is the copy being dropped);
 *   2. the drop completes: peer 1 moves up too, peer 2 stays behind;
 *   3. B writes a word of the home area.
 * Peers 0 and 1 now hold the top epoch, so both are in sync for every
 * process: both must hold B's word (a view that kept its verdict from step
 * 1 skips peer 1, which then answers with the old word once it is the
 * authority). Then an out-of-sync copy is resynced by view A, and B's next
 * write must reach it too. Prints what each copy holds.
 *   home_views CLUSTER */
#include "config.h"
#include "helper.h"
#include "../../src/fs/fs_impl.h"

#include <rdmapool/layout.h>

#include <inttypes.h>
#include <string.h>

#define EPOCH_OFF (RP_HOME_OFFSET + VOL_HOME_EPOCH_OFF)
/* a word of the home area that no record uses (after the epoch word) */
#define WORD_OFF (RP_HOME_OFFSET + VOL_HOME_EPOCH_OFF + 4096)

static int failures;

static void check(bool ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "WRONG", what);
	if (!ok)
		failures++;
}

static uint64_t raw_word(struct rp_poolset *ps, uint32_t peer, uint64_t off)
{
	uint64_t v = UINT64_MAX;
	if (rp_pool_read(ps, peer, off, &v, 8) < 0)
		fprintf(stderr, "home_views: reading peer %u failed\n", peer);
	return v;
}

static void raw_cas(struct rp_poolset *ps, uint32_t peer, uint64_t expect, uint64_t v)
{
	uint64_t old;
	if (rp_pool_cas(ps, peer, EPOCH_OFF, expect, v, &old) < 0 || old != expect) {
		fprintf(stderr, "home_views: epoch of peer %u is not %" PRIu64 "\n", peer, expect);
		exit(1);
	}
}

static void put(struct rp_poolset *ps, uint64_t v, const char *who)
{
	if (vol_home_write(ps, WORD_OFF, &v, 8) < 0) {
		fprintf(stderr, "home_views: the write of view %s failed\n", who);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: home_views CLUSTER\n");
		return 2;
	}
	struct rp_cluster *ca, *cb;
	struct rp_poolset *a = helper_open(argv[1], &ca), *b = helper_open(argv[1], &cb);
	if (a->npeers != 3) {
		fprintf(stderr, "home_views: needs a cluster of 3 peers\n");
		return 2;
	}
	if (home_init(a) < 0)
		return 1;
	uint64_t e = raw_word(a, 0, EPOCH_OFF);
	put(a, 1, "A");

	/* 1: half a drop of peer 2, seen by B */
	raw_cas(a, 0, e, e + 1);
	uint64_t v;
	if (vol_home_read(b, WORD_OFF, &v, 8) < 0 || v != 1)
		return 1;
	/* 2: the drop completes */
	raw_cas(a, 1, e, e + 1);
	/* 3: B writes */
	put(b, 2, "B");
	printf("epochs %" PRIu64 " %" PRIu64 " %" PRIu64 "; word on peers 0 1 2: %" PRIu64
	       " %" PRIu64 " %" PRIu64 "\n",
	       raw_word(a, 0, EPOCH_OFF), raw_word(a, 1, EPOCH_OFF), raw_word(a, 2, EPOCH_OFF),
	       raw_word(a, 0, WORD_OFF), raw_word(a, 1, WORD_OFF), raw_word(a, 2, WORD_OFF));
	check(raw_word(a, 1, WORD_OFF) == 2, "an in-sync copy a half-done drop showed behind got the write");
	check(raw_word(a, 2, WORD_OFF) == 1, "the dropped copy did not");

	/* A brings peer 2 back; B, which saw it out, must write to it again */
	if (home_resync(a, NULL) < 0)
		return 1;
	put(b, 3, "B");
	check(raw_word(a, 2, WORD_OFF) == 3, "a copy another process resynced gets the next write");
	check(raw_word(a, 0, WORD_OFF) == 3 && raw_word(a, 1, WORD_OFF) == 3,
	      "every in-sync copy holds the last write");

	rp_poolset_close(b);
	rp_poolset_close(a);
	rp_cluster_free(cb);
	rp_cluster_free(ca);
	return failures ? 1 : 0;
}
