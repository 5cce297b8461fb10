/* Free-run search within one bitmap word, and counting: free bits, and
 * what fits in a replica ring's bitmaps. */
#include "config.h"
#include <rdmapool/bitmap.h>

int rp_bitmap_find_run(uint64_t word, unsigned want, unsigned *bit, unsigned *len)
{
	unsigned best_bit = 0, best_len = 0;
	unsigned i = 0;

	if (want == 0)
		want = 1;
	if (want > 64)
		want = 64;
	while (i < 64) {
		if (word & (1ull << i)) {
			i++;
			continue;
		}
		unsigned start = i;
		while (i < 64 && !(word & (1ull << i)))
			i++;
		unsigned run = i - start;
		if (run >= want) {
			*bit = start;
			*len = want;
			return 0;
		}
		if (run > best_len) {
			best_len = run;
			best_bit = start;
		}
	}
	if (best_len == 0)
		return -1;
	*bit = best_bit;
	*len = best_len;
	return 0;
}

uint64_t rp_bitmap_count_free(const uint64_t *words, size_t n)
{
	uint64_t free_bits = 0;
	for (size_t i = 0; i < n; i++)
		free_bits += 64 - (unsigned)__builtin_popcountll(words[i]);
	return free_bits;
}

uint32_t rp_ring_fits(const bool *free_at, uint32_t nring, uint32_t n)
{
	uint32_t run = 0, first = 0, got = 0;
	bool all = true;
	for (uint32_t i = 0; i < nring; i++) {
		all &= free_at[i];
		if (free_at[i]) {
			run++;
			continue;
		}
		if (run == i)
			first = run; /* the leading arc joins the trailing one round the ring */
		else
			got += run / n;
		run = 0;
	}
	return all ? nring / n : got + (run + first) / n;
}

/* block number b, one at a time: what exists (added to *t, unless NULL)
 * and what is free there (to *f) */
static void ring_at(const uint64_t *const *bm, const uint64_t *nblocks, uint32_t nring, uint32_t n,
		    uint64_t b, uint64_t *t, uint64_t *f)
{
	bool exists[64], free_at[64];
	for (uint32_t i = 0; i < nring; i++) {
		exists[i] = b < nblocks[i];
		free_at[i] = exists[i] && bm[i] && !((bm[i][b / 64] >> (b % 64)) & 1);
	}
	if (t)
		*t += rp_ring_fits(exists, nring, n);
	*f += rp_ring_fits(free_at, nring, n);
}

uint64_t rp_ring_free(const uint64_t *const *bm, const uint64_t *nblocks, uint32_t nring,
		      uint32_t n, uint64_t *total)
{
	uint64_t t = 0, f = 0, words = 0, whole = UINT64_MAX;
	if (nring == 0 || nring > 64 || n == 0) {
		*total = 0;
		return 0;
	}
	for (uint32_t i = 0; i < nring; i++) {
		words = (nblocks[i] + 63) / 64 > words ? (nblocks[i] + 63) / 64 : words;
		whole = nblocks[i] / 64 < whole ? nblocks[i] / 64 : whole; /* words every pool has */
	}
	for (uint64_t w = 0; w < words; w++) {
		if (w >= whole) {
			for (uint64_t b = w * 64; b < w * 64 + 64; b++)
				ring_at(bm, nblocks, nring, n, b, &t, &f);
			continue;
		}
		uint64_t any_used = 0, all_used = ~0ull;
		bool uniform = true, free_at[64]; /* every pool's word all free or all used */
		for (uint32_t i = 0; i < nring; i++) {
			uint64_t v = bm[i] ? bm[i][w] : ~0ull;
			any_used |= v;
			all_used &= v;
			uniform &= v == 0 || v == ~0ull;
			free_at[i] = v == 0;
		}
		t += 64ull * (nring / n);
		if (uniform) { /* (whole-word runs: large files) the same at all 64 */
			f += 64ull * rp_ring_fits(free_at, nring, n);
			continue;
		}
		f += (uint64_t)__builtin_popcountll(~any_used) * (nring / n);
		for (uint64_t mixed = any_used & ~all_used; mixed; mixed &= mixed - 1)
			ring_at(bm, nblocks, nring, n, w * 64 + (uint64_t)__builtin_ctzll(mixed), NULL, &f);
	}
	*total = t;
	return f;
}
