/* Bitmap search: runs inside one word, the choice between first fit and
 * longest run, and counting. */
#include "config.h"
#include "tap.h"

#include <rdmapool/bitmap.h>

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
	return tap_done();
}
