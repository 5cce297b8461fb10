/* The pool layer: the set of pools a cluster file names, their layouts, and
 * the client-side allocator that claims blocks with remote compare-and-swap
 * on the bitmaps in the pools. Uses only the transport below it. */
#ifndef RDMAPOOL_POOL_H
#define RDMAPOOL_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdmapool/cluster.h>
#include <rdmapool/layout.h>
#include <rdmapool/metrics.h>
#include <rdmapool/transport.h>

/* bitmap words an allocation reads per step: 512 bytes, 4096 blocks */
#define RP_ALLOC_SPAN_WORDS 64

struct rp_pool {
	bool present;              /* listed in the cluster file */
	struct rp_peer peer;
	/* NULL while never reached; set once, under mu, and read unlocked
	 * (rp_pool_connected), so atomic; it lives until the set closes */
	struct rp_conn *_Atomic conn;
	/* Its geometry is written once (open once the superblock is this
	 * pool's, a copy's borrowed for a pool down since the start, or the
	 * first adoption) and then read unlocked; an adoption changes only its
	 * identity, under mu. */
	struct rp_pool_sb sb;
	_Atomic uint64_t nblocks;  /* sb.nblocks once known (0: not yet), for other threads */
	_Atomic int error;         /* why unusable: negative errno, 0 = up (read unlocked) */
	bool opened;               /* reached and checked when the set was opened (set once) */
	/* moved by each adoption of another pool in its place, or of a pool
	 * never reached before, and when the caller's records name another
	 * (missed.c keeps frees only for generation 0) */
	_Atomic uint32_t identity_gen;
	char err[320];
	pthread_mutex_t mu;
	uint64_t cursor;           /* next bitmap word this client looks at */
	/* The span of the bitmap last read, kept up to date with what our CASes
	 * return: the next allocation tries it without a read (a stale word
	 * only costs a failed CAS, which returns the real one). */
	uint64_t span[RP_ALLOC_SPAN_WORDS];
	uint64_t span_w0, span_n;  /* span_n 0: nothing cached */
	uint64_t last_revive_ms;   /* last reconnect attempt */
	bool revive_ok;            /* and it succeeded */
	bool revive_cheap;         /* or nothing listened there: no backoff */
	uint64_t last_revive_warn_ms;
	/* Replicated volumes: this pool missed writes (it was down, cut off or
	 * replaced), so it is neither read nor written until it is rebuilt. */
	_Atomic bool stale;
	_Atomic bool home_out;     /* its home area copy is out of sync (fs layer, home.c) */
	/* Being rebuilt while in use: written with the other copies, but
	 * neither read nor allocated on until it is current. */
	_Atomic bool filling;
	/* reconnected, its superblock not checked yet: not up for anyone */
	_Atomic bool validating;
	_Atomic uint64_t reach_ms; /* last rp_pool_reach attempt to adopt it */
	_Atomic bool reached_late; /* adopted by rp_pool_reach (down at the open) */
	/* Replicated volumes: data writes between their look at stale and
	 * their end (replica.c), for rp_pool_writes_drain. */
	_Atomic uint32_t writes_in;
	/* The pool keeps a used-block count (RP_COUNT_OFFSET; false: a pool
	 * from an older server, whose bitmap is read instead). Our CASes'
	 * changes to it wait in count_pending until the next flush (a free,
	 * a usage read, or RP_COUNT_BATCH blocks): one fetch-and-add for many. */
	_Atomic bool counted;
	_Atomic int64_t count_pending;
	_Atomic uint64_t churn_pending; /* bits our CASes changed, for RP_COUNT_CHURN_OFFSET */
	_Atomic uint32_t count_inflight; /* hand-overs under way (no stamp meanwhile) */
	uint64_t count_start;      /* the server start that set the count (under mu) */
	/* what metrics show (pool_metrics.c): kept here so they outlive
	 * reconnects; the transport fills latency */
	struct {
		_Atomic uint64_t read_bytes, written_bytes;
		_Atomic uint64_t bitmap_read_bytes;
		_Atomic uint64_t cas, cas_failed;
		_Atomic uint64_t retries; /* ios tried again on a new connection (io.c) */
		struct rp_hist latency;
	} stats;
};

/* Replica placement of the volume a process works on (replica.c). The k-th
 * copy of an extent on ring[i] is the same blocks on ring[i+k]: one extent
 * names all its copies, so the metadata log, extent maps and checkpoints
 * are the same with and without replicas. */
#define RP_MAX_REPLICAS 4
#define RP_RING_MAX 32
struct rp_placement {
	uint32_t replicas;          /* copies of every block; 0 or 1: no replicas */
	uint32_t nring;
	uint32_t ring[RP_RING_MAX]; /* peer ids, zones interleaved */
	/* A write that did not reach a copy: the owner records that the pool is
	 * stale before the write counts as done; 0 or a negative errno. */
	int (*lost)(void *arg, uint32_t pool, int err);
	void *lost_arg;
};

struct rp_poolset {
	char cluster_name[RP_NAME_MAX + 1];
	uint32_t block_size;
	uint32_t op_timeout_ms;
	/* Pools are named by peer id, never by position in the cluster file,
	 * so extents survive peers being reordered, added or removed: pools[id]
	 * for ids 0..n-1, of which the cluster file lists npeers (ids[],
	 * ascending); the others are absent (-ENODEV). */
	size_t n;
	struct rp_pool *pools;
	size_t npeers;
	uint32_t *ids;
	struct rp_placement place;
	/* the pool whose home area is authoritative, cached by the fs layer
	 * (home.c): -1 unknown */
	_Atomic int64_t home_pool;
	_Atomic uint64_t home_checked_ms;
	/* the authority the elected epoch's record names, when the election
	 * fell back to another because it was not in sync then (-1: none) */
	_Atomic int64_t home_rauth_out;
	/* the home epoch this process elected at or moved the copies to (0:
	 * none yet), and whether it may elect without members that do not
	 * answer (rdmapool rebuild --force) */
	_Atomic uint64_t home_epoch;
	bool home_force;
	/* a read-only mount: never moves the copies' epochs (drops none,
	 * moves past no stray); the writer decides who is in sync. When it
	 * last said that an update of its failed on that (home.c) */
	bool home_no_drop;
	uint64_t home_kept_warn_ms;
	/* to connect to a pool later (rp_pool_adopt) */
	uint8_t secret[RP_SECRET_MAX];
	size_t secret_len;
	uint32_t connect_timeout_ms;
	/* every registered buffer, so a pool connected later gets them too */
	pthread_mutex_t bufs_mu;
	struct rp_buf *bufs;
	/* frees asked of this client's allocator so far: the fs layer rereads
	 * the bitmaps for its free count only when this moved or the count is
	 * old (space.c) */
	_Atomic uint64_t frees;
	/* Asked before a read or write is tried again on a new connection
	 * (io.c): the fs layer's lease guard, so that a mounter taken over
	 * while its first try hung never sends a second. NULL: no second try. */
	int (*retry_guard)(void *arg);
	void *retry_arg;
	/* the lease holder's fence (rp_poolset_fence): every connect carries
	 * it; fenced once a pool refused it for a newer holder's */
	_Atomic uint64_t fence_session, fence_epoch;
	atomic_bool fenced;
	/* with copies: frees a copy missed, per pool, to be given back once
	 * it is current again (missed.c) */
	pthread_mutex_t missed_mu;
	struct rp_missed *missed;
	/* extents kept in all (read unlocked: every free looks at it first,
	 * and takes missed_mu only when something is kept) */
	_Atomic size_t missed_runs;
	/* rp_pool_reach adopts pools down since the open (set by the fs layer
	 * only while it finds the volume, before it reads any record) */
	atomic_bool reach_down;
};

/* The k-th listed pool, k taken modulo their number: for spreading. */
static inline uint32_t rp_poolset_pick(const struct rp_poolset *ps, uint64_t k)
{
	return ps->ids[k % ps->npeers];
}

static inline bool rp_poolset_has(const struct rp_poolset *ps, uint32_t pool)
{
	return pool < ps->n && ps->pools[pool].present;
}

/* Extent: count consecutive blocks starting at block in pool. */
struct rp_extent {
	uint32_t pool;
	uint32_t count;
	uint64_t block;
};

enum rp_poolset_flags {
	RP_POOLSET_ALLOW_DOWN = 1, /* open even when some pools are unreachable */
};

int rp_poolset_open(const struct rp_cluster *cl, const uint8_t *secret, size_t secret_len,
		    int flags, struct rp_poolset **out, char *err, size_t errlen);
void rp_poolset_close(struct rp_poolset *ps);
/* List every pool's counters in the metrics registry (until close). */
int rp_poolset_metrics(struct rp_poolset *ps);

static inline bool rp_pool_up(const struct rp_pool *p) { return p->conn && p->error == 0; }
/* Connected now, without trying to reconnect (which may take the connect
 * timeout): for copies that can be skipped rather than waited for. */
bool rp_pool_connected(const struct rp_poolset *ps, uint32_t pool);
/* Blocks in the pool; 0 while its superblock was never read. */
uint64_t rp_pool_nblocks(const struct rp_poolset *ps, uint32_t pool);

/* A lease holder's fence in the pools (rdmapool(7), "Fencing"): from now on
 * every connection carries the volume's fence session and this writer
 * epoch, and every pool connected now is reconnected with it, so that its
 * server cuts the connections of every holder with an older epoch before
 * this one reads or writes anything there. A pool that is down gets it when
 * it is reconnected. -ENOLCK when a pool refuses it: a holder with a newer
 * epoch has connected (then rp_poolset_fenced is true). */
int rp_poolset_fence(struct rp_poolset *ps, uint64_t session, uint64_t epoch);
/* Has a pool refused this holder for a newer one? Its I/O fails from then
 * on: -ENOLCK inside this layer, -EIO out of rp_poolset_rw. */
bool rp_poolset_fenced(const struct rp_poolset *ps);

/* Make sure a pool can be used: reconnect a dropped connection (at most every
 * half second) and check that the region behind it is the same pool (same
 * uuid); a pool whose server came back empty is marked failed for good.
 * Returns 0 or a negative errno. */
int rp_pool_ensure(struct rp_poolset *ps, uint32_t pool);

/* Take a pool back into use while running: connect (or reconnect) to it and
 * accept the pool its server holds now, even under another uuid (an empty
 * server in a dead one's place, for a rebuild), when its geometry is the one
 * this client computes offsets with, and when expect_uuid (if not NULL) is
 * its uuid (-ESTALE else). Registers every buffer with it.
 * 0, or a negative errno with the reason in err. */
int rp_pool_adopt(struct rp_poolset *ps, uint32_t pool, const uint8_t *expect_uuid, char *err,
		  size_t errlen);
/* rp_pool_ensure, and, while ps->reach_down is set, a pool down when the
 * set was opened (and not adopted since) connected as the open would have:
 * rp_pool_adopt without an expected uuid, at most once a second, so which
 * pool it holds is the caller's to check against the volume's records
 * (read after, as for every pool found at the open). Nothing is kept for
 * it in missed.c (not the pool found at the open). */
int rp_pool_reach(struct rp_poolset *ps, uint32_t pool);
/* Wait until every data write to copies that found the pool not stale has
 * ended (landed, or failed for good): the caller set stale first, so none
 * can start after. Up to ms; 0, or -ETIMEDOUT while one is still under
 * way (for each copy a write may wait behind another thread's reconnect
 * and make its own, ask the lease guard again, and post twice). */
int rp_pool_writes_drain(struct rp_poolset *ps, uint32_t pool, uint64_t ms);
/* rp_pool_write of a copy's data blocks outside rp_poolset_rw (a resync of
 * diverged copies): counted as rp_poolset_rw counts its writes, and
 * -ESTALE (nothing sent) once the pool is stale. */
int rp_pool_write_copy(struct rp_poolset *ps, uint32_t pool, uint64_t off, const void *buf,
		       size_t len);
/* Whether the pool's server holds the pool with this uuid now (0, -ESTALE
 * when another, or why it could not be asked), connecting if need be; what
 * the client knows of the pool is left as it is, and a connection to
 * another pool than that is not kept. For rp_pool_adopt's caller to ask
 * before it holds up its own users for the adopt. */
int rp_pool_holds(struct rp_poolset *ps, uint32_t pool, const uint8_t uuid[16]);

/* Claim up to want (1..64) contiguous free blocks in one pool: at least one
 * block is claimed, fewer than want when no run that long is found nearby.
 * -ENOSPC when the pool is full. */
int rp_pool_alloc(struct rp_poolset *ps, uint32_t pool, uint32_t want, struct rp_extent *out);
/* Same, trying every listed pool, in id order from the peer id first (mod
 * the highest id + 1) on, until one has space. */
int rp_poolset_alloc(struct rp_poolset *ps, uint32_t first, uint32_t want, struct rp_extent *out);
/* Release an extent; -EUCLEAN if any of its blocks was not allocated. */
int rp_pool_free(struct rp_poolset *ps, const struct rp_extent *e);
/* Release many extents at once: every word touched is read in one batch and
 * cleared in another (per pool), not one round trip after another. The
 * first error is returned; the other extents are freed all the same. */
int rp_pool_free_many(struct rp_poolset *ps, const struct rp_extent *v, size_t n);
/* Extents handed back to the caller: starts zeroed; the caller frees v,
 * whatever was returned. */
struct rp_extent_list {
	struct rp_extent *v;
	size_t n, cap;
};
/* Same, and (volumes without copies) the blocks of bitmap words that were
 * never posted a change because their read, the batch's first round,
 * failed (the pool went away or stalled) are added to unsent (NULL: not
 * wanted): those are certainly still allocated, for the caller to free
 * again later. Everything else that fails stays allocated (fsck --repair
 * frees it): a word whose compare-and-swap was posted and not answered
 * may have changed, its blocks given out again since; a word found not
 * allocated (-EUCLEAN) or outside its pool (-EINVAL) would fail again; so
 * does all of it when memory runs out. With copies nothing is added: a
 * copy not freed stays allocated. */
int rp_pool_free_many_keep(struct rp_poolset *ps, const struct rp_extent *v, size_t n,
			   struct rp_extent_list *unsent);

/* Free and total blocks of one pool: from its used-block count (one
 * fetch-and-add, which also hands over this client's changes not counted
 * yet), or from its whole bitmap when the pool keeps no count or the
 * caller asks for it (exact: no count a crash left off). */
int rp_pool_usage(struct rp_poolset *ps, uint32_t pool, bool from_bitmap, uint64_t *free_blocks,
		  uint64_t *total);
/* The pool's used-block count with this client's changes in it, or
 * -EOPNOTSUPP when the pool keeps none. */
int rp_pool_used(struct rp_poolset *ps, uint32_t pool, uint64_t *used);
/* Changes of the allocation path are handed over once this many blocks
 * wait: what other clients' free counts miss of ours (and what a crash
 * leaves uncounted) stays this small, at one fetch-and-add per as many
 * blocks. */
#define RP_COUNT_BATCH 1024
/* Where the pool's bitmap stands, in one number that moves whenever a
 * client hands over changes to its bits (server start, used-block count
 * and churn; this client's changes handed over first): equal twice, the
 * bitmap differs by no more than what other clients hold back (below
 * RP_COUNT_BATCH blocks each), their CASes in doubt, and churn by clients from
 * before the churn word (rdmapool(7)). -EOPNOTSUPP when the pool keeps no
 * count, -EBUSY while this client's hand-over is under way. */
int rp_pool_bitmap_stamp(struct rp_poolset *ps, uint32_t pool, uint64_t *stamp);
/* Move the pool's used-block count by delta (fsck setting it right). */
int rp_pool_count_adjust(struct rp_poolset *ps, uint32_t pool, int64_t delta);
/* Hand this client's uncounted changes to every pool's count. */
void rp_poolset_count_flush(struct rp_poolset *ps);
/* Whole bitmap of a pool (bitmap_words words); caller frees. */
int rp_pool_read_bitmap(struct rp_poolset *ps, uint32_t pool, uint64_t **words);

/* Raw byte access to a pool's region (metadata, tools). */
int rp_pool_read(struct rp_poolset *ps, uint32_t pool, uint64_t off, void *buf, size_t len);
int rp_pool_write(struct rp_poolset *ps, uint32_t pool, uint64_t off, const void *buf, size_t len);
int rp_pool_cas(struct rp_poolset *ps, uint32_t pool, uint64_t off, uint64_t expect,
		uint64_t desired, uint64_t *old);
int rp_pool_faa(struct rp_poolset *ps, uint32_t pool, uint64_t off, uint64_t add, uint64_t *old);

enum rp_transport_kind rp_pool_transport(const struct rp_pool *p);

/* ---- replicas (replica.c) ----
 * With a placement of replicas >= 2, rp_pool_alloc claims the same blocks
 * on every copy's pool, rp_pool_free/free_many release them on each,
 * rp_poolset_rw writes every copy in one batch (a copy that fails is
 * reported through place.lost and skipped from then on) and reads one copy,
 * failing over to the next. Raw access (rp_pool_read/write/cas/faa) is
 * never replicated. */
int rp_poolset_set_placement(struct rp_poolset *ps, const struct rp_placement *pl);
static inline bool rp_poolset_replicated(const struct rp_poolset *ps)
{
	return ps->place.replicas > 1;
}
/* The pools holding copies of extents whose first copy is on pool, first
 * copy first; returns how many (1 without replicas). */
unsigned rp_replica_members(const struct rp_poolset *ps, uint32_t pool, uint32_t *out);
/* Order peer ids for a placement: zones (zone[i] of ids[i], may be NULL)
 * take turns, so consecutive ring members are in different zones whenever
 * there are enough zones. */
void rp_placement_ring(const uint32_t *ids, const char *const *zone, size_t n, uint32_t *ring);
/* Read bytes of data blocks on pool (off as for rp_poolset_rw), from another
 * copy when that pool is stale or fails. */
int rp_pool_read_data(struct rp_poolset *ps, uint32_t pool, uint64_t off, void *buf, size_t len);
/* Read one copy of bytes of data blocks: copy k (0 first) of pool's extents. */
int rp_pool_read_copy(struct rp_poolset *ps, uint32_t pool, unsigned k, uint64_t off, void *buf,
		      size_t len);
/* Mark blocks [block, block+count) of pool allocated (rebuild). Bits set
 * already are taken as ours, unless fresh (the pool was replaced by an
 * empty one, so nothing of ours is on it yet): then -EEXIST. */
int rp_pool_claim_exact(struct rp_poolset *ps, uint32_t pool, uint64_t block, uint32_t count,
			bool fresh);
/* Undo rp_pool_claim_exact on that pool alone (a rebuild of an empty pool
 * that stopped half way gives back what it claimed). */
int rp_pool_unclaim_exact(struct rp_poolset *ps, uint32_t pool, uint64_t block, uint32_t count);
/* Whether every copy of pool's extents may be allocated on now (not stale,
 * not filling, connected); true without replicas when it is connected. */
bool rp_replica_all_usable(struct rp_poolset *ps, uint32_t pool);
/* The byte offset on pool m of the data bytes at off on pool p. */
uint64_t rp_replica_offset(const struct rp_poolset *ps, uint32_t p, uint32_t m, uint64_t off);
/* With copies: give each pool that is connected and current again the
 * frees it missed while it was stale or away (missed.c); a rebuild calls it
 * once the pool it filled is current. Frees call it too. */
void rp_pool_missed_flush(struct rp_poolset *ps);
/* The pool at this id is not the one the caller's records name (it was
 * replaced before the set was opened): nothing it misses is kept, and what
 * was kept for it is dropped (missed.c). */
void rp_pool_identity_moved(struct rp_poolset *ps, uint32_t pool);
/* Debugging the servers' key check: use a wrong key from now on. */
void rp_pool_debug_set_rkey(struct rp_poolset *ps, uint32_t pool, uint32_t rkey);



/* ---- batched data I/O ---- */

/* A buffer registered with every pool's connection, so one-sided operations
 * move data straight between it and the pools. */
struct rp_buf;
int rp_buf_alloc(struct rp_poolset *ps, size_t len, struct rp_buf **out);
void *rp_buf_data(const struct rp_buf *b);
size_t rp_buf_len(const struct rp_buf *b);
void rp_buf_free(struct rp_buf *b);

struct rp_io {
	uint32_t pool;
	uint64_t off;        /* byte offset in the pool's region */
	struct rp_buf *buf;
	size_t buf_off;      /* where in buf */
	uint32_t len;
	int status;          /* set on return */
};

/* Read (RP_OP_READ) or write (RP_OP_WRITE) every io: all are posted at once,
 * over all pools, then waited for once. Returns 0 or the first error. */
int rp_poolset_rw(struct rp_poolset *ps, enum rp_opcode op, struct rp_io *ios, size_t n);
#endif
