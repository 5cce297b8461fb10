/* File data (data/): the data path (data.c), a file's block map and lists
 * of pool extents (extent_map.c), blocks claimed ahead (prealloc.c), free
 * space and the reserve (space.c), frees that wait for read-only mounts
 * (held.c). Functions take the mounted filesystem (fs_impl.h). */
#ifndef RDMAPOOL_FS_DATA_H
#define RDMAPOOL_FS_DATA_H

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

struct rp_fs;
struct rp_inode;
struct rp_rec;
struct rp_logw;
struct rp_volrec;
struct rp_progress;

/* ---- growable list of pool extents ---- */
struct rp_extvec {
	struct rp_extent *v;
	size_t n, cap;
};
int extvec_push(struct rp_extvec *ev, const struct rp_extent *e);
void extvec_free(struct rp_extvec *ev);

/* ---- a file's block map: sorted, non-overlapping, merged runs ---- */
struct rp_fext {
	uint64_t fblock; /* first file block */
	uint64_t pblock; /* first pool block */
	uint32_t pool;
	uint32_t count;
};
struct rp_emap {
	struct rp_fext *v;
	size_t n, cap;
};
void emap_free(struct rp_emap *m);
/* Index of the first run that ends after fblock (n when none). */
size_t emap_find(const struct rp_emap *m, uint64_t fblock);
/* Map a run; the file range must be unmapped. Merges with neighbours. */
int emap_insert(struct rp_emap *m, const struct rp_fext *e);
/* Unmap [fstart, fstart+count); the pool extents released go to freed. */
int emap_remove(struct rp_emap *m, uint64_t fstart, uint64_t count, struct rp_extvec *freed);
uint64_t emap_blocks(const struct rp_emap *m);

/* Extents freed by a durable record, held until every reader's position
 * is at least pos (reader_pos of the writer's log when they were flushed). */
struct rp_held {
	struct rp_extent e;
	uint64_t pos;
};
struct rp_heldvec {
	struct rp_held *v;
	size_t n, cap;
};

struct rp_bufpool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rp_buf **free;
	size_t nfree, total;
	size_t size;
};

#define IO_BUF_SIZE (1u << 20)
#define BUFPOOL_MAX 32 /* registered I/O buffers at most */
#define ZERO_BUF_SIZE (1u << 20)

/* held.c: frees that wait for the read-only mounts */
/* Hold fs->deferred (their records are durable up to w's position). */
int held_add_deferred(struct rp_fs *fs, const struct rp_logw *w);
/* Hold an extent until every reader is at pos or later. */
int held_add(struct rp_fs *fs, const struct rp_extent *e, uint64_t pos);
/* Free what no reader can still see; reads the reader slots. */
void held_release(struct rp_fs *fs);
/* At unmount: wait up to ms for the readers, then free what is free. */
void held_drain(struct rp_fs *fs, uint32_t ms);

/* space.c: the free-block estimate and the reserve */
void space_refresh(struct rp_fs *fs);
void space_refresh_if_old(struct rp_fs *fs);
void space_refresh_within(struct rp_fs *fs, uint64_t max_age_ms);
#define SPACE_STATFS_MAX_AGE_MS 1000 /* what other clients did shows this late */
uint64_t space_reserve(struct rp_fs *fs);
void space_taken(struct rp_fs *fs, uint64_t blocks);
bool space_available(struct rp_fs *fs, uint64_t want);
/* For operations that grow the volume, with fs->mu held: 0 or -ENOSPC
 * (flushes and re-reads the pools before saying no). */
int space_check_locked(struct rp_fs *fs, uint64_t want);
/* Without fs->mu: one bounded step of waiting for deletions in flight to
 * free their blocks; false when it is time to give up with ENOSPC. */
bool space_settle(struct rp_fs *fs, unsigned attempt, uint64_t start_ms);
/* Before an operation that grows the volume, without fs->mu: if space looks
 * short, settle (bounded); the operation's space_check_locked decides. */
void space_wait(struct rp_fs *fs, uint64_t want);

/* data.c */
/* Set the size and mark mtime and ctime, even when the size stays (as
 * tmpfs does for truncate, ftruncate and open with O_TRUNC). fs->mu held. */
int data_truncate(struct rp_fs *fs, struct rp_inode *in, uint64_t size);
/* Zero stale bytes past the end before the file grows to new_size. */
int data_zero_tail(struct rp_fs *fs, struct rp_inode *in, uint64_t new_size);
int bufpool_get(struct rp_fs *fs, struct rp_buf **out, bool for_log);
void bufpool_put(struct rp_fs *fs, struct rp_buf *b);
int fs_zero_range(struct rp_fs *fs, uint32_t pool, uint64_t off, uint64_t len);

/* prealloc.c: blocks claimed ahead for small allocations */
int prealloc_init(struct rp_fs *fs);
void prealloc_fini(struct rp_fs *fs);
bool prealloc_enabled(const struct rp_fs *fs);
bool prealloc_take(struct rp_fs *fs, uint32_t pool, uint32_t want, struct rp_extent *out);
bool prealloc_take_any(struct rp_fs *fs, uint32_t want, struct rp_extent *out);
void prealloc_keep(struct rp_fs *fs, const struct rp_extent *rest);
uint64_t prealloc_held(struct rp_fs *fs);
/* Back to the pools; while the lease is held, before it is released. */
void prealloc_return(struct rp_fs *fs);

#endif
