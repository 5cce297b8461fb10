/* A replay attack on the rdma connect: get a challenge (HELLO), answer it
 * correctly with the cluster secret (AUTH: accepted), then send the very
 * same AUTH on a new connection; and an AUTH answering a challenge the
 * server never issued (as after a restart). Prints what each got.
 *   rdma_replay CLUSTER PEER_ID */
#include "config.h"
#include "helper.h"
#include "rdma_common.h"
#include "rdma_wire.h"
#include "transport_impl.h"

#include <rdmapool/util.h>
#include <rdmapool/wire.h>

#include <netdb.h>
#include <string.h>

/* One connect with private data req; the answer's event type and, for a
 * rejection, its status and challenge. */
static const char *attempt(const struct rp_peer *p, const uint8_t *req, int32_t *status,
			   uint8_t *challenge)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	struct rdma_event_channel *ech = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	struct rp_cm_event ev;
	char port[16];
	const char *what = "setup failed";
	snprintf(port, sizeof(port), "%u", p->port);
	if (!ech || rdma_create_id(ech, &id, NULL, RDMA_PS_TCP) || getaddrinfo(p->host, port, &hints, &res))
		return what;
	int rc = rdma_resolve_addr(id, NULL, res->ai_addr, 2000);
	freeaddrinfo(res);
	if (rc || rp_rdma_next_event(ech, 3000, &ev) || ev.type != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_resolve_route(id, 2000) || rp_rdma_next_event(ech, 3000, &ev) ||
	    ev.type != RDMA_CM_EVENT_ROUTE_RESOLVED)
		goto out;
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	if (!cq || rdma_create_qp(id, rp_rdma_pd_for(id->verbs), &qa))
		goto out;
	struct rdma_conn_param cp = { .private_data = req, .private_data_len = RP_RDMA_REQ_LEN,
				      .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	if (rdma_connect(id, &cp) || rp_rdma_next_event(ech, 3000, &ev))
		goto out;
	what = rdma_event_str(ev.type);
	if (ev.type == RDMA_CM_EVENT_REJECTED && ev.private_len >= RP_RDMA_REJ_LEN) {
		*status = (int32_t)rp_get_le32(ev.private_data + 8);
		memcpy(challenge, ev.private_data + 12, RP_NONCE_LEN);
	}
	if (ev.type == RDMA_CM_EVENT_ESTABLISHED)
		rdma_disconnect(id);
out:
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (id)
		rdma_destroy_id(id);
	rdma_destroy_event_channel(ech);
	return what;
}

static void head(uint8_t *req, uint16_t kind, uint32_t peer)
{
	memset(req, 0, RP_RDMA_REQ_LEN);
	rp_put_le32(req, RP_RDMA_REQ_MAGIC);
	rp_put_le16(req + 4, RP_WIRE_VERSION);
	rp_put_le16(req + 6, kind);
	rp_put_le32(req + 8, peer);
}

int main(int argc, char **argv)
{
	struct rp_cluster *cl;
	uint8_t secret[RP_SECRET_MAX], req[RP_RDMA_REQ_LEN], cnonce[RP_NONCE_LEN];
	uint8_t challenge[RP_NONCE_LEN] = { 0 }, mac[RP_SHA256_LEN], bind[RP_RDMA_BIND_LEN];
	size_t slen;
	char err[1024];
	int32_t st = 0;
	if (argc != 3) {
		fprintf(stderr, "usage: rdma_replay CLUSTER PEER_ID\n");
		return 2;
	}
	if (rp_cluster_load(argv[1], &cl, err, sizeof(err)) < 0 ||
	    rp_cluster_load_secret(cl, secret, &slen, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdma_replay: %s\n", err);
		return 1;
	}
	const struct rp_peer *p = rp_cluster_peer(cl, (uint32_t)atoi(argv[2]));
	if (!p)
		return 1;
	rp_random_bytes(cnonce, sizeof(cnonce));
	head(req, RP_RDMA_HELLO, p->id);
	memcpy(req + 16, cnonce, RP_NONCE_LEN);
	const char *got = attempt(p, req, &st, challenge);
	printf("hello: %s status %d\n", got, st);
	head(req, RP_RDMA_AUTH, p->id);
	memcpy(req + 16, challenge, RP_NONCE_LEN);
	rp_rdma_auth_bind(bind, p->id, 0, 0); /* session 0: none */
	rp_auth_mac(secret, slen, RP_AUTH_LABEL_CLIENT, challenge, cnonce, cl->name, bind, sizeof(bind), mac);
	memcpy(req + 32, mac, RP_RDMA_REQ_MAC_LEN);
	st = 0;
	printf("answer: %s\n", attempt(p, req, &st, challenge));
	st = 0;
	got = attempt(p, req, &st, challenge);
	printf("replayed answer: %s status %d\n", got, st);
	/* a challenge the server never issued, as after its restart */
	rp_random_bytes(req + 16, RP_NONCE_LEN);
	rp_auth_mac(secret, slen, RP_AUTH_LABEL_CLIENT, req + 16, cnonce, cl->name, bind, sizeof(bind), mac);
	memcpy(req + 32, mac, RP_RDMA_REQ_MAC_LEN);
	st = 0;
	got = attempt(p, req, &st, challenge);
	printf("answer to a challenge never issued: %s status %d\n", got, st);
	rp_cluster_free(cl);
	return 0;
}
