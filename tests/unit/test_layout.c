/* Pool layout: geometry fits the region, superblock round trip, and each
 * kind of damage is told apart. */
#include "config.h"
#include "tap.h"

#include <rdmapool/layout.h>

#include <errno.h>
#include <string.h>

int main(void)
{
	struct rp_pool_sb sb = { 0 }, back;
	uint8_t buf[RP_SB_SIZE];

	ok(rp_layout_compute(1ull << 30, 4096, &sb) == 0, "1 GiB with 4 KiB blocks");
	ok(sb.data_off % 4096 == 0 && sb.data_off >= RP_BITMAP_OFFSET + sb.bitmap_words * 8,
	   "data after the bitmap, aligned");
	ok(sb.data_off + sb.nblocks * 4096 <= (1ull << 30), "blocks fit in the region");
	ok(sb.nblocks > 262000 && sb.nblocks < 262144, "nearly all of it is blocks (%llu)",
	   (unsigned long long)sb.nblocks);
	ok(sb.bitmap_words == (sb.nblocks + 63) / 64, "bitmap words");
	ok(rp_layout_compute(64 * 1024, 4096, &sb) == -ENOSPC, "too small region refused");
	ok(rp_layout_compute(1 << 20, 3000, &sb) == -EINVAL, "non power of two block refused");

	int fits = 1;
	for (uint64_t size = 1 << 20; size < (64ull << 20); size = size * 3 / 2 + 4096) {
		for (uint32_t bs = 512; bs <= 65536; bs *= 2) {
			struct rp_pool_sb g;
			if (rp_layout_compute(size, bs, &g) < 0)
				continue;
			uint64_t more = g.nblocks + 1, words = (more + 63) / 64;
			uint64_t data = (RP_BITMAP_OFFSET + words * 8 + bs - 1) / bs * bs;
			if (g.data_off + g.nblocks * bs > size || data + more * bs <= size)
				fits = 0; /* overflows, or one more block would have fit */
		}
	}
	ok(fits, "geometry is tight and never overflows, across sizes and block sizes");

	rp_layout_compute(64ull << 20, 4096, &sb);
	sb.magic = RP_POOL_MAGIC;
	sb.layout_version = RP_LAYOUT_VERSION;
	memset(sb.pool_uuid, 0xab, 16);
	strcpy(sb.cluster_name, "demo");
	sb.peer_id = 3;
	sb.created_ns = 123456789;
	rp_sb_encode(&sb, buf);
	ok(rp_sb_decode(buf, &back) == 0, "round trip decodes");
	ok(memcmp(&sb, &back, sizeof(sb)) == 0, "round trip is identical");
	struct rp_pool_sb v = sb;
	uint8_t vbuf[RP_SB_SIZE];
	v.layout_version = RP_LAYOUT_VERSION_MIN;
	rp_sb_encode(&v, vbuf);
	ok(rp_sb_decode(vbuf, &back) == 0 && back.layout_version == RP_LAYOUT_VERSION_MIN,
	   "a version 1 pool (an older server's) still decodes");
	v.layout_version = RP_LAYOUT_VERSION + 1;
	rp_sb_encode(&v, vbuf);
	ok(rp_sb_decode(vbuf, &back) == -EPROTO, "a newer layout version is refused");
	v.layout_version = 0;
	rp_sb_encode(&v, vbuf);
	ok(rp_sb_decode(vbuf, &back) == -EPROTO, "version 0 is refused");

	uint64_t tail = rp_layout_tail_mask(&sb);
	ok(((sb.nblocks % 64) == 0 && tail == 0) ||
	   (tail == ~0ull << (sb.nblocks % 64)), "tail mask covers bits past the last block");

	uint8_t bad[RP_SB_SIZE];
	memcpy(bad, buf, sizeof(bad));
	bad[200] ^= 1;
	ok(rp_sb_decode(bad, &back) == -EBADMSG, "flipped bit: checksum error");
	memset(bad, 0, sizeof(bad));
	ok(rp_sb_decode(bad, &back) == -ENODATA, "blank region: no superblock");
	memcpy(bad, buf, sizeof(bad));
	bad[8] = RP_LAYOUT_VERSION + 1;
	ok(rp_sb_decode(bad, &back) == -EPROTO, "other layout version");
	return tap_done();
}
