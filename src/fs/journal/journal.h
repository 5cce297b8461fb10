/* The journal (journal/): log records (record.c), the metadata log and
 * its cursors (log.c), applying records to memory (state.c), checkpoints
 * (checkpoint.c), read-only mounts following the log (follow.c), the
 * names of logged requests (requests.c); the shared log of several
 * writers has its own header (shared_log.h). */
#ifndef RDMAPOOL_FS_JOURNAL_H
#define RDMAPOOL_FS_JOURNAL_H

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
	REC_SPARE = 15,     /* the log's spare segment (ext), allocated and zeroed: the
			     * log's own until the log is retired (log.c) */
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
	bool spare_named;        /* a SPARE record for it is in the log */
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
	bool have_spare, spare_named;
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

#define FS_REQS_KEPT 1024 /* four times the threads a daemon may have (rdmapoolfs.c) */

#define SEG_BLOCKS 64

/* log.c: with fs->mu held */
int log_init(struct rp_fs *fs, struct rp_logw *w, uint64_t epoch);
void log_discard(struct rp_fs *fs, struct rp_logw *w, bool free_segments);
/* At a clean end (unmount, mkfs): a record of its own says the log keeps
 * no spare, and once it is durable the spare goes back; when the flush
 * fails the spare stays the log's (the next mount frees it). */
int log_release_spare(struct rp_fs *fs, struct rp_logw *w);
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
/* Before a change is logged: write again the record of a checkpoint in
 * doubt (fs->ckpt_doubt) and switch to its log; -EIO while that fails. */
int checkpoint_settle(struct rp_fs *fs);
/* At unmount or a failed mount: a checkpoint still in doubt keeps its
 * log's blocks (either record may be the one on the pools). */
void checkpoint_forget_doubt(struct rp_fs *fs);
/* Has the log grown enough since the last checkpoint to rewrite it? */
bool checkpoint_due(const struct rp_fs *fs);
/* Is the volume inside its reserve with a log that has grown since the
 * last checkpoint? Then checkpoint now (space.c). */
bool checkpoint_in_reserve(struct rp_fs *fs);
/* The same with an estimate of the current image (walks the inodes). */
bool checkpoint_worthwhile(const struct rp_fs *fs);
/* Write the records that recreate the whole namespace into w. */
int checkpoint_write_image(struct rp_fs *fs, struct rp_logw *w);

/* follow.c: a read-only mount following the writer's log */
void follow_step(struct rp_fs *fs);
/* May this read-only mount serve data reads (its heartbeat is recent)? */
bool follow_fresh(struct rp_fs *fs);
/* The follow thread, after its heartbeat landed (and at mount). */
void follow_set_fresh(struct rp_fs *fs);

/* requests.c, with fs->mu held: the REQ record of the request this thread
 * serves (false: none, or not recorded), and one applied (replay, commit) */
bool fs_request_rec(struct rp_rec *r);
void fs_request_note(struct rp_fs *fs, uint64_t conn, uint64_t unique);
/* The kept names as REQ records, for a checkpoint's image. */
int fs_requests_write(struct rp_fs *fs, int (*put)(struct rp_fs *, struct rp_logw *,
						   struct rp_rec *), struct rp_logw *w);

#endif
