/* Bitmap search: runs inside one word, the choice between first fit and
 * longest run, and counting. */
#include "config.h"
#include "tap.h"

#include <rdmapool/bitmap.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t rng_state;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* The reference for rp_ring_free: every block number, one at a time. */
static uint64_t ring_free_naive(uint64_t *const *bm, const uint64_t *nblocks, uint32_t nring,
				uint32_t n, uint64_t *total)
{
	uint64_t words = 0, t = 0, f = 0;
	for (uint32_t i = 0; i < nring; i++)
		words = (nblocks[i] + 63) / 64 > words ? (nblocks[i] + 63) / 64 : words;
	for (uint64_t b = 0; b < words * 64; b++) {
		bool exists[32], free_at[32];
		for (uint32_t i = 0; i < nring; i++) {
			exists[i] = b < nblocks[i];
			free_at[i] = exists[i] && bm[i] && !((bm[i][b / 64] >> (b % 64)) & 1);
		}
		t += rp_ring_fits(exists, nring, n);
		f += rp_ring_fits(free_at, nring, n);
	}
	*total = t;
	return f;
}

/* A word as allocation leaves them: empty, full, one extent's pattern
 * shared with the ring's other pools, or anything. */
static uint64_t some_word(uint64_t shared)
{
	switch (rng() % 5) {
	case 0: return 0;
	case 1: return ~0ull;
	case 2: return shared;
	case 3: return shared | rng() % 4;
	default: return rng() & rng();
	}
}

/* Random rings of 1 to 32 pools (RP_RING_MAX) of unequal sizes (some
 * words apart, some empty), 1 to 4 copies, some pools unreadable;
 * rp_ring_free must agree with the reference everywhere. */
static void ring_free_random(uint64_t seed)
{
	int bad = 0;
	rng_state = seed | 1;
	for (int round = 0; round < 2000 && !bad; round++) {
		uint32_t nring = 1 + (uint32_t)(rng() % (rng() % 4 ? 8 : 32)), n = 1 + (uint32_t)(rng() % 4);
		uint64_t nblocks[32], *bm[32] = { 0 }, words = 1 + rng() % 6;
		for (uint32_t i = 0; i < nring; i++) {
			uint64_t less = rng() % 3 ? 0 : rng() % (words * 64 + 1);
			nblocks[i] = rng() % 7 == 0 ? words * 64 : words * 64 - less; /* (0 too) */
			bm[i] = rng() % 9 ? calloc(words, 8) : NULL;
		}
		for (uint64_t w = 0; w < words; w++) {
			uint64_t shared = rng() & rng();
			for (uint32_t i = 0; i < nring; i++)
				if (bm[i])
					bm[i][w] = some_word(shared);
		}
		uint64_t t1, t2, f1, f2;
		f1 = rp_ring_free((const uint64_t *const *)bm, nblocks, nring, n, &t1);
		f2 = ring_free_naive(bm, nblocks, nring, n, &t2);
		if (f1 != f2 || t1 != t2) {
			for (uint32_t i = 0; i < nring; i++)
				printf("# pool %u: %llu blocks%s\n", i, (unsigned long long)nblocks[i], bm[i] ? "" : ", unread");
			bad = 1;
			printf("# seed %llu round %d: ring %u copies %u: free %llu, reference %llu; "
			     "total %llu, reference %llu", (unsigned long long)seed, round, nring, n,
			     (unsigned long long)f1, (unsigned long long)f2, (unsigned long long)t1,
			     (unsigned long long)t2);
			printf("\n");
		}
		for (uint32_t i = 0; i < nring; i++)
			free(bm[i]);
	}
	ok(!bad, "2000 random rings (seed %llu): rp_ring_free agrees with counting block by block",
	   (unsigned long long)seed);
}

int main(void)
{
	unsigned bit = 99, len = 99;

	ok(rp_bitmap_find_run(0, 1, &bit, &len) == 0 && bit == 0 && len == 1, "empty word, want 1");
	ok(rp_bitmap_find_run(0, 64, &bit, &len) == 0 && bit == 0 && len == 64, "empty word, want 64");
	ok(rp_bitmap_find_run(~0ull, 1, &bit, &len) == -1, "full word has nothing");
	ok(rp_bitmap_find_run(0x1, 4, &bit, &len) == 0 && bit == 1 && len == 4, "skips a used bit");
	/* free runs: bits 4..5 (2), bits 8..15 (8), rest used */
	uint64_t w = ~0ull & ~(0x3ull << 4) & ~(0xffull << 8);
	ok(rp_bitmap_find_run(w, 2, &bit, &len) == 0 && bit == 4 && len == 2, "first fit of 2");
	ok(rp_bitmap_find_run(w, 3, &bit, &len) == 0 && bit == 8 && len == 3, "first run >= 3 (bit %u)", bit);
	ok(rp_bitmap_find_run(w, 20, &bit, &len) == 0 && bit == 8 && len == 8,
	   "no run of 20: longest run given (bit %u len %u)", bit, len);
	ok(rp_bitmap_find_run(~(1ull << 63), 5, &bit, &len) == 0 && bit == 63 && len == 1, "top bit");
	ok(rp_bitmap_find_run(0, 0, &bit, &len) == 0 && len == 1, "want 0 treated as 1");
	ok(rp_bitmap_find_run(0, 100, &bit, &len) == 0 && len == 64, "want capped at 64");

	ok(rp_bitmap_mask(0, 64) == ~0ull, "mask of 64");
	ok(rp_bitmap_mask(4, 2) == 0x30, "mask 4+2");
	ok(rp_bitmap_mask(63, 1) == 1ull << 63, "mask top bit");

	uint64_t words[3] = { 0, ~0ull, 0xf0 };
	ok(rp_bitmap_count_free(words, 3) == 64 + 0 + 60, "count free");

	/* exhaustive: claimed bits are always free and contiguous */
	int bad = 0;
	for (uint64_t s = 1; s < 200000; s++) {
		uint64_t v = s * 0x9e3779b97f4a7c15ull;
		unsigned want = (unsigned)(s % 64) + 1;
		if (rp_bitmap_find_run(v, want, &bit, &len) == 0) {
			uint64_t m = rp_bitmap_mask(bit, len);
			if ((v & m) || len == 0 || len > want || bit + len > 64)
				bad++;
		} else if (v != ~0ull) {
			bad++;
		}
	}
	ok(bad == 0, "200000 random words: every claimed run was free (%d bad)", bad);

	bool f3[3] = { true, true, true }, f3b[3] = { true, false, true }, f4[4] = { true, false, true, false };
	ok(rp_ring_fits(f3, 3, 2) == 1, "a ring of 3 free holds one extent of 2 copies");
	ok(rp_ring_fits(f3b, 3, 2) == 1, "the free ends of a ring of 3 are neighbours");
	ok(rp_ring_fits(f4, 4, 2) == 0, "single free pools between used ones hold nothing");
	const char *env = getenv("RP_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	ring_free_random(seed);
	return tap_done();
}
