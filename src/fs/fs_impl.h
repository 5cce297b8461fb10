/* Internals of the filesystem layer, shared by its files only.
 *
 * The namespace lives in the mounter's memory; every change is appended to
 * a metadata log in pool blocks as checksummed, sequenced records, grouped
 * into transactions; a checkpoint rewrites the whole namespace as a fresh
 * log (a new epoch) and switches the volume record to it. See rdmapool(7).
 *
 * The files are grouped by concern: namespace/ (operations, directories,
 * inodes), journal/ (records, the log, applying it, checkpoints, followers,
 * the shared log), data/ (file data, block maps, space), volume/ (the
 * volume table, records, lease, mounting), replica/ (placement, rebuild,
 * resync, write intent), admin/ (fsck, listing, metrics). The sections
 * below name the file each part belongs to. */
#ifndef RDMAPOOL_FS_IMPL_H
#define RDMAPOOL_FS_IMPL_H

#include <rdmapool/fs.h>
#include <rdmapool/metrics.h>
#include <rdmapool/pool.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* ---- log records ---- */
enum rp_rec_type {
	REC_ATTR = 1,       /* ino's attributes (created if new) */
	REC_DIRENT_ADD = 2,
	REC_DIRENT_DEL = 3,
	REC_EXT_SET = 4,    /* map a run of file blocks */
	REC_EXT_CLEAR = 5,  /* unmap a run; its blocks are free once this is durable */
	REC_XATTR_SET = 6,
	REC_XATTR_DEL = 7,
	REC_SYMLINK = 8,
	REC_INODE_DEL = 9,  /* inode gone with everything it held */
	REC_LINK = 10,      /* the stream continues in another segment */
	REC_NEXT_INO = 11,
	REC_POOL = 12,      /* a pool the volume uses: peer id (ext.pool), uuid (value) */
	REC_REQ = 13,       /* the request a change answers: connection (ino), number (ino2) */
	REC_INTENT = 14,    /* write intent: a word of buckets (fblock), its value (count) */
};
#define REC_HDR 32
#define REC_MAGIC 0x5250u
#define REC_F_END 1 /* last record of a transaction */

struct rp_rec {
	uint8_t type, flags;
	uint64_t seq;
	uint64_t ino, ino2;      /* ATTR/EXT/XATTR/SYMLINK/INODE_DEL: ino; DIRENT: parent, ino;
				  * REQ: connection, request number */
	/* ATTR */
	uint32_t mode, uid, gid, nlink;
	uint64_t size, rdev, gen;
	struct timespec atime, mtime, ctime;
	/* EXT_SET / EXT_CLEAR / LINK */
	uint64_t fblock, count;
	struct rp_extent ext;
	/* names and values point into the decode buffer or the caller's memory */
	const char *name;
	uint32_t name_len;
	const void *value;
	uint32_t value_len;
};
/* Encode into buf (REC_HDR + payload, 8-byte aligned length); returns the
 * length or -ENAMETOOLONG/-E2BIG. */
ssize_t rec_encode(const struct rp_rec *r, uint64_t epoch, const uint8_t uuid[16], uint8_t *buf,
		   size_t cap);
/* Decode one record at buf; -ENODATA when it is not a valid record of this
 * epoch (the end of the log). */
ssize_t rec_decode(const uint8_t *buf, size_t len, uint64_t epoch, const uint8_t uuid[16],
		   struct rp_rec *r);
#define REC_MAX (REC_HDR + 64 + RP_XATTR_NAME_MAX + RP_XATTR_VALUE_MAX + 64)

/* ---- the home area, on every pool (home.c) ----
 *   0       volume slots (512 bytes each, volume.c)
 *   32 KiB  placement records (256 bytes per volume slot, placement.c)
 *   48 KiB  the home epoch word of this copy, its fill count, and from
 *           48 KiB + 64 its epochs' members records (7 KiB, home.c) */
#define VOL_SLOTS 64
#define VOL_PLACE_OFF (32 * 1024)
#define VOL_HOME_EPOCH_OFF (48 * 1024)
int vol_home_read(struct rp_poolset *ps, uint64_t off, void *buf, size_t len);
int vol_home_write(struct rp_poolset *ps, uint64_t off, const void *buf, size_t len);
int home_cas(struct rp_poolset *ps, uint64_t off, uint64_t expect, uint64_t desired, uint64_t *old);
int home_faa(struct rp_poolset *ps, uint64_t off, uint64_t add, uint64_t *old);
void home_describe(struct rp_poolset *ps, FILE *out);
/* Is a connected pool's home copy out of sync (as the last scan saw)? */
bool home_any_out(struct rp_poolset *ps);
/* Start the home epochs at 1 (mkfs, read-write mounts). */
int home_init(struct rp_poolset *ps);
/* Copy the home area onto reachable pools whose copy is out of sync. */
int home_resync(struct rp_poolset *ps, FILE *out);

/* ---- placement of a volume's copies (placement.c) ---- */
struct rp_volplace {
	uint64_t seq;
	uint32_t replicas, nring;
	uint32_t ring[RP_RING_MAX];
	uint32_t stale;          /* bit i: ring[i] missed writes, not read until rebuilt */
};
/* One copy of the record (PLACE_COPY_LEN bytes; -ENODATA not a record,
 * -EBADMSG one that breaks the rules), as placement.c reads them. */
#define PLACE_COPY_LEN 128
void place_encode(const struct rp_volplace *pl, uint8_t *b);
int place_decode(const uint8_t *b, struct rp_volplace *pl);
/* -ENODATA: no record (one copy). */
int place_read(struct rp_poolset *ps, int slot, struct rp_volplace *pl);
int place_write(struct rp_poolset *ps, int slot, struct rp_volplace *pl, bool both);
int place_new(struct rp_poolset *ps, uint32_t replicas, struct rp_volplace *pl, char *err,
	      size_t errlen);
int place_ring_index(const struct rp_volplace *pl, uint32_t pool);
/* Use pl for the pools from now on; stale ring members are left alone. */
int place_install(struct rp_fs *fs, const struct rp_volplace *pl);
void place_uninstall(struct rp_fs *fs);
/* A read-only mount: take the writer's stale marks (and rebuilds) over. */
int place_follow(struct rp_fs *fs);
/* A read-write mount: record ring pools that are down (or replaced) as
 * stale now; the background thread calls it every tick. */
int place_note_down(struct rp_fs *fs);
/* fs->place as it is now (writers replace it under place_mu). */
struct rp_volplace place_snapshot(struct rp_fs *fs);
void place_describe(const struct rp_volplace *pl, char *buf, size_t len);

/* ---- the volume record, in the home area ---- */
struct rp_volrec {
	uint64_t seq;
	char name[RP_VOLUME_NAME_MAX + 1];
	uint8_t uuid[16];
	uint64_t epoch;
	struct rp_extent head;   /* first segment of the current stream */
	uint32_t block_size, stripe_blocks, lease_ms;
	uint32_t head_tag;       /* 32 bits of the uuid of the head's pool; 0 unknown */
	uint64_t created_ns;
};
/* The head_tag a record with this head gets: the log's first segment must
 * be read from the pool it was written to, not a new one under its id. */
uint32_t vol_head_tag(const struct rp_poolset *ps, const struct rp_extent *head);
/* One copy of a slot's record (VOLREC_LEN bytes; -EBADMSG: not one). */
#define VOLREC_LEN 148
void volrec_encode(const struct rp_volrec *r, uint8_t *b);
int volrec_decode(const uint8_t *b, struct rp_volrec *r);
int vol_find(struct rp_poolset *ps, const char *name, int *slot, struct rp_volrec *rec);
int vol_claim(struct rp_poolset *ps, const char *name, int *slot);
int vol_release_slot(struct rp_poolset *ps, int slot);
int vol_write(struct rp_poolset *ps, int slot, struct rp_volrec *rec);
/* All volumes: calls fn for each in-use slot. */
int vol_each(struct rp_poolset *ps, int (*fn)(void *, int, const struct rp_volrec *), void *arg);

struct rp_lease {
	int slot;
	uint64_t word;           /* our current lease word */
	uint64_t epoch;          /* our writer epoch: the fence word while we hold it */
	uint32_t period_ms;
	uint64_t last_renew_ms;  /* when the last renewal that landed was sent (rp_boot_ms) */
	bool took_over;          /* from a holder that stopped without unmounting */
	uint64_t dead;           /* in: a word of a holder known dead: its id is taken over at once */
	/* for its thread's messages: fs->vol changes under the fs lock at
	 * each checkpoint, which the lease thread never takes */
	char vol_name[RP_VOLUME_NAME_MAX + 1];
};
/* Take the volume's lease; a live holder gives -EBUSY with its name in err,
 * a holder silent for the expiry time is taken over, one whose word is
 * l->dead at once. */
int lease_acquire(struct rp_poolset *ps, int slot, uint32_t period_ms, const char *holder,
		  struct rp_lease *l, char *err, size_t errlen);
int lease_renew(struct rp_poolset *ps, struct rp_lease *l);
void lease_release(struct rp_poolset *ps, struct rp_lease *l);
/* Is someone holding the lease and alive? Waits up to the expiry time. */
int lease_probe(struct rp_poolset *ps, int slot, uint32_t period_ms, char *holder, size_t len);
/* The volume record of a slot (one small read, for followers). */
int vol_read(struct rp_poolset *ps, int slot, struct rp_volrec *rec);

/* ---- online rebuild requests (volume.c): the word is id << 32 | the rate
 * limit in MiB/s (0: none) << 8 | state ---- */
enum { REBUILD_ASKED = 1, REBUILD_DONE = 2, REBUILD_FAILED = 3 };
int vol_rebuild_word(struct rp_poolset *ps, int slot, uint64_t *v);
/* 0 swapped, -EAGAIN the word was not expect. */
int vol_rebuild_swap(struct rp_poolset *ps, int slot, uint64_t expect, uint64_t v);
int vol_rebuild_progress(struct rp_poolset *ps, int slot, uint64_t done, uint64_t total);
int vol_rebuild_read_progress(struct rp_poolset *ps, int slot, uint64_t *done, uint64_t *total);

/* ---- read-only mounts (reader slots in the volume table, volume.c) ---- */
#define READER_SLOTS 4
struct rp_reader {
	int slot, index;
	uint64_t hb;             /* our heartbeat word; 0 when not registered */
	uint64_t last_renew_ms;
};
/* A position: the first record not yet applied, ordered across epochs. */
static inline uint64_t reader_pos(uint64_t epoch, uint64_t seq)
{
	return (epoch << 40) | (seq & ((1ull << 40) - 1));
}
/* What a volume slot says about who uses the volume (volumes.c). */
struct vol_state {
	uint64_t lease;                  /* 0: no read-write mount holds it */
	char holder[64];                 /* its description, when held */
	uint64_t writer_epoch;           /* lease acquisitions so far */
	uint64_t reader_hb[READER_SLOTS];
	unsigned readers;                /* reader slots taken (live or not) */
};
int vol_peek(struct rp_poolset *ps, int slot, struct vol_state *out);
/* -EUSERS when every reader slot is taken. */
int reader_register(struct rp_poolset *ps, int slot, struct rp_reader *rd);
/* -ESTALE when the writer expired us: reload everything. */
int reader_renew(struct rp_poolset *ps, struct rp_reader *rd);
int reader_set_pos(struct rp_poolset *ps, const struct rp_reader *rd, uint64_t epoch, uint64_t seq);
void reader_release(struct rp_poolset *ps, struct rp_reader *rd);
/* The writer's view of the readers: when each heartbeat last moved. */
struct rp_reader_watch {
	uint64_t hb[READER_SLOTS];
	uint64_t changed_ms[READER_SLOTS];
};
/* The smallest position of a live reader (UINT64_MAX: none); clears the
 * slots of readers silent for the expiry time. */
int readers_scan(struct rp_poolset *ps, int slot, struct rp_reader_watch *w, uint32_t period_ms,
		 uint64_t *min_pos);

/* Mark the lease as being released by a clean unmount: a mounter waits for
 * it instead of refusing. Renewals keep the mark. */
int lease_mark_releasing(struct rp_poolset *ps, struct rp_lease *l);
/* lease.c: the renewal thread and the guards in front of every write */
int lease_start(struct rp_fs *fs);
void lease_stop(struct rp_fs *fs);
/* Before a write into the pools: 0, or -EIO when the lease is lost or
 * cannot be renewed within a period. */
int lease_guard(struct rp_fs *fs);
/* lease_guard plus the fence word, before a log write: -EIO once fenced. */
int lease_fence(struct rp_fs *fs);
/* 0 while the fence word still holds our epoch, -ESTALE once another
 * mounter has taken the volume over. */
int lease_fence_check(struct rp_poolset *ps, const struct rp_lease *l);
#define LEASE_EXPIRY_PERIODS 5
/* The lease word: holder id (high 32 bits), a releasing mark, a counter. */
#define LEASE_RELEASING (1ull << 31)
#define LEASE_COUNTER (LEASE_RELEASING - 1)
/* A mounter watches a live holder this long for a release to begin. */
#define LIVE_GRACE_PERIODS 2
#define RELEASE_WAIT_MS 120000

/* An extent that lies inside one of the pools (log.c): what replay checks
 * of every segment and data extent it reads before using it. */
bool extent_in_pools(struct rp_poolset *ps, const struct rp_extent *e);

/* ---- log writer ---- */
struct rp_pend {
	struct rp_extent seg;
	uint32_t pos;
	uint8_t *buf;
	size_t len, cap;
};
struct rp_logw {
	uint64_t epoch, seq;
	uint8_t uuid[16];
	struct rp_extvec segs;   /* every segment of this stream */
	struct rp_extent cur;
	uint32_t cur_pos, cur_size;
	struct rp_extent spare;
	bool have_spare;
	struct rp_pend *pend;
	size_t npend, pend_bytes;
	uint8_t *scratch;        /* one encoded record */
};
/* A point to roll an unfinished transaction back to. */
struct rp_logmark {
	size_t npend, last_len, pend_bytes, nsegs;
	struct rp_extent cur, spare;
	uint32_t cur_pos, cur_size;
	uint64_t seq;
	bool have_spare;
};
/* A cursor in a metadata log: where the first transaction not yet applied
 * starts. Read-only mounts keep one to follow the writer. */
struct rp_logtail {
	uint64_t epoch;
	uint8_t uuid[16];
	uint32_t block_size;
	struct rp_extent seg;
	size_t pos;
	uint64_t seq;
};
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

/* ---- the mounted filesystem ---- */
struct rp_bufpool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rp_buf **free;
	size_t nfree, total;
	size_t size;
};

#define FS_REQS_KEPT 1024 /* four times the threads a daemon may have (rdmapoolfs.c) */
#define INTENT_BUCKETS 4096
#define INTENT_CHUNK_SHIFT 22 /* 4 MiB of a file per chunk */
#define INTENT_CHUNK_BYTES (1ull << INTENT_CHUNK_SHIFT)
#define INTENT_TICK_MS 1000 /* the clearing's period (four idle ones clear a bucket) */
#define INTENT_WORDS (INTENT_BUCKETS / 64)

/* Which parts of files a replicated volume's writer may be overwriting in
 * place (intent.c). */
struct rp_intent {
	_Atomic uint64_t set[INTENT_WORDS];     /* durable in the log */
	_Atomic uint64_t touched[INTENT_WORDS]; /* written since the last clearing */
	_Atomic uint64_t sticky[INTENT_WORDS];  /* a write failed: set until the next mount */
	_Atomic uint32_t busy[INTENT_BUCKETS];  /* in-place writes under way */
	uint8_t rest[INTENT_BUCKETS];           /* ticks set and idle (the clearer's, under mu) */
	bool known;                             /* the replayed log kept intents */
};

struct rp_fs {
	struct rp_poolset *ps;
	bool ro;
	int slot;
	struct rp_volrec vol;
	struct rp_lease lease;
	pthread_mutex_t lease_mu; /* the lease word, the fields below, lease_cv */
	pthread_cond_t lease_cv;  /* CLOCK_MONOTONIC: renewals, kicks, stop */
	pthread_t lease_thread;
	bool lease_running, lease_stop, lease_kick;
	_Atomic uint64_t lease_fresh_until; /* writes may go out before this (rp_boot_ms) */
	atomic_bool lease_lost;
	int64_t missing_peer;     /* replay: a peer with data, not in the cluster file */
	struct rp_volplace place; /* copies; stale pools (placement.c) */
	bool place_installed;
	uint32_t place_warned;    /* ring positions said to hold a last copy */
	pthread_mutex_t place_mu;
	unsigned rebuild_done, rebuild_left, rebuild_returned; /* rebuild.c */
	pthread_t rebuild_thread;  /* an online rebuild (rebuild.c) */
	bool rebuild_started;      /* the background thread's: started, not joined */
	atomic_bool rebuild_busy;  /* the rebuild thread is at work */
	uint64_t rebuild_word;     /* the request it serves */
	struct rp_pool_id {       /* by peer id: the pool uuid the volume's data is on */
		bool known;
		uint8_t uuid[16];
	} *pool_ids;
	uint32_t block_size, stripe_blocks, commit_ms;
	pthread_mutex_t mu;      /* namespace, inode table, log */
	struct rp_itable it;
	uint64_t next_ino;
	struct rp_logw log;
	struct rp_extvec deferred; /* freed once the records dropping them are durable */
	uint32_t log_segments_at_ckpt;
	struct rp_bufpool bufs;
	struct rp_buf *zero;     /* registered zeros for filling new blocks */
	/* the names of the last requests whose changes are logged
	 * (requests.c; under mu) */
	struct rp_reqname {
		uint64_t conn, unique;
	} reqs[FS_REQS_KEPT];
	unsigned reqs_next;
	struct rp_intent intent;
	pthread_mutex_t div_mu;        /* guards div (diverged.c) */
	struct rp_diverged *div;       /* file ranges whose copies may differ */
	size_t ndiv, capdiv;
	pthread_mutex_t prealloc_mu;
	struct rp_extent *prealloc; /* by peer id: blocks claimed ahead (prealloc.c) */
	pthread_t bg;
	bool bg_running;
	atomic_bool stop;
	pthread_mutex_t bg_mu;
	pthread_cond_t bg_cv;
	uint64_t alloc_counter;
	/* space.c: free blocks in the pools (an estimate between refreshes) */
	_Atomic uint64_t space_free, space_total, space_refreshed_ms;
	atomic_bool space_exact; /* the last refresh read bitmaps, not counts */
	_Atomic uint64_t space_frees_seen; /* ps->frees when it was last read */
	_Atomic uint64_t space_conns_seen; /* and which pools counted, how */
	_Atomic uint64_t space_taken_total; /* every space_taken, ever */
	/* Replicated: what the last read of the ring's bitmaps found, and the
	 * ring's stamp before it (0: none); under ring_mu, so that a free
	 * count is never paired with another read's stamp */
	pthread_mutex_t ring_mu;
	uint64_t ring_stamp, ring_total, ring_free;
	/* when a file with blocks lost its last name while the kernel still
	 * held it: its blocks go back at the forget a moment later (space.c) */
	_Atomic uint64_t unlinked_held_ms;
	_Atomic size_t log_segments; /* of the current log, for the reserve */
	uint64_t ckpt_retry_ms;      /* no background checkpoint before this */
	/* read-write: blocks released by durable records, waiting for the
	 * read-only mounts to move past those records (readers.c) */
	struct rp_heldvec held;
	struct rp_reader_watch readers;
	/* read-only: where we are in the writer's log, our reader slot, and
	 * a lock that keeps records from being applied under a data read */
	struct rp_logtail tail;
	struct rp_reader reader;
	pthread_rwlock_t apply;
	uint32_t follow_ms;
	atomic_bool reader_stale;
	/* data reads are served before this (rp_boot_ms): the follow thread
	 * sets it at each heartbeat that lands, readers only load it */
	_Atomic uint64_t reader_fresh_until;
	/* what metrics show (fs_metrics.c) */
	struct {
		_Atomic uint64_t log_records, log_bytes, log_flushes, checkpoints;
		_Atomic uint64_t prealloc_hits, prealloc_misses;
		struct rp_hist lease_renew;
	} stats;
};

#define SEG_BLOCKS 64
#define IO_BUF_SIZE (1u << 20)
#define BUFPOOL_MAX 32 /* registered I/O buffers at most */
#define ZERO_BUF_SIZE (1u << 20)

/* log.c: with fs->mu held */
int log_init(struct rp_fs *fs, struct rp_logw *w, uint64_t epoch);
void log_discard(struct rp_fs *fs, struct rp_logw *w, bool free_segments);
int log_append(struct rp_fs *fs, struct rp_logw *w, struct rp_rec *r);
void log_mark(const struct rp_logw *w, struct rp_logmark *m);
void log_rollback(struct rp_fs *fs, struct rp_logw *w, const struct rp_logmark *m);
int fs_alloc_segment(struct rp_fs *fs, struct rp_extent *out);
int log_flush(struct rp_fs *fs, struct rp_logw *w);
void log_tail_init(struct rp_logtail *t, const struct rp_volrec *vol);
/* Apply each complete transaction past the cursor and move the cursor past
 * it; stops quietly at the end of what is written. Segments entered are
 * added to segs (may be NULL). */
int log_tail_read(struct rp_poolset *ps, struct rp_logtail *t,
		  int (*apply)(void *, const struct rp_rec *), void *arg, struct rp_extvec *segs,
		  uint64_t *records);
/* The whole stream from the volume's head; end (may be NULL) gets the
 * cursor after the last complete transaction. */
int log_replay(struct rp_poolset *ps, const struct rp_volrec *vol,
	       int (*apply)(void *, const struct rp_rec *), void *arg, struct rp_extvec *segs,
	       uint64_t *records, struct rp_logtail *end);

/* state.c: applying records to the in-memory namespace (replay and live) */
int state_apply(struct rp_fs *fs, const struct rp_rec *r, struct rp_extvec *freed);
int state_load(struct rp_fs *fs, struct rp_extvec *segs, char *err, size_t errlen);
void state_free(struct rp_fs *fs);

/* checkpoint.c: with fs->mu held */
int checkpoint(struct rp_fs *fs);
/* Has the log grown enough since the last checkpoint to rewrite it? */
bool checkpoint_due(const struct rp_fs *fs);
/* Is the volume inside its reserve with a log that has grown since the
 * last checkpoint? Then checkpoint now (space.c). */
bool checkpoint_in_reserve(struct rp_fs *fs);
/* The same with an estimate of the current image (walks the inodes). */
bool checkpoint_worthwhile(const struct rp_fs *fs);
/* Write the records that recreate the whole namespace into w. */
int checkpoint_write_image(struct rp_fs *fs, struct rp_logw *w);

/* journal helpers (namespace.c): log and apply in one step, with fs->mu held */
int fs_commit(struct rp_fs *fs, struct rp_rec *recs, size_t n);
struct rp_inode *fs_inode(struct rp_fs *fs, uint64_t ino);
void fs_maybe_purge(struct rp_fs *fs, struct rp_inode *in);
void fs_rec_attr(const struct rp_inode *in, struct rp_rec *r);
struct timespec fs_now(void);
/* 0, or why this mount may not change the volume (EROFS; EIO once fenced) */
int fs_writable(struct rp_fs *fs);
/* fs_writable, and the lease fresh (renewed first if old): before a change */
int fs_may_change(struct rp_fs *fs);

/* follow.c: a read-only mount following the writer's log */
void follow_step(struct rp_fs *fs);
/* May this read-only mount serve data reads (its heartbeat is recent)? */
bool follow_fresh(struct rp_fs *fs);
/* The follow thread, after its heartbeat landed (and at mount). */
void follow_set_fresh(struct rp_fs *fs);

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

/* rebuild.c: after a writer stopped without unmounting, its last writes
 * may have reached some copies only: make every current copy the same as
 * the first (fs->mu held, before serving), in every file extent
 * (everything) or in the chunks the last writer's intent names, and
 * (with_log: after a takeover) in the log and the blocks on their way. */
int copies_resync(struct rp_fs *fs, bool everything, bool with_log);
/* One extent: the first current copy onto the other current ones; buf
 * holds COPY_CHUNK bytes. A copy that cannot be written is recorded stale
 * (or, when it cannot be, the error is returned). */
#define COPY_CHUNK (1u << 20)
int copies_resync_extent(struct rp_fs *fs, const struct rp_extent *e, void *buf);
/* Fill the stale pools that answer (a rebuild's mount, after replay). */
int rebuild_stale(struct rp_fs *fs, uint32_t rate_mib, FILE *out, struct rp_progress *pr,
		  char *err, size_t errlen);
/* The read-write mount's background thread: act on a rebuild request, in a
 * thread of its own (the background thread goes on flushing the log and
 * checkpointing meanwhile); rebuild_join, once fs->stop is set, waits for
 * it. */
void rebuild_poll(struct rp_fs *fs);
void rebuild_join(struct rp_fs *fs);

/* diverged.c: a write to a replicated file that failed may have reached
 * some copies and not others that could not be marked stale (the last
 * current copy of other blocks): the range is noted, and the background
 * thread makes its copies the same once they answer, under the file's I/O
 * lock. */
struct rp_diverged {
	uint64_t ino, off, len;
};
/* requests.c, with fs->mu held: the REQ record of the request this thread
 * serves (false: none, or not recorded), and one applied (replay, commit) */
bool fs_request_rec(struct rp_rec *r);
void fs_request_note(struct rp_fs *fs, uint64_t conn, uint64_t unique);
/* The kept names as REQ records, for a checkpoint's image. */
int fs_requests_write(struct rp_fs *fs, int (*put)(struct rp_fs *, struct rp_logw *,
						   struct rp_rec *), struct rp_logw *w);

/* intent.c: before an in-place write of [off, off+len) of ino, its buckets
 * durable (mu_held: the caller holds fs->mu); after it, rc its outcome. */
int intent_begin(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len, bool mu_held);
void intent_end(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len, int rc);
/* With fs->mu held: the background thread's clearing; replay; the image. */
void intent_clear_idle(struct rp_fs *fs);
void intent_apply(struct rp_fs *fs, const struct rp_rec *r);
int intent_write_image(struct rp_fs *fs, int (*put)(struct rp_fs *, struct rp_logw *,
						     struct rp_rec *), struct rp_logw *w);
/* After replay: may some copies differ, and where (chunks of files)? */
bool intent_any(struct rp_fs *fs);
bool intent_dirty(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len);
/* The copies were made the same: nothing may differ now. */
void intent_reset(struct rp_fs *fs);

void diverged_init(struct rp_fs *fs);
void diverged_fini(struct rp_fs *fs);
void diverged_note(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len);
/* Without fs->mu. Returns how many ranges are still to do. */
size_t diverged_resync(struct rp_fs *fs);

/* mount.c */
int fs_new(struct rp_poolset *ps, struct rp_fs **out);
/* Read and install the volume's placement (fs->slot set). */
int fs_use_placement(struct rp_fs *fs, char *err, size_t errlen);
void fs_delete(struct rp_fs *fs);

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
