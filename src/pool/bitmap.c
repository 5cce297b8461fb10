/* Free-run search within one bitmap word. */
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
