/* rdma listener: admits clients that prove the cluster secret in their
 * connect request, and answers with the region's address, rkey and size in the
 * accept's private data. The region is registered once per device for remote
 * read, write and atomics; after that the server's CPU is not on the data path:
 * this thread only handles connection events. */
#include "config.h"
#include "listener.h"
#include "rdma_common.h"
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
#define REPLAY_RING 1024

struct client_qp {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
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
	uint8_t seen[REPLAY_RING][RP_NONCE_LEN]; /* recent nonces: no replays */
	unsigned seen_next;
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
			return mr;
		}
	}
	return NULL;
}

static int32_t verify_request(struct rdma_listener *l, const struct rp_cm_event *ev)
{
	const uint8_t *req = ev->private_data;
	uint8_t mac[RP_SHA256_LEN], zeros[RP_NONCE_LEN] = { 0 };

	if (ev->private_len < RP_RDMA_REQ_LEN || rp_get_le32(req) != RP_RDMA_REQ_MAGIC)
		return -EPROTO;
	if (rp_get_le16(req + 4) != RP_WIRE_VERSION)
		return -EPROTO;
	uint64_t stamp = rp_get_le64(req + 8), now = rp_wall_ns();
	if (stamp + RP_RDMA_STAMP_WINDOW_NS < now || stamp > now + RP_RDMA_STAMP_WINDOW_NS)
		return -ETIME;
	rp_auth_mac(l->secret, l->p.secret_len, RP_AUTH_LABEL_CLIENT, req + 16, zeros,
		    l->p.cluster_name, stamp, mac);
	if (rp_ct_memcmp(mac, req + 32, RP_RDMA_MAC_LEN))
		return -EACCES;
	for (unsigned i = 0; i < REPLAY_RING; i++)
		if (memcmp(l->seen[i], req + 16, RP_NONCE_LEN) == 0)
			return -EACCES;
	memcpy(l->seen[l->seen_next], req + 16, RP_NONCE_LEN);
	l->seen_next = (l->seen_next + 1) % REPLAY_RING;
	return 0;
}

static void reject(struct rdma_cm_id *id, int32_t status)
{
	uint8_t rej[12] = { 0 };
	rp_put_le32(rej, RP_RDMA_REP_MAGIC);
	rp_put_le16(rej + 4, RP_WIRE_VERSION);
	rp_put_le32(rej + 8, (uint32_t)status);
	rdma_reject(id, rej, sizeof(rej));
	rdma_destroy_id(id);
}

static void on_connect_request(struct rdma_listener *l, const struct rp_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	int32_t status = verify_request(l, ev);
	if (status < 0) {
		rp_warn("rdma client refused: %s", status == -EACCES ? "authentication failed (wrong cluster secret, name, or a replayed request)"
				  : status == -ETIME ? "request timestamp outside the allowed window (clock skew?)"
						     : "not an rdmapool v1 connect request");
		reject(id, status);
		return;
	}
	struct ibv_mr *mr = region_mr(l, id->verbs);
	struct client_qp *cq = calloc(1, sizeof(*cq));
	if (!mr || !cq) {
		free(cq);
		reject(id, -ENOMEM);
		return;
	}
	/* The server never posts work; a minimal queue pair suffices. */
	cq->id = id;
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
		reject(id, -ENOMEM);
		return;
	}
	id->context = cq;
	struct ibv_device_attr dattr;
	ibv_query_device(id->verbs, &dattr);
	uint8_t rep[RP_RDMA_REP_LEN] = { 0 }, mac[RP_SHA256_LEN], zeros[RP_NONCE_LEN] = { 0 };
	uint64_t addr = (uintptr_t)l->p.base;
	rp_put_le32(rep, RP_RDMA_REP_MAGIC);
	rp_put_le16(rep + 4, RP_WIRE_VERSION);
	rp_put_le32(rep + 12, mr->rkey);
	rp_put_le64(rep + 16, addr);
	rp_put_le64(rep + 24, l->p.size);
	rp_auth_mac(l->secret, l->p.secret_len, RP_AUTH_LABEL_SERVER, ev->private_data + 16, zeros,
		    l->p.cluster_name, addr ^ l->p.size ^ mr->rkey, mac);
	memcpy(rep + 32, mac, RP_RDMA_MAC_LEN);
	struct rdma_conn_param cp = {
		.private_data = rep,
		.private_data_len = sizeof(rep),
		.responder_resources = (uint8_t)RP_MIN(RP_MIN(dattr.max_qp_rd_atom, 16),
						       ev->initiator_depth),
		.initiator_depth = (uint8_t)RP_MIN(dattr.max_qp_init_rd_atom, ev->responder_resources),
		.rnr_retry_count = 7,
	};
	if (rdma_accept(id, &cp)) {
		rp_err("rdma_accept: %s", strerror(errno));
		rdma_destroy_qp(id);
		ibv_destroy_cq(cq->cq);
		free(cq);
		rdma_destroy_id(id);
	}
}

static void drop_client(struct rdma_cm_id *id)
{
	struct client_qp *cq = id->context;
	if (!cq)
		return;
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
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rp_info("rdma client disconnected");
			drop_client(ev.id);
			break;
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
			rp_warn("rdma client: %s", rdma_event_str(ev.type));
			drop_client(ev.id);
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
