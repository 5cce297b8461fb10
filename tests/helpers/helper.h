/* Shared setup for the test helper programs: load a cluster, open pools. */
#ifndef RDMAPOOL_TEST_HELPER_H
#define RDMAPOOL_TEST_HELPER_H

#include <rdmapool/cluster.h>
#include <rdmapool/pool.h>

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* A plain tcp connection to the peer's server, for the helpers that speak
 * the handshake themselves; reads time out after timeout_s (0: never). */
static inline int helper_tcp_dial(const struct rp_peer *p, int timeout_s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	char port[16];
	snprintf(port, sizeof(port), "%u", p->port);
	if (getaddrinfo(p->host, port, &hints, &res))
		return -1;
	int fd = socket(res->ai_family, res->ai_socktype, 0);
	if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	struct timeval tv = { .tv_sec = timeout_s };
	if (fd >= 0 && timeout_s)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Open the cluster's pools (flags: rp_poolset_open's, e.g. RP_POOLSET_ALLOW_DOWN
 * for a helper that plays a mounter); exit(1) with the reason on failure. */
static inline struct rp_poolset *helper_open_flags(const char *cluster_file, int flags,
						   struct rp_cluster **cl)
{
	uint8_t secret[RP_SECRET_MAX];
	size_t slen;
	char err[1024];
	struct rp_poolset *ps = NULL;
	*cl = NULL;
	if (rp_cluster_load(cluster_file, cl, err, sizeof(err)) < 0 ||
	    rp_cluster_load_secret(*cl, secret, &slen, err, sizeof(err)) < 0 ||
	    rp_poolset_open(*cl, secret, slen, flags, &ps, err, sizeof(err)) < 0) {
		fprintf(stderr, "helper: %s\n", err);
		rp_cluster_free(*cl);
		exit(1);
	}
	return ps;
}

static inline struct rp_poolset *helper_open(const char *cluster_file, struct rp_cluster **cl)
{
	return helper_open_flags(cluster_file, 0, cl);
}

#endif
