/* Log records as replay meets them on a pool: any bytes decode to a record
 * or are refused, a record decoded encodes back to the same bytes' meaning,
 * and applying a stream of them to an empty namespace keeps its invariants
 * (every block map sorted, disjoint and inside the pools; every freed run
 * inside the pools), whatever the records say; then fsck's checks of the
 * namespace run over it, as fsck runs them after a replay (a name left to
 * an inode the records deleted once crashed them: regression input
 * regress-fsck-name-of-deleted-inode).
 * Input: a selector byte; 0xff: one record, raw (header, checksum and
 * all); else chunks of type(1) flags(1) payload length(2, little-endian)
 * payload, each framed here with a valid header and checksum so that the
 * fuzzer reaches the payloads. */
#include "config.h"
#include "fuzz.h"
#include "../../src/fs/fs_impl.h"
#include "rdmapool/crypto.h"
#include "rdmapool/util.h"

#include <string.h>

#define EPOCH 7
#define POOLS 3
#define POOL_BLOCKS 4096

static const uint8_t uuid[16] = "fuzz-volume-uuid";

/* the framing rec_encode writes (record.c): crc32c over uuid, the header
 * with its crc field zero, and the payload */
static size_t frame(uint8_t *buf, uint8_t type, uint8_t flags, const uint8_t *pl, size_t plen,
		    uint64_t seq)
{
	memset(buf, 0, REC_HDR);
	rp_put_le16(buf, REC_MAGIC);
	buf[2] = type;
	buf[3] = flags;
	rp_put_le32(buf + 4, (uint32_t)plen);
	rp_put_le64(buf + 8, EPOCH);
	rp_put_le64(buf + 16, seq);
	memcpy(buf + REC_HDR, pl, plen);
	uint32_t crc = rp_crc32c(0, uuid, 16);
	crc = rp_crc32c(crc, buf, REC_HDR);
	rp_put_le32(buf + 24, rp_crc32c(crc, pl, plen));
	return REC_HDR + plen;
}

static void check_extent(struct rp_poolset *ps, uint32_t pool, uint64_t block, uint64_t count)
{
	FUZZ_ASSERT(pool < ps->n && ps->pools[pool].present);
	FUZZ_ASSERT(count > 0 && block + count > block && block + count <= POOL_BLOCKS);
}

static void check_state(struct rp_fs *fs, const struct rp_extvec *freed)
{
	for (size_t i = 0; i < fs->it.nb; i++)
		for (struct rp_inode *in = fs->it.b[i]; in; in = in->hnext) {
			FUZZ_ASSERT(itable_get(&fs->it, in->ino) == in);
			for (size_t k = 0; k < in->map.n; k++) {
				const struct rp_fext *e = &in->map.v[k];
				check_extent(fs->ps, e->pool, e->pblock, e->count);
				FUZZ_ASSERT(e->fblock + e->count > e->fblock);
				FUZZ_ASSERT(k == 0 || in->map.v[k - 1].fblock + in->map.v[k - 1].count <=
							      e->fblock);
			}
		}
	for (size_t k = 0; k < freed->n; k++)
		check_extent(fs->ps, freed->v[k].pool, freed->v[k].block, freed->v[k].count);
}

/* what decodes must encode to a record that decodes the same */
static void check_roundtrip(const struct rp_rec *r)
{
	static uint8_t buf[REC_MAX + 64];
	struct rp_rec r2;
	ssize_t n = rec_encode(r, EPOCH, uuid, buf, sizeof(buf));
	if (n < 0)
		return; /* a name or value over the limits the writer keeps */
	FUZZ_ASSERT(rec_decode(buf, (size_t)n, EPOCH, uuid, &r2) == n);
	FUZZ_ASSERT(r2.type == r->type && r2.ino == r->ino && r2.name_len == r->name_len &&
		    r2.value_len == r->value_len && r2.ext.pool == r->ext.pool &&
		    r2.ext.block == r->ext.block && r2.size == r->size);
	FUZZ_ASSERT(!r->name_len || memcmp(r2.name, r->name, r->name_len) == 0);
}

static void apply(struct rp_fs *fs, const uint8_t *buf, size_t len, struct rp_extvec *freed)
{
	struct rp_rec r;
	ssize_t n = rec_decode(buf, len, EPOCH, uuid, &r);
	if (n < 0)
		return;
	FUZZ_ASSERT((size_t)n >= REC_HDR && (size_t)n <= RP_ALIGN_UP(len, 8));
	check_roundtrip(&r);
	int rc = state_apply(fs, &r, freed); /* errors are the refusals under test */
	if (getenv("FUZZ_TRACE")) /* to see what a corpus input reaches */
		fprintf(stderr, "record %llu type %u inode %llu: %d\n", (unsigned long long)r.seq,
			r.type, (unsigned long long)r.ino, rc);
	check_state(fs, freed);
}

/* fsck's own checks over what was applied: whatever they find, they say */
static void check_names(struct rp_fs *fs)
{
	static FILE *out;
	struct rp_fsck_report rep = { 0 };
	if (!out)
		out = getenv("FUZZ_TRACE") ? stderr : fopen("/dev/null", "w");
	if (out)
		fsck_check_names(fs, "fuzz", out, &rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rp_pool pools[POOLS];
	static uint32_t ids[POOLS] = { 0, 1, 2 };
	struct rp_poolset ps = { .block_size = 4096, .n = POOLS, .pools = pools, .npeers = POOLS,
				 .ids = ids };
	ps.place.replicas = 1;
	memset(pools, 0, sizeof(pools));
	for (int i = 0; i < POOLS; i++) {
		pools[i].present = true;
		pools[i].sb.nblocks = POOL_BLOCKS;
	}
	struct rp_fs *fs = calloc(1, sizeof(*fs));
	uint8_t *buf = malloc(REC_HDR + 65536 + 8);
	struct rp_extvec freed = { 0 };
	if (!fs || !buf)
		goto out;
	fs->ps = &ps;
	fs->next_ino = 2;
	fs->missing_peer = -1;

	if (size > 0 && data[0] == 0xff) {
		apply(fs, data + 1, size - 1, &freed);
		goto out;
	}
	size_t off = 1;
	for (uint64_t seq = 1; off + 4 <= size; seq++) {
		size_t plen = rp_get_le16(data + off + 2);
		if (plen > size - off - 4)
			plen = size - off - 4;
		size_t n = frame(buf, data[off], data[off + 1], data + off + 4, plen, seq);
		apply(fs, buf, n, &freed);
		off += 4 + plen;
	}
	check_names(fs);
out:
	if (fs)
		state_free(fs);
	free(fs);
	free(buf);
	extvec_free(&freed);
	return 0;
}
