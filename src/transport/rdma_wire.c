/* The rdma connect private data (rdma_wire.h): fixed offsets from wire.h,
 * every read bounded by the length given. */
#include "config.h"
#include "rdma_wire.h"

#include <rdmapool/crypto.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <string.h>

int rp_rdma_req_decode(const uint8_t *pd, size_t len, struct rp_rdma_req *out)
{
	memset(out, 0, sizeof(*out));
	if (len < RP_RDMA_REQ_LEN || rp_get_le32(pd) != RP_RDMA_REQ_MAGIC ||
	    rp_get_le16(pd + 4) != RP_WIRE_VERSION)
		return -EPROTO;
	out->kind = rp_get_le16(pd + 6);
	out->peer = rp_get_le32(pd + 8);
	memcpy(out->nonce, pd + 16, RP_NONCE_LEN);
	if (out->kind == RP_RDMA_HELLO) {
		out->session = rp_get_le64(pd + RP_RDMA_HELLO_SESSION_OFF);
		out->gen = rp_get_le64(pd + RP_RDMA_HELLO_GEN_OFF);
	} else if (out->kind == RP_RDMA_AUTH) {
		memcpy(out->mac, pd + 32, RP_RDMA_REQ_MAC_LEN);
	} else {
		return -EPROTO;
	}
	return 0;
}

/* The entry a new challenge goes to: a free or expired one, else the
 * oldest if it is old enough to give up; -1 if none may be taken. */
static int challenge_slot(const struct rp_rdma_challenges *t, uint64_t now_ms)
{
	int oldest = -1;
	for (int i = 0; i < RP_RDMA_CHALLENGES; i++) {
		if (!t->ch[i].live || now_ms >= t->ch[i].expires_ms)
			return i;
		if (oldest < 0 || t->ch[i].expires_ms < t->ch[oldest].expires_ms)
			oldest = i;
	}
	uint64_t issued = t->ch[oldest].expires_ms - RP_RDMA_CHALLENGE_MS;
	return now_ms >= issued + RP_RDMA_CHALLENGE_KEEP_MS ? oldest : -1;
}

int rp_rdma_challenge_issue(struct rp_rdma_challenges *t, const struct rp_rdma_req *hello,
			    uint64_t now_ms, uint8_t out[RP_NONCE_LEN])
{
	int i = challenge_slot(t, now_ms);
	if (i < 0)
		return -EBUSY;
	rp_random_bytes(t->ch[i].challenge, RP_NONCE_LEN);
	memcpy(t->ch[i].cnonce, hello->nonce, RP_NONCE_LEN);
	t->ch[i].session = hello->session;
	t->ch[i].gen = hello->gen;
	t->ch[i].expires_ms = now_ms + RP_RDMA_CHALLENGE_MS;
	t->ch[i].live = true;
	memcpy(out, t->ch[i].challenge, RP_NONCE_LEN);
	return 0;
}

int rp_rdma_challenge_redeem(struct rp_rdma_challenges *t, const struct rp_rdma_req *auth,
			     const struct rp_rdma_verifier *v, uint64_t now_ms,
			     uint8_t cnonce[RP_NONCE_LEN], uint64_t *session, uint64_t *gen)
{
	uint8_t mac[RP_SHA256_LEN], bind[RP_RDMA_BIND_LEN];
	unsigned i;
	for (i = 0; i < RP_RDMA_CHALLENGES; i++)
		if (t->ch[i].live && rp_ct_memcmp(t->ch[i].challenge, auth->nonce, RP_NONCE_LEN) == 0)
			break;
	if (i == RP_RDMA_CHALLENGES || now_ms >= t->ch[i].expires_ms)
		return -ETIME;
	t->ch[i].live = false;
	memcpy(cnonce, t->ch[i].cnonce, RP_NONCE_LEN);
	*session = t->ch[i].session;
	*gen = t->ch[i].gen;
	rp_rdma_auth_bind(bind, auth->peer, *session, *gen);
	rp_auth_mac(v->secret, v->secret_len, RP_AUTH_LABEL_CLIENT, auth->nonce, cnonce,
		    v->cluster_name, bind, sizeof(bind), mac);
	if (rp_ct_memcmp(mac, auth->mac, RP_RDMA_REQ_MAC_LEN))
		return -EACCES;
	if (auth->peer != v->self_id)
		return -ENXIO;
	return 0;
}

int rp_rdma_rej_decode(const uint8_t *pd, size_t len, int32_t *status,
		       uint8_t challenge[RP_NONCE_LEN])
{
	*status = 0;
	if (len < 12 || rp_get_le32(pd) != RP_RDMA_REP_MAGIC)
		return -EPROTO;
	*status = (int32_t)rp_get_le32(pd + 8);
	if (rp_get_le16(pd + 4) != RP_WIRE_VERSION)
		return -EPROTO;
	if (*status == RP_RDMA_CHALLENGE) {
		if (len < RP_RDMA_REJ_LEN)
			return -EPROTO;
		memcpy(challenge, pd + 12, RP_NONCE_LEN);
	}
	return 0;
}

int rp_rdma_rep_decode(const uint8_t *pd, size_t len, struct rp_rdma_rep *out)
{
	memset(out, 0, sizeof(*out));
	if (len < RP_RDMA_REP_LEN || rp_get_le32(pd) != RP_RDMA_REP_MAGIC ||
	    rp_get_le16(pd + 4) != RP_WIRE_VERSION || rp_get_le32(pd + 8) != 0)
		return -EPROTO;
	out->rkey = rp_get_le32(pd + 12);
	out->addr = rp_get_le64(pd + 16);
	out->size = rp_get_le64(pd + 24);
	memcpy(out->uuid, pd + 32, 16);
	memcpy(out->mac, pd + 52, RP_SHA256_LEN);
	return 0;
}

void rp_rdma_auth_bind(uint8_t *bind, uint32_t peer, uint64_t session, uint64_t gen)
{
	rp_put_le32(bind, peer);
	rp_put_le64(bind + 4, session);
	rp_put_le64(bind + 12, gen);
}
