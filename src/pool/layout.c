/* Pool superblock encoding and region geometry. */
#include "config.h"
#include <rdmapool/crypto.h>
#include <rdmapool/layout.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <string.h>

/* Field offsets inside the encoded superblock. */
enum {
	SB_MAGIC = 0, SB_VERSION = 8, SB_BLOCK = 12, SB_UUID = 16, SB_NAME = 32, SB_PEER = 96,
	SB_REGION = 104, SB_NBLOCKS = 112, SB_BMOFF = 120, SB_BMWORDS = 128, SB_DATA = 136,
	SB_CREATED = 144, SB_END = 152, SB_CSUM = RP_SB_SIZE - 4,
};

int rp_layout_compute(uint64_t region_size, uint32_t block_size, struct rp_pool_sb *sb)
{
	if (block_size < 512 || (block_size & (block_size - 1)))
		return -EINVAL;
	if (region_size < RP_BITMAP_OFFSET)
		return -ENOSPC;
	/* Each block costs block_size bytes plus one bitmap bit. */
	uint64_t avail = region_size - RP_BITMAP_OFFSET;
	uint64_t n = avail * 8 / ((uint64_t)block_size * 8 + 1);
	for (;;) {
		uint64_t words = (n + 63) / 64;
		uint64_t data = RP_ALIGN_UP(RP_BITMAP_OFFSET + words * 8, block_size);
		if (n == 0 || data + n * block_size <= region_size) {
			sb->block_size = block_size;
			sb->region_size = region_size;
			sb->nblocks = n;
			sb->bitmap_off = RP_BITMAP_OFFSET;
			sb->bitmap_words = words;
			sb->data_off = data;
			break;
		}
		n--;
	}
	return n < RP_MIN_BLOCKS ? -ENOSPC : 0;
}

uint64_t rp_layout_tail_mask(const struct rp_pool_sb *sb)
{
	unsigned used = (unsigned)(sb->nblocks % 64);
	return used == 0 ? 0 : ~0ull << used;
}

void rp_sb_encode(const struct rp_pool_sb *sb, uint8_t buf[RP_SB_SIZE])
{
	memset(buf, 0, RP_SB_SIZE);
	rp_put_le64(buf + SB_MAGIC, sb->magic);
	rp_put_le32(buf + SB_VERSION, sb->layout_version);
	rp_put_le32(buf + SB_BLOCK, sb->block_size);
	memcpy(buf + SB_UUID, sb->pool_uuid, 16);
	memcpy(buf + SB_NAME, sb->cluster_name, RP_MIN(strlen(sb->cluster_name), 63));
	rp_put_le32(buf + SB_PEER, sb->peer_id);
	rp_put_le64(buf + SB_REGION, sb->region_size);
	rp_put_le64(buf + SB_NBLOCKS, sb->nblocks);
	rp_put_le64(buf + SB_BMOFF, sb->bitmap_off);
	rp_put_le64(buf + SB_BMWORDS, sb->bitmap_words);
	rp_put_le64(buf + SB_DATA, sb->data_off);
	rp_put_le64(buf + SB_CREATED, sb->created_ns);
	rp_put_le32(buf + SB_CSUM, rp_crc32c(0, buf, SB_CSUM));
}

int rp_sb_decode(const uint8_t buf[RP_SB_SIZE], struct rp_pool_sb *sb)
{
	struct rp_pool_sb geo;
	memset(sb, 0, sizeof(*sb));
	sb->magic = rp_get_le64(buf + SB_MAGIC);
	if (sb->magic != RP_POOL_MAGIC)
		return -ENODATA;
	sb->layout_version = rp_get_le32(buf + SB_VERSION);
	if (sb->layout_version < RP_LAYOUT_VERSION_MIN || sb->layout_version > RP_LAYOUT_VERSION)
		return -EPROTO;
	if (rp_get_le32(buf + SB_CSUM) != rp_crc32c(0, buf, SB_CSUM))
		return -EBADMSG;
	sb->block_size = rp_get_le32(buf + SB_BLOCK);
	memcpy(sb->pool_uuid, buf + SB_UUID, 16);
	memcpy(sb->cluster_name, buf + SB_NAME, 63);
	/* the name ends at its first NUL; nothing after it is kept (so the
	 * superblock in memory is the one encode writes back) */
	size_t nl = strnlen(sb->cluster_name, 63);
	memset(sb->cluster_name + nl, 0, sizeof(sb->cluster_name) - nl);
	sb->peer_id = rp_get_le32(buf + SB_PEER);
	sb->region_size = rp_get_le64(buf + SB_REGION);
	sb->nblocks = rp_get_le64(buf + SB_NBLOCKS);
	sb->bitmap_off = rp_get_le64(buf + SB_BMOFF);
	sb->bitmap_words = rp_get_le64(buf + SB_BMWORDS);
	sb->data_off = rp_get_le64(buf + SB_DATA);
	sb->created_ns = rp_get_le64(buf + SB_CREATED);
	/* The geometry must be exactly what this layout version computes. */
	if (rp_layout_compute(sb->region_size, sb->block_size, &geo) < 0 || geo.nblocks != sb->nblocks ||
	    geo.bitmap_off != sb->bitmap_off || geo.bitmap_words != sb->bitmap_words ||
	    geo.data_off != sb->data_off)
		return -EBADMSG;
	return 0;
}
