/* The rdma server's table of challenges under a flood of HELLOs, which
 * anyone on the network may send (issue 17, 10d): a challenge a client is
 * answering survives any number of them for RP_RDMA_CHALLENGE_KEEP_MS; a
 * HELLO that would have to push out a younger one is refused (-EBUSY)
 * instead; once the flood's challenges are that old they give way again.
 * Before, the 256th HELLO after a client's pushed its challenge out. A
 * fuzz_rdma_private model checks the same with a small table. */
#include "config.h"
#include "rdma_wire.h"
#include "tap.h"

#include <errno.h>
#include <string.h>

#include <rdmapool/crypto.h>
#include <rdmapool/util.h>

#define SELF 3

static const uint8_t secret[] = "unit-secret-0123456789";
static const char cluster[] = "unit";
static struct rp_rdma_challenges table;

static struct rp_rdma_req hello(uint64_t session, uint64_t gen)
{
	struct rp_rdma_req h = { .kind = RP_RDMA_HELLO, .peer = SELF, .session = session, .gen = gen };
	rp_random_bytes(h.nonce, RP_NONCE_LEN);
	return h;
}

/* The AUTH a client with the secret sends for challenge ch of HELLO h. */
static struct rp_rdma_req auth(const struct rp_rdma_req *h, const uint8_t *ch)
{
	struct rp_rdma_req a = { .kind = RP_RDMA_AUTH, .peer = SELF };
	uint8_t bind[RP_RDMA_BIND_LEN], mac[RP_SHA256_LEN];
	memcpy(a.nonce, ch, RP_NONCE_LEN);
	rp_rdma_auth_bind(bind, SELF, h->session, h->gen);
	rp_auth_mac(secret, sizeof(secret), RP_AUTH_LABEL_CLIENT, ch, h->nonce, cluster, bind,
		    sizeof(bind), mac);
	memcpy(a.mac, mac, RP_RDMA_REQ_MAC_LEN);
	return a;
}

static int redeem(const struct rp_rdma_req *h, const uint8_t *ch, uint64_t now)
{
	struct rp_rdma_verifier v = { secret, sizeof(secret), cluster, SELF };
	struct rp_rdma_req a = auth(h, ch);
	uint8_t cn[RP_NONCE_LEN];
	uint64_t s = 0, g = 0;
	int rc = rp_rdma_challenge_redeem(&table, &a, &v, now, cn, &s, &g);
	if (rc == 0 && (s != h->session || g != h->gen || memcmp(cn, h->nonce, RP_NONCE_LEN)))
		return -EINVAL;
	return rc;
}

/* n HELLOs from a flooder at time now: how many got a challenge */
static unsigned flood(unsigned n, uint64_t now)
{
	unsigned got = 0;
	uint8_t ch[RP_NONCE_LEN];
	for (unsigned i = 0; i < n; i++) {
		struct rp_rdma_req h = hello(0xf100d, i);
		got += rp_rdma_challenge_issue(&table, &h, now, ch) == 0;
	}
	return got;
}

int main(void)
{
	uint64_t t = 1000;
	uint8_t ch[RP_NONCE_LEN], ch2[RP_NONCE_LEN];
	struct rp_rdma_req client = hello(42, 7);
	ok(rp_rdma_challenge_issue(&table, &client, t, ch) == 0, "a client's HELLO gets a challenge");
	unsigned got = flood(2 * RP_RDMA_CHALLENGES, t + 1);
	ok(got == RP_RDMA_CHALLENGES - 1,
	   "a flood of %u HELLOs fills the table (%u challenges) and is refused after",
	   2 * RP_RDMA_CHALLENGES, got);
	ok(redeem(&client, ch, t + 2) == 0,
	   "the client's answer, after the flood, is still accepted with its HELLO's session");
	ok(redeem(&client, ch, t + 3) == -ETIME, "and only once");
	ok(flood(2, t + 4) == 1, "the entry the answer freed is taken again, then none");

	/* the flood goes on: its challenges give way only once KEEP_MS old */
	struct rp_rdma_req late = hello(43, 1);
	ok(rp_rdma_challenge_issue(&table, &late, t + RP_RDMA_CHALLENGE_KEEP_MS - 1, ch2) == -EBUSY,
	   "a HELLO that would push out a challenge younger than %d ms is refused (-EBUSY)",
	   RP_RDMA_CHALLENGE_KEEP_MS);
	ok(rp_rdma_challenge_issue(&table, &late, t + 1 + RP_RDMA_CHALLENGE_KEEP_MS, ch2) == 0,
	   "once the oldest is %d ms old, a HELLO gets a challenge in its place",
	   RP_RDMA_CHALLENGE_KEEP_MS);
	got = flood(2 * RP_RDMA_CHALLENGES, t + 2 + RP_RDMA_CHALLENGE_KEEP_MS);
	ok(got == RP_RDMA_CHALLENGES - 2,
	   "the next flood takes the %u entries that old, no younger one (%u)",
	   RP_RDMA_CHALLENGES - 2, got);
	ok(redeem(&late, ch2, t + 3 + RP_RDMA_CHALLENGE_KEEP_MS) == 0,
	   "and that challenge survives it");

	/* expiry: a challenge older than RP_RDMA_CHALLENGE_MS is no challenge */
	memset(&table, 0, sizeof(table));
	ok(rp_rdma_challenge_issue(&table, &client, t, ch) == 0, "a new challenge");
	ok(redeem(&client, ch, t + RP_RDMA_CHALLENGE_MS) == -ETIME,
	   "answered %d ms later it has expired", RP_RDMA_CHALLENGE_MS);
	ok(flood(RP_RDMA_CHALLENGES, t + RP_RDMA_CHALLENGE_MS) == RP_RDMA_CHALLENGES,
	   "expired and free entries are taken without refusal");
	return tap_done();
}
