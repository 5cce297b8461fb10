/* Per-request metrics of the FUSE layer: every operation wrapped in one
 * that times it from the handler's entry to its return. Each handler
 * replies before it returns (fuse_ops.c replies synchronously), so that is
 * the time the kernel waited, less the trip through /dev/fuse. */
#include "config.h"
#include "fuse_ops.h"

#include <rdmapool/metrics.h>
#include <rdmapool/util.h>

#include <stdio.h>

enum {
	OP_LOOKUP,
	OP_FORGET,
	OP_FORGET_MULTI,
	OP_GETATTR,
	OP_SETATTR,
	OP_READLINK,
	OP_MKNOD,
	OP_MKDIR,
	OP_SYMLINK,
	OP_LINK,
	OP_UNLINK,
	OP_RMDIR,
	OP_RENAME,
	OP_OPEN,
	OP_CREATE,
	OP_READ,
	OP_WRITE,
	OP_FLUSH,
	OP_RELEASE,
	OP_FSYNC,
	OP_OPENDIR,
	OP_READDIR,
	OP_READDIRPLUS,
	OP_RELEASEDIR,
	OP_FSYNCDIR,
	OP_STATFS,
	OP_SETXATTR,
	OP_GETXATTR,
	OP_LISTXATTR,
	OP_REMOVEXATTR,
	OP_FALLOCATE,
	OP_LSEEK,
	OP_N
};
static const char *const op_name[OP_N] = {
	[OP_LOOKUP] = "lookup",
	[OP_FORGET] = "forget",
	[OP_FORGET_MULTI] = "forget_multi",
	[OP_GETATTR] = "getattr",
	[OP_SETATTR] = "setattr",
	[OP_READLINK] = "readlink",
	[OP_MKNOD] = "mknod",
	[OP_MKDIR] = "mkdir",
	[OP_SYMLINK] = "symlink",
	[OP_LINK] = "link",
	[OP_UNLINK] = "unlink",
	[OP_RMDIR] = "rmdir",
	[OP_RENAME] = "rename",
	[OP_OPEN] = "open",
	[OP_CREATE] = "create",
	[OP_READ] = "read",
	[OP_WRITE] = "write",
	[OP_FLUSH] = "flush",
	[OP_RELEASE] = "release",
	[OP_FSYNC] = "fsync",
	[OP_OPENDIR] = "opendir",
	[OP_READDIR] = "readdir",
	[OP_READDIRPLUS] = "readdirplus",
	[OP_RELEASEDIR] = "releasedir",
	[OP_FSYNCDIR] = "fsyncdir",
	[OP_STATFS] = "statfs",
	[OP_SETXATTR] = "setxattr",
	[OP_GETXATTR] = "getxattr",
	[OP_LISTXATTR] = "listxattr",
	[OP_REMOVEXATTR] = "removexattr",
	[OP_FALLOCATE] = "fallocate",
	[OP_LSEEK] = "lseek",
};


static struct rp_hist op_hist[OP_N];

#define METERED(op, idx, params, args)                     \
	static void m_##op params                          \
	{                                                  \
		uint64_t t0 = rp_now_ns();                 \
		rp_fuse_ops.op args;                       \
		rp_hist_observe(&op_hist[idx], rp_now_ns() - t0); \
	}

METERED(lookup, OP_LOOKUP, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))
METERED(forget, OP_FORGET, (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup), (req, ino, nlookup))
METERED(forget_multi, OP_FORGET_MULTI, (fuse_req_t req, size_t count, struct fuse_forget_data *forgets), (req, count, forgets))
METERED(getattr, OP_GETATTR, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
METERED(setattr, OP_SETATTR, (fuse_req_t req, fuse_ino_t ino, struct stat *st, int to_set, struct fuse_file_info *fi), (req, ino, st, to_set, fi))
METERED(readlink, OP_READLINK, (fuse_req_t req, fuse_ino_t ino), (req, ino))
METERED(mknod, OP_MKNOD, (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev), (req, parent, name, mode, rdev))
METERED(mkdir, OP_MKDIR, (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode), (req, parent, name, mode))
METERED(symlink, OP_SYMLINK, (fuse_req_t req, const char *link, fuse_ino_t parent, const char *name), (req, link, parent, name))
METERED(link, OP_LINK, (fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname), (req, ino, newparent, newname))
METERED(unlink, OP_UNLINK, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))
METERED(rmdir, OP_RMDIR, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))
METERED(rename, OP_RENAME, (fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname, unsigned int flags), (req, parent, name, newparent, newname, flags))
METERED(open, OP_OPEN, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
METERED(create, OP_CREATE, (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi), (req, parent, name, mode, fi))
METERED(read, OP_READ, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi), (req, ino, size, off, fi))
METERED(write, OP_WRITE, (fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi), (req, ino, buf, size, off, fi))
METERED(flush, OP_FLUSH, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
METERED(release, OP_RELEASE, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
METERED(fsync, OP_FSYNC, (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi), (req, ino, datasync, fi))
METERED(opendir, OP_OPENDIR, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
METERED(readdir, OP_READDIR, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi), (req, ino, size, off, fi))
METERED(readdirplus, OP_READDIRPLUS, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi), (req, ino, size, off, fi))
METERED(releasedir, OP_RELEASEDIR, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
METERED(fsyncdir, OP_FSYNCDIR, (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi), (req, ino, datasync, fi))
METERED(statfs, OP_STATFS, (fuse_req_t req, fuse_ino_t ino), (req, ino))
METERED(setxattr, OP_SETXATTR, (fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags), (req, ino, name, value, size, flags))
METERED(getxattr, OP_GETXATTR, (fuse_req_t req, fuse_ino_t ino, const char *name, size_t size), (req, ino, name, size))
METERED(listxattr, OP_LISTXATTR, (fuse_req_t req, fuse_ino_t ino, size_t size), (req, ino, size))
METERED(removexattr, OP_REMOVEXATTR, (fuse_req_t req, fuse_ino_t ino, const char *name), (req, ino, name))
METERED(fallocate, OP_FALLOCATE, (fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi), (req, ino, mode, off, len, fi))
METERED(lseek, OP_LSEEK, (fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi), (req, ino, off, whence, fi))


/* rp_fuse_ops with every request timed; init is not a request. */
void rp_fuse_ops_metered(struct fuse_lowlevel_ops *out)
{
	*out = rp_fuse_ops;
	out->lookup = m_lookup;
	out->forget = m_forget;
	out->forget_multi = m_forget_multi;
	out->getattr = m_getattr;
	out->setattr = m_setattr;
	out->readlink = m_readlink;
	out->mknod = m_mknod;
	out->mkdir = m_mkdir;
	out->symlink = m_symlink;
	out->link = m_link;
	out->unlink = m_unlink;
	out->rmdir = m_rmdir;
	out->rename = m_rename;
	out->open = m_open;
	out->create = m_create;
	out->read = m_read;
	out->write = m_write;
	out->flush = m_flush;
	out->release = m_release;
	out->fsync = m_fsync;
	out->opendir = m_opendir;
	out->readdir = m_readdir;
	out->readdirplus = m_readdirplus;
	out->releasedir = m_releasedir;
	out->fsyncdir = m_fsyncdir;
	out->statfs = m_statfs;
	out->setxattr = m_setxattr;
	out->getxattr = m_getxattr;
	out->listxattr = m_listxattr;
	out->removexattr = m_removexattr;
	out->fallocate = m_fallocate;
	out->lseek = m_lseek;
}

int rp_fuse_metrics(void)
{
	static char labels[OP_N][32];
	for (int i = 0; i < OP_N; i++) {
		snprintf(labels[i], sizeof(labels[i]), "op=\"%s\"", op_name[i]);
		if (rp_metric_hist(op_hist, "rdmapoolfs_fuse_op_seconds", labels[i],
				   "FUSE requests by operation: time from the request's arrival "
				   "in the handler to its reply.", &op_hist[i]) < 0) {
			rp_metrics_drop(op_hist);
			return -1;
		}
	}
	return 0;
}
