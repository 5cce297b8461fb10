/* rdma backend: an RC queue pair per pool, connected with librdmacm; the
 * pool's address, rkey and size arrive in the accept's private data after the
 * client proved the cluster secret in the request's. READ, WRITE, CMP_AND_SWP
 * and FETCH_AND_ADD are posted as work requests, one signalled per group
 * (selective signalling); a poller thread turns completions into op results,
 * unless the waiting thread polls them itself first (rdma_progress). */
#include "config.h"
#include "rdma_common.h"
#include "rdma_wire.h"
#include "transport_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>
#include <rdmapool/wire.h>

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SQ_DEPTH 1024
#define GROUPS (SQ_DEPTH / RP_GROUP_MAX)
/* After an abort, flush completions are expected; if the device never
 * delivers them, ops are failed anyway after this long. */
#define FLUSH_GRACE_MS 2000

struct rdma_mr {
	const struct rp_conn_vtbl *vt;
	struct ibv_mr *mr;
};

struct rdma_conn {
	struct rp_conn base;
	pthread_mutex_t mu; /* posting and reconnecting */
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	atomic_bool dead;
	atomic_int dead_err;
	atomic_bool stop;
	atomic_uint_fast64_t dead_since_ms;
	bool poller_running;
	pthread_t poller;
	struct rp_inflight inflight;
	uint64_t *atomic_slots; /* where CAS/FAA old values land: [GROUPS][RP_GROUP_MAX] */
	struct ibv_mr *atomic_mr;
};

static const struct rp_conn_vtbl rdma_vtbl;

int rp_transport_rdma_available(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	return list && n > 0;
}

static void to_error(struct rdma_conn *rc_, int err)
{
	int expected = 0;
	atomic_compare_exchange_strong(&rc_->dead_err, &expected, err);
	if (!atomic_exchange(&rc_->dead, true))
		atomic_store(&rc_->dead_since_ms, rp_now_ms());
	if (rc_->id && rc_->id->qp) {
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
		/* Moving to ERR flushes every outstanding work request. */
		ibv_modify_qp(rc_->id->qp, &attr, IBV_QP_STATE);
	}
}

static void handle_wc(struct rdma_conn *rc_, const struct ibv_wc *wc)
{
	uint64_t id = wc->wr_id;
	int status = rp_rdma_wc_errno(wc->status);
	uint32_t slot = RP_ID_SLOT(id), idx = RP_ID_INDEX(id);

	if (status == -ECANCELED && atomic_load(&rc_->dead_err))
		status = atomic_load(&rc_->dead_err);
	/* A completion implies every earlier work request in the group is done;
	 * copy the old values of the atomics among them. */
	for (uint32_t i = 0; i <= idx && slot < GROUPS; i++) {
		uint64_t iid = (id & ~0xffull) | i;
		struct rp_op *op = rp_inflight_peek(&rc_->inflight, iid);
		if (op && (op->opcode == RP_OP_CAS || op->opcode == RP_OP_FAA))
			op->result = rc_->atomic_slots[slot * RP_GROUP_MAX + i];
	}
	if (status < 0 && !atomic_load(&rc_->dead)) {
		rp_warn("peer %u: %s failed: %s (%s)", rc_->base.peer.id,
			ibv_wc_status_str(wc->status), strerror(-status),
			"queue pair is now in error; it is rebuilt on next use");
		to_error(rc_, status);
	}
	rp_inflight_complete(&rc_->inflight, id, status, true);
}

static void *poller_main(void *arg)
{
	struct rdma_conn *rc_ = arg;
	struct ibv_wc wc[32];

	while (!atomic_load(&rc_->stop)) {
		struct pollfd pfd[2] = { { .fd = rc_->cch->fd, .events = POLLIN },
					 { .fd = rc_->ech->fd, .events = POLLIN } };
		int n = poll(pfd, 2, 100);
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			struct ibv_cq *cq;
			void *ctx;
			if (ibv_get_cq_event(rc_->cch, &cq, &ctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				ibv_req_notify_cq(cq, 0);
			}
		}
		if (n > 0 && (pfd[1].revents & POLLIN)) {
			struct rp_cm_event ev;
			if (rp_rdma_next_event(rc_->ech, 0, &ev) == 0 &&
			    (ev.type == RDMA_CM_EVENT_DISCONNECTED ||
			     ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL)) {
				rp_warn("peer %u (%s:%u): %s", rc_->base.peer.id, rc_->base.peer.host,
					rc_->base.peer.port, rdma_event_str(ev.type));
				to_error(rc_, -ECONNRESET);
			}
		}
		/* Poll even without an event: cheap, and robust to a missed notify. */
		int got;
		while ((got = ibv_poll_cq(rc_->cq, 32, wc)) > 0)
			for (int i = 0; i < got; i++)
				handle_wc(rc_, &wc[i]);
		if (atomic_load(&rc_->dead) && rp_inflight_count(&rc_->inflight) > 0 &&
		    rp_now_ms() - atomic_load(&rc_->dead_since_ms) > FLUSH_GRACE_MS) {
			rp_err("peer %u: device gave no flush completions; failing ops",
			       rc_->base.peer.id);
			rp_inflight_fail_all(&rc_->inflight, atomic_load(&rc_->dead_err));
		}
	}
	return NULL;
}

/* A waiter's own polling (rp_completion_wait): what has completed, handled
 * by the thread that waits for it, with no wake-up in between. The queue
 * pair lock keeps the CQ from being torn down under us; when it is busy
 * (posting, reconnecting), the poller thread does the work as usual. */
static void rdma_progress(struct rp_conn *c)
{
	struct rdma_conn *rc_ = (struct rdma_conn *)c;
	struct ibv_wc wc[16];
	if (rp_mutex_trylock(&rc_->mu, RP_LK_CONN) != 0)
		return;
	int got = rc_->cq ? ibv_poll_cq(rc_->cq, 16, wc) : 0;
	for (int i = 0; i < got; i++)
		handle_wc(rc_, &wc[i]);
	rp_mutex_unlock(&rc_->mu);
}

static void teardown_qp(struct rdma_conn *rc_)
{
	if (rc_->poller_running) {
		atomic_store(&rc_->stop, true);
		pthread_join(rc_->poller, NULL);
		rc_->poller_running = false;
	}
	rp_inflight_close(&rc_->inflight, atomic_load(&rc_->dead_err) ? atomic_load(&rc_->dead_err) : -ECONNRESET);
	if (rc_->id) {
		if (rc_->id->qp) {
			rdma_disconnect(rc_->id);
			rdma_destroy_qp(rc_->id);
		}
		rdma_destroy_id(rc_->id);
		rc_->id = NULL;
	}
	if (rc_->cq)
		ibv_destroy_cq(rc_->cq);
	rc_->cq = NULL;
	if (rc_->cch)
		ibv_destroy_comp_channel(rc_->cch);
	rc_->cch = NULL;
	if (rc_->ech)
		rdma_destroy_event_channel(rc_->ech);
	rc_->ech = NULL;
}

/* A reject without our private data that says no listener has the port:
 * the IB CM's reason "invalid service ID" (RoCE, rxe among them) or
 * iWARP's connection refused. Another (a full backlog, a failed accept,
 * another protocol) is no reason to reconnect at once; iWARP reports a full
 * backlog as refused too, which costs only the backoff's absence there. */
#define IB_CM_REJ_INVALID_SERVICE_ID 8 /* (the kernel's ib_cm_rej_reason) */
static bool nothing_listens(int status)
{
	return status == IB_CM_REJ_INVALID_SERVICE_ID || status == -ECONNREFUSED;
}

/* expect_event's answer to a connect the server rejected with a challenge */
#define CHALLENGED 1

static int expect_event(struct rdma_conn *rc_, enum rdma_cm_event_type want, struct rp_cm_event *ev,
			char *err, size_t errlen)
{
	int rc = rp_rdma_next_event(rc_->ech, (int)rc_->base.connect_timeout_ms, ev);
	const struct rp_peer *p = &rc_->base.peer;
	if (rc < 0) {
		snprintf(err, errlen, "peer %u (%s:%u): rdma connect: waiting for %s: %s", p->id,
			 p->host, p->port, rdma_event_str(want), strerror(-rc));
		return rc;
	}
	if (ev->type != want) {
		int32_t st = 0;
		uint8_t challenge[RP_NONCE_LEN]; /* dial takes it from ev */
		int drc = ev->type == RDMA_CM_EVENT_REJECTED
				  ? rp_rdma_rej_decode(ev->private_data, ev->private_len, &st, challenge)
				  : -EPROTO;
		if (drc == 0 && st == RP_RDMA_CHALLENGE)
			return CHALLENGED;
		if (st != 0) {
			snprintf(err, errlen, "peer %u (%s:%u): refused: %s", p->id, p->host, p->port,
				 st == -EACCES ? "authentication failed (wrong cluster secret or name)"
				 : st == -ENXIO ? "the server at that address is another peer"
				 : st == -EBUSY ? "the server has too many connects under way (a "
						  "flood?): tried again later"
				 : st == -EPROTO || drc < 0 ? "the server speaks another protocol version"
						 : strerror(-st));
			/* (ECONNREFUSED only ever says that nothing listens: the
			 * pool layer tries that again at once, anything else after
			 * a backoff; a reject carries no proof, so none says so.
			 * A server too busy to challenge us is a transient failure:
			 * ECONNABORTED, as EBUSY means a live lease holder above) */
			if (st == -EBUSY)
				return -ECONNABORTED;
			return st < 0 && st != -ECONNREFUSED ? st : -EPROTO;
		}
		if (ev->type == RDMA_CM_EVENT_REJECTED && nothing_listens(ev->status)) {
			snprintf(err, errlen, "peer %u (%s:%u): rdma connect: %s (nothing listens there)",
				 p->id, p->host, p->port, strerror(ECONNREFUSED));
			return -ECONNREFUSED;
		}
		snprintf(err, errlen, "peer %u (%s:%u): rdma connect: got %s (status %d) instead of %s",
			 p->id, p->host, p->port, rdma_event_str(ev->type), ev->status,
			 rdma_event_str(want));
		if (ev->type == RDMA_CM_EVENT_UNREACHABLE)
			return -EHOSTUNREACH;
		return ev->status < 0 && ev->status != -ECONNREFUSED ? ev->status : -EPROTO;
	}
	return 0;
}

/* One connect request: event channel, id, route, queue pair, then req; the
 * answer is 0 (ESTABLISHED, in *ev), CHALLENGED (rejected with a challenge,
 * in *ev) or a negative errno. */
static int connect_once(struct rdma_conn *rc_, const uint8_t *req, struct rp_cm_event *ev,
			char *err, size_t errlen)
{
	struct rp_conn *c = &rc_->base;
	const struct rp_peer *p = &c->peer;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	char port[16];
	int rc;

	atomic_store(&rc_->stop, false);
	rc_->ech = rdma_create_event_channel();
	if (!rc_->ech) {
		snprintf(err, errlen, "peer %u: rdma_create_event_channel: %s", p->id, strerror(errno));
		return -errno ? -errno : -ENODEV;
	}
	if (rdma_create_id(rc_->ech, &rc_->id, rc_, RDMA_PS_TCP)) {
		rc = -errno;
		snprintf(err, errlen, "peer %u: rdma_create_id: %s", p->id, strerror(-rc));
		return rc;
	}
	snprintf(port, sizeof(port), "%u", p->port);
	rc = getaddrinfo(p->host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "peer %u: cannot resolve %s: %s", p->id, p->host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	rc = rdma_resolve_addr(rc_->id, NULL, res->ai_addr, (int)c->connect_timeout_ms);
	freeaddrinfo(res);
	if (rc) {
		rc = -errno;
		snprintf(err, errlen, "peer %u (%s:%u): rdma_resolve_addr: %s", p->id, p->host, p->port,
			 strerror(-rc));
		return rc;
	}
	if ((rc = expect_event(rc_, RDMA_CM_EVENT_ADDR_RESOLVED, ev, err, errlen)) < 0)
		return rc;
	if (rdma_resolve_route(rc_->id, (int)c->connect_timeout_ms)) {
		rc = -errno;
		snprintf(err, errlen, "peer %u: rdma_resolve_route: %s", p->id, strerror(-rc));
		return rc;
	}
	if ((rc = expect_event(rc_, RDMA_CM_EVENT_ROUTE_RESOLVED, ev, err, errlen)) < 0)
		return rc;
	struct ibv_context *ctx = rc_->id->verbs;
	const char *devname = ibv_get_device_name(ctx->device);
	if (p->device[0] && strcmp(p->device, devname) != 0) {
		snprintf(err, errlen, "peer %u: route goes over device %s, but \"device\" is %s", p->id,
			 devname, p->device);
		return -ENODEV;
	}
	struct ibv_pd *pd = rp_rdma_pd_for(ctx);
	if (!pd || (rc_->pd && rc_->pd != pd)) {
		snprintf(err, errlen, "peer %u: no protection domain on %s", p->id, devname);
		return -ENODEV;
	}
	rc_->pd = pd;
	struct ibv_device_attr dattr;
	if (ibv_query_device(ctx, &dattr)) {
		snprintf(err, errlen, "peer %u: ibv_query_device(%s) failed", p->id, devname);
		return -ENODEV;
	}
	if (dattr.atomic_cap == IBV_ATOMIC_NONE) {
		snprintf(err, errlen, "peer %u: device %s has no atomic operations", p->id, devname);
		return -EOPNOTSUPP;
	}
	if (!rc_->atomic_mr) {
		rc_->atomic_mr = ibv_reg_mr(pd, rc_->atomic_slots, GROUPS * RP_GROUP_MAX * 8,
					    IBV_ACCESS_LOCAL_WRITE);
		if (!rc_->atomic_mr) {
			rc = -errno;
			snprintf(err, errlen, "peer %u: ibv_reg_mr: %s", p->id, strerror(-rc));
			return rc;
		}
	}
	rc_->cch = ibv_create_comp_channel(ctx);
	rc_->cq = rc_->cch ? ibv_create_cq(ctx, SQ_DEPTH + 16, rc_, rc_->cch, 0) : NULL;
	if (!rc_->cq || ibv_req_notify_cq(rc_->cq, 0)) {
		snprintf(err, errlen, "peer %u: cannot create completion queue on %s", p->id, devname);
		return -ENOMEM;
	}
	struct ibv_qp_init_attr qa = {
		.send_cq = rc_->cq,
		.recv_cq = rc_->cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (rdma_create_qp(rc_->id, pd, &qa)) {
		rc = -errno;
		snprintf(err, errlen, "peer %u: rdma_create_qp: %s", p->id, strerror(-rc));
		return rc;
	}

	struct rdma_conn_param cp = {
		.private_data = req,
		.private_data_len = RP_RDMA_REQ_LEN,
		.responder_resources = (uint8_t)RP_MIN(dattr.max_qp_rd_atom, 16),
		.initiator_depth = (uint8_t)RP_MIN(dattr.max_qp_init_rd_atom, 16),
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	if (rdma_connect(rc_->id, &cp)) {
		rc = -errno;
		snprintf(err, errlen, "peer %u: rdma_connect: %s", p->id, strerror(-rc));
		return rc;
	}
	return expect_event(rc_, RDMA_CM_EVENT_ESTABLISHED, ev, err, errlen);
}

static void request_head(uint8_t req[RP_RDMA_REQ_LEN], uint16_t kind, uint32_t peer_id)
{
	memset(req, 0, RP_RDMA_REQ_LEN);
	rp_put_le32(req, RP_RDMA_REQ_MAGIC);
	rp_put_le16(req + 4, RP_WIRE_VERSION);
	rp_put_le16(req + 6, kind);
	rp_put_le32(req + 8, peer_id);
}

/* The accept: the server's MAC over our nonce, its challenge, the peer id
 * we asked for, the status, the pool uuid and the region. */
static int check_accept(struct rdma_conn *rc_, const uint8_t *cnonce, const uint8_t *challenge,
			const struct rp_cm_event *ev, char *err, size_t errlen)
{
	struct rp_conn *c = &rc_->base;
	struct rp_rdma_rep rep;
	uint8_t mac[RP_SHA256_LEN], bind[RP_BIND_SERVER_LEN];
	if (rp_rdma_rep_decode(ev->private_data, ev->private_len, &rep) < 0) {
		snprintf(err, errlen, "peer %u: accept carried no rdmapool v%u pool description",
			 c->peer.id, RP_WIRE_VERSION);
		return -EPROTO;
	}
	rp_auth_bind_server(bind, c->peer.id, 0, rep.uuid, rep.addr, rep.size, rep.rkey);
	rp_auth_mac(c->secret, c->secret_len, RP_AUTH_LABEL_SERVER, cnonce, challenge,
		    c->cluster_name, bind, sizeof(bind), mac);
	if (rp_ct_memcmp(mac, rep.mac, RP_SHA256_LEN)) {
		snprintf(err, errlen, "peer %u: server failed to prove the cluster secret", c->peer.id);
		return -EACCES;
	}
	c->rkey = rep.rkey;
	c->remote_addr = rep.addr;
	c->region_size = rep.size;
	memcpy(c->pool_uuid, rep.uuid, 16);
	return 0;
}

/* Connect in two steps: a HELLO with our nonce, which the server rejects
 * with a fresh challenge, then an AUTH that answers it (a MAC over both
 * nonces and the peer id); only that is accepted, with the region's key.
 * A captured request is worthless: the challenge it answers is used up, and
 * gone when the server restarts. */
static int dial(struct rdma_conn *rc_, char *err, size_t errlen)
{
	struct rp_conn *c = &rc_->base;
	uint8_t req[RP_RDMA_REQ_LEN], cnonce[RP_NONCE_LEN], challenge[RP_NONCE_LEN];
	uint8_t mac[RP_SHA256_LEN];
	struct rp_cm_event ev;

	rp_random_bytes(cnonce, sizeof(cnonce));
	uint64_t session, gen;
	rp_conn_next_connect(c, &session, &gen);
	uint8_t bind[RP_RDMA_BIND_LEN];
	request_head(req, RP_RDMA_HELLO, c->peer.id);
	memcpy(req + 16, cnonce, RP_NONCE_LEN);
	rp_put_le64(req + RP_RDMA_HELLO_SESSION_OFF, session);
	rp_put_le64(req + RP_RDMA_HELLO_GEN_OFF, gen);
	int rc = connect_once(rc_, req, &ev, err, errlen);
	if (rc != CHALLENGED) {
		if (rc == 0) {
			snprintf(err, errlen, "peer %u: server accepted a connect without "
				 "authentication", c->peer.id);
			rc = -EPROTO;
		}
		return rc;
	}
	int32_t st;
	rp_rdma_rej_decode(ev.private_data, ev.private_len, &st, challenge); /* checked: CHALLENGED */
	teardown_qp(rc_);

	request_head(req, RP_RDMA_AUTH, c->peer.id);
	memcpy(req + 16, challenge, RP_NONCE_LEN);
	rp_rdma_auth_bind(bind, c->peer.id, session, gen);
	rp_auth_mac(c->secret, c->secret_len, RP_AUTH_LABEL_CLIENT, challenge, cnonce,
		    c->cluster_name, bind, sizeof(bind), mac);
	memcpy(req + 32, mac, RP_RDMA_REQ_MAC_LEN);
	rc = connect_once(rc_, req, &ev, err, errlen);
	if (rc == CHALLENGED) {
		snprintf(err, errlen, "peer %u: server challenged an answered challenge", c->peer.id);
		rc = -EPROTO;
	}
	if (rc < 0 || (rc = check_accept(rc_, cnonce, challenge, &ev, err, errlen)) < 0)
		return rc;
	atomic_store(&rc_->dead_err, 0);
	atomic_store(&rc_->dead, false);
	rp_inflight_open(&rc_->inflight);
	if (pthread_create(&rc_->poller, NULL, poller_main, rc_) != 0)
		return -EAGAIN;
	rc_->poller_running = true;
	return 0;
}

static bool rdma_alive(void *arg)
{
	return !atomic_load(&((struct rdma_conn *)arg)->dead);
}

static int rdma_reconnect(struct rp_conn *c, char *err, size_t errlen)
{
	struct rdma_conn *rc_ = (struct rdma_conn *)c;
	int rc = 0;

	rp_mutex_lock(&rc_->mu, RP_LK_CONN);
	if (atomic_load(&rc_->dead)) {
		teardown_qp(rc_);
		rc = dial(rc_, err, errlen);
		if (rc < 0) {
			atomic_store(&rc_->dead, true);
			teardown_qp(rc_);
		}
	}
	rp_mutex_unlock(&rc_->mu);
	return rc;
}

static bool rdma_is_up(const struct rp_conn *c)
{
	return !atomic_load(&((const struct rdma_conn *)c)->dead);
}

static void rdma_post(struct rp_conn *c, struct rp_op *ops, size_t n)
{
	struct rdma_conn *rc_ = (struct rdma_conn *)c;
	struct ibv_send_wr wrs[RP_GROUP_MAX], *bad;
	struct ibv_sge sges[RP_GROUP_MAX];

	rp_mutex_lock(&rc_->mu, RP_LK_CONN);
	int rc = atomic_load(&rc_->dead) ? -ENOTCONN : 0;
	for (size_t base = 0; base < n; base += RP_GROUP_MAX) {
		uint32_t gn = (uint32_t)RP_MIN(n - base, RP_GROUP_MAX);
		struct rp_op *g = ops + base;
		int64_t token = rc < 0 ? rc : rp_inflight_add(&rc_->inflight, g, gn, rdma_alive, rc_);
		if (token < 0) {
			for (uint32_t i = 0; i < gn; i++)
				rp_op_complete(&g[i], (int)token);
			continue;
		}
		uint32_t slot = (uint32_t)(token & 0xffff), nwr = 0;
		for (uint32_t i = 0; i < gn; i++) {
			struct rp_op *op = &g[i];
			uint64_t id = ((uint64_t)token << 8) | i;
			struct ibv_send_wr *wr = &wrs[nwr];
			struct ibv_sge *sge = &sges[nwr];
			memset(wr, 0, sizeof(*wr));
			wr->wr_id = id;
			wr->sg_list = sge;
			wr->num_sge = 1;
			uint64_t raddr = c->remote_addr + op->offset;
			/* rp_conn_post let through only well-formed ops */
			if (op->opcode == RP_OP_READ || op->opcode == RP_OP_WRITE) {
				sge->addr = (uintptr_t)op->local;
				sge->length = op->len;
				sge->lkey = ((struct rdma_mr *)op->mr)->mr->lkey;
				wr->opcode = op->opcode == RP_OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
				wr->wr.rdma.remote_addr = raddr;
				wr->wr.rdma.rkey = c->rkey;
			} else {
				sge->addr = (uintptr_t)&rc_->atomic_slots[slot * RP_GROUP_MAX + i];
				sge->length = 8;
				sge->lkey = rc_->atomic_mr->lkey;
				wr->opcode = op->opcode == RP_OP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP
								     : IBV_WR_ATOMIC_FETCH_AND_ADD;
				wr->wr.atomic.remote_addr = raddr;
				wr->wr.atomic.rkey = c->rkey;
				wr->wr.atomic.compare_add = op->opcode == RP_OP_CAS ? op->compare : op->value;
				wr->wr.atomic.swap = op->value;
			}
			if (nwr > 0)
				wrs[nwr - 1].next = wr;
			nwr++;
		}
		if (nwr == 0)
			continue;
		wrs[nwr - 1].send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(rc_->id->qp, wrs, &bad)) {
			int perr = errno ? -errno : -EIO;
			rp_warn("peer %u: ibv_post_send: %s", c->peer.id, strerror(-perr));
			/* The posted part is flushed by the error state; the rest never
			 * reached the queue pair. */
			for (struct ibv_send_wr *w = bad; w; w = w->next)
				rp_inflight_complete(&rc_->inflight, w->wr_id, perr, false);
			to_error(rc_, perr);
			rc = perr;
		}
	}
	rp_mutex_unlock(&rc_->mu);
}

static void rdma_abort(struct rp_conn *c, int err)
{
	struct rdma_conn *rc_ = (struct rdma_conn *)c;
	/* -ECONNABORTED: dropped by its owner on purpose (rp_conn_drop) */
	if (!atomic_load(&rc_->dead) && err != -ECONNABORTED)
		rp_warn("peer %u (%s:%u): %s; resetting the queue pair", c->peer.id, c->peer.host,
			c->peer.port, err == -ETIMEDOUT ? "operation timed out" : strerror(-err));
	to_error(rc_, err);
}

static int rdma_mr_reg(struct rp_conn *c, void *buf, size_t len, struct rp_mr **out)
{
	struct rdma_conn *rc_ = (struct rdma_conn *)c;
	struct rdma_mr *mr = malloc(sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->vt = &rdma_vtbl;
	mr->mr = ibv_reg_mr(rc_->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr->mr) {
		int rc = errno ? -errno : -ENOMEM;
		free(mr);
		return rc;
	}
	*out = (struct rp_mr *)mr;
	return 0;
}

static void rdma_mr_dereg(struct rp_mr *m)
{
	struct rdma_mr *mr = (struct rdma_mr *)m;
	ibv_dereg_mr(mr->mr);
	free(mr);
}

static void rdma_close(struct rp_conn *c)
{
	struct rdma_conn *rc_ = (struct rdma_conn *)c;
	atomic_store(&rc_->dead_err, -ESHUTDOWN);
	teardown_qp(rc_);
	rp_conn_base_fini(c);
	if (rc_->atomic_mr)
		ibv_dereg_mr(rc_->atomic_mr);
	free(rc_->atomic_slots);
	rp_inflight_destroy(&rc_->inflight);
	pthread_mutex_destroy(&rc_->mu);
	free(rc_);
}

static const struct rp_conn_vtbl rdma_vtbl = {
	.name = "rdma",
	.post = rdma_post,
	.abort = rdma_abort,
	.mr_reg = rdma_mr_reg,
	.mr_dereg = rdma_mr_dereg,
	.reconnect = rdma_reconnect,
	.progress = rdma_progress,
	.is_up = rdma_is_up,
	.close = rdma_close,
};

int rp_rdma_conn_open(const struct rp_conn_params *p, struct rp_conn **out, char *err, size_t errlen)
{
	struct rdma_conn *rc_ = calloc(1, sizeof(*rc_));
	int rc;

	if (!rc_)
		return -ENOMEM;
	rp_conn_base_init(&rc_->base, &rdma_vtbl, p);
	rc_->base.kind = RP_TRANSPORT_RDMA;
	pthread_mutex_init(&rc_->mu, NULL);
	rc_->atomic_slots = aligned_alloc(64, GROUPS * RP_GROUP_MAX * 8);
	rc = rc_->atomic_slots ? rp_inflight_init(&rc_->inflight, GROUPS) : -ENOMEM;
	if (rc < 0) {
		free(rc_->atomic_slots);
		free(rc_);
		return rc;
	}
	rc = dial(rc_, err, errlen);
	if (rc == 0)
		rc = rp_conn_base_setup_bounce(&rc_->base);
	if (rc < 0) {
		rdma_close(&rc_->base);
		return rc;
	}
	*out = &rc_->base;
	return 0;
}
