/* Pure bitmap logic for the allocator: finding free runs inside a 64-bit
 * word (the unit one compare-and-swap can claim) and counting. */
#ifndef RDMAPOOL_BITMAP_H
#define RDMAPOOL_BITMAP_H

#include <stdbool.h>
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

/* Replicas: an extent's n copies take the same block number on n
 * consecutive pools of a ring, so a block number holds as many extents as
 * there are disjoint runs of n neighbouring pools (round the ring) with it
 * free. free_at[i] says whether ring pool i has it free. */
uint32_t rp_ring_fits(const bool *free_at, uint32_t nring, uint32_t n);
/* Over every block number of a ring of nring pools (bm[i]: pool i's bitmap,
 * NULL when nothing on it counts as free; nblocks[i]: its size): the extents
 * that fit by size (*total) and in the free blocks (the result). A word
 * that every pool has wholly, and where each bit is free everywhere or
 * nowhere, costs a few operations, not 64 block numbers. */
uint64_t rp_ring_free(const uint64_t *const *bm, const uint64_t *nblocks, uint32_t nring,
		      uint32_t n, uint64_t *total);

#endif
