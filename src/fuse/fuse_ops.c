/* FUSE low-level operations: unpack the request, call the filesystem layer,
 * reply. Errors from below arrive as negative errnos and go back as they are. */
#include "config.h"
#include "fuse_ops.h"
#include "dio_inval.h"
#include "resend.h"

#include <rdmapool/fs.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>

/* How long the kernel may cache attributes and names (seconds), and whether
 * file pages stay cached across opens: set by rdmapoolfs.c per mount kind. */
double rp_fuse_attr_timeout = 1.0;
bool rp_fuse_keep_cache;

static struct rp_fs *FS(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Every error reply: ENOLCK, the pool layer's "refused: this writer is
 * fenced", is an I/O error to applications (rdmapoolfs(8), ERRORS). */
static void reply_err(fuse_req_t req, int err)
{
	fuse_reply_err(req, err == ENOLCK ? EIO : err);
}

static void reply_entry(fuse_req_t req, int rc, const struct rp_attr *a)
{
	if (rc < 0) {
		reply_err(req, -rc);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = a->ino;
	e.generation = a->generation;
	e.attr_timeout = rp_fuse_attr_timeout;
	e.entry_timeout = rp_fuse_attr_timeout;
	rp_attr_to_stat(a, &e.attr);
	fuse_reply_entry(req, &e);
}

static void reply_attr(fuse_req_t req, int rc, const struct rp_attr *a)
{
	if (rc < 0) {
		reply_err(req, -rc);
		return;
	}
	struct stat st;
	rp_attr_to_stat(a, &st);
	fuse_reply_attr(req, &st, rp_fuse_attr_timeout);
}

static struct rp_cred cred(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	return (struct rp_cred){ .uid = ctx->uid, .gid = ctx->gid };
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* 1 MiB writes: each becomes one batch of one-sided operations */
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	/* async requests (AIO, readahead) the kernel keeps in flight: beyond
	 * its default of 12, so queue depths like 16 or 32 reach the pools */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* readdirplus always: ls -l reads the whole directory before it stats
	 * anything, so the kernel's adaptive mode would fall back to plain
	 * readdir after the first batch and then look every name up */
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	/* open(O_TRUNC) arrives at op_open, which truncates (rp_fs_open) */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* the kernel drops set-id bits on write, truncate and chown by its own
	 * rules and sends us the mode change */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	/* file handles (name_to_handle_at, NFS export): lookups of "." and ".."
	 * find inodes the kernel has forgotten */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct rp_attr a;
	reply_entry(req, rp_fs_lookup(FS(req), parent, name, &a), &a);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	rp_fs_forget(FS(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		rp_fs_forget(FS(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct rp_attr a;
	reply_attr(req, rp_fs_getattr(FS(req), ino, &a), &a);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st, int to_set,
		       struct fuse_file_info *fi)
{
	(void)fi;
	struct rp_setattr sa = { .mode = st->st_mode, .uid = st->st_uid, .gid = st->st_gid,
				 .size = (uint64_t)st->st_size, .atime = st->st_atim,
				 .mtime = st->st_mtim, .ctime = st->st_ctim };
	int set = 0;
	if (to_set & FUSE_SET_ATTR_MODE) set |= RP_SET_MODE;
	if (to_set & FUSE_SET_ATTR_UID) set |= RP_SET_UID;
	if (to_set & FUSE_SET_ATTR_GID) set |= RP_SET_GID;
	if (to_set & FUSE_SET_ATTR_SIZE) set |= RP_SET_SIZE;
	if (to_set & FUSE_SET_ATTR_ATIME) set |= RP_SET_ATIME;
	if (to_set & FUSE_SET_ATTR_MTIME) set |= RP_SET_MTIME;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) set |= RP_SET_ATIME_NOW;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) set |= RP_SET_MTIME_NOW;
	if (to_set & FUSE_SET_ATTR_CTIME) set |= RP_SET_CTIME;
	if (st->st_size < 0 && (set & RP_SET_SIZE)) {
		reply_err(req, EINVAL);
		return;
	}
	struct rp_attr a;
	reply_attr(req, rp_fs_setattr(FS(req), ino, &sa, set, &a), &a);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[RP_SYMLINK_MAX + 1];
	int rc = rp_fs_readlink(FS(req), ino, buf, sizeof(buf));
	if (rc < 0)
		reply_err(req, -rc);
	else
		fuse_reply_readlink(req, buf);
}

/* A change that made a name, sent again after its daemon logged it and
 * died: answered with the entry the name now leads to (rdmapool(7),
 * "Requests sent again"). */
static bool entry_made_before(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct rp_attr a;
	if (!rp_resend_done(FS(req)))
		return false;
	reply_entry(req, rp_fs_lookup(FS(req), parent, name, &a), &a);
	return true;
}

/* The change just carried out (rc), answered; name: the one it made,
 * removed or renamed to. */
static void reply_made(fuse_req_t req, int rc, const char *name, const struct rp_attr *a)
{
	rp_resend_test_crash(FS(req), rc, name);
	reply_entry(req, rc, a);
}

static void reply_changed(fuse_req_t req, int rc, const char *name)
{
	rp_resend_test_crash(FS(req), rc, name);
	reply_err(req, -rc);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct rp_attr a;
	struct rp_cred c = cred(req);
	if (!entry_made_before(req, parent, name))
		reply_made(req, rp_fs_mknod(FS(req), parent, name, mode, rdev, &c, &a), name, &a);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct rp_attr a;
	struct rp_cred c = cred(req);
	if (!entry_made_before(req, parent, name))
		reply_made(req, rp_fs_mkdir(FS(req), parent, name, mode, &c, &a), name, &a);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct rp_attr a;
	struct rp_cred c = cred(req);
	if (!entry_made_before(req, parent, name))
		reply_made(req, rp_fs_symlink(FS(req), parent, name, link, &c, &a), name, &a);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct rp_attr a;
	if (!entry_made_before(req, newparent, newname))
		reply_made(req, rp_fs_link(FS(req), ino, newparent, newname, &a), newname, &a);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (rp_resend_done(FS(req)))
		reply_err(req, 0);
	else
		reply_changed(req, rp_fs_unlink(FS(req), parent, name), name);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (rp_resend_done(FS(req)))
		reply_err(req, 0);
	else
		reply_changed(req, rp_fs_rmdir(FS(req), parent, name), name);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	unsigned f = 0;
	if (flags & RENAME_NOREPLACE)
		f |= RP_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		f |= RP_RENAME_EXCHANGE;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		reply_err(req, EINVAL);
		return;
	}
	if (rp_resend_done(FS(req)))
		reply_err(req, 0);
	else
		reply_changed(req, rp_fs_rename(FS(req), parent, name, newparent, newname, f),
			      newname);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = rp_fs_open(FS(req), ino, fi->flags);
	if (rc < 0) {
		reply_err(req, -rc);
		return;
	}
	/* O_DIRECT needs no direct_io here: the kernel sends such reads and
	 * writes straight to us and keeps the page cache coherent, and mmap
	 * of the file still works (it does not with direct_io) */
	fi->keep_cache = rp_fuse_keep_cache;
	fuse_reply_open(req, fi);
}

#ifdef RP_TEST_HOOKS
/* Tests only (fstest 100): RP_TEST_CREATE_OPEN_FAILS=NAME fails the open
 * half of a create of NAME with EROFS, as a lease lost between the two
 * would; compiled out of packages. */
static int create_open(struct rp_fs *fs, uint64_t ino, int flags, const char *name)
{
	const char *v = getenv("RP_TEST_CREATE_OPEN_FAILS");
	return v && strcmp(v, name) == 0 ? -EROFS : rp_fs_open(fs, ino, flags);
}
#else
#define create_open(fs, ino, flags, name) rp_fs_open(fs, ino, flags)
#endif

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct rp_attr a;
	struct rp_cred c = cred(req);
	/* sent again after its daemon logged it: the file it made is opened */
	bool made_before = rp_resend_done(FS(req));
	int rc = made_before ? rp_fs_lookup(FS(req), parent, name, &a)
			     : rp_fs_mknod(FS(req), parent, name, S_IFREG | (mode & 07777), 0, &c, &a);
	if (!made_before)
		rp_resend_test_crash(FS(req), rc, name);
	/* (O_TRUNC of the file just made would only wait for the lease again) */
	if (rc == 0 && (rc = create_open(FS(req), a.ino, fi->flags & ~O_TRUNC, name)) < 0) {
		/* the create failed as a whole: the kernel never learns of the
		 * name, so it goes too (and the inode with its last lookup) */
		rp_resend_forget();
		rp_fs_unlink(FS(req), parent, name);
		rp_fs_forget(FS(req), a.ino, 1);
	}
	if (rc < 0) {
		reply_err(req, -rc);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = a.ino;
	e.generation = a.generation;
	e.attr_timeout = e.entry_timeout = rp_fuse_attr_timeout;
	rp_attr_to_stat(&a, &e.attr);
	fuse_reply_create(req, &e, fi);
}

/* The reply goes out from the buffer the pools wrote the bytes into. */
static void reply_read(void *req, const void *data, size_t n)
{
	fuse_reply_buf(req, data, n);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	if (off < 0) {
		reply_err(req, EINVAL);
		return;
	}
	int rc = rp_fs_read_to(FS(req), ino, (uint64_t)off, size, reply_read, req);
	if (rc < 0)
		reply_err(req, -rc);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	/* the kernel has already turned O_APPEND into the offset */
	if (off < 0) {
		reply_err(req, EINVAL);
		return;
	}
	ssize_t n = rp_fs_write(FS(req), ino, (uint64_t)off, size, buf, false, NULL);
	if (n < 0) {
		reply_err(req, (int)-n);
		return;
	}
	/* its cached pages go before the answer (dio_inval.c) */
	if ((fi->flags & O_DIRECT) && n > 0)
		rp_dio_inval_reply(req, ino, off, (size_t)n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	rp_fs_release(FS(req), ino);
	reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	reply_err(req, -rp_fs_fsync(FS(req), ino));
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = rp_fs_opendir(FS(req), ino);
	if (rc < 0)
		reply_err(req, -rc);
	else
		fuse_reply_open(req, fi);
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
};

static int fill(void *ctx, const char *name, uint64_t ino, uint32_t mode, uint64_t next)
{
	struct dirbuf *d = ctx;
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = mode;
	size_t need = fuse_add_direntry(d->req, NULL, 0, name, NULL, 0);
	if (d->used + need > d->size)
		return 1;
	fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, name, &st, (off_t)next);
	d->used += need;
	return 0;
}

/* readdirplus: names with attributes, so ls -l needs no lookup per entry;
 * each entry other than "." and ".." that fits is a lookup (the kernel
 * forgets it later), counted by the fs layer only when it fits. */
static int fillplus(void *ctx, const char *name, const struct rp_attr *a, bool lookup,
		    uint64_t next)
{
	struct dirbuf *d = ctx;
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	if (lookup) {
		e.ino = a->ino;
		e.generation = a->generation;
		e.attr_timeout = e.entry_timeout = rp_fuse_attr_timeout;
		rp_attr_to_stat(a, &e.attr);
	} else {
		e.attr.st_ino = a->ino;
		e.attr.st_mode = a->mode;
	}
	size_t need = fuse_add_direntry_plus(d->req, NULL, 0, name, NULL, 0);
	if (d->used + need > d->size)
		return 1;
	fuse_add_direntry_plus(d->req, d->buf + d->used, d->size - d->used, name, &e, (off_t)next);
	d->used += need;
	return 0;
}

/* One reply buffer of up to size bytes of entries from cookie off, plain
 * or with attributes. */
static void reply_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct dirbuf d = { .req = req, .buf = malloc(size), .size = size };
	if (!d.buf) {
		reply_err(req, ENOMEM);
		return;
	}
	uint64_t from = off < 0 ? 0 : (uint64_t)off;
	int rc = plus ? rp_fs_readdirplus(FS(req), ino, from, fillplus, &d)
		      : rp_fs_readdir(FS(req), ino, from, fill, &d);
	if (rc < 0)
		reply_err(req, -rc);
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	reply_dir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	reply_dir(req, ino, size, off, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	op_fsync(req, ino, datasync, fi);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct statvfs st;
	int rc = rp_fs_statfs(FS(req), &st);
	if (rc < 0)
		reply_err(req, -rc);
	else
		fuse_reply_statfs(req, &st);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	reply_err(req, -rp_fs_setxattr(FS(req), ino, name, value, size, flags));
}

/* getxattr and listxattr: size 0 asks for the length, else the bytes. name is
 * NULL for a list. */
static void reply_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		reply_err(req, ENOMEM);
		return;
	}
	ssize_t n = name ? rp_fs_getxattr(FS(req), ino, name, buf, size)
			 : rp_fs_listxattr(FS(req), ino, buf, size);
	if (n < 0)
		reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	reply_xattr(req, ino, name, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	reply_xattr(req, ino, NULL, size);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	reply_err(req, -rp_fs_removexattr(FS(req), ino, name));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	(void)fi;
	unsigned m = 0;
	if (mode & FALLOC_FL_KEEP_SIZE)
		m |= RP_FALLOC_KEEP_SIZE;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		m |= RP_FALLOC_PUNCH_HOLE;
	if (mode & FALLOC_FL_ZERO_RANGE)
		m |= RP_FALLOC_ZERO_RANGE;
	if ((mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) ||
	    off < 0 || len <= 0) {
		reply_err(req, (off < 0 || len <= 0) ? EINVAL : EOPNOTSUPP);
		return;
	}
	reply_err(req, -rp_fs_fallocate(FS(req), ino, m, (uint64_t)off, (uint64_t)len));
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	(void)fi;
	uint64_t out;
	if (off < 0) {
		reply_err(req, ENXIO);
		return;
	}
	int rc = rp_fs_lseek(FS(req), ino, (uint64_t)off, whence, &out);
	if (rc < 0)
		reply_err(req, -rc);
	else
		fuse_reply_lseek(req, (off_t)out);
}

const struct fuse_lowlevel_ops rp_fuse_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
};
