/* tcp backend: the one-sided operations as request/response frames over one
 * TCP connection, served by the pool server's CPU. Requests from many threads
 * are pipelined; a receive thread matches responses to ops by id. Only that
 * thread completes posted ops, so a late response can never write into a
 * buffer whose owner has already been told the op failed; when it exits it
 * fails what is in flight and closes the table, so nothing posted after it
 * can wait for a completion that will not come. */
#include "config.h"
#include "transport_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>
#include <rdmapool/wire.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define TCP_INFLIGHT_GROUPS 512

struct tcp_mr {
	const struct rp_conn_vtbl *vt;
};

struct tcp_conn {
	struct rp_conn base;
	pthread_mutex_t mu;       /* serializes posting and reconnecting */
	pthread_mutex_t fd_mu;    /* guards fd against abort during a swap */
	int fd;
	atomic_bool dead;
	atomic_int dead_err;
	bool rx_running;
	pthread_t rx;
	struct rp_inflight inflight;
};

static const struct rp_conn_vtbl tcp_vtbl;

static void set_timeout(int fd, int opt, uint32_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

static int connect_timeout(const struct addrinfo *ai, uint32_t ms, int *out)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
	if (rc < 0 && errno != EINPROGRESS) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (rc < 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		rc = poll(&pfd, 1, (int)ms);
		if (rc <= 0) {
			close(fd);
			return rc == 0 ? -ETIMEDOUT : -errno;
		}
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr) {
			close(fd);
			return -soerr;
		}
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*out = fd;
	return 0;
}

/* The server's answer: its MAC over our nonce and its own, the peer id we
 * asked for, the status, the pool uuid, size and key; then the status. */
static int check_welcome(struct rp_conn *c, const uint8_t *hello, const uint8_t *cnonce,
			 const uint8_t *welcome, char *err, size_t errlen)
{
	uint8_t mac[RP_SHA256_LEN], bind[RP_BIND_SERVER_LEN];
	int32_t status = (int32_t)rp_get_le32(welcome + 4);
	uint64_t size = rp_get_le64(welcome + 8);
	uint32_t rkey = rp_get_le32(welcome + 16);
	if (rp_get_le32(welcome) != RP_WELCOME_MAGIC) {
		snprintf(err, errlen, "peer %u (%s:%u): not an rdmapoold (bad answer)", c->peer.id,
			 c->peer.host, c->peer.port);
		return -EPROTO;
	}
	rp_auth_bind_server(bind, c->peer.id, status, welcome + 24, 0, size, rkey);
	rp_auth_mac(c->secret, c->secret_len, RP_AUTH_LABEL_SERVER, cnonce, hello + 8,
		    c->cluster_name, bind, sizeof(bind), mac);
	bool proved = rp_ct_memcmp(mac, welcome + 40, RP_SHA256_LEN) == 0;
	if (status == 0 && !proved) {
		snprintf(err, errlen, "peer %u (%s:%u): server failed to prove the cluster secret",
			 c->peer.id, c->peer.host, c->peer.port);
		return -EACCES;
	}
	if (status != 0) {
		/* a refusal without the server's proof is only reported as such,
		 * and is never "fenced" (which stops a writer for good) */
		int rc = status < 0 ? status : -EPROTO;
		/* (ECONNREFUSED only ever says that nothing listens: the pool
		 * layer tries that again at once, anything else after a backoff) */
		bool said = !proved && (rc == -ESTALE || rc == -ECONNREFUSED);
		if (said)
			rc = -EPROTO;
		snprintf(err, errlen, "peer %u (%s:%u): refused%s: %s", c->peer.id, c->peer.host,
			 c->peer.port, proved || rc == -EACCES ? "" : " (unproved)",
			 rc == -EACCES ? "authentication failed (wrong cluster secret or name)"
			 : rc == -ENXIO ? "the server at that address is another peer (check the "
					  "peer's host and port in the cluster file)"
			 : rc == -EXDEV ? "the pool is served over rdma, and its atomics (the NIC's) "
					  "cannot be mixed with tcp's (the server CPU's): use transport "
					  "rdma (or auto on a machine with an RDMA device), or serve "
					  "that pool with transport tcp"
			 : said ? strerror(-status) : strerror(-rc));
		return rc;
	}
	c->region_size = size;
	c->rkey = rkey;
	memcpy(c->pool_uuid, welcome + 24, 16);
	return 0;
}

/* Connect to the peer and run the handshake; fills region size and key. */
static int dial(struct tcp_conn *tc, int *out, char *err, size_t errlen)
{
	struct rp_conn *c = &tc->base;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char port[16];
	int fd = -1, rc;

	snprintf(port, sizeof(port), "%u", c->peer.port);
	rc = getaddrinfo(c->peer.host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "peer %u: cannot resolve %s: %s", c->peer.id, c->peer.host,
			 gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	rc = -EHOSTUNREACH;
	/* Nothing listens (no backoff) when an address refused and none took
	 * long to fail: one that timed out would again. An address that fails
	 * at once otherwise (::1 with IPv6 off) says nothing either way. */
	bool refused = false, slow = false;
	for (ai = res; ai; ai = ai->ai_next) {
		rc = connect_timeout(ai, c->connect_timeout_ms, &fd);
		if (rc == 0)
			break;
		refused |= rc == -ECONNREFUSED;
		slow |= rc == -ETIMEDOUT || rc == -EHOSTUNREACH;
	}
	freeaddrinfo(res);
	if (rc < 0) {
		snprintf(err, errlen, "peer %u (%s:%u): connect: %s", c->peer.id, c->peer.host,
			 c->peer.port, strerror(-rc));
		if (refused && !slow)
			return -ECONNREFUSED;
		return rc == -ECONNREFUSED ? -EHOSTUNREACH : rc;
	}

	uint8_t hello[RP_HELLO_LEN], auth[RP_AUTH_LEN], welcome[RP_WELCOME_LEN];
	uint8_t cnonce[RP_NONCE_LEN];
	set_timeout(fd, SO_RCVTIMEO, c->connect_timeout_ms);
	set_timeout(fd, SO_SNDTIMEO, c->connect_timeout_ms);
	rc = rp_read_full(fd, hello, sizeof(hello));
	if (rc < 0) {
		snprintf(err, errlen, "peer %u (%s:%u): no greeting from pool server: %s", c->peer.id,
			 c->peer.host, c->peer.port, rc == -EAGAIN ? "timed out" : strerror(-rc));
		goto fail;
	}
	if (rp_get_le32(hello) != RP_HELLO_MAGIC) {
		snprintf(err, errlen, "peer %u (%s:%u): not an rdmapoold (bad greeting magic)",
			 c->peer.id, c->peer.host, c->peer.port);
		rc = -EPROTO;
		goto fail;
	}
	if (rp_get_le16(hello + 4) != RP_WIRE_VERSION) {
		snprintf(err, errlen, "peer %u: server speaks protocol version %u, this client %u",
			 c->peer.id, rp_get_le16(hello + 4), RP_WIRE_VERSION);
		rc = -EPROTO;
		goto fail;
	}
	rp_random_bytes(cnonce, sizeof(cnonce));
	memset(auth, 0, sizeof(auth));
	rp_put_le32(auth, RP_AUTH_MAGIC);
	rp_put_le16(auth + 4, RP_WIRE_VERSION);
	memcpy(auth + 8, cnonce, RP_NONCE_LEN);
	rp_put_le32(auth + 24, c->peer.id);
	uint64_t session, gen;
	rp_conn_next_connect(c, &session, &gen);
	rp_put_le64(auth + RP_AUTH_SESSION_OFF, session);
	rp_put_le64(auth + RP_AUTH_GEN_OFF, gen);
	rp_auth_mac(c->secret, c->secret_len, RP_AUTH_LABEL_CLIENT, hello + 8, cnonce,
		    c->cluster_name, auth + RP_AUTH_BIND_OFF, RP_AUTH_BIND_LEN, auth + RP_AUTH_MAC_OFF);
	rc = rp_write_full(fd, auth, sizeof(auth));
	if (rc == 0)
		rc = rp_read_full(fd, welcome, sizeof(welcome));
	if (rc < 0) {
		snprintf(err, errlen, "peer %u (%s:%u): handshake: %s", c->peer.id, c->peer.host,
			 c->peer.port, strerror(-rc));
		goto fail;
	}
	if ((rc = check_welcome(c, hello, cnonce, welcome, err, errlen)) < 0)
		goto fail;
	set_timeout(fd, SO_RCVTIMEO, 0);
	/* A send stuck on a peer that stopped reading must fail, not block. */
	set_timeout(fd, SO_SNDTIMEO, c->op_timeout_ms);
	*out = fd;
	return 0;
fail:
	close(fd);
	return rc;
}

/* Down for good. A clean close (-ESHUTDOWN) ends with a FIN. On any error
 * the connection is reset instead: a FIN would follow the requests still in
 * the send queue, which the server would then execute late, after they were
 * reported failed (over a network that was only cut off for a while); the
 * reset drops them here and tells the server to stop. SHUT_RD first wakes
 * the receive thread without sending anything. */
static void mark_dead(struct tcp_conn *tc, int err)
{
	int expected = 0;
	atomic_compare_exchange_strong(&tc->dead_err, &expected, err);
	atomic_store(&tc->dead, true);
	rp_mutex_lock(&tc->fd_mu, RP_LK_CONN_FD);
	if (tc->fd >= 0 && err == -ESHUTDOWN) {
		shutdown(tc->fd, SHUT_RDWR);
	} else if (tc->fd >= 0) {
		struct sockaddr unspec = { .sa_family = AF_UNSPEC };
		shutdown(tc->fd, SHUT_RD);
		connect(tc->fd, &unspec, sizeof(unspec)); /* tcp_disconnect: RST, queue purged */
	}
	rp_mutex_unlock(&tc->fd_mu);
}

static void *rx_main(void *arg)
{
	struct tcp_conn *tc = arg;
	int fd = tc->fd, rc;
	uint8_t resp[RP_RESP_LEN];

	for (;;) {
		rc = rp_read_full(fd, resp, sizeof(resp));
		if (rc < 0)
			break;
		uint64_t id = rp_get_le64(resp);
		int32_t status = (int32_t)rp_get_le32(resp + 8);
		uint32_t len = rp_get_le32(resp + 12);
		struct rp_op *op = rp_inflight_peek(&tc->inflight, id);
		if (len > RP_MAX_IO) {
			rc = -EPROTO;
			break;
		}
		if (op && op->opcode == RP_OP_READ && status == 0 && len == op->len) {
			rc = rp_read_full(fd, op->local, len);
		} else {
			if (op && status == 0 && len != (op->opcode == RP_OP_READ ? op->len : 0))
				status = -EPROTO;
			rc = rp_discard_full(fd, len);
		}
		if (rc < 0)
			break;
		if (op)
			op->result = rp_get_le64(resp + 16);
		rp_inflight_complete(&tc->inflight, id, status, false);
	}
	if (rc == -EPROTO)
		rp_err("peer %u: malformed response, dropping connection", tc->base.peer.id);
	mark_dead(tc, rc);
	rp_inflight_close(&tc->inflight, atomic_load(&tc->dead_err));
	return NULL;
}

static bool tcp_alive(void *arg)
{
	return !atomic_load(&((struct tcp_conn *)arg)->dead);
}

static int tcp_reconnect(struct rp_conn *c, char *err, size_t errlen)
{
	struct tcp_conn *tc = (struct tcp_conn *)c;
	int fd, rc = 0;

	rp_mutex_lock(&tc->mu, RP_LK_CONN);
	if (!atomic_load(&tc->dead))
		goto out;
	if (tc->rx_running) {
		pthread_join(tc->rx, NULL);
		tc->rx_running = false;
	}
	rc = dial(tc, &fd, err, errlen);
	if (rc < 0)
		goto out;
	rp_mutex_lock(&tc->fd_mu, RP_LK_CONN_FD);
	if (tc->fd >= 0)
		close(tc->fd);
	tc->fd = fd;
	rp_mutex_unlock(&tc->fd_mu);
	atomic_store(&tc->dead_err, 0);
	atomic_store(&tc->dead, false);
	rp_inflight_open(&tc->inflight);
	if (pthread_create(&tc->rx, NULL, rx_main, tc) != 0) {
		mark_dead(tc, -EAGAIN);
		rc = -EAGAIN;
		goto out;
	}
	tc->rx_running = true;
out:
	rp_mutex_unlock(&tc->mu);
	return rc;
}

static bool tcp_is_up(const struct rp_conn *c)
{
	return !atomic_load(&((const struct tcp_conn *)c)->dead);
}

static void tcp_post(struct rp_conn *c, struct rp_op *ops, size_t n)
{
	struct tcp_conn *tc = (struct tcp_conn *)c;

	rp_mutex_lock(&tc->mu, RP_LK_CONN);
	int rc = atomic_load(&tc->dead) ? -ENOTCONN : 0;
	for (size_t base = 0; base < n; base += RP_GROUP_MAX) {
		uint32_t gn = (uint32_t)RP_MIN(n - base, RP_GROUP_MAX);
		struct rp_op *g = ops + base;
		if (rc < 0) {
			for (uint32_t i = 0; i < gn; i++)
				rp_op_complete(&g[i], rc);
			continue;
		}
		int64_t token = rp_inflight_add(&tc->inflight, g, gn, tcp_alive, tc);
		if (token < 0) {
			rc = (int)token;
			for (uint32_t i = 0; i < gn; i++)
				rp_op_complete(&g[i], rc);
			continue;
		}
		/* the whole group, headers and payloads, in one send */
		uint8_t req[RP_GROUP_MAX][RP_REQ_LEN];
		struct iovec iov[2 * RP_GROUP_MAX];
		size_t niov = 0;
		for (uint32_t i = 0; i < gn; i++) {
			uint64_t id = ((uint64_t)token << 8) | i;
			memset(req[i], 0, RP_REQ_LEN);
			req[i][0] = (uint8_t)g[i].opcode;
			rp_put_le32(req[i] + 4, c->rkey);
			rp_put_le64(req[i] + 8, id);
			rp_put_le64(req[i] + 16, g[i].offset);
			rp_put_le32(req[i] + 24, g[i].len);
			rp_put_le64(req[i] + 32, g[i].compare);
			rp_put_le64(req[i] + 40, g[i].value);
			iov[niov++] = (struct iovec){ .iov_base = req[i], .iov_len = RP_REQ_LEN };
			if (g[i].opcode == RP_OP_WRITE)
				iov[niov++] = (struct iovec){ .iov_base = g[i].local, .iov_len = g[i].len };
		}
		rc = rp_writev_full(tc->fd, iov, niov);
		if (rc < 0) {
			/* The receive thread fails these ops and the rest when the
			 * connection goes down; the groups after it are failed here. */
			rc = rc == -EAGAIN ? -ETIMEDOUT : rc;
			mark_dead(tc, rc);
		}
	}
	rp_mutex_unlock(&tc->mu);
}

static void tcp_abort(struct rp_conn *c, int err)
{
	struct tcp_conn *tc = (struct tcp_conn *)c;
	/* -ECONNABORTED: dropped by its owner on purpose (rp_conn_drop) */
	if (!atomic_load(&tc->dead) && err != -ECONNABORTED)
		rp_warn("peer %u (%s:%u): %s; dropping the connection", c->peer.id, c->peer.host,
			c->peer.port, err == -ETIMEDOUT ? "operation timed out" : strerror(-err));
	mark_dead(tc, err);
}

static int tcp_mr_reg(struct rp_conn *c, void *buf, size_t len, struct rp_mr **out)
{
	(void)c;
	(void)buf;
	(void)len;
	struct tcp_mr *mr = malloc(sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->vt = &tcp_vtbl;
	*out = (struct rp_mr *)mr;
	return 0;
}

static void tcp_mr_dereg(struct rp_mr *mr)
{
	free(mr);
}

static void tcp_close(struct rp_conn *c)
{
	struct tcp_conn *tc = (struct tcp_conn *)c;
	mark_dead(tc, -ESHUTDOWN);
	if (tc->rx_running)
		pthread_join(tc->rx, NULL);
	if (tc->fd >= 0)
		close(tc->fd);
	rp_conn_base_fini(c);
	rp_inflight_destroy(&tc->inflight);
	pthread_mutex_destroy(&tc->mu);
	pthread_mutex_destroy(&tc->fd_mu);
	free(tc);
}

static const struct rp_conn_vtbl tcp_vtbl = {
	.name = "tcp",
	.post = tcp_post,
	.abort = tcp_abort,
	.mr_reg = tcp_mr_reg,
	.mr_dereg = tcp_mr_dereg,
	.reconnect = tcp_reconnect,
	.is_up = tcp_is_up,
	.close = tcp_close,
};

int rp_tcp_conn_open(const struct rp_conn_params *p, struct rp_conn **out, char *err, size_t errlen)
{
	struct tcp_conn *tc = calloc(1, sizeof(*tc));
	int rc;

	if (!tc)
		return -ENOMEM;
	rp_conn_base_init(&tc->base, &tcp_vtbl, p);
	tc->base.kind = RP_TRANSPORT_TCP;
	tc->fd = -1;
	pthread_mutex_init(&tc->mu, NULL);
	pthread_mutex_init(&tc->fd_mu, NULL);
	rc = rp_inflight_init(&tc->inflight, TCP_INFLIGHT_GROUPS);
	if (rc == 0)
		rc = dial(tc, &tc->fd, err, errlen);
	if (rc == 0 && pthread_create(&tc->rx, NULL, rx_main, tc) != 0)
		rc = -EAGAIN;
	if (rc < 0) {
		if (tc->fd >= 0)
			close(tc->fd);
		tc->fd = -1;
		if (tc->inflight.groups)
			rp_inflight_destroy(&tc->inflight);
		rp_conn_base_fini(&tc->base);
		pthread_mutex_destroy(&tc->mu);
		pthread_mutex_destroy(&tc->fd_mu);
		free(tc);
		return rc;
	}
	tc->rx_running = true;
	rc = rp_conn_base_setup_bounce(&tc->base);
	if (rc < 0) {
		tcp_close(&tc->base);
		return rc;
	}
	*out = &tc->base;
	return 0;
}
