/* Pure bitmap logic for the allocator: finding free runs inside a 64-bit
 * word (the unit one compare-and-swap can claim) and counting. */
#ifndef RDMAPOOL_BITMAP_H
#define RDMAPOOL_BITMAP_H

#include <stddef.h>
#include <stdint.h>

/* Mask of len bits starting at bit; len is 1 to 64. */
static inline uint64_t rp_bitmap_mask(unsigned bit, unsigned len)
{
	return (len >= 64 ? ~0ull : ((1ull << len) - 1)) << bit;
}

/* Find free (zero) bits in word: the first run of at least want bits (taking
 * want), else the longest run. Returns 0 with bit and len set, or -1 when the
 * word is full. */
int rp_bitmap_find_run(uint64_t word, unsigned want, unsigned *bit, unsigned *len);

/* Number of zero bits in n words. */
uint64_t rp_bitmap_count_free(const uint64_t *words, size_t n);

#endif
