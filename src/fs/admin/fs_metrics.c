/* The filesystem layer's metrics: the metadata log, checkpoints, the lease,
 * blocks claimed ahead, space and degraded copies; and, below, the pools'. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/metrics.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static double one(void *arg)
{
	(void)arg;
	return 1;
}

static double lease_epoch(void *arg)
{
	const struct rp_fs *fs = arg;
	return (double)fs->lease.held.epoch;
}

static double log_segments(void *arg)
{
	struct rp_fs *fs = arg;
	return (double)atomic_load(&fs->log_segments);
}

static double stale_pools(void *arg)
{
	struct rp_fs *fs = arg;
	rp_mutex_lock(&fs->place.mu, RP_LK_PLACE);
	double n = fs->place.installed ? __builtin_popcount(fs->place.vol.stale) : 0;
	rp_mutex_unlock(&fs->place.mu);
	return n;
}

static double free_blocks(void *arg)
{
	struct rp_fs *fs = arg;
	return (double)atomic_load(&fs->space.free);
}

static double total_blocks(void *arg)
{
	struct rp_fs *fs = arg;
	return (double)atomic_load(&fs->space.total);
}

/* A label value: backslash, quote and newline escaped. */
static void label_value(char *out, size_t len, const char *v)
{
	size_t o = 0;
	for (; *v && o + 3 < len; v++) {
		if (*v == '\\' || *v == '"')
			out[o++] = '\\';
		if (*v == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
			continue;
		}
		out[o++] = *v;
	}
	out[o] = '\0';
}

static int info(struct rp_fs *fs, const char *mountpoint)
{
	char vol[2 * RP_NAME_MAX + 2], mnt[1024], l[1200];
	label_value(vol, sizeof(vol), fs->vol.name);
	label_value(mnt, sizeof(mnt), mountpoint ? mountpoint : "");
	snprintf(l, sizeof(l), "volume=\"%s\",mountpoint=\"%s\",mode=\"%s\"", vol, mnt,
		 fs->ro ? "ro" : "rw");
	return rp_metric_gauge(fs, "rdmapoolfs_info", l, "The mounted volume (always 1).", one,
			       NULL);
}

int rp_fs_metrics(struct rp_fs *fs, const char *mountpoint)
{
	int rc = info(fs, mountpoint);
	rc |= rp_metric_counter(fs, "rdmapoolfs_log_records_total", NULL,
				"Records appended to the metadata log.", &fs->stats.log_records);
	rc |= rp_metric_counter(fs, "rdmapoolfs_log_bytes_total", NULL,
				"Bytes of records appended to the metadata log.",
				&fs->stats.log_bytes);
	rc |= rp_metric_counter(fs, "rdmapoolfs_log_flushes_total", NULL,
				"Group commits: log writes, each of every record pending.",
				&fs->stats.log_flushes);
	rc |= rp_metric_gauge(fs, "rdmapoolfs_log_segments", NULL,
			      "Segments of the metadata log since its last checkpoint.",
			      log_segments, fs);
	rc |= rp_metric_counter(fs, "rdmapoolfs_checkpoints_total", NULL,
				"Checkpoints written (the log rewritten as an image).",
				&fs->stats.checkpoints);
	rc |= rp_metric_counter(fs, "rdmapoolfs_alloc_cache_hits_total", NULL,
				"Small allocations served from blocks claimed ahead, without a "
				"round trip.", &fs->stats.prealloc_hits);
	rc |= rp_metric_counter(fs, "rdmapoolfs_alloc_cache_misses_total", NULL,
				"Small allocations that had to claim blocks in a pool.",
				&fs->stats.prealloc_misses);
	rc |= rp_metric_gauge(fs, "rdmapoolfs_lease_epoch", NULL,
			      "Writer epoch of the lease this mount holds.", lease_epoch, fs);
	rc |= rp_metric_hist(fs, "rdmapoolfs_lease_renew_seconds", NULL,
			     "Time to renew the lease.", &fs->stats.lease_renew);
	rc |= rp_metric_gauge(fs, "rdmapoolfs_stale_pools", NULL,
			      "Pools holding out-of-date copies: every extent with a copy there "
			      "is degraded until rdmapool rebuild.", stale_pools, fs);
	rc |= rp_metric_gauge(fs, "rdmapoolfs_free_blocks", NULL,
			      "Free blocks, as statfs counts them.", free_blocks, fs);
	rc |= rp_metric_gauge(fs, "rdmapoolfs_total_blocks", NULL,
			      "Blocks of the volume's pools, as statfs counts them.", total_blocks,
			      fs);
	if (rc == 0)
		rc = rp_poolset_metrics(fs->ps);
	if (rc < 0)
		rp_metrics_drop(fs);
	return rc < 0 ? -ENOMEM : 0;
}
