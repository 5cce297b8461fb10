/* Copies (replica/): the placement record (placement.c), rebuild and
 * resync of copies (rebuild.c), ranges a failed write may have left
 * different (diverged.c), write intent: what a takeover resyncs
 * (intent.c). */
#ifndef RDMAPOOL_FS_REPLICA_H
#define RDMAPOOL_FS_REPLICA_H

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
struct rp_pool_id;

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
/* A read-only mount: take the writer's stale marks (and rebuilds) over,
 * keeping its own on ring pools that hold another pool than ids (the
 * records' uuids by peer id) name, or that it reached late and ids do not
 * name (ids NULL: none named). */
int place_follow(struct rp_fs *fs, const struct rp_pool_id *ids);
/* A read-write mount: record ring pools that are down (or replaced) as
 * stale now; the background thread calls it every tick. */
int place_note_down(struct rp_fs *fs);
/* fs->place.vol as it is now (writers replace it under place.mu). */
struct rp_volplace place_snapshot(struct rp_fs *fs);
void place_describe(const struct rp_volplace *pl, char *buf, size_t len);

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

#endif
