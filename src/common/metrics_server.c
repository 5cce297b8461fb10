/* The metrics endpoint: a thread that answers GET /metrics with
 * rp_metrics_render() on a unix socket and optionally a TCP port. */
#include "config.h"

#include <rdmapool/metrics.h>
#include <rdmapool/metrics_server.h>

#include <errno.h>
#include <fcntl.h>
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
#include <unistd.h>

struct rp_metrics_server {
	int ufd, tfd;
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

static void reply(int fd, const char *status, const char *body, size_t len)
{
	char head[160];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, len);
	if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n)
		return;
	for (size_t off = 0; off < len;) {
		ssize_t w = send(fd, body + off, len - off, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static void answer(int fd)
{
	struct timeval tv = { .tv_sec = 2 };
	char req[2048];
	size_t got = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* the request line is all we need; headers are read and ignored */
	while (got < sizeof(req) - 1) {
		ssize_t n = recv(fd, req + got, sizeof(req) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[got] = '\0';
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

static void *serve(void *arg)
{
	struct rp_metrics_server *s = arg;
	struct pollfd p[3] = { { .fd = s->stop[0], .events = POLLIN },
			       { .fd = s->ufd, .events = POLLIN },
			       { .fd = s->tfd, .events = POLLIN } };
	for (;;) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents)
			break;
		for (int i = 1; i < 3; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			int fd = accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				answer(fd);
				close(fd);
			}
		}
	}
	return NULL;
}

/* ---- setting up ---- */

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
	return 0;
}

static int listen_tcp(struct rp_metrics_server *s, int port, char *err, size_t errlen)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				    .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in sa4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct sockaddr *sa = (struct sockaddr *)&sa6;
	socklen_t salen = sizeof(sa6);
	int one = 1;
	/* every address, v6 and v4; v4 alone where the host has no IPv6 */
	if ((s->tfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		sa = (struct sockaddr *)&sa4;
		salen = sizeof(sa4);
		if ((s->tfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			return -errno;
	}
	setsockopt(s->tfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->tfd, sa, salen) < 0 || listen(s->tfd, 16) < 0) {
		int e = errno;
		snprintf(err, errlen, "metrics port %d: %s", port, strerror(e));
		return -e;
	}
	return 0;
}

int rp_metrics_serve(const char *unix_path, int tcp_port, struct rp_metrics_server **out,
		     char *err, size_t errlen)
{
	struct rp_metrics_server *s = calloc(1, sizeof(*s));
	int rc;
	if (errlen)
		err[0] = '\0';
	if (!s)
		return -ENOMEM;
	s->ufd = s->tfd = s->stop[0] = s->stop[1] = -1;
	if (unix_path && (rc = listen_unix(s, unix_path, err, errlen)) < 0)
		goto fail;
	if (tcp_port > 0 && (rc = listen_tcp(s, tcp_port, err, errlen)) < 0)
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
	if (rc != -EADDRINUSE && rc != -ENAMETOOLONG && !err[0])
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
