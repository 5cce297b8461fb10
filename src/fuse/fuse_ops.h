/* The FUSE low-level operations, mapped onto the filesystem layer. */
#ifndef RDMAPOOLFS_FUSE_OPS_H
#define RDMAPOOLFS_FUSE_OPS_H

#define FUSE_USE_VERSION 314
#include <stdbool.h>
#include <fuse_lowlevel.h>

extern const struct fuse_lowlevel_ops rp_fuse_ops;
/* The same operations, each timed for the metrics (op_metrics.c), and
 * their histograms listed in the registry (0, or -1 out of memory). */
void rp_fuse_ops_metered(struct fuse_lowlevel_ops *out);
int rp_fuse_metrics(void);
/* Attribute and entry cache time given to the kernel, in seconds, and
 * whether file pages stay cached across opens: short and no on read-only
 * mounts, which see the writer's changes; long and yes on the writer's. */
extern double rp_fuse_attr_timeout;
extern bool rp_fuse_keep_cache;

#endif
