/* The FUSE low-level operations, mapped onto the filesystem layer. */
#ifndef RDMAPOOLFS_FUSE_OPS_H
#define RDMAPOOLFS_FUSE_OPS_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

extern const struct fuse_lowlevel_ops rp_fuse_ops;

#endif
