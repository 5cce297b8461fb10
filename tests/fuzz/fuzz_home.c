/* The records every pool holds for all clients: its superblock, and in the
 * home area the volume records and the placement records. Any bytes decode
 * or are refused; what decodes is within its rules and encodes back to the
 * same record. Input: a selector byte, then the record's bytes; with the
 * selector's high bit the magic, version and checksum are made valid here,
 * so that the fuzzer reaches the fields past them. */
#include "config.h"
#include "fuzz.h"
#include "../../src/fs/fs_impl.h"
#include "rdmapool/crypto.h"
#include "rdmapool/layout.h"
#include "rdmapool/util.h"

#include <string.h>

static void superblock(uint8_t *b, bool fix)
{
	struct rp_pool_sb sb, sb2;
	static uint8_t b2[RP_SB_SIZE];
	if (fix) { /* layout.c: magic at 0, version at 8, crc32c in the last 4 bytes */
		rp_put_le64(b, RP_POOL_MAGIC);
		rp_put_le32(b + 8, RP_LAYOUT_VERSION);
		rp_put_le32(b + RP_SB_SIZE - 4, rp_crc32c(0, b, RP_SB_SIZE - 4));
	}
	if (rp_sb_decode(b, &sb) < 0)
		return;
	FUZZ_ASSERT(sb.block_size >= 512 && (sb.block_size & (sb.block_size - 1)) == 0);
	FUZZ_ASSERT(sb.bitmap_words * 64 >= sb.nblocks);
	FUZZ_ASSERT(sb.data_off <= sb.region_size &&
		    sb.nblocks <= (sb.region_size - sb.data_off) / sb.block_size);
	FUZZ_ASSERT(sb.cluster_name[63] == 0);
	rp_sb_encode(&sb, b2);
	FUZZ_ASSERT(rp_sb_decode(b2, &sb2) == 0 && memcmp(&sb, &sb2, sizeof(sb)) == 0);
}

static void volume_record(uint8_t *b, bool fix)
{
	struct rp_volrec r, r2;
	uint8_t b2[VOLREC_LEN];
	if (fix) {
		struct rp_volrec probe = { .seq = 1 };
		volrec_encode(&probe, b2);
		memcpy(b, b2, 8); /* magic and version (volume.c), crc32c at 144 */
		rp_put_le32(b + 144, rp_crc32c(0, b, 144));
	}
	if (volrec_decode(b, &r) < 0)
		return;
	FUZZ_ASSERT(memchr(r.name, 0, sizeof(r.name)));
	volrec_encode(&r, b2);
	FUZZ_ASSERT(volrec_decode(b2, &r2) == 0 && memcmp(&r, &r2, sizeof(r)) == 0);
}

static void placement(uint8_t *b, bool fix)
{
	struct rp_volplace pl, pl2;
	uint8_t b2[PLACE_COPY_LEN];
	if (fix) {
		struct rp_volplace probe = { .replicas = 1 };
		place_encode(&probe, b2);
		memcpy(b, b2, 8); /* magic and version (placement.c), crc32c at 124 */
		rp_put_le32(b + 124, rp_crc32c(0, b, 124));
	}
	if (place_decode(b, &pl) < 0)
		return;
	FUZZ_ASSERT(pl.replicas >= 1 && pl.replicas <= RP_MAX_REPLICAS && pl.nring <= RP_RING_MAX);
	FUZZ_ASSERT(pl.replicas == 1 || pl.nring >= pl.replicas);
	for (uint32_t i = 0; i < pl.nring; i++)
		FUZZ_ASSERT(pl.ring[i] < 65536);
	place_encode(&pl, b2);
	FUZZ_ASSERT(place_decode(b2, &pl2) == 0 && memcmp(&pl, &pl2, sizeof(pl)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t b[RP_SB_SIZE];
	if (size < 1)
		return 0;
	memset(b, 0, sizeof(b));
	memcpy(b, data + 1, size - 1 < sizeof(b) ? size - 1 : sizeof(b));
	bool fix = data[0] & 0x80;
	switch (data[0] % 3) {
	case 0: superblock(b, fix); break;
	case 1: volume_record(b, fix); break;
	default: placement(b, fix); break;
	}
	return 0;
}
