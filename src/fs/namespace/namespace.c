/* Namespace operations. Each one checks everything first, then commits one
 * transaction: its records are appended to the log and applied to memory
 * together, so the log and the namespace never disagree. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#define NAME_MAX_BYTES 255
#define TXN_MAX 12

struct timespec fs_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

int fs_writable(struct rp_fs *fs)
{
	if (fs->ro)
		return -EROFS;
	if (atomic_load(&fs->lease.lost))
		return -EIO; /* another mounter may own the volume now */
	if (atomic_load(&fs->state_lost))
		return -EIO; /* (fs_commit) */
	return 0;
}

int fs_may_change(struct rp_fs *fs)
{
	int rc = fs_writable(fs);
	/* a change starts only under a fresh lease: a daemon back from a
	 * stall renews first, and so learns of a takeover before it says yes
	 * to a change that could never land (no lock may be held here) */
	return rc < 0 ? rc : lease_guard(fs);
}

struct rp_inode *fs_inode(struct rp_fs *fs, uint64_t ino)
{
	return itable_get(&fs->it, ino);
}

void fs_rec_attr(const struct rp_inode *in, struct rp_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->type = REC_ATTR;
	r->ino = in->ino;
	r->mode = in->mode;
	r->uid = in->uid;
	r->gid = in->gid;
	r->nlink = in->nlink;
	r->size = in->size;
	r->rdev = in->rdev;
	r->gen = in->gen;
	r->atime = in->atime;
	r->mtime = in->mtime;
	r->ctime = in->ctime;
}

/* A commit flushes the log once this much is pending; past the second
 * bound (the pools holding the log unreachable), changes are refused. */
#define LOG_FLUSH_BYTES (256u * 1024)
#define LOG_PENDING_MAX (64u << 20)

int fs_commit(struct rp_fs *fs, struct rp_rec *recs, size_t n)
{
	struct rp_logmark m;
	struct rp_rec req;
	bool named = fs_request_rec(&req); /* the request this change answers */
	if (atomic_load(&fs->state_lost))
		return -EIO; /* (below: a record the state could not take) */
	int rc = checkpoint_settle(fs);
	if (rc < 0)
		return rc;
	/* records the pools cannot take pile up in memory: past a bound,
	 * changes fail until a flush gets them out */
	if (fs->log.pend_bytes >= LOG_PENDING_MAX) {
		if (rp_now_ms() < fs->flush_retry_ms)
			return -EIO;
		if ((rc = log_flush(fs, &fs->log)) < 0) {
			fs->flush_retry_ms = rp_now_ms() + 1000;
			return rc;
		}
	}

	for (int attempt = 0;; attempt++) {
		log_mark(&fs->log, &m);
		for (size_t i = 0; i < n && rc == 0; i++) {
			recs[i].flags = i + 1 == n && !named ? REC_F_END : 0;
			rc = log_append(fs, &fs->log, &recs[i]);
		}
		if (rc == 0 && named) {
			req.flags = REC_F_END;
			rc = log_append(fs, &fs->log, &req);
		}
		if (rc == 0)
			break;
		log_rollback(fs, &fs->log, &m);
		if (rc != -ENOSPC || attempt > 0)
			return rc;
		/* no block for the next segment: deletions already logged free
		 * theirs once the log is out */
		if ((rc = log_flush(fs, &fs->log)) < 0)
			return rc;
	}
	atomic_store(&fs->log_segments, fs->log.segs.n);
	for (size_t i = 0; i < n; i++) {
		int arc = state_apply(fs, &recs[i], &fs->deferred);
		if (arc < 0) {
			/* checked beforehand, so this is a bug or memory exhaustion */
			rp_err("applying record type %u for inode %llu: %s; no more changes "
			       "until the volume is mounted again", recs[i].type,
			       (unsigned long long)recs[i].ino, strerror(-arc));
			atomic_store(&fs->state_lost, true);
			rc = -EIO;
		}
	}
	if (named)
		fs_request_note(fs, req.ino, req.ino2);
	/* The change stands from here on: its records are in the log and in
	 * the state. A flush that fails keeps them pending for the next one
	 * (an fsync reports it), so it is not this change's error: callers
	 * undo what they prepared on an error (a write frees its new blocks),
	 * and undoing a change the log will still carry gave those blocks to
	 * two files at once. */
	if (fs->log.pend_bytes >= LOG_FLUSH_BYTES && rp_now_ms() >= fs->flush_retry_ms &&
	    log_flush(fs, &fs->log) < 0) /* (it logs why) */
		fs->flush_retry_ms = rp_now_ms() + 1000; /* not once per change meanwhile */
	if (checkpoint_in_reserve(fs) && rp_now_ms() >= fs->ckpt_retry_ms) {
		/* records that need no space still grow the log: inside the
		 * reserve, compact it before it eats the room a checkpoint needs */
		int crc = checkpoint(fs);
		if (crc < 0) {
			rp_warn("volume \"%s\": checkpoint on a full volume: %s", fs->vol.name,
				strerror(-crc));
			fs->ckpt_retry_ms = rp_now_ms() + 1000;
		}
	} else if (checkpoint_due(fs)) {
		rp_mutex_lock(&fs->bg.mu, RP_LK_BG);
		pthread_cond_signal(&fs->bg.cv); /* time for a checkpoint */
		rp_mutex_unlock(&fs->bg.mu);
	}
	return rc;
}

/* A transaction under construction: one ATTR record per inode touched. */
struct txn {
	struct rp_rec r[TXN_MAX];
	size_t n;
};

static struct rp_rec *txn_add(struct txn *t, uint8_t type)
{
	struct rp_rec *r = &t->r[t->n++];
	memset(r, 0, sizeof(*r));
	r->type = type;
	return r;
}

static struct rp_rec *txn_attr(struct txn *t, const struct rp_inode *in)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->r[i].type == REC_ATTR && t->r[i].ino == in->ino)
			return &t->r[i];
	struct rp_rec *r = &t->r[t->n++];
	fs_rec_attr(in, r);
	return r;
}

static void txn_dirent(struct txn *t, uint8_t type, uint64_t parent, const char *name, uint64_t ino)
{
	struct rp_rec *r = txn_add(t, type);
	r->ino = parent;
	r->ino2 = ino;
	r->name = name;
	r->name_len = (uint32_t)strlen(name);
}

void fs_maybe_purge(struct rp_fs *fs, struct rp_inode *in)
{
	if (!in->nlink && in->map.n && (in->nopen || in->nlookup || in->pins) && !fs->ro)
		atomic_store(&fs->space.unlinked_held_ms, rp_now_ms());
	if (in->nlink || in->nopen || in->nlookup || in->pins || fs->ro || in->ino == RP_ROOT_INO)
		return;
	struct rp_rec r = { .type = REC_INODE_DEL, .ino = in->ino };
	if (fs_commit(fs, &r, 1) < 0)
		rp_warn("inode %llu stays allocated until the next mount",
			(unsigned long long)in->ino);
}

static int check_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0)
		return -ENOENT;
	if (n > NAME_MAX_BYTES)
		return -ENAMETOOLONG;
	return 0;
}

static int get_dir(struct rp_fs *fs, uint64_t ino, struct rp_inode **out)
{
	struct rp_inode *in = fs_inode(fs, ino);
	if (!in)
		return -ENOENT;
	if (!in->dir)
		return -ENOTDIR;
	*out = in;
	return 0;
}

static void attr_out(struct rp_fs *fs, struct rp_inode *in, struct rp_attr *out)
{
	if (out)
		inode_to_attr(in, fs->block_size, out);
}

/* The inode name stands for in directory-or-file parent: "." and ".." come
 * from the kernel resolving file handles (export support), where parent may
 * be any inode it has forgotten. With fs->mu held. */
static int lookup_locked(struct rp_fs *fs, uint64_t parent, const char *name,
			 struct rp_inode **out)
{
	struct rp_inode *p;
	int rc;
	if (strcmp(name, ".") == 0) {
		*out = fs_inode(fs, parent);
		return *out ? 0 : -ESTALE;
	}
	if ((rc = get_dir(fs, parent, &p)))
		return rc;
	if (strcmp(name, "..") == 0) {
		*out = fs_inode(fs, p->ino == RP_ROOT_INO ? p->ino : p->parent);
		return *out ? 0 : -ESTALE;
	}
	struct rp_dirent *e = dir_find(p->dir, name);
	*out = e ? fs_inode(fs, e->ino) : NULL;
	return *out ? 0 : -ENOENT;
}

int rp_fs_lookup(struct rp_fs *fs, uint64_t parent, const char *name, struct rp_attr *out)
{
	struct rp_inode *c;
	int rc = check_name(name);
	if (rc)
		return rc;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	if ((rc = lookup_locked(fs, parent, name, &c)) == 0) {
		c->nlookup++;
		attr_out(fs, c, out);
	}
	rp_mutex_unlock(&fs->mu);
	return rc;
}

void rp_fs_forget(struct rp_fs *fs, uint64_t ino, uint64_t nlookup)
{
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	if (in) {
		in->nlookup = in->nlookup > nlookup ? in->nlookup - nlookup : 0;
		fs_maybe_purge(fs, in);
	}
	rp_mutex_unlock(&fs->mu);
}

int rp_fs_getattr(struct rp_fs *fs, uint64_t ino, struct rp_attr *out)
{
	int rc = 0;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	if (in)
		attr_out(fs, in, out);
	else
		rc = -ENOENT;
	rp_mutex_unlock(&fs->mu);
	return rc;
}

/* Truncate a regular file to size; times as data_truncate. */
static int truncate_file(struct rp_fs *fs, struct rp_inode *in, uint64_t size)
{
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	uint32_t mode = in->mode; /* under mu: records (an atime update) rewrite it */
	rp_mutex_unlock(&fs->mu);
	if (S_ISDIR(mode))
		return -EISDIR;
	if (!S_ISREG(mode))
		return -EINVAL;
	rp_rwlock_wrlock(&in->io, RP_LK_INODE_IO);
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	uint64_t old = in->size;
	int rc = data_truncate(fs, in, size);
	rp_mutex_unlock(&fs->mu);
	rp_rwlock_unlock(&in->io);
	/* the zeroing of the old last block's tail (growing) may have reached
	 * some copies only */
	if (rc < 0 && rc != -ENOSPC && fs->ps->place.replicas > 1 && size > old)
		diverged_note(fs, in->ino, old / fs->block_size * fs->block_size, fs->block_size);
	return rc;
}

int rp_fs_setattr(struct rp_fs *fs, uint64_t ino, const struct rp_setattr *sa, int to_set,
		  struct rp_attr *out)
{
	struct rp_inode *in;
	struct txn t = { .n = 0 };
	int rc;

	if ((rc = fs_may_change(fs)))
		return rc;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	in = fs_inode(fs, ino);
	rp_mutex_unlock(&fs->mu);
	if (!in)
		return -ENOENT;
	if (to_set & RP_SET_SIZE) {
		if ((rc = truncate_file(fs, in, sa->size)) < 0)
			return rc;
		if (!(to_set & ~RP_SET_SIZE)) {
			rp_mutex_lock(&fs->mu, RP_LK_FS);
			attr_out(fs, in, out);
			rp_mutex_unlock(&fs->mu);
			return 0;
		}
	}
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct timespec now = fs_now();
	struct rp_rec *a = txn_attr(&t, in);
	if (to_set & RP_SET_MODE)
		a->mode = (in->mode & S_IFMT) | (sa->mode & 07777);
	if (to_set & RP_SET_UID)
		a->uid = sa->uid;
	if (to_set & RP_SET_GID)
		a->gid = sa->gid;
	/* chown's dropping of set-id bits comes from the kernel as a mode change,
	 * by its rules (a set-group-ID bit without group-execute stays) */
	if (to_set & RP_SET_ATIME_NOW)
		a->atime = now;
	else if (to_set & RP_SET_ATIME)
		a->atime = sa->atime;
	if (to_set & RP_SET_MTIME_NOW)
		a->mtime = now;
	else if (to_set & RP_SET_MTIME)
		a->mtime = sa->mtime;
	a->ctime = (to_set & RP_SET_CTIME) ? sa->ctime : now;
	rc = fs_commit(fs, t.r, t.n);
	if (rc == 0)
		attr_out(fs, in, out);
	rp_mutex_unlock(&fs->mu);
	return rc;
}

/* Create an inode named name in parent: the common part of mknod, mkdir and
 * symlink. */
static int create(struct rp_fs *fs, uint64_t parent, const char *name, uint32_t mode,
		  uint64_t rdev, const char *target, const struct rp_cred *cr, struct rp_attr *out)
{
	struct rp_inode *p;
	struct txn t = { .n = 0 };
	int rc;

	if ((rc = fs_may_change(fs)) || (rc = check_name(name)))
		return rc;
	if (target && strlen(target) > RP_SYMLINK_MAX)
		return -ENAMETOOLONG;
	space_wait(fs, 0);
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	if ((rc = get_dir(fs, parent, &p)))
		goto out;
	if (p->nlink == 0) {
		rc = -ENOENT; /* a removed directory */
		goto out;
	}
	if (dir_find(p->dir, name)) {
		rc = -EEXIST;
		goto out;
	}
	if ((rc = space_check_locked(fs, 0)) < 0)
		goto out;
	struct timespec now = fs_now();
	uint64_t ino = fs->next_ino;
	struct rp_rec *a = txn_add(&t, REC_ATTR);
	a->ino = ino;
	a->mode = mode;
	a->uid = cr->uid;
	a->gid = (p->mode & S_ISGID) ? p->gid : cr->gid; /* set-gid directories pass their group on */
	if (S_ISDIR(mode) && (p->mode & S_ISGID))
		a->mode |= S_ISGID;
	a->nlink = S_ISDIR(mode) ? 2 : 1;
	a->rdev = rdev;
	/* the writer epoch: numbers a crashed writer handed out and its log
	 * lost come again, and the kernel must tell the new file from the
	 * one it may still hold open (rdmapoolfs(8), restart) */
	a->gen = fs->lease.held.epoch ? fs->lease.held.epoch : 1;
	a->atime = a->mtime = a->ctime = now;
	if (target) {
		struct rp_rec *s = txn_add(&t, REC_SYMLINK);
		s->ino = ino;
		s->name = target;
		s->name_len = (uint32_t)strlen(target);
	}
	txn_dirent(&t, REC_DIRENT_ADD, parent, name, ino);
	struct rp_rec *pa = txn_attr(&t, p);
	pa->mtime = pa->ctime = now;
	if (S_ISDIR(mode))
		pa->nlink++;
	if ((rc = fs_commit(fs, t.r, t.n)) == 0) {
		struct rp_inode *in = fs_inode(fs, ino);
		in->nlookup++;
		attr_out(fs, in, out);
	}
out:
	rp_mutex_unlock(&fs->mu);
	return rc;
}

int rp_fs_mknod(struct rp_fs *fs, uint64_t parent, const char *name, uint32_t mode, uint64_t rdev,
		const struct rp_cred *cr, struct rp_attr *out)
{
	if (S_ISDIR(mode) || S_ISLNK(mode))
		return -EINVAL;
	if (!(mode & S_IFMT))
		mode |= S_IFREG;
	return create(fs, parent, name, mode, rdev, NULL, cr, out);
}

int rp_fs_mkdir(struct rp_fs *fs, uint64_t parent, const char *name, uint32_t mode,
		const struct rp_cred *cr, struct rp_attr *out)
{
	return create(fs, parent, name, S_IFDIR | (mode & 07777), 0, NULL, cr, out);
}

int rp_fs_symlink(struct rp_fs *fs, uint64_t parent, const char *name, const char *target,
		  const struct rp_cred *cr, struct rp_attr *out)
{
	return create(fs, parent, name, S_IFLNK | 0777, 0, target, cr, out);
}

int rp_fs_readlink(struct rp_fs *fs, uint64_t ino, char *buf, size_t size)
{
	int rc;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	if (!in)
		rc = -ENOENT;
	else if (!S_ISLNK(in->mode) || !in->target)
		rc = -EINVAL;
	else {
		snprintf(buf, size, "%s", in->target);
		rc = (int)strlen(in->target);
	}
	rp_mutex_unlock(&fs->mu);
	return rc;
}

int rp_fs_link(struct rp_fs *fs, uint64_t ino, uint64_t newparent, const char *newname,
	       struct rp_attr *out)
{
	struct rp_inode *p, *in;
	struct txn t = { .n = 0 };
	int rc;

	if ((rc = fs_may_change(fs)) || (rc = check_name(newname)))
		return rc;
	space_wait(fs, 0);
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	if ((rc = get_dir(fs, newparent, &p)))
		goto out;
	in = fs_inode(fs, ino);
	if (!in) {
		rc = -ENOENT;
		goto out;
	}
	if (S_ISDIR(in->mode)) {
		rc = -EPERM;
		goto out;
	}
	if (in->nlink == 0 || p->nlink == 0) {
		rc = -ENOENT;
		goto out;
	}
	if (in->nlink >= 65000) {
		rc = -EMLINK;
		goto out;
	}
	if (dir_find(p->dir, newname)) {
		rc = -EEXIST;
		goto out;
	}
	if ((rc = space_check_locked(fs, 0)) < 0)
		goto out;
	struct timespec now = fs_now();
	struct rp_rec *a = txn_attr(&t, in);
	a->nlink++;
	a->ctime = now;
	txn_dirent(&t, REC_DIRENT_ADD, newparent, newname, ino);
	struct rp_rec *pa = txn_attr(&t, p);
	pa->mtime = pa->ctime = now;
	if ((rc = fs_commit(fs, t.r, t.n)) == 0) {
		in->nlookup++;
		attr_out(fs, in, out);
	}
out:
	rp_mutex_unlock(&fs->mu);
	return rc;
}

static int remove_entry(struct rp_fs *fs, uint64_t parent, const char *name, bool want_dir)
{
	struct rp_inode *p, *c;
	struct txn t = { .n = 0 };
	int rc;

	if ((rc = fs_may_change(fs)) || (rc = check_name(name)))
		return rc;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	if ((rc = get_dir(fs, parent, &p)))
		goto out;
	struct rp_dirent *e = dir_find(p->dir, name);
	c = e ? fs_inode(fs, e->ino) : NULL;
	if (!c) {
		rc = -ENOENT;
		goto out;
	}
	if (want_dir && !c->dir) {
		rc = -ENOTDIR;
		goto out;
	}
	if (!want_dir && c->dir) {
		rc = -EISDIR;
		goto out;
	}
	if (want_dir && c->dir->live > 0) {
		rc = -ENOTEMPTY;
		goto out;
	}
	struct timespec now = fs_now();
	txn_dirent(&t, REC_DIRENT_DEL, parent, name, c->ino);
	struct rp_rec *ca = txn_attr(&t, c);
	ca->nlink = want_dir ? 0 : ca->nlink - 1;
	ca->ctime = now;
	struct rp_rec *pa = txn_attr(&t, p);
	pa->mtime = pa->ctime = now;
	if (want_dir)
		pa->nlink--;
	if ((rc = fs_commit(fs, t.r, t.n)) == 0)
		fs_maybe_purge(fs, c);
out:
	rp_mutex_unlock(&fs->mu);
	return rc;
}

int rp_fs_unlink(struct rp_fs *fs, uint64_t parent, const char *name)
{
	return remove_entry(fs, parent, name, false);
}

int rp_fs_rmdir(struct rp_fs *fs, uint64_t parent, const char *name)
{
	return remove_entry(fs, parent, name, true);
}

/* Is dir an ancestor of (or the same as) ino? Directories know their parent. */
static bool is_ancestor(struct rp_fs *fs, uint64_t dir, uint64_t ino)
{
	for (int depth = 0; depth < 100000; depth++) {
		if (ino == dir)
			return true;
		if (ino == RP_ROOT_INO)
			return false;
		struct rp_inode *in = fs_inode(fs, ino);
		if (!in)
			return false;
		ino = in->parent;
	}
	return true;
}

int rp_fs_rename(struct rp_fs *fs, uint64_t parent, const char *name, uint64_t newparent,
		 const char *newname, unsigned flags)
{
	struct rp_inode *p, *np, *src, *dst = NULL;
	struct txn t = { .n = 0 };
	int rc;

	if ((rc = fs_may_change(fs)) || (rc = check_name(name)) || (rc = check_name(newname)))
		return rc;
	if ((flags & RP_RENAME_EXCHANGE) && (flags & RP_RENAME_NOREPLACE))
		return -EINVAL;
	if (flags & ~(unsigned)(RP_RENAME_EXCHANGE | RP_RENAME_NOREPLACE))
		return -EINVAL;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	if ((rc = get_dir(fs, parent, &p)) || (rc = get_dir(fs, newparent, &np)))
		goto out;
	struct rp_dirent *se = dir_find(p->dir, name), *de = dir_find(np->dir, newname);
	src = se ? fs_inode(fs, se->ino) : NULL;
	dst = de ? fs_inode(fs, de->ino) : NULL;
	if (!src || (de && !dst)) {
		rc = -ENOENT;
		goto out;
	}
	if (np->nlink == 0) {
		rc = -ENOENT;
		goto out;
	}
	struct timespec now = fs_now();
	if (flags & RP_RENAME_EXCHANGE) {
		if (!dst) {
			rc = -ENOENT;
			goto out;
		}
		if ((src->dir && is_ancestor(fs, src->ino, newparent)) ||
		    (dst->dir && is_ancestor(fs, dst->ino, parent))) {
			rc = -EINVAL;
			goto out;
		}
		if (src == dst)
			goto out;
		txn_dirent(&t, REC_DIRENT_DEL, parent, name, src->ino);
		txn_dirent(&t, REC_DIRENT_DEL, newparent, newname, dst->ino);
		txn_dirent(&t, REC_DIRENT_ADD, parent, name, dst->ino);
		txn_dirent(&t, REC_DIRENT_ADD, newparent, newname, src->ino);
		if (p != np && (src->dir != NULL) != (dst->dir != NULL)) {
			/* a directory changes parent: move its ".." link count */
			txn_attr(&t, p)->nlink += src->dir ? -1 : 1;
			txn_attr(&t, np)->nlink += src->dir ? 1 : -1;
		}
		txn_attr(&t, src)->ctime = now;
		txn_attr(&t, dst)->ctime = now;
	} else {
		if (dst && (flags & RP_RENAME_NOREPLACE)) {
			rc = -EEXIST;
			goto out;
		}
		if (src->dir && is_ancestor(fs, src->ino, newparent)) {
			rc = -EINVAL; /* into itself or its own subtree */
			goto out;
		}
		if (dst == src)
			goto out; /* two names of one inode: nothing to do */
		if (dst) {
			if (src->dir && !dst->dir) {
				rc = -ENOTDIR;
				goto out;
			}
			if (!src->dir && dst->dir) {
				rc = -EISDIR;
				goto out;
			}
			if (dst->dir && dst->dir->live > 0) {
				rc = -ENOTEMPTY;
				goto out;
			}
			txn_dirent(&t, REC_DIRENT_DEL, newparent, newname, dst->ino);
			struct rp_rec *da = txn_attr(&t, dst);
			da->nlink = dst->dir ? 0 : da->nlink - 1;
			da->ctime = now;
			if (dst->dir)
				txn_attr(&t, np)->nlink--;
		}
		txn_dirent(&t, REC_DIRENT_DEL, parent, name, src->ino);
		txn_dirent(&t, REC_DIRENT_ADD, newparent, newname, src->ino);
		if (src->dir && p != np) {
			txn_attr(&t, p)->nlink--;
			txn_attr(&t, np)->nlink++;
		}
		txn_attr(&t, src)->ctime = now;
	}
	struct rp_rec *pa = txn_attr(&t, p);
	pa->mtime = pa->ctime = now;
	struct rp_rec *npa = txn_attr(&t, np);
	npa->mtime = npa->ctime = now;
	if ((rc = fs_commit(fs, t.r, t.n)) == 0 && dst && !(flags & RP_RENAME_EXCHANGE))
		fs_maybe_purge(fs, dst);
out:
	rp_mutex_unlock(&fs->mu);
	return rc;
}

int rp_fs_open(struct rp_fs *fs, uint64_t ino, int flags)
{
	int rc = 0;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	bool wr = (flags & O_ACCMODE) != O_RDONLY, reg = in && S_ISREG(in->mode);
	if (!in)
		rc = -ENOENT;
	else if (in->dir && wr)
		rc = -EISDIR;
	else if ((wr || (flags & O_TRUNC)) && fs->ro)
		rc = -EROFS;
	else
		in->nopen++;
	rp_mutex_unlock(&fs->mu);
	/* O_TRUNC (even with O_RDONLY, as Linux does) empties a regular file and
	 * always marks mtime and ctime, like open(2) on a local filesystem */
	if (rc == 0 && (flags & O_TRUNC) && reg) {
		rc = fs_may_change(fs);
		if (rc == 0)
			rc = truncate_file(fs, in, 0);
		if (rc < 0)
			rp_fs_release(fs, ino);
	}
	return rc;
}

void rp_fs_release(struct rp_fs *fs, uint64_t ino)
{
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	if (in && in->nopen) {
		in->nopen--;
		fs_maybe_purge(fs, in);
	}
	rp_mutex_unlock(&fs->mu);
}

int rp_fs_opendir(struct rp_fs *fs, uint64_t ino)
{
	struct rp_inode *in;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	int rc = get_dir(fs, ino, &in);
	rp_mutex_unlock(&fs->mu);
	return rc;
}

/* One entry to fill or fillplus; with fillplus a taken entry that is a
 * child counts as a lookup. With fs->mu held. */
static int emit(struct rp_fs *fs, rp_fill_fn fill, rp_fillplus_fn plus, void *ctx,
		const char *name, uint64_t ino, struct rp_inode *in, bool child, uint64_t next)
{
	if (!plus)
		return fill(ctx, name, ino, in ? in->mode : (child ? 0 : S_IFDIR), next);
	struct rp_attr a = { .ino = ino, .mode = child ? 0 : S_IFDIR };
	if (in)
		attr_out(fs, in, &a);
	int full = plus(ctx, name, &a, child && in, next);
	if (!full && child && in)
		in->nlookup++;
	return full;
}

static int readdir_walk(struct rp_fs *fs, uint64_t ino, uint64_t off, rp_fill_fn fill,
			rp_fillplus_fn plus, void *ctx)
{
	struct rp_inode *d;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	int rc = get_dir(fs, ino, &d);
	if (rc)
		goto out;
	if (off < 1 && emit(fs, fill, plus, ctx, ".", d->ino, d, false, 1))
		goto out;
	if (off < 2 && emit(fs, fill, plus, ctx, "..", d->parent, fs_inode(fs, d->parent), false, 2))
		goto out;
	for (size_t i = dir_seek(d->dir, off < 2 ? 2 : off); i < d->dir->n; i++) {
		const struct rp_dirent *e = &d->dir->ents[i];
		if (!e->name)
			continue;
		if (emit(fs, fill, plus, ctx, e->name, e->ino, fs_inode(fs, e->ino), true, e->cookie))
			break;
	}
out:
	rp_mutex_unlock(&fs->mu);
	return rc;
}

int rp_fs_readdir(struct rp_fs *fs, uint64_t ino, uint64_t off, rp_fill_fn fill, void *ctx)
{
	return readdir_walk(fs, ino, off, fill, NULL, ctx);
}

int rp_fs_readdirplus(struct rp_fs *fs, uint64_t ino, uint64_t off, rp_fillplus_fn fill, void *ctx)
{
	return readdir_walk(fs, ino, off, NULL, fill, ctx);
}

/* ---- extended attributes ---- */

static int xattr_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > RP_XATTR_NAME_MAX)
		return -ERANGE;
	if (strncmp(name, "user.", 5) && strncmp(name, "trusted.", 8) && strncmp(name, "security.", 9))
		return -EOPNOTSUPP; /* system.* (ACLs) is not supported */
	return 0;
}

static struct rp_xattr *xattr_get(struct rp_inode *in, const char *name)
{
	for (size_t i = 0; i < in->nxattrs; i++)
		if (strcmp(in->xattrs[i].name, name) == 0)
			return &in->xattrs[i];
	return NULL;
}

int rp_fs_setxattr(struct rp_fs *fs, uint64_t ino, const char *name, const void *value,
		   size_t size, int flags)
{
	struct txn t = { .n = 0 };
	int rc;
	if ((rc = fs_may_change(fs)) || (rc = xattr_name_ok(name)))
		return rc;
	if (size > RP_XATTR_VALUE_MAX)
		return -E2BIG;
	space_wait(fs, 0);
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	if (!in) {
		rc = -ENOENT;
		goto out;
	}
	struct rp_xattr *x = xattr_get(in, name);
	if ((flags & XATTR_CREATE) && x) {
		rc = -EEXIST;
		goto out;
	}
	if ((flags & XATTR_REPLACE) && !x) {
		rc = -ENODATA;
		goto out;
	}
	/* a replacement no larger than the old value does not grow the volume */
	if ((!x || size > x->len) && (rc = space_check_locked(fs, 0)) < 0)
		goto out;
	struct rp_rec *r = txn_add(&t, REC_XATTR_SET);
	r->ino = ino;
	r->name = name;
	r->name_len = (uint32_t)strlen(name);
	r->value = value;
	r->value_len = (uint32_t)size;
	txn_attr(&t, in)->ctime = fs_now();
	rc = fs_commit(fs, t.r, t.n);
out:
	rp_mutex_unlock(&fs->mu);
	return rc;
}

ssize_t rp_fs_getxattr(struct rp_fs *fs, uint64_t ino, const char *name, void *value, size_t size)
{
	ssize_t rc = xattr_name_ok(name);
	if (rc)
		return rc == -EOPNOTSUPP ? -ENODATA : rc;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	struct rp_xattr *x = in ? xattr_get(in, name) : NULL;
	if (!in)
		rc = -ENOENT;
	else if (!x)
		rc = -ENODATA;
	else if (size == 0)
		rc = (ssize_t)x->len;
	else if (size < x->len)
		rc = -ERANGE;
	else {
		memcpy(value, x->value, x->len);
		rc = (ssize_t)x->len;
	}
	rp_mutex_unlock(&fs->mu);
	return rc;
}

ssize_t rp_fs_listxattr(struct rp_fs *fs, uint64_t ino, char *list, size_t size)
{
	ssize_t rc = 0;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	if (!in) {
		rc = -ENOENT;
	} else {
		size_t total = 0;
		for (size_t i = 0; i < in->nxattrs; i++)
			total += strlen(in->xattrs[i].name) + 1;
		if (size == 0) {
			rc = (ssize_t)total;
		} else if (size < total) {
			rc = -ERANGE;
		} else {
			char *p = list;
			for (size_t i = 0; i < in->nxattrs; i++) {
				size_t n = strlen(in->xattrs[i].name) + 1;
				memcpy(p, in->xattrs[i].name, n);
				p += n;
			}
			rc = (ssize_t)total;
		}
	}
	rp_mutex_unlock(&fs->mu);
	return rc;
}

int rp_fs_removexattr(struct rp_fs *fs, uint64_t ino, const char *name)
{
	struct txn t = { .n = 0 };
	int rc;
	if ((rc = fs_may_change(fs)) || (rc = xattr_name_ok(name)))
		return rc == -EOPNOTSUPP ? -ENODATA : rc;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	struct rp_inode *in = fs_inode(fs, ino);
	if (!in)
		rc = -ENOENT;
	else if (!xattr_get(in, name))
		rc = -ENODATA;
	else {
		struct rp_rec *r = txn_add(&t, REC_XATTR_DEL);
		r->ino = ino;
		r->name = name;
		r->name_len = (uint32_t)strlen(name);
		txn_attr(&t, in)->ctime = fs_now();
		rc = fs_commit(fs, t.r, t.n);
	}
	rp_mutex_unlock(&fs->mu);
	return rc;
}
