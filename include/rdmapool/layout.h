/* On-pool layout, version 3 (2 and 1 are the same; see RP_LAYOUT_VERSION):
 *
 *   0        superblock (RP_SB_SIZE bytes)
 *   4 KiB    home area (RP_HOME_SIZE): volume records, owned by the fs layer
 *   60 KiB - 64  the server's memory of lease holders' fences (RP_FENCES_OFFSET,
 *            4 KiB), owned by the transport's listeners: kept across a
 *            restart with a backing file
 *   64 KiB - 64  the pool's used-block count (RP_COUNT_OFFSET), owned by the
 *            pool layer: the server sets it from the bitmap at every start,
 *            then every client moves it by what its bitmap CASes changed
 *   64 KiB   allocation bitmap: one bit per block, 64-bit words in the pool
 *            host's byte order (little-endian on every supported host), bit i
 *            of word w is block w*64+i; bits past the last block are set
 *   data_off blocks of block_size bytes, data_off aligned to block_size
 */
#ifndef RDMAPOOL_LAYOUT_H
#define RDMAPOOL_LAYOUT_H

#include <stdint.h>

#define RP_POOL_MAGIC 0x314c4f4f50504452ull /* "RDPPOOL1" */
/* 2: a pool that this version's clients use (used-block count, fence
 * memory; volumes with INTENT and REQ records, which older clients take
 * for the end of the log); 3: volumes with SPARE records (the same). A
 * server of this version formats version 3 and moves an older pool to 3 at
 * start, so older servers and clients refuse the pool (their "layout
 * version not supported") instead of misreading it; this version's clients
 * also accept 1 and 2 (a pool an older server serves). */
#define RP_LAYOUT_VERSION 3
#define RP_LAYOUT_VERSION_MIN 1
#define RP_SB_SIZE 4096
#define RP_HOME_OFFSET 4096
#define RP_HOME_SIZE (56 * 1024 - 64)
#define RP_BITMAP_OFFSET (64 * 1024)
#define RP_MIN_BLOCKS 64
/* 64 bytes before the bitmap: the used-block count (le64: blocks set in the
 * bitmap, bits past the last block not counted); beside it a tag that says
 * a server of this version set it (a pool from an older server has 0
 * there, and its clients read the whole bitmap instead), and a number the
 * server draws at each start (a client that sees it change drops what it
 * held back for the count before: the new count has it already). The home
 * area's copies never reach it: each pool's count is its own. */
#define RP_FENCES_OFFSET (RP_HOME_OFFSET + RP_HOME_SIZE)
#define RP_FENCES_SIZE 4096
#define RP_COUNT_OFFSET (RP_FENCES_OFFSET + RP_FENCES_SIZE)
#define RP_COUNT_TAG_OFFSET (RP_COUNT_OFFSET + 8)
#define RP_COUNT_START_OFFSET (RP_COUNT_OFFSET + 16)
#define RP_COUNT_TAG 0x31544e554f435052ull /* "RPCOUNT1" */
/* Beside the count, the blocks set or cleared in the bitmap, ever (le64,
 * any start value: only compared): clients move it by each CAS's changed
 * bits, so that a reader sees churn the count does not show (a block
 * allocated and another freed), and can trust what it computed from the
 * bitmap while neither word moved. Clients from before it leave it alone:
 * their churn at an unchanged count goes unseen (rdmapool(7)). */
#define RP_COUNT_CHURN_OFFSET (RP_COUNT_OFFSET + 24)
/* A word that no format uses, for 'rdmapool bench' to hammer with atomics. */
#define RP_BENCH_WORD_OFFSET (RP_COUNT_OFFSET + 56)

struct rp_pool_sb {
	uint64_t magic;
	uint32_t layout_version;
	uint32_t block_size;
	uint8_t pool_uuid[16];
	char cluster_name[64];
	uint32_t peer_id;
	uint64_t region_size;
	uint64_t nblocks;
	uint64_t bitmap_off;
	uint64_t bitmap_words;
	uint64_t data_off;
	uint64_t created_ns;
};

/* Fill the geometry fields for a region; -ENOSPC when too small. */
int rp_layout_compute(uint64_t region_size, uint32_t block_size, struct rp_pool_sb *sb);

void rp_sb_encode(const struct rp_pool_sb *sb, uint8_t buf[RP_SB_SIZE]);
/* -ENODATA: no superblock (blank); -EPROTO: other layout version;
 * -EBADMSG: checksum or geometry wrong. */
int rp_sb_decode(const uint8_t buf[RP_SB_SIZE], struct rp_pool_sb *sb);

static inline uint64_t rp_block_offset(const struct rp_pool_sb *sb, uint64_t block)
{
	return sb->data_off + block * sb->block_size;
}

/* The bitmap's last word with the bits past nblocks set (never allocatable). */
uint64_t rp_layout_tail_mask(const struct rp_pool_sb *sb);

#endif
