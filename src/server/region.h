/* The memory region a pool server donates: anonymous (huge pages when the
 * system has them) or a shared mapping of a backing file that survives a
 * restart. Formatting and checking its superblock is also here. */
#ifndef RDMAPOOLD_REGION_H
#define RDMAPOOLD_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmapool/cluster.h>

struct rp_region {
	uint8_t *base;
	uint64_t size;
	int fd;            /* backing file, or -1 */
	bool hugepages;
	bool locked;
	bool fresh;        /* contents are new (nothing to check) */
	char path[4096];
};

int rp_region_map(struct rp_region *r, uint64_t size, const char *backing_file, char *err,
		  size_t errlen);
/* Whether RDMA can pin the region for good: anonymous memory, or a backing
 * file on tmpfs or hugetlbfs. Linux 6.5 and later refuse long-term pins of
 * shared mappings of files on other filesystems (they need writeback). */
bool rp_region_pinnable(const struct rp_region *r);
/* Flush a backing file to disk. */
int rp_region_sync(struct rp_region *r);
void rp_region_unmap(struct rp_region *r);

/* Format a fresh region, or check an existing one belongs to this cluster
 * and peer with this geometry; refuses (never reformats) on a mismatch
 * unless reformat is set. */
int rp_region_prepare(struct rp_region *r, const struct rp_cluster *cl, uint32_t peer_id,
		      bool reformat, char *err, size_t errlen);

#endif
