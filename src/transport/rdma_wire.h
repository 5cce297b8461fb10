/* The rdma transport's connect private data (wire.h) without verbs: the
 * server's decoding of a connect request and its table of challenges, the
 * client's decoding of a reject and an accept. Pure, so that a fuzz target
 * (tests/fuzz/fuzz_rdma_private) can give them what anyone on the network
 * may send. */
#ifndef RDMAPOOL_RDMA_WIRE_H
#define RDMAPOOL_RDMA_WIRE_H

#include "transport_impl.h"

#include <rdmapool/wire.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Challenges outstanding at once. Anyone may send HELLOs, so a flood must
 * not push out a challenge a real client is answering: a challenge is kept
 * at least RP_RDMA_CHALLENGE_KEEP_MS (a client answers within a round trip
 * or two), after which the oldest gives way to a new HELLO when no entry is
 * free or expired; a HELLO that finds every entry live and younger than
 * that is refused (-EBUSY) rather than evicting one. Refusing every new
 * connect takes a flood of RP_RDMA_CHALLENGES per KEEP_MS, about 4000
 * requests a second, kept up; a connect under way completes. (The fuzz
 * target builds this file with a small table to reach a full one.) */
#ifndef RP_RDMA_CHALLENGES
#define RP_RDMA_CHALLENGES 4096
#endif
#define RP_RDMA_CHALLENGE_KEEP_MS 1000

struct rp_rdma_req {
	uint16_t kind;  /* RP_RDMA_HELLO or RP_RDMA_AUTH */
	uint32_t peer;  /* the peer id the client wants */
	uint8_t nonce[RP_NONCE_LEN]; /* HELLO: the client's nonce; AUTH: our challenge */
	uint64_t session, gen;       /* HELLO only */
	uint8_t mac[RP_RDMA_REQ_MAC_LEN]; /* AUTH only */
};

/* -EPROTO: too short, not ours, another version or an unknown kind. */
int rp_rdma_req_decode(const uint8_t *pd, size_t len, struct rp_rdma_req *out);

/* The challenges a server handed out, each good once, for
 * RP_RDMA_CHALLENGE_MS (rp_now_ms: monotonic). */
struct rp_rdma_challenges {
	struct {
		uint8_t challenge[RP_NONCE_LEN], cnonce[RP_NONCE_LEN];
		uint64_t session, gen; /* as the HELLO named them */
		uint64_t expires_ms;
		bool live;
	} ch[RP_RDMA_CHALLENGES];
};

/* A HELLO: a fresh challenge for it, remembered with its nonce, session
 * and generation, in out (the reject carries it), in a free or expired
 * entry, else in place of the oldest if that is RP_RDMA_CHALLENGE_KEEP_MS
 * old. Returns 0, or -EBUSY when every entry is live and younger. */
int rp_rdma_challenge_issue(struct rp_rdma_challenges *t, const struct rp_rdma_req *hello,
			    uint64_t now_ms, uint8_t out[RP_NONCE_LEN]);

/* What the server checks an AUTH against. */
struct rp_rdma_verifier {
	const uint8_t *secret;
	size_t secret_len;
	const char *cluster_name;
	uint32_t self_id;
};

/* An AUTH: the challenge must be live and unused (it is used up now) and
 * the MAC right; then cnonce, session and gen are its HELLO's. Returns 0,
 * -ETIME (no live challenge of ours), -EACCES (wrong MAC), -ENXIO (another
 * peer id asked for). */
int rp_rdma_challenge_redeem(struct rp_rdma_challenges *t, const struct rp_rdma_req *auth,
			     const struct rp_rdma_verifier *v, uint64_t now_ms,
			     uint8_t cnonce[RP_NONCE_LEN], uint64_t *session, uint64_t *gen);

/* A reject: 0 with its status (and, when the status is RP_RDMA_CHALLENGE,
 * the challenge); -EPROTO when it is not an rdmapool reject of our version
 * (a status is still given when at least the magic and status are there:
 * another version's server says why it refused). */
int rp_rdma_rej_decode(const uint8_t *pd, size_t len, int32_t *status,
		       uint8_t challenge[RP_NONCE_LEN]);

struct rp_rdma_rep {
	uint32_t rkey;
	uint64_t addr, size;
	uint8_t uuid[16];
	uint8_t mac[RP_SHA256_LEN];
};

/* An accept: -EPROTO unless it is ours, of our version, with status 0. */
int rp_rdma_rep_decode(const uint8_t *pd, size_t len, struct rp_rdma_rep *out);

/* What the AUTH's MAC binds (wire.h): peer id, session, generation. */
void rp_rdma_auth_bind(uint8_t *bind, uint32_t peer, uint64_t session, uint64_t gen);

#endif
