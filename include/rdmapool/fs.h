/* The filesystem layer: a volume's namespace, inodes, extents and metadata
 * log, kept in the pools. The FUSE daemon and the admin tool use this header
 * and nothing below the pool layer.
 *
 * Every function returns 0 (or a count) on success and a negative errno on
 * failure, as FUSE expects. */
#ifndef RDMAPOOL_FS_H
#define RDMAPOOL_FS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include <rdmapool/pool.h>

struct rp_progress; /* <rdmapool/progress.h> */

#define RP_ROOT_INO 1
#define RP_DEFAULT_VOLUME "default"
#define RP_XATTR_NAME_MAX 255
#define RP_XATTR_VALUE_MAX (64 * 1024)
#define RP_SYMLINK_MAX 4095
#define RP_VOLUME_NAME_MAX 63
#define RP_DEFAULT_FOLLOW_MS 500

struct rp_fs;

struct rp_mkfs_opts {
	const char *volume;
	bool force;              /* replace an existing volume (its blocks are freed) */
	uint32_t stripe_blocks;  /* file blocks placed on one pool before the next; 0 = 64 */
	uint32_t lease_ms;       /* lease heartbeat period; 0 = 1000 */
	uint32_t uid, gid;       /* owner of the root directory */
	uint32_t replicas;       /* copies of every block, on distinct pools; 0 = 1 */
};

struct rp_mount_opts {
	const char *volume;
	bool readonly;           /* no lease; follows the writer's log */
	uint32_t follow_ms;      /* read-only: look for the writer's changes this often;
				  * 0 = RP_DEFAULT_FOLLOW_MS */
	uint32_t commit_ms;      /* flush the metadata log at least this often; 0 = 1000 */
	const char *holder;      /* shown to a second mounter; default host:pid */
	/* rdmapool rebuild: fill stale copies that answer again, before the
	 * new log is written (rp_fs_rebuild) */
	bool rebuild;
	uint32_t rebuild_rate_mib;
	FILE *progress;
	struct rp_progress *rebuild_progress; /* NULL, or how far the rebuild is; Ctrl-C */
	/* Taking over a live FUSE mount from a daemon that stopped or died
	 * (rdmapoolfs -o supervise): the kernel may hold any inode, so each
	 * counts as looked up once (an inode removed later is freed at the
	 * kernel's forget, or at the next fresh mount) and none unlinked while
	 * open is freed now. */
	bool kernel_knows;
	/* the lease word of a holder known to be dead (its supervisor saw it
	 * exit): taken at once instead of after the expiry time; 0: none */
	uint64_t dead_lease;
};

int rp_fs_mkfs(struct rp_poolset *ps, const struct rp_mkfs_opts *o, char *err, size_t errlen);
int rp_fs_mount(struct rp_poolset *ps, const struct rp_mount_opts *o, struct rp_fs **out,
		char *err, size_t errlen);
/* Flush, checkpoint (read-write), release the lease, free memory. */
int rp_fs_unmount(struct rp_fs *fs);
/* The lease word this read-write mount holds (0: none), for a supervisor. */
uint64_t rp_fs_lease_word(struct rp_fs *fs);
/* The numbers of every inode the volume has now; *out is malloc'ed. */
int rp_fs_inode_numbers(struct rp_fs *fs, uint64_t **out, size_t *n);
/* List the mount's counters (and its pools') in the metrics registry, until
 * unmount; mountpoint labels them. */
int rp_fs_metrics(struct rp_fs *fs, const char *mountpoint);

struct rp_attr {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t size, blocks; /* blocks in 512-byte units, as st_blocks */
	uint64_t rdev;
	struct timespec atime, mtime, ctime;
	uint64_t generation;
};
void rp_attr_to_stat(const struct rp_attr *a, struct stat *st);

struct rp_cred {
	uint32_t uid, gid;
};

/* Lookup takes a reference the kernel later drops with forget. */
int rp_fs_lookup(struct rp_fs *fs, uint64_t parent, const char *name, struct rp_attr *out);
void rp_fs_forget(struct rp_fs *fs, uint64_t ino, uint64_t nlookup);
int rp_fs_getattr(struct rp_fs *fs, uint64_t ino, struct rp_attr *out);

enum {
	RP_SET_MODE = 1 << 0, RP_SET_UID = 1 << 1, RP_SET_GID = 1 << 2, RP_SET_SIZE = 1 << 3,
	RP_SET_ATIME = 1 << 4, RP_SET_MTIME = 1 << 5, RP_SET_ATIME_NOW = 1 << 6,
	RP_SET_MTIME_NOW = 1 << 7, RP_SET_CTIME = 1 << 8,
};
struct rp_setattr {
	uint32_t mode, uid, gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
};
int rp_fs_setattr(struct rp_fs *fs, uint64_t ino, const struct rp_setattr *sa, int to_set,
		  struct rp_attr *out);

/* Creating calls take a lookup reference on the new inode, like lookup. */
int rp_fs_mknod(struct rp_fs *fs, uint64_t parent, const char *name, uint32_t mode, uint64_t rdev,
		const struct rp_cred *cr, struct rp_attr *out);
int rp_fs_mkdir(struct rp_fs *fs, uint64_t parent, const char *name, uint32_t mode,
		const struct rp_cred *cr, struct rp_attr *out);
int rp_fs_symlink(struct rp_fs *fs, uint64_t parent, const char *name, const char *target,
		  const struct rp_cred *cr, struct rp_attr *out);
int rp_fs_link(struct rp_fs *fs, uint64_t ino, uint64_t newparent, const char *newname,
	       struct rp_attr *out);
int rp_fs_readlink(struct rp_fs *fs, uint64_t ino, char *buf, size_t size);
int rp_fs_unlink(struct rp_fs *fs, uint64_t parent, const char *name);
int rp_fs_rmdir(struct rp_fs *fs, uint64_t parent, const char *name);
#define RP_RENAME_NOREPLACE (1 << 0)
#define RP_RENAME_EXCHANGE (1 << 1)
int rp_fs_rename(struct rp_fs *fs, uint64_t parent, const char *name, uint64_t newparent,
		 const char *newname, unsigned flags);

/* O_TRUNC truncates a regular file and marks mtime and ctime, as open(2). */
int rp_fs_open(struct rp_fs *fs, uint64_t ino, int flags);
/* Last close of an unlinked file frees it. */
void rp_fs_release(struct rp_fs *fs, uint64_t ino);
/* Returns bytes read (short at end of file). */
ssize_t rp_fs_read(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len, void *dst);
/* As rp_fs_read, but the bytes (short at end of file) go to sink once,
 * straight from the registered buffer the pools put them in, before it
 * returns 0; on an error (a negative errno) sink is not called. */
typedef void (*rp_read_sink)(void *ctx, const void *data, size_t n);
int rp_fs_read_to(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len, rp_read_sink sink,
		  void *ctx);
ssize_t rp_fs_write(struct rp_fs *fs, uint64_t ino, uint64_t off, size_t len, const void *src,
		    bool append, uint64_t *end_off);
int rp_fs_fsync(struct rp_fs *fs, uint64_t ino);
#define RP_FALLOC_KEEP_SIZE (1 << 0)
#define RP_FALLOC_PUNCH_HOLE (1 << 1)
#define RP_FALLOC_ZERO_RANGE (1 << 2)
int rp_fs_fallocate(struct rp_fs *fs, uint64_t ino, unsigned mode, uint64_t off, uint64_t len);
/* SEEK_DATA / SEEK_HOLE */
int rp_fs_lseek(struct rp_fs *fs, uint64_t ino, uint64_t off, int whence, uint64_t *out);

/* readdir from cookie off: fill returns non-zero when the reply is full.
 * Entries "." and ".." come first (cookies 1 and 2). */
typedef int (*rp_fill_fn)(void *ctx, const char *name, uint64_t ino, uint32_t mode,
			  uint64_t next_cookie);
int rp_fs_readdir(struct rp_fs *fs, uint64_t ino, uint64_t off, rp_fill_fn fill, void *ctx);
/* readdirplus: each entry with its attributes. An entry other than "." and
 * ".." that fill takes (returns 0 for) counts as a lookup, as rp_fs_lookup;
 * lookup tells fill which ones do. */
typedef int (*rp_fillplus_fn)(void *ctx, const char *name, const struct rp_attr *a, bool lookup,
			      uint64_t next_cookie);
int rp_fs_readdirplus(struct rp_fs *fs, uint64_t ino, uint64_t off, rp_fillplus_fn fill, void *ctx);
int rp_fs_opendir(struct rp_fs *fs, uint64_t ino);

int rp_fs_setxattr(struct rp_fs *fs, uint64_t ino, const char *name, const void *value,
		   size_t size, int flags);
/* size 0 asks for the length. */
ssize_t rp_fs_getxattr(struct rp_fs *fs, uint64_t ino, const char *name, void *value, size_t size);
ssize_t rp_fs_listxattr(struct rp_fs *fs, uint64_t ino, char *list, size_t size);
int rp_fs_removexattr(struct rp_fs *fs, uint64_t ino, const char *name);

/* Requests the kernel sends again after a supervised restart (rdmapool(7),
 * "Requests sent again"). The FUSE layer names the request this thread
 * serves (conn 0: none, or not to be recorded); a namespace change
 * committed meanwhile logs that name. A request sent again whose name was
 * logged is done: answer it from the state, do not carry it out again. */
void rp_fs_request_set(uint64_t conn, uint64_t unique);
bool rp_fs_request_done(struct rp_fs *fs, uint64_t conn, uint64_t unique);

int rp_fs_statfs(struct rp_fs *fs, struct statvfs *st);
/* Flush the metadata log now. */
int rp_fs_sync(struct rp_fs *fs);

/* ---- replicas ---- */
/* Copy what stale pools of a replicated volume miss from the current
 * copies, then mark them current; the volume must not be mounted read-write
 * elsewhere (the rebuild takes its lease). rate_mib limits the copy (MiB/s,
 * 0: none); messages go to out, how far it is to pr (NULL: lines to out),
 * which can stop it (-EINTR: the pool stays stale). -EAGAIN: some stale
 * pool is still down. */
int rp_fs_rebuild(struct rp_poolset *ps, const char *volume, uint32_t rate_mib, FILE *out,
		  struct rp_progress *pr, char *err, size_t errlen);
/* One line per volume: name, copies, and which pools are stale. */
int rp_fs_describe_volumes(struct rp_poolset *ps, FILE *out);

/* A volume as 'rdmapool volumes' shows it: its log replayed (as of the
 * last flush of a mount that holds it). error < 0: what could not be read
 * (err says it); the rest may be partial then. */
struct rp_volinfo {
	char name[RP_VOLUME_NAME_MAX + 1];
	uint32_t replicas;
	unsigned stale_pools;
	uint64_t files, dirs, data_blocks, log_blocks, log_segments;
	bool leased;          /* a read-write mount holds the lease (or died holding it) */
	char holder[64];
	uint64_t writer_epoch;
	unsigned readers;     /* reader slots taken */
	int error;
	char err[256];
};
/* Every volume, in slot order; *out is malloc'ed. */
int rp_fs_volumes(struct rp_poolset *ps, struct rp_volinfo **out, size_t *n);
/* Remove a volume that nobody mounts: its slot, then its blocks (*freed
 * of them). -EBUSY when mounted read-write or read-only somewhere. */
int rp_fs_rmvol(struct rp_poolset *ps, const char *name, uint64_t *freed, char *err,
		size_t errlen);

/* ---- offline checks ---- */
struct rp_fsck_report {
	uint64_t volumes, inodes, files, dirs, data_blocks, log_blocks;
	uint64_t errors;   /* corruption: double references, references to free blocks, bad records */
	uint64_t leaked;   /* blocks marked allocated that no volume references */
	uint64_t repaired; /* leaked blocks freed with repair */
	uint64_t counts_off; /* pools whose used-block count differs from their bitmap */
	uint64_t counts_set; /* of those, set right with repair */
};
/* Check every volume in the cluster against the pool bitmaps; with repair,
 * free leaked blocks (refused while any volume is mounted read-write).
 * Problems are printed to out as they are found. */
/* pr (may be NULL) hears how far the check is and can stop it (-EINTR)
 * between volumes, or between freed runs with repair. */
int rp_fs_fsck(struct rp_poolset *ps, bool repair, FILE *out, struct rp_fsck_report *rep,
	       struct rp_progress *pr, char *err, size_t errlen);

#endif
