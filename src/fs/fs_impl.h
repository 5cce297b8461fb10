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
 * resync, write intent), admin/ (fsck, listing, metrics). Each folder's
 * header says what it offers; this one ties them into the mounted
 * filesystem. */
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
#include <string.h>

/* what each folder offers (in the order their types build on each other) */
#include "data/data.h"
#include "namespace/namespace.h"
#include "journal/journal.h"
#include "volume/volume.h"
#include "replica/replica.h"

/* ---- the mounted filesystem ---- */
struct rp_fs {
	struct rp_poolset *ps;
	bool ro;
	int slot;
	struct rp_volrec vol;
	struct {                  /* the writer's lease and its thread (lease.c) */
		struct rp_lease held;
		pthread_mutex_t mu; /* the lease word, the fields below, cv */
		pthread_cond_t cv;  /* CLOCK_MONOTONIC: renewals, kicks, stop */
		pthread_t thread;
		bool running, stop, kick;
		_Atomic uint64_t fresh_until; /* writes may go out before this (rp_boot_ms) */
		atomic_bool lost;
	} lease;
	int64_t missing_peer;     /* replay: a peer with data, not in the cluster file */
	struct {                  /* copies; stale pools (placement.c) */
		struct rp_volplace vol;
		bool installed;
		uint32_t warned;  /* ring positions said to hold a last copy */
		pthread_mutex_t mu;
	} place;
	struct {                   /* an online rebuild (rebuild.c) */
		unsigned done, left, returned;
		pthread_t thread;
		bool started;      /* the background thread's: started, not joined */
		atomic_bool busy;  /* the rebuild thread is at work */
		uint64_t word;     /* the request it serves */
		bool holding;      /* copying held blocks: none freed (under mu) */
	} rebuild;
	struct rp_pool_id {       /* by peer id: the pool uuid the volume's data is on */
		bool known;
		uint8_t uuid[16];
	} *pool_ids;
	uint32_t block_size, stripe_blocks, commit_ms;
	pthread_mutex_t mu;      /* namespace, inode table, log */
	struct rp_itable it;
	uint64_t next_ino;
	struct rp_logw log;
	struct rp_extent log_spare_named; /* what the replayed log names its spare */
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
	struct {                       /* file ranges whose copies may differ (diverged.c) */
		pthread_mutex_t mu;    /* guards the rest */
		struct rp_diverged *ranges;
		size_t n, cap;
	} div;
	struct {                       /* blocks claimed ahead (prealloc.c) */
		pthread_mutex_t mu;
		struct rp_extent *by_peer;
	} prealloc;
	struct {                       /* the background thread (mount.c) */
		pthread_t thread;
		bool running;
		pthread_mutex_t mu;
		pthread_cond_t cv;
	} bg;
	atomic_bool stop;
	uint64_t alloc_counter;
	struct {                       /* free blocks in the pools (space.c) */
		/* an estimate between refreshes */
		_Atomic uint64_t free, total, refreshed_ms;
		atomic_bool exact; /* the last refresh read bitmaps, not counts */
		_Atomic uint64_t frees_seen; /* ps->frees when it was last read */
		_Atomic uint64_t conns_seen; /* and which pools counted, how */
		_Atomic uint64_t taken_total; /* every space_taken, ever */
		/* Replicated: what the last read of the ring's bitmaps found,
		 * and the ring's stamp before it (0: none); under ring_mu, so
		 * that a free count is never paired with another read's stamp */
		pthread_mutex_t ring_mu;
		uint64_t ring_stamp, ring_total, ring_free;
		/* when a file with blocks lost its last name while the kernel
		 * still held it: its blocks go back at the forget a moment later */
		_Atomic uint64_t unlinked_held_ms;
	} space;
	_Atomic size_t log_segments; /* of the current log, for the reserve */
	uint64_t ckpt_retry_ms;      /* no background checkpoint before this */
	uint64_t flush_retry_ms;     /* no flush by a commit before this (one failed) */
	/* a logged record the in-memory state could not take (memory): the
	 * state is not the log's any more, so nothing changes or is freed
	 * until a remount replays the log */
	_Atomic bool state_lost;
	/* A checkpoint whose volume-record write failed may still have
	 * landed on a home copy: its new log and record wait here, and no
	 * change is logged until that record is written for sure
	 * (checkpoint_settle), so either record replays the same state. */
	struct {
		bool pending;
		struct rp_logw log;
		struct rp_volrec vol; /* as before the failed write */
		uint64_t retry_ms;    /* no new try before this */
	} ckpt_doubt;
	/* read-write: blocks released by durable records, waiting for the
	 * read-only mounts to move past those records (readers.c) */
	struct rp_heldvec held;
	struct rp_reader_watch readers;
	/* read-only: where we are in the writer's log, our reader slot, and
	 * a lock that keeps records from being applied under a data read */
	struct {                       /* following the writer (follow.c) */
		struct rp_logtail tail;
		struct rp_reader reader;
		pthread_rwlock_t apply;
		uint32_t ms;
		atomic_bool stale;
		/* data reads are served before this (rp_boot_ms): the follow
		 * thread sets it at each heartbeat that lands, readers only
		 * load it */
		_Atomic uint64_t fresh_until;
		/* the follow thread's own: heartbeats failed in a row, the
		 * slot given up (hb 0: none), when a volume record older than
		 * the log was first seen, when a pool was last taken up (and
		 * which is next), when the log was last loaded to look for one
		 * (rp_now_ms; 0: never) */
		uint32_t fails;
		struct rp_reader abandoned;
		uint64_t older_ms, adopt_ms, probe_ms;
		uint32_t adopt_turn, adopt_wait;
	} follow;
	/* what metrics show (fs_metrics.c) */
	struct {
		_Atomic uint64_t log_records, log_bytes, log_flushes, checkpoints;
		_Atomic uint64_t prealloc_hits, prealloc_misses;
		struct rp_hist lease_renew;
	} stats;
};

/* Does pool p, as this process read its superblock, hold another pool than
 * uuid (a replacement: formatted again, or started without its backing
 * file)? A pool not reached yet holds nothing known: no. */
static inline bool fs_pool_holds_other(const struct rp_pool *p, const uint8_t uuid[16])
{
	return p->present && p->sb.magic && memcmp(p->sb.pool_uuid, uuid, 16) != 0;
}

/* admin/fsck.c: fsck's checks of the namespace itself (every name's inode
 * exists, link counts) over one built from records, as fsck runs them after
 * a replay (and the replay fuzzer after whatever it applied); findings go
 * to out and count in rep->errors. It reuses each inode's nlookup as its
 * counter: never on a mounted filesystem's namespace. */
void fsck_check_names(struct rp_fs *fs, const char *vol, FILE *out, struct rp_fsck_report *rep);

#endif
