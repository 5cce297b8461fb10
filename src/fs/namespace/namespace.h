/* The namespace (namespace/): directories (dir.c), the inode table
 * (inode.c), and the operations (namespace.c), each checked first, then
 * committed as one transaction of log records. */
#ifndef RDMAPOOL_FS_NAMESPACE_H
#define RDMAPOOL_FS_NAMESPACE_H

#include <rdmapool/fs.h>
#include <rdmapool/metrics.h>
#include <rdmapool/pool.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>
#include "../data/data.h"

struct rp_fs;
struct rp_inode;
struct rp_rec;
struct rp_logw;
struct rp_volrec;
struct rp_progress;

/* ---- a directory: name hash plus entries in cookie order ---- */
struct rp_dirent {
	char *name;      /* NULL: removed (tombstone) */
	uint64_t ino;
	uint64_t cookie; /* stable position for telldir/seekdir */
	uint32_t hash;
	int32_t next;    /* hash chain */
};
struct rp_dir {
	struct rp_dirent *ents;
	size_t n, cap, live;
	int32_t *buckets;
	size_t nbuckets;
	uint64_t next_cookie;
};
struct rp_dir *dir_new(void);
void dir_free(struct rp_dir *d);
struct rp_dirent *dir_find(struct rp_dir *d, const char *name);
int dir_add(struct rp_dir *d, const char *name, uint64_t ino);
int dir_del(struct rp_dir *d, const char *name);
/* Index of the first live entry whose cookie is greater than cookie. */
size_t dir_seek(const struct rp_dir *d, uint64_t cookie);

/* ---- inodes ---- */
struct rp_xattr {
	char *name;
	void *value;
	size_t len;
};

struct rp_inode {
	uint64_t ino, gen;
	uint32_t mode, uid, gid, nlink;
	uint64_t size, rdev;
	struct timespec atime, mtime, ctime;
	uint64_t parent;         /* directories: the directory holding it */
	struct rp_dir *dir;      /* directories */
	char *target;            /* symlinks */
	struct rp_emap map;      /* regular files */
	struct rp_xattr *xattrs;
	size_t nxattrs;
	bool tail_stale;         /* the last block may hold stale bytes past the end
				  * (data_zero_tail) */
	uint64_t nlookup;        /* kernel references */
	uint32_t nopen;          /* the kernel's opens */
	uint32_t pins;           /* the daemon's own holds (resync, rebuild): apart
				  * from nopen, which a RELEASE of a file opened
				  * before a --restart would otherwise take */
	pthread_rwlock_t io;     /* data I/O against truncation */
	struct rp_inode *hnext;
};

struct rp_itable {
	struct rp_inode **b;
	size_t nb, n;
};
struct rp_inode *itable_get(struct rp_itable *t, uint64_t ino);
int itable_put(struct rp_itable *t, struct rp_inode *in);
void itable_remove(struct rp_itable *t, uint64_t ino);
struct rp_inode *inode_new(uint64_t ino, uint32_t mode);
void inode_destroy(struct rp_inode *in);
void inode_to_attr(const struct rp_inode *in, uint32_t block_size, struct rp_attr *a);

/* journal helpers (namespace.c): log and apply in one step, with fs->mu
 * held. An error means nothing was logged (the caller undoes what it
 * prepared), except -EIO from a record the state could not take (memory),
 * which sets fs->state_lost: nothing is freed or changed after that. */
int fs_commit(struct rp_fs *fs, struct rp_rec *recs, size_t n);
struct rp_inode *fs_inode(struct rp_fs *fs, uint64_t ino);
void fs_maybe_purge(struct rp_fs *fs, struct rp_inode *in);
void fs_rec_attr(const struct rp_inode *in, struct rp_rec *r);
struct timespec fs_now(void);
/* 0, or why this mount may not change the volume (EROFS; EIO once fenced) */
int fs_writable(struct rp_fs *fs);
/* fs_writable, and the lease fresh (renewed first if old): before a change */
int fs_may_change(struct rp_fs *fs);

#endif
