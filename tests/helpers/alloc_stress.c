/* Allocate (or free) extents with the CAS allocator, for the concurrency
 * tests: several of these run at once against the same pools.
 *   alloc_stress CLUSTER alloc POOL|-1 COUNT MAXRUN SEED   -> "pool block count" lines
 *   alloc_stress CLUSTER free FILE                         frees the listed extents */
#include "config.h"
#include "helper.h"

#include <errno.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct rp_cluster *cl;
	if (argc < 4) {
		fprintf(stderr, "usage: alloc_stress CLUSTER alloc POOL COUNT MAXRUN SEED | free FILE\n");
		return 2;
	}
	struct rp_poolset *ps = helper_open(argv[1], &cl);
	int rc = 0;
	if (strcmp(argv[2], "alloc") == 0 && argc == 7) {
		int pool = atoi(argv[3]);
		long count = atol(argv[4]);
		unsigned maxrun = (unsigned)atoi(argv[5]);
		srand((unsigned)atoi(argv[6]));
		for (long i = 0; i < count; i++) {
			struct rp_extent e;
			uint32_t want = 1 + (uint32_t)rand() % maxrun;
			rc = pool < 0 ? rp_poolset_alloc(ps, (uint32_t)rand(), want, &e)
				      : rp_pool_alloc(ps, (uint32_t)pool, want, &e);
			if (rc == -ENOSPC) {
				printf("# ENOSPC after %ld extents\n", i);
				rc = 0;
				break;
			}
			if (rc < 0) {
				fprintf(stderr, "alloc_stress: alloc: %s\n", strerror(-rc));
				break;
			}
			printf("%u %llu %u\n", e.pool, (unsigned long long)e.block, e.count);
		}
	} else if (strcmp(argv[2], "free") == 0) {
		FILE *f = fopen(argv[3], "r");
		unsigned pool, count;
		unsigned long long block;
		char line[256];
		if (!f) {
			perror(argv[3]);
			return 1;
		}
		while (rc == 0 && fgets(line, sizeof(line), f)) {
			if (line[0] == '#' || sscanf(line, "%u %llu %u", &pool, &block, &count) != 3)
				continue;
			struct rp_extent e = { .pool = pool, .block = block, .count = count };
			rc = rp_pool_free(ps, &e);
			if (rc < 0)
				fprintf(stderr, "alloc_stress: free %u %llu %u: %s\n", pool, block, count,
					strerror(-rc));
		}
		fclose(f);
	} else {
		fprintf(stderr, "alloc_stress: bad arguments\n");
		rc = -EINVAL;
	}
	rp_poolset_close(ps);
	rp_cluster_free(cl);
	return rc < 0 ? 1 : 0;
}
