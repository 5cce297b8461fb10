/* The rdma connect private data, as anyone on the network may send it: the
 * server's decoding of connect requests and its table of challenges, and a
 * client's decoding of rejects and accepts (src/transport/rdma_wire.c).
 * Input: a sequence of commands, each a byte of kind then its bytes:
 *   0 LEN BYTES  a connect request as sent (HELLOs get a challenge)
 *   1 K B        an AUTH answering the K-th challenge handed out, right
 *                (B odd: for another peer id), or with its MAC byte B%24
 *                flipped (B >= 128)
 *   2 T          the clock moves on T * 256 ms
 *   3 LEN BYTES  a reject as a client receives it
 *   4 LEN BYTES  an accept as a client receives it
 * A model written here says what each AUTH must get: accepted with its
 * HELLO's nonce, session and generation at most once, never once its
 * challenge is RP_RDMA_CHALLENGE_MS old, and always (once) while it is
 * younger than RP_RDMA_CHALLENGE_KEEP_MS whatever HELLOs came since (in
 * between it may have given way to a newer one); a HELLO is refused
 * (-EBUSY) exactly when RP_RDMA_CHALLENGES unused challenges are younger
 * than that (this target builds rdma_wire.c with a table of 8, Makefile.am);
 * every decode reads only the bytes given. */
#include "config.h"
#include "fuzz.h"
#include "rdma_wire.h"

#include <rdmapool/util.h>

#include <errno.h>
#include <string.h>

#define SELF 7
#define MAX_ISSUED 256 /* answer() names one by a byte */

static const uint8_t secret[] = "fuzz-secret-0123456789";
static const char cluster[] = "fuzz";

struct issued {
	uint8_t challenge[RP_NONCE_LEN], cnonce[RP_NONCE_LEN];
	uint64_t session, gen, at_ms;
	bool used; /* answered, or seen given way: never accepted again */
};

static struct rp_rdma_challenges table;
static struct issued issued[MAX_ISSUED];
static unsigned nissued;

/* the challenges the table must still hold */
static unsigned kept(uint64_t now)
{
	unsigned n = 0;
	for (unsigned i = 0; i < nissued; i++)
		n += !issued[i].used && now < issued[i].at_ms + RP_RDMA_CHALLENGE_KEEP_MS;
	return n;
}

/* exactly len bytes on the heap, so ASan sees a read past them */
static uint8_t *copy_of(const uint8_t *p, size_t len)
{
	uint8_t *b = malloc(len ? len : 1);
	FUZZ_ASSERT(b);
	memcpy(b, p, len);
	return b;
}

static void request(const uint8_t *p, size_t len, uint64_t now)
{
	uint8_t *b = copy_of(p, len), ch[RP_NONCE_LEN];
	struct rp_rdma_req r;
	int rc = rp_rdma_req_decode(b, len, &r);
	if (rc == 0) {
		FUZZ_ASSERT(len >= RP_RDMA_REQ_LEN && rp_get_le32(b) == RP_RDMA_REQ_MAGIC);
		FUZZ_ASSERT(r.kind == RP_RDMA_HELLO || r.kind == RP_RDMA_AUTH);
	}
	if (rc == 0 && r.kind == RP_RDMA_HELLO && nissued < MAX_ISSUED) {
		bool full = kept(now) >= RP_RDMA_CHALLENGES;
		int got = rp_rdma_challenge_issue(&table, &r, now, ch);
		FUZZ_ASSERT(got == (full ? -EBUSY : 0));
		if (got < 0) {
			free(b);
			return;
		}
		struct issued *is = &issued[nissued];
		memset(is, 0, sizeof(*is));
		memcpy(is->challenge, ch, RP_NONCE_LEN);
		memcpy(is->cnonce, b + 16, RP_NONCE_LEN);
		is->session = rp_get_le64(b + RP_RDMA_HELLO_SESSION_OFF);
		is->gen = rp_get_le64(b + RP_RDMA_HELLO_GEN_OFF);
		is->at_ms = now;
		nissued++;
	} else if (rc == 0 && r.kind == RP_RDMA_AUTH) {
		/* a nonce the fuzzer made up is no challenge of ours */
		struct rp_rdma_verifier v = { secret, sizeof(secret), cluster, SELF };
		uint8_t cn[RP_NONCE_LEN];
		uint64_t s, g;
		int got = rp_rdma_challenge_redeem(&table, &r, &v, now, cn, &s, &g);
		bool known = false;
		for (unsigned i = 0; i < nissued; i++)
			if (memcmp(issued[i].challenge, r.nonce, RP_NONCE_LEN) == 0) {
				known = true;
				issued[i].used |= got != -ETIME; /* tried: used up */
			}
		FUZZ_ASSERT(known || got == -ETIME);
	}
	free(b);
}

static void answer(unsigned k, uint8_t how, uint64_t now)
{
	if (nissued == 0)
		return;
	struct issued *is = &issued[k % nissued];
	uint32_t peer = how % 2 ? SELF + 1 : SELF;
	uint8_t req[RP_RDMA_REQ_LEN] = { 0 }, bind[RP_RDMA_BIND_LEN], mac[RP_SHA256_LEN];
	rp_put_le32(req, RP_RDMA_REQ_MAGIC);
	rp_put_le16(req + 4, RP_WIRE_VERSION);
	rp_put_le16(req + 6, RP_RDMA_AUTH);
	rp_put_le32(req + 8, peer);
	memcpy(req + 16, is->challenge, RP_NONCE_LEN);
	rp_rdma_auth_bind(bind, peer, is->session, is->gen);
	rp_auth_mac(secret, sizeof(secret), RP_AUTH_LABEL_CLIENT, is->challenge, is->cnonce, cluster,
		    bind, sizeof(bind), mac);
	memcpy(req + 32, mac, RP_RDMA_REQ_MAC_LEN);
	bool bad_mac = how >= 128;
	if (bad_mac)
		req[32 + how % RP_RDMA_REQ_MAC_LEN] ^= 0x5a;

	struct rp_rdma_req r;
	FUZZ_ASSERT(rp_rdma_req_decode(req, sizeof(req), &r) == 0 && r.kind == RP_RDMA_AUTH);
	struct rp_rdma_verifier v = { secret, sizeof(secret), cluster, SELF };
	uint8_t cn[RP_NONCE_LEN];
	uint64_t s = 0, g = 0;
	int got = rp_rdma_challenge_redeem(&table, &r, &v, now, cn, &s, &g);

	unsigned idx = (unsigned)(is - issued);
	bool dead = is->used || now >= is->at_ms + RP_RDMA_CHALLENGE_MS;
	bool kept_ = !dead && now < is->at_ms + RP_RDMA_CHALLENGE_KEEP_MS;
	int right = bad_mac ? -EACCES : peer != SELF ? -ENXIO : 0;
	/* between KEEP_MS and expiry it may have given way to a newer HELLO */
	bool fine = dead ? got == -ETIME : kept_ ? got == right : got == right || got == -ETIME;
	if (!fine) {
		fprintf(stderr, "AUTH for challenge %u: got %d, the model says %d%s\n", idx, got,
			dead ? -ETIME : right, dead || kept_ ? "" : " or -ETIME");
		FUZZ_ASSERT(fine);
	}
	is->used = true; /* tried once: used up, right or wrong (or seen gone) */
	if (got == 0)
		FUZZ_ASSERT(s == is->session && g == is->gen &&
			    memcmp(cn, is->cnonce, RP_NONCE_LEN) == 0);
}

static void reject(const uint8_t *p, size_t len)
{
	uint8_t *b = copy_of(p, len), ch[RP_NONCE_LEN];
	int32_t st;
	int rc = rp_rdma_rej_decode(b, len, &st, ch);
	if (rc == 0) {
		FUZZ_ASSERT(len >= 12 && rp_get_le32(b) == RP_RDMA_REP_MAGIC &&
			    rp_get_le16(b + 4) == RP_WIRE_VERSION);
		FUZZ_ASSERT(st == (int32_t)rp_get_le32(b + 8));
		if (st == RP_RDMA_CHALLENGE)
			FUZZ_ASSERT(len >= RP_RDMA_REJ_LEN && memcmp(ch, b + 12, RP_NONCE_LEN) == 0);
	}
	free(b);
}

static void accept_(const uint8_t *p, size_t len)
{
	uint8_t *b = copy_of(p, len);
	struct rp_rdma_rep r;
	if (rp_rdma_rep_decode(b, len, &r) == 0) {
		FUZZ_ASSERT(len >= RP_RDMA_REP_LEN && rp_get_le32(b + 8) == 0);
		FUZZ_ASSERT(r.rkey == rp_get_le32(b + 12) && r.addr == rp_get_le64(b + 16) &&
			    r.size == rp_get_le64(b + 24) && memcmp(r.uuid, b + 32, 16) == 0 &&
			    memcmp(r.mac, b + 52, RP_SHA256_LEN) == 0);
	}
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	memset(&table, 0, sizeof(table));
	nissued = 0;
	uint64_t now = 1000;
	size_t i = 0;
	while (i < size) {
		uint8_t kind = data[i++] % 5;
		if (kind == 1) {
			if (i + 2 > size)
				break;
			answer(data[i], data[i + 1], now);
			i += 2;
		} else if (kind == 2) {
			if (i + 1 > size)
				break;
			now += (uint64_t)data[i++] * 256;
		} else {
			if (i + 1 > size)
				break;
			size_t want = data[i++];
			size_t len = RP_MIN(want, size - i);
			if (kind == 0)
				request(data + i, len, now);
			else if (kind == 3)
				reject(data + i, len);
			else
				accept_(data + i, len);
			i += len;
		}
	}
	return 0;
}
