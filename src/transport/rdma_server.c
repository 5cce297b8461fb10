/* rdma listener: admits clients that prove the cluster secret by answering
 * a challenge (a first connect request is rejected with it, a second one
 * answers it), and answers with the region's address, rkey, size and pool
 * uuid in the accept's private data. The region is registered once per device for remote
 * read, write and atomics; after that the server's CPU is not on the data path:
 * this thread only handles connection events. */
#include "config.h"
#include "fence_memo.h"
#include "listener.h"
#include "rdma_common.h"
#include "rdma_wire.h"
#include "transport_impl.h"

#include <rdmapool/log.h>
#include <rdmapool/util.h>
#include <rdmapool/wire.h>

#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 8

struct client_qp {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	uint64_t session, gen; /* wire.h; session 0: none */
	bool fenced;           /* its queue pair is in the error state */
	struct client_qp *next;
};

struct rdma_listener {
	struct rp_listener head;
	struct rp_serve_params p;
	uint8_t secret[RP_SECRET_MAX];
	struct rdma_event_channel *ech;
	struct rdma_cm_id *lid;
	pthread_t thread;
	atomic_bool stopping;
	struct {
		struct ibv_context *ctx;
		struct ibv_mr *mr;
	} mrs[MAX_DEVICES];
	struct rp_rdma_challenges challenges;
	uint64_t refused_said_ms; /* refusals: said once a second (refuse) */
	unsigned long refused_unsaid;
	struct client_qp *clients; /* accepted, for fencing (the event thread's alone) */
	/* holders' fences, past their connections (same): the region's, or own */
	struct rp_fence_memo own_fences, *fences;
};

static struct ibv_mr *region_mr(struct rdma_listener *l, struct ibv_context *ctx)
{
	for (int i = 0; i < MAX_DEVICES; i++) {
		if (l->mrs[i].ctx == ctx)
			return l->mrs[i].mr;
		if (!l->mrs[i].ctx) {
			struct ibv_pd *pd = rp_rdma_pd_for(ctx);
			struct ibv_mr *mr = pd ? ibv_reg_mr(pd, l->p.base, l->p.size,
							    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
							    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
					     : NULL;
			if (!mr) {
				rp_err("ibv_reg_mr of the %llu-byte region on %s: %s",
				       (unsigned long long)l->p.size, ibv_get_device_name(ctx->device),
				       strerror(errno));
				return NULL;
			}
			l->mrs[i].ctx = ctx;
			l->mrs[i].mr = mr;
			atomic_fetch_add(&l->p.stats->registered_bytes, l->p.size);
			return mr;
		}
	}
	return NULL;
}

static void reject(struct rdma_cm_id *id, int32_t status, const uint8_t *challenge)
{
	uint8_t rej[RP_RDMA_REJ_LEN] = { 0 };
	rp_put_le32(rej, RP_RDMA_REP_MAGIC);
	rp_put_le16(rej + 4, RP_WIRE_VERSION);
	rp_put_le32(rej + 8, (uint32_t)status);
	if (challenge)
		memcpy(rej + 12, challenge, RP_NONCE_LEN);
	rdma_reject(id, rej, sizeof(rej));
	rdma_destroy_id(id);
}

/* HELLO gets a challenge (1), AUTH is verified (0 or a negative errno). */
static int32_t verify_request(struct rdma_listener *l, const struct rp_cm_event *ev,
			      struct rp_rdma_req *req, uint8_t *cnonce, uint64_t *session,
			      uint64_t *gen)
{
	if (rp_rdma_req_decode(ev->private_data, ev->private_len, req) < 0)
		return -EPROTO;
	if (req->kind == RP_RDMA_HELLO)
		return RP_RDMA_CHALLENGE;
	struct rp_rdma_verifier v = { l->secret, l->p.secret_len, l->p.cluster_name, l->p.self->id };
	return rp_rdma_challenge_redeem(&l->challenges, req, &v, rp_now_ms(), cnonce, session, gen);
}

/* A connect of a session older than one accepted already comes too late. */
static bool superseded(const struct rdma_listener *l, uint64_t session, uint64_t gen)
{
	for (const struct client_qp *c = l->clients; c && session; c = c->next)
		if (c->session == session && c->gen >= gen)
			return true;
	return false;
}

/* Before a newer connect of a session is accepted, its older queue pairs
 * go to the error state: the responder executes nothing that arrives on
 * them from then on, so no request the client gave up on lands after the
 * new connection is up (rdmapool(7), Fencing). */
static void fence_older(struct rdma_listener *l, uint64_t session, uint64_t gen)
{
	for (struct client_qp *c = l->clients; c && session; c = c->next) {
		if (c->session != session || c->gen >= gen || c->fenced)
			continue;
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		if (ibv_modify_qp(c->id->qp, &a, IBV_QP_STATE))
			rp_err("rdma: fencing a client's older connection: %s", strerror(errno));
		else
			rp_info("rdma client superseded by its newer connection: the old queue pair "
				"is fenced");
		c->fenced = true;
		rdma_disconnect(c->id);
	}
}

_Static_assert(RP_RDMA_CHALLENGE_KEEP_MS == 1000, "refusal() says \"a second\"");

static const char *refusal(int32_t status)
{
	switch (status) {
	case -EACCES: return "authentication failed (wrong cluster secret or name)";
	case -ETIME: return "its answer is to no challenge of ours (expired, used, from before a "
			    "restart: a replayed request?)";
	case -ENXIO: return "it wants another peer id";
	case -ESTALE: return "a newer connect of the same client, or of a newer lease holder of "
			     "its volume, was accepted already (fenced)";
	case -EBUSY: return "every challenge entry is held by a connect under a second old "
			    "(a flood of connect requests?)";
	default: return "not an rdmapool v3 connect request";
	}
}

/* A connect refused, said at most once a second with how many went unsaid
 * since: anyone may send connect requests, and a flood of them (HELLOs
 * that find the challenge table full, made-up answers) would fill the log. */
static void refuse(struct rdma_listener *l, struct rdma_cm_id *id, int32_t status)
{
	uint64_t now = rp_now_ms();
	if (now >= l->refused_said_ms + 1000) {
		if (l->refused_unsaid)
			rp_warn("rdma client refused: %s (and %lu more refused since the last such "
				"message)", refusal(status), l->refused_unsaid);
		else
			rp_warn("rdma client refused: %s", refusal(status));
		l->refused_said_ms = now;
		l->refused_unsaid = 0;
	} else {
		l->refused_unsaid++;
	}
	reject(id, status, NULL);
}

static void on_connect_request(struct rdma_listener *l, const struct rp_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	uint8_t cnonce[RP_NONCE_LEN], challenge[RP_NONCE_LEN];
	uint64_t session = 0, gen = 0;
	struct rp_rdma_req req;
	int32_t status = verify_request(l, ev, &req, cnonce, &session, &gen);
	if (status == 0 && (superseded(l, session, gen) ||
			    rp_fence_memo_admit(l->fences, session, gen) < 0))
		status = -ESTALE;
	if (status == RP_RDMA_CHALLENGE &&
	    (status = rp_rdma_challenge_issue(&l->challenges, &req, rp_now_ms(), challenge)) == 0) {
		reject(id, RP_RDMA_CHALLENGE, challenge);
		return;
	}
	if (status < 0) {
		refuse(l, id, status);
		return;
	}
	struct ibv_mr *mr = region_mr(l, id->verbs);
	struct client_qp *cq = calloc(1, sizeof(*cq));
	if (!mr || !cq) {
		free(cq);
		reject(id, -ENOMEM, NULL);
		return;
	}
	/* The server never posts work; a minimal queue pair suffices. */
	cq->id = id;
	cq->session = session;
	cq->gen = gen;
	cq->cq = ibv_create_cq(id->verbs, 2, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq->cq, .recv_cq = cq->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (!cq->cq || rdma_create_qp(id, rp_rdma_pd_for(id->verbs), &qa)) {
		rp_err("rdma: cannot create a queue pair for a client: %s", strerror(errno));
		if (cq->cq)
			ibv_destroy_cq(cq->cq);
		free(cq);
		reject(id, -ENOMEM, NULL);
		return;
	}
	id->context = cq;
	struct ibv_device_attr dattr;
	ibv_query_device(id->verbs, &dattr);
	uint8_t rep[RP_RDMA_REP_LEN] = { 0 }, bind[RP_BIND_SERVER_LEN];
	uint64_t addr = (uintptr_t)l->p.base;
	rp_put_le32(rep, RP_RDMA_REP_MAGIC);
	rp_put_le16(rep + 4, RP_WIRE_VERSION);
	rp_put_le32(rep + 12, mr->rkey);
	rp_put_le64(rep + 16, addr);
	rp_put_le64(rep + 24, l->p.size);
	memcpy(rep + 32, l->p.pool_uuid, 16);
	rp_auth_bind_server(bind, l->p.self->id, 0, l->p.pool_uuid, addr, l->p.size, mr->rkey);
	rp_auth_mac(l->secret, l->p.secret_len, RP_AUTH_LABEL_SERVER, cnonce,
		    req.nonce, l->p.cluster_name, bind, sizeof(bind), rep + 52);
	struct rdma_conn_param cp = {
		.private_data = rep,
		.private_data_len = sizeof(rep),
		.responder_resources = (uint8_t)RP_MIN(RP_MIN(dattr.max_qp_rd_atom, 16),
						       ev->initiator_depth),
		.initiator_depth = (uint8_t)RP_MIN(dattr.max_qp_init_rd_atom, ev->responder_resources),
		.rnr_retry_count = 7,
	};
	fence_older(l, session, gen);
	if (rdma_accept(id, &cp)) {
		rp_err("rdma_accept: %s", strerror(errno));
		rdma_destroy_qp(id);
		ibv_destroy_cq(cq->cq);
		free(cq);
		rdma_destroy_id(id);
		return;
	}
	cq->next = l->clients;
	l->clients = cq;
}

static void drop_client(struct rdma_listener *l, struct rdma_cm_id *id)
{
	struct client_qp *cq = id->context;
	if (!cq)
		return;
	for (struct client_qp **pp = &l->clients; *pp; pp = &(*pp)->next)
		if (*pp == cq) {
			*pp = cq->next;
			break;
		}
	rdma_destroy_qp(id);
	ibv_destroy_cq(cq->cq);
	free(cq);
	rdma_destroy_id(id);
}

static void *event_main(void *arg)
{
	struct rdma_listener *l = arg;
	while (!atomic_load(&l->stopping)) {
		struct rp_cm_event ev;
		int rc = rp_rdma_next_event(l->ech, 200, &ev);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc < 0) {
			rp_err("rdma event channel: %s", strerror(-rc));
			break;
		}
		switch (ev.type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			on_connect_request(l, &ev);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			rp_info("rdma client connected");
			atomic_fetch_add(&l->p.stats->connections_total, 1);
			atomic_fetch_add(&l->p.stats->connections, 1);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rp_info("rdma client disconnected");
			atomic_fetch_sub(&l->p.stats->connections, 1);
			drop_client(l, ev.id);
			break;
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
			rp_warn("rdma client: %s", rdma_event_str(ev.type));
			drop_client(l, ev.id);
			break;
		default:
			rp_debug("rdma event %s", rdma_event_str(ev.type));
		}
	}
	return NULL;
}

static void rdma_stop(struct rp_listener *h)
{
	struct rdma_listener *l = (struct rdma_listener *)h;
	atomic_store(&l->stopping, true);
	pthread_join(l->thread, NULL);
	rdma_destroy_id(l->lid);
	/* Client ids and region registrations go with the process. */
	memset(l->secret, 0, sizeof(l->secret));
	free(l);
}

/* Register the region before listening when the bound address names the
 * device: registering (and so faulting in) a large region can take longer
 * than a client's connect timeout, and would hold up every connect behind
 * the first. A wildcard address leaves it to the first connect per device. */
static int register_early(struct rdma_listener *l)
{
	struct ibv_context *ctx = l->lid->verbs;
	if (!ctx)
		return 0;
	uint64_t t0 = rp_now_ms();
	if (!region_mr(l, ctx))
		return errno ? -errno : -ENOMEM;
	struct ibv_device_attr da;
	int atomic_cap = ibv_query_device(ctx, &da) == 0 ? (int)da.atomic_cap : -1;
	rp_info("registered the %llu MiB region on %s in %llu ms (atomic_cap %s)",
		(unsigned long long)(l->p.size >> 20), ibv_get_device_name(ctx->device),
		(unsigned long long)(rp_now_ms() - t0),
		atomic_cap == IBV_ATOMIC_HCA ? "HCA" : atomic_cap == IBV_ATOMIC_GLOB ? "GLOB"
		: atomic_cap == IBV_ATOMIC_NONE ? "NONE" : "unknown");
	return 0;
}

int rp_rdma_listen(const struct rp_serve_params *p, struct rp_listener **out, char *err,
		   size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *res;
	char port[16];
	int rc;

	if (!rp_transport_rdma_available()) {
		snprintf(err, errlen, "no RDMA device on this host");
		return -ENODEV;
	}
	struct rdma_listener *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->head.stop = rdma_stop;
	l->p = *p;
	l->fences = p->fences ? p->fences : rp_fence_memo_open(&l->own_fences, sizeof(l->own_fences));
	memcpy(l->secret, p->secret, RP_MIN(p->secret_len, sizeof(l->secret)));
	l->p.secret = l->secret;
	snprintf(port, sizeof(port), "%u", p->self->port);
	rc = getaddrinfo(p->self->host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", p->self->host, gai_strerror(rc));
		free(l);
		return -EADDRNOTAVAIL;
	}
	l->ech = rdma_create_event_channel();
	bool bound = l->ech && rdma_create_id(l->ech, &l->lid, l, RDMA_PS_TCP) == 0 &&
		     rdma_bind_addr(l->lid, res->ai_addr) == 0;
	if (!bound || (rc = register_early(l)) < 0 || rdma_listen(l->lid, 64)) {
		rc = !bound || rc == 0 ? (errno ? -errno : -ENODEV) : rc;
		snprintf(err, errlen, "rdma listen on %s:%u: %s", p->self->host, p->self->port,
			 strerror(-rc));
		freeaddrinfo(res);
		if (l->lid)
			rdma_destroy_id(l->lid);
		if (l->ech)
			rdma_destroy_event_channel(l->ech);
		free(l);
		return rc;
	}
	freeaddrinfo(res);
	if (l->lid->verbs)
		rp_debug("rdma listener on device %s", ibv_get_device_name(l->lid->verbs->device));
	if (pthread_create(&l->thread, NULL, event_main, l) != 0) {
		rdma_destroy_id(l->lid);
		rdma_destroy_event_channel(l->ech);
		free(l);
		return -EAGAIN;
	}
	*out = &l->head;
	return 0;
}
