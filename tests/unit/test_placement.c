/* Replica placement: the ring of peers in which zones take turns, and which
 * pools hold the copies of an extent. */
#include "config.h"
#include "tap.h"

#include <rdmapool/pool.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int ring_is(const uint32_t *ring, const uint32_t *want, size_t n)
{
	return memcmp(ring, want, n * sizeof(*ring)) == 0;
}

int main(void)
{
	uint32_t ids[6] = { 0, 1, 2, 3, 4, 5 }, ring[6];

	rp_placement_ring(ids, NULL, 3, ring);
	ok(ring_is(ring, (uint32_t[]){ 0, 1, 2 }, 3), "no zones: ring in id order");

	const char *z1[6] = { "a", "a", "a", "b", "b", "b" };
	rp_placement_ring(ids, z1, 6, ring);
	ok(ring_is(ring, (uint32_t[]){ 0, 3, 1, 4, 2, 5 }, 6), "two zones take turns");
	int split = 1;
	for (int i = 0; i < 6; i++)
		split &= strcmp(z1[ring[i]], z1[ring[(i + 1) % 6]]) != 0;
	ok(split, "neighbours in the ring are in different zones");

	const char *z2[6] = { "r1", "r1", "r1", "r2", "r3", NULL };
	rp_placement_ring(ids, z2, 6, ring);
	ok(ring_is(ring, (uint32_t[]){ 0, 3, 4, 5, 1, 2 }, 6),
	   "uneven zones: one of each first, then the rest of the large one");
	int seen[6] = { 0 }, perm = 1;
	for (int i = 0; i < 6; i++)
		perm &= !seen[ring[i]]++;
	ok(perm, "every peer once");

	/* the copies of an extent on ring[i] are on ring[i+1..] */
	struct rp_pool pools[4];
	uint32_t listed[3] = { 1, 2, 3 };
	memset(pools, 0, sizeof(pools));
	for (int i = 1; i < 4; i++)
		pools[i].present = true;
	struct rp_poolset ps = { .n = 4, .pools = pools, .npeers = 3, .ids = listed };
	uint32_t m[RP_MAX_REPLICAS];
	ok(rp_replica_members(&ps, 2, m) == 1 && m[0] == 2, "without a placement: one copy");
	struct rp_placement pl = { .replicas = 2, .nring = 3, .ring = { 3, 1, 2 } };
	ok(rp_poolset_set_placement(&ps, &pl) == 0, "placement accepted");
	ok(rp_replica_members(&ps, 3, m) == 2 && m[0] == 3 && m[1] == 1, "copies of 3: 3 then 1");
	ok(rp_replica_members(&ps, 2, m) == 2 && m[0] == 2 && m[1] == 3, "copies of 2 wrap to 3");
	ok(rp_replica_members(&ps, 0, m) == 1, "a pool outside the ring: one copy");
	struct rp_placement bad = { .replicas = 2, .nring = 2, .ring = { 1, 0 } };
	ok(rp_poolset_set_placement(&ps, &bad) == -ENODEV, "a ring with an unlisted peer is refused");
	struct rp_placement big = { .replicas = 4, .nring = 3, .ring = { 1, 2, 3 } };
	ok(rp_poolset_set_placement(&ps, &big) == -EINVAL, "more copies than ring members refused");
	return tap_done();
}
