/* Shared setup for the test helper programs: load a cluster, open pools. */
#ifndef RDMAPOOL_TEST_HELPER_H
#define RDMAPOOL_TEST_HELPER_H

#include <rdmapool/cluster.h>
#include <rdmapool/pool.h>

#include <stdio.h>
#include <stdlib.h>

static inline struct rp_poolset *helper_open(const char *cluster_file, struct rp_cluster **cl)
{
	uint8_t secret[RP_SECRET_MAX];
	size_t slen;
	char err[1024];
	struct rp_poolset *ps = NULL;
	*cl = NULL;
	if (rp_cluster_load(cluster_file, cl, err, sizeof(err)) < 0 ||
	    rp_cluster_load_secret(*cl, secret, &slen, err, sizeof(err)) < 0 ||
	    rp_poolset_open(*cl, secret, slen, 0, &ps, err, sizeof(err)) < 0) {
		fprintf(stderr, "helper: %s\n", err);
		rp_cluster_free(*cl);
		exit(1);
	}
	return ps;
}

#endif
