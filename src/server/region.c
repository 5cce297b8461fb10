/* Mapping the pool region and formatting or checking its superblock. */
#include "config.h"
#include "region.h"

#include <rdmapool/bitmap.h>
#include <rdmapool/layout.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define HUGE_2M (2ull << 20)

/* What the kernel says it could give without swapping (MemAvailable), or 0
 * when it does not say. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	unsigned long long kb = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb * 1024;
}

/* A fresh anonymous region is pinned (mlock, then the RDMA registration):
 * one larger than the memory there is would get the server OOM-killed
 * while it pins, so it is refused up front. (A backing file's pages may
 * already be resident, e.g. on tmpfs after a restart, and are not
 * counted as available: no such check there.) */
static int fits_in_memory(uint64_t size, char *err, size_t errlen)
{
	uint64_t avail = mem_available();
	if (avail && size > avail) {
		snprintf(err, errlen, "a %llu MiB region does not fit in memory: %llu MiB available "
			 "(MemAvailable); give a smaller --size", (unsigned long long)(size >> 20),
			 (unsigned long long)(avail >> 20));
		return -ENOMEM;
	}
	return 0;
}

int rp_region_map(struct rp_region *r, uint64_t size, const char *backing_file, char *err,
		  size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->size = size;
	if (backing_file) {
		struct stat st;
		snprintf(r->path, sizeof(r->path), "%s", backing_file);
		r->fd = open(backing_file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (r->fd < 0 || fstat(r->fd, &st) < 0) {
			int rc = -errno;
			snprintf(err, errlen, "%s: cannot open backing file: %s", backing_file, strerror(-rc));
			if (r->fd >= 0)
				close(r->fd);
			return rc;
		}
		if (st.st_size == 0) {
			if (ftruncate(r->fd, (off_t)size) < 0) {
				int rc = -errno;
				snprintf(err, errlen, "%s: cannot size to %llu bytes: %s", backing_file,
					 (unsigned long long)size, strerror(-rc));
				close(r->fd);
				return rc;
			}
			r->fresh = true;
		} else if ((uint64_t)st.st_size != size) {
			snprintf(err, errlen,
				 "%s: backing file holds %lld bytes but --size asks for %llu; refusing "
				 "to resize a pool with data in it", backing_file, (long long)st.st_size,
				 (unsigned long long)size);
			close(r->fd);
			return -EINVAL;
		}
		r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->base == MAP_FAILED) {
			int rc = -errno;
			snprintf(err, errlen, "%s: mmap: %s", backing_file, strerror(-rc));
			close(r->fd);
			r->base = NULL;
			return rc;
		}
	} else {
		int rc = fits_in_memory(size, err, errlen);
		if (rc < 0)
			return rc;
		r->fresh = true;
		r->base = MAP_FAILED;
		if (size % HUGE_2M == 0) {
			r->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
			r->hugepages = r->base != MAP_FAILED;
		}
		if (r->base == MAP_FAILED) {
			r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				       -1, 0);
			if (r->base == MAP_FAILED) {
				int rc = -errno;
				snprintf(err, errlen, "cannot map a %llu-byte region: %s",
					 (unsigned long long)size, strerror(-rc));
				r->base = NULL;
				return rc;
			}
			/* transparent huge pages, where enabled, cut TLB misses */
			madvise(r->base, size, MADV_HUGEPAGE);
		}
	}
	/* Pinning is best effort: RDMA registration pins pages anyway. */
	r->locked = mlock(r->base, size) == 0;
	if (!r->locked)
		rp_info("region not locked in memory (%s); raise RLIMIT_MEMLOCK to pin it",
			strerror(errno));
	return 0;
}

int rp_region_sync(struct rp_region *r)
{
	if (r->fd < 0 || !r->base)
		return 0;
	if (msync(r->base, r->size, MS_SYNC) < 0 || fsync(r->fd) < 0)
		return -errno;
	return 0;
}

void rp_region_unmap(struct rp_region *r)
{
	if (r->base)
		munmap(r->base, r->size);
	if (r->fd >= 0)
		close(r->fd);
	r->base = NULL;
	r->fd = -1;
}

static void format(struct rp_region *r, const struct rp_pool_sb *geo, const struct rp_cluster *cl,
		   uint32_t peer_id)
{
	struct rp_pool_sb sb = *geo;
	uint8_t buf[RP_SB_SIZE];

	sb.magic = RP_POOL_MAGIC;
	sb.layout_version = RP_LAYOUT_VERSION;
	rp_random_bytes(sb.pool_uuid, sizeof(sb.pool_uuid));
	snprintf(sb.cluster_name, sizeof(sb.cluster_name), "%s", cl->name);
	sb.peer_id = peer_id;
	sb.created_ns = rp_wall_ns();
	/* Home area and bitmap first, superblock last: a crash mid-format leaves
	 * no valid superblock, so the next start formats again. */
	memset(r->base, 0, RP_SB_SIZE);
	memset(r->base + RP_HOME_OFFSET, 0, RP_BITMAP_OFFSET - RP_HOME_OFFSET);
	memset(r->base + sb.bitmap_off, 0, sb.bitmap_words * 8);
	uint64_t tail = rp_layout_tail_mask(&sb);
	if (tail)
		memcpy(r->base + sb.bitmap_off + (sb.bitmap_words - 1) * 8, &tail, 8);
	rp_sb_encode(&sb, buf);
	memcpy(r->base, buf, RP_SB_SIZE);
	rp_info("formatted pool: %llu blocks of %u bytes, cluster \"%s\", peer %u",
		(unsigned long long)sb.nblocks, sb.block_size, sb.cluster_name, peer_id);
}

/* The used-block count from the bitmap itself, at every start: clients
 * keep it moving from then on, and whatever a client that died between a
 * CAS and its count left wrong is right again after a restart. Before any
 * client can connect, so nothing changes the bitmap meanwhile. */
static void count_used(struct rp_region *r)
{
	struct rp_pool_sb sb;
	if (rp_sb_decode(r->base, &sb) < 0)
		return;
	uint64_t free_bits = rp_bitmap_count_free((const uint64_t *)(r->base + sb.bitmap_off),
						  sb.bitmap_words);
	uint64_t used = sb.nblocks - RP_MIN(free_bits, sb.nblocks), tag = RP_COUNT_TAG, start;
	if (rp_random_bytes(&start, sizeof(start)) < 0)
		start = rp_wall_ns() ^ (uint64_t)getpid() << 32; /* differs from the last start */
	memcpy(r->base + RP_COUNT_OFFSET, &used, 8);
	memcpy(r->base + RP_COUNT_TAG_OFFSET, &tag, 8);
	memcpy(r->base + RP_COUNT_START_OFFSET, &start, 8);
	rp_info("pool: %llu of %llu blocks in use", (unsigned long long)used,
		(unsigned long long)sb.nblocks);
}

static int prepare(struct rp_region *r, const struct rp_cluster *cl, uint32_t peer_id,
		   bool reformat, char *err, size_t errlen);

int rp_region_prepare(struct rp_region *r, const struct rp_cluster *cl, uint32_t peer_id,
		      bool reformat, char *err, size_t errlen)
{
	int rc = prepare(r, cl, peer_id, reformat, err, errlen);
	if (rc == 0)
		count_used(r);
	return rc;
}

static int prepare(struct rp_region *r, const struct rp_cluster *cl, uint32_t peer_id,
		   bool reformat, char *err, size_t errlen)
{
	struct rp_pool_sb geo, sb;
	int rc = rp_layout_compute(r->size, cl->block_size, &geo);
	if (rc < 0) {
		snprintf(err, errlen, "a %llu-byte region is too small for %u-byte blocks",
			 (unsigned long long)r->size, cl->block_size);
		return rc;
	}
	if (r->fresh || reformat) {
		format(r, &geo, cl, peer_id);
		return 0;
	}
	const char *what = r->path;
	rc = rp_sb_decode(r->base, &sb);
	if (rc == -ENODATA) {
		format(r, &geo, cl, peer_id);
		return 0;
	}
	if (rc == -EPROTO) {
		snprintf(err, errlen, "%s: pool layout version %u, this server knows %u to %u; "
			 "refusing it", what, sb.layout_version, RP_LAYOUT_VERSION_MIN,
			 RP_LAYOUT_VERSION);
		return rc;
	}
	if (rc < 0) {
		snprintf(err, errlen, "%s: pool superblock is damaged (checksum or geometry); "
			 "refusing to reformat it (start with --reformat to wipe it)", what);
		return rc;
	}
	if (strcmp(sb.cluster_name, cl->name) != 0) {
		snprintf(err, errlen, "%s: pool belongs to cluster \"%s\", not \"%s\"; refusing it",
			 what, sb.cluster_name, cl->name);
		return -EINVAL;
	}
	if (sb.peer_id != peer_id) {
		snprintf(err, errlen, "%s: pool belongs to peer %u, not %u; refusing it", what,
			 sb.peer_id, peer_id);
		return -EINVAL;
	}
	if (sb.block_size != cl->block_size) {
		snprintf(err, errlen, "%s: pool has %u-byte blocks, the cluster file says %u; refusing it",
			 what, sb.block_size, cl->block_size);
		return -EINVAL;
	}
	if (sb.layout_version < RP_LAYOUT_VERSION) {
		/* the mark that makes older binaries refuse it (layout.h) */
		uint8_t buf[RP_SB_SIZE];
		sb.layout_version = RP_LAYOUT_VERSION;
		rp_sb_encode(&sb, buf);
		memcpy(r->base, buf, RP_SB_SIZE);
		rp_info("%s: pool layout moved to version %u: older servers and clients refuse it "
			"from now on", what, RP_LAYOUT_VERSION);
	}
	rp_info("%s: existing pool kept: %llu blocks of %u bytes", what,
		(unsigned long long)sb.nblocks, sb.block_size);
	return 0;
}

bool rp_region_pinnable(const struct rp_region *r)
{
	struct statfs st;
	if (r->fd < 0)
		return true;
	if (fstatfs(r->fd, &st) < 0)
		return false;
	return st.f_type == TMPFS_MAGIC || st.f_type == HUGETLBFS_MAGIC;
}
