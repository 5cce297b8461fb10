/* The volume table's protocol under concurrent processes (fstest 077):
 * each racer adds 1 to a counter word of the home area, through the same
 * path the leases take (home_faa: the authority's fetch-and-add, mirrored
 * to every copy in sync), and prints the old value of every addition that
 * was acknowledged. A volume table that lost an acknowledged update or
 * rolled back to a copy left behind hands out one old value twice; the
 * test's checker sees that. A racer given 'resync' also copies the area
 * onto copies out of sync now and then, as rebuild does, while the others
 * write.
 *   home_race CLUSTER run SECONDS [resync]  -> "ack OLD MS" and "err RC MS" lines
 *   home_race CLUSTER check                 -> "value V": an addition's old value
 *                                              (exit 1 when none is acknowledged
 *                                              or then the copies differ) */
#include "config.h"
#include "../../../src/fs/fs_impl.h"
#include "../../helpers/helper.h"

#include <rdmapool/layout.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <string.h>
#include <time.h>

/* a word of the home area no format uses (past the members records) */
#define COUNTER_OFF (RP_HOME_OFFSET + 56 * 1024)

static int run(struct rp_poolset *ps, long secs, bool resync)
{
	uint64_t end = rp_now_ms() + (uint64_t)secs * 1000, next_resync = 0;
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

int main(int argc, char **argv)
{
	struct rp_cluster *cl;
	if (argc < 3 || (strcmp(argv[2], "run") == 0 && argc < 4)) {
		fprintf(stderr, "usage: home_race CLUSTER run SECONDS [resync] | check\n");
		return 2;
	}
	struct rp_poolset *ps = helper_open(argv[1], &cl);
	int rc = home_init(ps);
	if (rc < 0)
		fprintf(stderr, "home_race: home_init: %s\n", strerror(-rc));
	if (strcmp(argv[2], "run") == 0)
		rc = run(ps, atol(argv[3]), argc > 4 && strcmp(argv[4], "resync") == 0);
	else
		rc = check(ps, cl);
	rp_poolset_close(ps);
	rp_cluster_free(cl);
	return rc;
}
