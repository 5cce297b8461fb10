/* tcp listener: a thread per client runs the handshake, then executes each
 * request against the region after checking key and bounds, so a client can
 * never touch memory outside the region. Compare-and-swap and fetch-and-add
 * use the CPU's atomic instructions, so they are atomic across all clients. */
#include "config.h"
#include "fence_memo.h"
#include "listener.h"
#include "transport_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>
#include <rdmapool/wire.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/uio.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CLIENTS 1024
#define HANDSHAKE_TIMEOUT_MS 5000

struct tcp_listener {
	struct rp_listener head;
	struct rp_serve_params p;
	uint8_t secret[RP_SECRET_MAX];
	uint32_t rkey;
	int lfd;
	pthread_t acceptor;
	atomic_bool stopping;
	pthread_mutex_t mu;
	pthread_cond_t idle;
	int clients[MAX_CLIENTS]; /* fds, -1 when free */
	struct client *cls[MAX_CLIENTS]; /* the same slots' clients, once authenticated */
	struct session *sessions[MAX_CLIENTS];
	/* holders' fences, past their connections (mu): the region's, or own */
	struct rp_fence_memo own_fences, *fences;
	int nclients;
};

/* A client connection object's connects (wire.h): the newest generation is
 * the only one whose requests execute. A newer connect takes the lock for
 * writing, so the requests of older ones in flight finish before it is
 * welcomed and none starts after. */
struct session {
	uint64_t id, gen;
	pthread_rwlock_t lock; /* each request holds it for reading */
	int refs;              /* connections (under the listener's mu) */
};

struct client {
	struct tcp_listener *l;
	int fd;
	int slot;
	struct session *sess; /* NULL: unfenced (rp_tcp_serve_stream) */
	uint64_t gen;
	char who[80];
};

/* Join the session (made on its first connect) as generation gen: older
 * connections are shut down, which wakes any blocked in a read, and waited
 * for. -ESTALE for a connect older than one already accepted. */
static int32_t session_join(struct tcp_listener *l, struct client *cl, uint64_t id, uint64_t gen)
{
	struct session *s = NULL;
	int free_slot = -1;
	rp_mutex_lock(&l->mu, RP_LK_SESSIONS);
	if (rp_fence_memo_admit(l->fences, id, gen) < 0) {
		rp_mutex_unlock(&l->mu);
		return -ESTALE;
	}
	for (int i = 0; i < MAX_CLIENTS && !s; i++) {
		if (l->sessions[i] && l->sessions[i]->id == id)
			s = l->sessions[i];
		else if (!l->sessions[i] && free_slot < 0)
			free_slot = i;
	}
	if (!s && free_slot >= 0 && (s = calloc(1, sizeof(*s)))) {
		s->id = id;
		pthread_rwlock_init(&s->lock, NULL);
		l->sessions[free_slot] = s;
	}
	if (!s) {
		rp_mutex_unlock(&l->mu);
		return -ENOMEM;
	}
	s->refs++;
	cl->sess = s;
	cl->gen = gen;
	int fenced = 0;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (l->cls[i] && l->cls[i]->sess == s && l->cls[i]->gen < gen) {
			shutdown(l->cls[i]->fd, SHUT_RDWR);
			fenced++;
		}
	if (fenced)
		rp_info("client %s: a newer connection of its client: %d older one(s) fenced",
			cl->who, fenced);
	l->cls[cl->slot] = cl;
	rp_mutex_unlock(&l->mu);
	rp_rwlock_wrlock(&s->lock, RP_LK_SESSION);
	int32_t st = gen > s->gen ? 0 : -ESTALE;
	if (st == 0)
		s->gen = gen;
	rp_rwlock_unlock(&s->lock);
	return st;
}

/* Has a newer connect of the client fenced this connection? */
static bool superseded(struct client *cl)
{
	if (!cl->sess)
		return false;
	rp_rwlock_rdlock(&cl->sess->lock, RP_LK_SESSION);
	bool old = cl->sess->gen != cl->gen;
	rp_rwlock_unlock(&cl->sess->lock);
	return old;
}

/* Called with the listener's mu held. */
static void session_leave(struct tcp_listener *l, struct client *cl)
{
	struct session *s = cl->sess;
	l->cls[cl->slot] = NULL;
	if (!s || --s->refs > 0)
		return;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (l->sessions[i] == s)
			l->sessions[i] = NULL;
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

static void describe(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[64] = "?", port[16] = "?";
	getnameinfo((const struct sockaddr *)ss, sizeof(*ss), host, sizeof(host), port, sizeof(port),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(buf, len, "%s:%s", host, port);
}

static int handshake(struct client *cl)
{
	struct tcp_listener *l = cl->l;
	uint8_t hello[RP_HELLO_LEN] = { 0 }, auth[RP_AUTH_LEN] = { 0 }, welcome[RP_WELCOME_LEN] = { 0 };
	uint8_t mac[RP_SHA256_LEN];
	struct timeval tv = { .tv_sec = HANDSHAKE_TIMEOUT_MS / 1000 };
	int rc;

	setsockopt(cl->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(cl->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	rp_put_le32(hello, RP_HELLO_MAGIC);
	rp_put_le16(hello + 4, RP_WIRE_VERSION);
	rp_random_bytes(hello + 8, RP_NONCE_LEN);
	/* magic and version first: a client of another version sends another
	 * length, and must hear why rather than wait for bytes never sent */
	if ((rc = rp_write_full(cl->fd, hello, sizeof(hello))) < 0 ||
	    (rc = rp_read_full(cl->fd, auth, 8)) < 0 ||
	    (rp_get_le32(auth) == RP_AUTH_MAGIC && rp_get_le16(auth + 4) == RP_WIRE_VERSION &&
	     (rc = rp_read_full(cl->fd, auth + 8, sizeof(auth) - 8)) < 0)) {
		rp_warn("client %s: handshake: %s", cl->who, rc == -EAGAIN ? "timed out" : strerror(-rc));
		return rc;
	}
	int32_t status = 0;
	uint32_t peer = rp_get_le32(auth + 24);
	uint64_t session = rp_get_le64(auth + RP_AUTH_SESSION_OFF);
	uint64_t gen = rp_get_le64(auth + RP_AUTH_GEN_OFF);
	if (rp_get_le32(auth) != RP_AUTH_MAGIC) {
		rp_warn("client %s: not an rdmapool client (bad magic)", cl->who);
		status = -EPROTO;
	} else if (rp_get_le16(auth + 4) != RP_WIRE_VERSION) {
		rp_warn("client %s: speaks protocol version %u, this server %u", cl->who,
			rp_get_le16(auth + 4), RP_WIRE_VERSION);
		status = -EPROTO;
	} else {
		rp_auth_mac(l->secret, l->p.secret_len, RP_AUTH_LABEL_CLIENT, hello + 8, auth + 8,
			    l->p.cluster_name, auth + RP_AUTH_BIND_OFF, RP_AUTH_BIND_LEN, mac);
		if (rp_ct_memcmp(mac, auth + RP_AUTH_MAC_OFF, RP_SHA256_LEN)) {
			rp_warn("client %s: refused: authentication failed (wrong cluster secret or name)",
				cl->who);
			status = -EACCES;
		} else if (peer != l->p.self->id) {
			rp_warn("client %s: refused: it wants peer %u, this is peer %u", cl->who, peer,
				l->p.self->id);
			status = -ENXIO;
		} else if (l->p.rdma_served) {
			rp_warn("client %s: refused: this pool serves rdma, whose atomics tcp's "
				"cannot join", cl->who);
			status = -EXDEV;
		} else if ((status = session_join(l, cl, session, gen)) == -ESTALE) {
			rp_warn("client %s: refused: a newer connect of the same client, or of a "
				"newer lease holder of its volume, was accepted already (fenced)",
				cl->who);
		}
	}
	rp_put_le32(welcome, RP_WELCOME_MAGIC);
	rp_put_le32(welcome + 4, (uint32_t)status);
	if (status != -EPROTO && status != -EACCES) {
		/* Only an authenticated client learns the region's size and key; the
		 * MAC covers the status too, so a refusal cannot be forged either (an
		 * unauthenticated client gets no MAC of ours at all). */
		uint64_t size = status == 0 ? l->p.size : 0;
		uint32_t rkey = status == 0 ? l->rkey : 0;
		uint8_t bind[RP_BIND_SERVER_LEN];
		rp_put_le64(welcome + 8, size);
		rp_put_le32(welcome + 16, rkey);
		memcpy(welcome + 24, l->p.pool_uuid, 16);
		rp_auth_bind_server(bind, peer, status, l->p.pool_uuid, 0, size, rkey);
		rp_auth_mac(l->secret, l->p.secret_len, RP_AUTH_LABEL_SERVER, auth + 8, hello + 8,
			    l->p.cluster_name, bind, sizeof(bind), welcome + 40);
	}
	rc = rp_write_full(cl->fd, welcome, sizeof(welcome));
	if (status < 0) {
		atomic_fetch_add(&l->p.stats->refused_total, 1);
		return status;
	}
	if (rc < 0)
		return rc;
	tv.tv_sec = 0;
	setsockopt(cl->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(cl->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(cl->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	return 0;
}

/* Check one request against the key and the region. */
static int32_t check(const struct tcp_listener *l, uint8_t opc, uint32_t rkey, uint64_t off,
		     uint32_t len)
{
	if (rkey != l->rkey)
		return -EACCES;
	switch (opc) {
	case RP_OP_READ:
	case RP_OP_WRITE:
		if (off > l->p.size || len > l->p.size - off)
			return -ERANGE;
		return 0;
	case RP_OP_CAS:
	case RP_OP_FAA:
		if (off % 8)
			return -EINVAL;
		if (off > l->p.size - 8 || l->p.size < 8)
			return -ERANGE;
		return 0;
	}
	return -EOPNOTSUPP;
}

/* The region is remote memory: clients read, write and update it at once
 * from as many connections as they like, with no order between them but
 * what their own protocol keeps (an RDMA NIC gives none either). These are
 * the server's only accesses to it, each the emulated NIC's DMA; the TSan
 * build is told so by name (tests/tsan.supp). */
static __attribute__((noinline)) void region_copy(uint8_t *p, const uint8_t *from, uint32_t len)
{
	memcpy(p, from, len);
}

/* A write's payload lands a chunk at a time, each once it has arrived
 * whole: a write cut in the middle (a reset, a sender stopped or killed)
 * leaves whole chunks, old or new, never a sector half of each, which a
 * reader on another connection would take for bytes no write made (seen
 * by the nemesis: a follower's read while the writer's connection was
 * reset, or while the writer was stopped in the middle of a send). An RDMA
 * NIC, which goes on when its process stops, lands a posted write whole. */
static __attribute__((noinline)) int region_recv(int fd, uint8_t *p, uint32_t len,
						 uint8_t chunk[RP_TCP_WRITE_PIECE])
{
	while (len) {
		uint32_t n = len < RP_TCP_WRITE_PIECE ? len : RP_TCP_WRITE_PIECE;
		int rc = rp_read_full(fd, chunk, n);
		if (rc < 0)
			return rc;
		region_copy(p, chunk, n);
		p += n;
		len -= n;
	}
	return 0;
}

static __attribute__((noinline)) int region_send(int fd, struct iovec *iov, size_t n)
{
	return rp_writev_full(fd, iov, n);
}

static __attribute__((noinline)) uint64_t region_cas(uint8_t *p, uint64_t cmp, uint64_t val)
{
	uint64_t expected = cmp;
	__atomic_compare_exchange_n((uint64_t *)p, &expected, val, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	return expected; /* the old value, whether or not it matched */
}

static __attribute__((noinline)) uint64_t region_faa(uint8_t *p, uint64_t add)
{
	return __atomic_fetch_add((uint64_t *)p, add, __ATOMIC_SEQ_CST);
}

/* The requests of one connection, in order, until it ends. */
static int serve_requests(struct client *cl, uint8_t *chunk)
{
	struct tcp_listener *l = cl->l;
	uint8_t *base = l->p.base;
	uint8_t req[RP_REQ_LEN], resp[RP_RESP_LEN];
	int rc;

	for (;;) {
		rc = rp_read_full(cl->fd, req, sizeof(req));
		if (rc == -ECONNRESET)
			return 0; /* client closed between requests */
		if (rc < 0)
			return rc;
		uint8_t opc = req[0];
		uint32_t rkey = rp_get_le32(req + 4);
		uint64_t id = rp_get_le64(req + 8);
		uint64_t off = rp_get_le64(req + 16);
		uint32_t len = rp_get_le32(req + 24);
		uint64_t cmp = rp_get_le64(req + 32), val = rp_get_le64(req + 40), result = 0;
		if (opc < RP_OP_READ || opc > RP_OP_FAA || len > RP_MAX_IO) {
			rp_warn("client %s: malformed request (op %u, len %u); closing", cl->who, opc, len);
			return -EPROTO;
		}
		int32_t status = check(l, opc, rkey, off, len);
		if (status == -EACCES)
			rp_warn("client %s: %s with wrong key 0x%08x refused", cl->who,
				rp_op_name(opc), rkey);
		else if (status < 0)
			rp_warn("client %s: %s of %u bytes at offset %llu refused: %s", cl->who,
				rp_op_name(opc), len, (unsigned long long)off, strerror(-status));
		if (status == 0) {
			atomic_fetch_add(&l->p.stats->tcp_ops[opc - RP_OP_READ], 1);
			if (opc == RP_OP_READ)
				atomic_fetch_add(&l->p.stats->tcp_read_bytes, len);
			else if (opc == RP_OP_WRITE)
				atomic_fetch_add(&l->p.stats->tcp_written_bytes, len);
		} else {
			atomic_fetch_add(&l->p.stats->tcp_refused_ops, 1);
		}
		/* fenced: a newer connect of this client was accepted, and it
		 * counts on nothing of this one landing after its welcome */
		if (cl->sess)
			rp_rwlock_rdlock(&cl->sess->lock, RP_LK_SESSION);
		if (cl->sess && cl->sess->gen != cl->gen) {
			rp_rwlock_unlock(&cl->sess->lock);
			return -ESTALE;
		}
		switch (status == 0 ? opc : 0) {
		case RP_OP_WRITE:
			rc = region_recv(cl->fd, base + off, len, chunk);
			break;
		case RP_OP_CAS:
			result = region_cas(base + off, cmp, val);
			break;
		case RP_OP_FAA:
			result = region_faa(base + off, val);
			break;
		default:
			/* a refused WRITE's payload is read and dropped to stay in step */
			if (opc == RP_OP_WRITE)
				rc = rp_discard_full(cl->fd, len);
		}
		if (cl->sess)
			rp_rwlock_unlock(&cl->sess->lock);
		if (rc < 0)
			return rc;
		uint32_t rlen = (opc == RP_OP_READ && status == 0) ? len : 0;
		rp_put_le64(resp, id);
		rp_put_le32(resp + 8, (uint32_t)status);
		rp_put_le32(resp + 12, rlen);
		rp_put_le64(resp + 16, result);
		rp_put_le64(resp + 24, 0);
		/* header and data in one send: one segment, one wake-up */
		/* (base + off only for a checked request: a refused offset may
		 * lie far outside, and forming that pointer is undefined) */
		struct iovec iov[2] = { { .iov_base = resp, .iov_len = sizeof(resp) },
					{ .iov_base = rlen ? base + off : NULL, .iov_len = rlen } };
		rc = region_send(cl->fd, iov, rlen ? 2 : 1);
		if (rc < 0)
			return rc;
	}
}

static int serve(struct client *cl)
{
	uint8_t *chunk = malloc(RP_TCP_WRITE_PIECE); /* (a write's payload, before it lands) */
	int rc = chunk ? serve_requests(cl, chunk) : -ENOMEM;
	free(chunk);
	return rc;
}

int rp_tcp_serve_stream(const struct rp_serve_params *p, uint32_t rkey, int fd)
{
	struct tcp_listener l = { .p = *p, .rkey = rkey, .lfd = -1 };
	struct client cl = { .l = &l, .fd = fd, .slot = -1 };
	snprintf(cl.who, sizeof(cl.who), "fd %d", fd);
	return serve(&cl);
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct tcp_listener *l = cl->l;
	int rc = handshake(cl);
	if (rc == 0) {
		rp_info("client %s connected", cl->who);
		atomic_fetch_add(&l->p.stats->connections_total, 1);
		atomic_fetch_add(&l->p.stats->connections, 1);
		rc = serve(cl);
		atomic_fetch_sub(&l->p.stats->connections, 1);
		if (rc == -ESTALE || superseded(cl))
			rp_info("client %s: superseded by its newer connection: closed, the "
				"requests it still had queued dropped", cl->who);
		else if (rc < 0 && !atomic_load(&l->stopping))
			rp_warn("client %s: connection lost: %s", cl->who, strerror(-rc));
		else
			rp_info("client %s disconnected", cl->who);
	}
	rp_mutex_lock(&l->mu, RP_LK_SESSIONS);
	session_leave(l, cl);
	close(cl->fd);
	l->clients[cl->slot] = -1;
	if (--l->nclients == 0)
		pthread_cond_broadcast(&l->idle);
	rp_mutex_unlock(&l->mu);
	free(cl);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct tcp_listener *l = arg;
	while (!atomic_load(&l->stopping)) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(l->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (!atomic_load(&l->stopping))
				rp_err("accept: %s", strerror(errno));
			if (errno == EMFILE || errno == ENFILE) {
				poll(NULL, 0, 100);
				continue;
			}
			break;
		}
		struct client *cl = calloc(1, sizeof(*cl));
		pthread_t t;
		rp_mutex_lock(&l->mu, RP_LK_SESSIONS);
		int slot = -1;
		for (int i = 0; i < MAX_CLIENTS && cl; i++)
			if (l->clients[i] < 0) {
				slot = i;
				break;
			}
		if (slot < 0 || atomic_load(&l->stopping)) {
			rp_mutex_unlock(&l->mu);
			rp_warn("refusing client: %s", slot < 0 ? "too many clients" : "shutting down");
			close(fd);
			free(cl);
			continue;
		}
		cl->l = l;
		cl->fd = fd;
		cl->slot = slot;
		describe(&ss, cl->who, sizeof(cl->who));
		l->clients[slot] = fd;
		l->nclients++;
		rp_mutex_unlock(&l->mu);
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, client_main, cl) != 0) {
			rp_mutex_lock(&l->mu, RP_LK_SESSIONS);
			l->clients[slot] = -1;
			l->nclients--;
			rp_mutex_unlock(&l->mu);
			close(fd);
			free(cl);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

static void tcp_stop(struct rp_listener *h)
{
	struct tcp_listener *l = (struct tcp_listener *)h;
	atomic_store(&l->stopping, true);
	shutdown(l->lfd, SHUT_RDWR);
	pthread_join(l->acceptor, NULL);
	close(l->lfd);
	rp_mutex_lock(&l->mu, RP_LK_SESSIONS);
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (l->clients[i] >= 0)
			shutdown(l->clients[i], SHUT_RDWR);
	while (l->nclients > 0)
		pthread_cond_wait(&l->idle, &l->mu);
	rp_mutex_unlock(&l->mu);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->idle);
	memset(l->secret, 0, sizeof(l->secret));
	free(l);
}

int rp_tcp_listen(const struct rp_serve_params *p, struct rp_listener **out, char *err,
		  size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *res;
	char port[16];
	int rc;

	snprintf(port, sizeof(port), "%u", p->self->port);
	rc = getaddrinfo(p->self->host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", p->self->host, gai_strerror(rc));
		return -EADDRNOTAVAIL;
	}
	struct tcp_listener *l = calloc(1, sizeof(*l));
	if (!l) {
		freeaddrinfo(res);
		return -ENOMEM;
	}
	l->head.stop = tcp_stop;
	l->p = *p;
	l->fences = p->fences ? p->fences : rp_fence_memo_open(&l->own_fences, sizeof(l->own_fences));
	memcpy(l->secret, p->secret, RP_MIN(p->secret_len, sizeof(l->secret)));
	l->p.secret = l->secret;
	rp_random_bytes(&l->rkey, sizeof(l->rkey));
	for (int i = 0; i < MAX_CLIENTS; i++)
		l->clients[i] = -1;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->idle, NULL);
	l->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (l->lfd >= 0)
		setsockopt(l->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l->lfd < 0 || bind(l->lfd, res->ai_addr, res->ai_addrlen) < 0 || listen(l->lfd, 128) < 0) {
		rc = -errno;
		snprintf(err, errlen, "tcp listen on %s:%u: %s", p->self->host, p->self->port,
			 strerror(-rc));
		freeaddrinfo(res);
		if (l->lfd >= 0)
			close(l->lfd);
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->idle);
		free(l);
		return rc;
	}
	freeaddrinfo(res);
	if (pthread_create(&l->acceptor, NULL, accept_main, l) != 0) {
		close(l->lfd);
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->idle);
		free(l);
		return -EAGAIN;
	}
	*out = &l->head;
	return 0;
}

void rp_listener_stop(struct rp_listener *l)
{
	if (l)
		l->stop(l);
}
