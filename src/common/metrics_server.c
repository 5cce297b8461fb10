/* The metrics endpoint: a thread that answers GET /metrics with
 * rp_metrics_render() on a unix socket and optionally a TCP port. */
#include "config.h"

#include <rdmapool/log.h>
#include <rdmapool/metrics.h>
#include <rdmapool/metrics_server.h>
#include <rdmapool/util.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_PENDING 16    /* connections read at once */
#define REQUEST_MS 2000   /* a connection's whole time to send its request */
#define SWEEP_AGE_S 10    /* a younger socket's daemon may be between bind and listen */

/* A connection whose request is still coming in: read as bytes arrive, so a
 * client that sends nothing (or a byte a second) holds only its own slot,
 * for REQUEST_MS at most. */
struct pending {
	int fd;               /* -1: free */
	size_t got;
	uint64_t deadline_ms; /* rp_now_ms */
	char req[2048];
};

struct rp_metrics_server {
	int ufd, tfd;
	struct pending pend[MAX_PENDING];
	int stop[2];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
};

void rp_mount_socket(const char *kind, const char *mountpoint, char *out, size_t len)
{
	/* FNV-1a: a fixed-length name for any path */
	uint64_t h = 1469598103934665603ull;
	for (const char *c = mountpoint; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	snprintf(out, len, "%s/%s-%016llx.sock", RP_METRICS_DIR, kind, (unsigned long long)h);
}

/* ---- serving ---- */

/* Sent within REQUEST_MS in all: a client that reads a byte now and then
 * does not hold the thread (each send's own timeout is 2 s too). */
static void reply(int fd, const char *status, const char *body, size_t len)
{
	uint64_t deadline = rp_now_ms() + REQUEST_MS;
	char head[160];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, len);
	if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n)
		return;
	for (size_t off = 0; off < len && rp_now_ms() < deadline;) {
		ssize_t w = send(fd, body + off, len - off, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static bool request_complete(const struct pending *c)
{
	return strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n") ||
	       c->got == sizeof(c->req) - 1;
}

/* The request is in (the request line is all we need; headers are read
 * and ignored): the reply, sent within the socket's 2 s send timeout. */
static void answer(int fd, const char *req)
{
	struct timeval tv = { .tv_sec = 2 };
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (strncmp(req, "GET / ", 6) != 0 && strncmp(req, "GET /metrics ", 13) != 0 &&
	    strncmp(req, "GET /metrics\r", 13) != 0) {
		static const char nf[] = "only GET /metrics is served here\n";
		reply(fd, "404 Not Found", nf, sizeof(nf) - 1);
		return;
	}
	size_t len;
	char *body = rp_metrics_render(&len);
	if (!body) {
		static const char oom[] = "out of memory\n";
		reply(fd, "500 Internal Server Error", oom, sizeof(oom) - 1);
		return;
	}
	reply(fd, "200 OK", body, len);
	free(body);
}

static void drop(struct pending *c)
{
	close(c->fd);
	c->fd = -1;
}

/* A new connection takes a free slot, or the one whose time runs out first. */
static void admit(struct rp_metrics_server *s, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		/* out of descriptors: the listener stays readable, so poll would
		 * return at once, again and again; pause instead of spinning */
		if (errno == EMFILE || errno == ENFILE)
			poll(NULL, 0, 100);
		return;
	}
	struct pending *slot = &s->pend[0];
	for (int i = 0; i < MAX_PENDING; i++) {
		if (s->pend[i].fd < 0) {
			slot = &s->pend[i];
			break;
		}
		if (s->pend[i].deadline_ms < slot->deadline_ms)
			slot = &s->pend[i];
	}
	if (slot->fd >= 0)
		drop(slot);
	slot->fd = fd;
	slot->got = 0;
	slot->req[0] = '\0';
	slot->deadline_ms = rp_now_ms() + REQUEST_MS;
}

static void read_more(struct pending *c)
{
	ssize_t n = recv(c->fd, c->req + c->got, sizeof(c->req) - 1 - c->got, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		c->got += (size_t)n;
		c->req[c->got] = '\0';
		if (!request_complete(c))
			return;
	}
	if (n >= 0)
		answer(c->fd, c->req); /* complete, or the client is done sending */
	drop(c);
}

static void *serve(void *arg)
{
	struct rp_metrics_server *s = arg;
	for (;;) {
		struct pollfd p[3 + MAX_PENDING] = { { .fd = s->stop[0], .events = POLLIN },
						     { .fd = s->ufd, .events = POLLIN },
						     { .fd = s->tfd, .events = POLLIN } };
		uint64_t now = rp_now_ms(), wait = REQUEST_MS;
		for (int i = 0; i < MAX_PENDING; i++) {
			struct pending *c = &s->pend[i];
			if (c->fd >= 0 && now >= c->deadline_ms)
				drop(c);
			p[3 + i] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
			if (c->fd >= 0)
				wait = RP_MIN(wait, c->deadline_ms - now);
		}
		if (poll(p, 3 + MAX_PENDING, (int)wait + 1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents)
			break;
		for (int i = 0; i < MAX_PENDING; i++)
			if (s->pend[i].fd >= 0 && p[3 + i].revents)
				read_more(&s->pend[i]);
		for (int i = 1; i < 3; i++)
			if (p[i].revents & POLLIN)
				admit(s, p[i].fd);
	}
	return NULL;
}

/* ---- setting up ---- */

/* Sockets left by daemons killed before they could remove theirs (kill -9,
 * the OOM killer) in RP_METRICS_DIR, ours alone (a directory given is the
 * user's, with others' sockets in it): each *.sock that nobody listens on
 * (refused: a live daemon answers, or is busy) and that is older than
 * SWEEP_AGE_S goes, if it is still the same file then (a daemon may have
 * put a new one under that name meanwhile). Else /run/rdmapool fills with
 * names of mounts and pools that never start again. */
static void sweep_dead(const char *dir, const char *own)
{
	DIR *d = strcmp(dir, RP_METRICS_DIR) == 0 ? opendir(dir) : NULL;
	struct dirent *e;
	time_t now = time(NULL);
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct stat st;
		if (n < 6 || strcmp(e->d_name + n - 5, ".sock") != 0 ||
		    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, e->d_name) >=
			    (int)sizeof(sa.sun_path) ||
		    strcmp(sa.sun_path, own) == 0 || lstat(sa.sun_path, &st) < 0 ||
		    !S_ISSOCK(st.st_mode) || now - st.st_mtime < SWEEP_AGE_S)
			continue;
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			break;
		struct stat again;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == ECONNREFUSED &&
		    lstat(sa.sun_path, &again) == 0 && again.st_ino == st.st_ino &&
		    again.st_dev == st.st_dev && unlink(sa.sun_path) == 0)
			rp_info("metrics: removed %s, left by a process that is gone", sa.sun_path);
		close(fd);
	}
	if (d)
		closedir(d);
}

static int listen_unix(struct rp_metrics_server *s, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "metrics socket %s: name too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	char dir[sizeof(sa.sun_path)];
	strcpy(dir, path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			snprintf(err, errlen, "metrics socket: cannot make %s: %s", dir, strerror(e));
			return -e;
		}
	}
	if ((s->ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	/* a socket nobody answers on is left from a crash; a live one is
	 * another mount's or server's */
	if (connect(s->ufd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		snprintf(err, errlen, "metrics socket %s is in use by another process", path);
		return -EADDRINUSE;
	}
	close(s->ufd);
	if ((s->ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	if (bind(s->ufd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s->ufd, 16) < 0) {
		int e = errno;
		snprintf(err, errlen, "metrics socket %s: %s", path, strerror(e));
		return -e;
	}
	chmod(path, 0666); /* read-only information, as /proc/mounts */
	strcpy(s->path, path);
	if (slash)
		*slash = '\0';
	sweep_dead(slash == dir ? "/" : slash ? dir : ".", path);
	return 0;
}

static int listen_tcp(struct rp_metrics_server *s, const char *addr, int port, char *err,
		      size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char service[16];
	int one = 1;
	snprintf(service, sizeof(service), "%d", port);
	int g = getaddrinfo(addr, service, &hints, &ai);
	if (g != 0) {
		snprintf(err, errlen, "metrics address %s: %s (a numeric address is expected)", addr,
			 gai_strerror(g));
		return -EINVAL;
	}
	if ((s->tfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		int e = errno;
		freeaddrinfo(ai);
		return -e;
	}
	setsockopt(s->tfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->tfd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(s->tfd, 16) < 0) {
		int e = errno;
		snprintf(err, errlen, "metrics port %s:%d: %s", addr, port, strerror(e));
		freeaddrinfo(ai);
		return -e;
	}
	freeaddrinfo(ai);
	return 0;
}

int rp_metrics_serve(const char *unix_path, const char *tcp_addr, int tcp_port,
		     struct rp_metrics_server **out, char *err, size_t errlen)
{
	struct rp_metrics_server *s = calloc(1, sizeof(*s));
	int rc;
	if (errlen)
		err[0] = '\0';
	if (!s)
		return -ENOMEM;
	s->ufd = s->tfd = s->stop[0] = s->stop[1] = -1;
	for (int i = 0; i < MAX_PENDING; i++)
		s->pend[i].fd = -1;
	if (unix_path && (rc = listen_unix(s, unix_path, err, errlen)) < 0)
		goto fail;
	if (tcp_port > 0 &&
	    (rc = listen_tcp(s, tcp_addr ? tcp_addr : RP_METRICS_ADDR, tcp_port, err, errlen)) < 0)
		goto fail;
	if (pipe2(s->stop, O_CLOEXEC) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = -pthread_create(&s->thread, NULL, serve, s)) < 0) {
		snprintf(err, errlen, "metrics: cannot start a thread: %s", strerror(-rc));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (!err[0])
		snprintf(err, errlen, "metrics: %s", strerror(-rc));
	if (s->path[0])
		unlink(s->path);
	for (int i = 0; i < 2; i++)
		if (s->stop[i] >= 0)
			close(s->stop[i]);
	if (s->ufd >= 0)
		close(s->ufd);
	if (s->tfd >= 0)
		close(s->tfd);
	free(s);
	return rc;
}

void rp_metrics_stop(struct rp_metrics_server *s)
{
	if (!s)
		return;
	if (write(s->stop[1], "x", 1) != 1)
		pthread_cancel(s->thread);
	pthread_join(s->thread, NULL);
	for (int i = 0; i < MAX_PENDING; i++)
		if (s->pend[i].fd >= 0)
			close(s->pend[i].fd);
	if (s->path[0])
		unlink(s->path);
	close(s->stop[0]);
	close(s->stop[1]);
	if (s->ufd >= 0)
		close(s->ufd);
	if (s->tfd >= 0)
		close(s->tfd);
	free(s);
}
