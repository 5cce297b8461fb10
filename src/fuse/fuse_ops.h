/* The FUSE low-level operations, mapped onto the filesystem layer. */
#ifndef RDMAPOOLFS_FUSE_OPS_H
#define RDMAPOOLFS_FUSE_OPS_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

extern const struct fuse_lowlevel_ops rp_fuse_ops;
/* Attribute and entry cache time given to the kernel, in seconds: shorter
 * on read-only mounts, which see the writer's changes. */
extern double rp_fuse_attr_timeout;

#endif
