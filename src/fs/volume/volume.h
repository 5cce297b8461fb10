/* The volume (volume/): the home area kept on every pool and its epochs
 * (home.c), volume records, reader slots and rebuild requests (volume.c),
 * the lease and the guards in front of writes (lease.c), making, mounting
 * and unmounting (mount.c). */
#ifndef RDMAPOOL_FS_VOLUME_H
#define RDMAPOOL_FS_VOLUME_H

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
#include <sys/types.h>
#include <time.h>

struct rp_fs;
struct rp_inode;
struct rp_rec;
struct rp_logw;
struct rp_volrec;
struct rp_progress;

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
/* A word every member of the authority's epoch holds (a copy a transition
 * has not reached yet is waited for, then rolled forward): one an atomic
 * put on the authority alone, whose mirror is still under way or whose
 * process died before it, could be lost with that authority (rdmapool(7)
 * SEVERAL WRITERS). -EAGAIN while it is not so (a member does not answer,
 * a move is under way): ask again later. For words set once (the shared
 * log's directory). */
int home_read_settled(struct rp_poolset *ps, uint64_t off, uint64_t *v);
#ifdef RP_TEST_HOOKS
/* Tests only: fn(off) runs after an atomic that changed off landed on the
 * authority, before it goes to the other copies. */
void home_test_stall(void (*fn)(uint64_t off));
/* Tests only: fn(id, authority, epoch) runs before each copy a move takes
 * to a new epoch. */
void home_test_move(void (*fn)(uint32_t id, uint32_t auth, uint64_t to));
#endif
void home_describe(struct rp_poolset *ps, FILE *out);
/* Is a connected pool's home copy out of sync (as the last scan saw)? */
bool home_any_out(struct rp_poolset *ps);
/* Start the home epochs at 1 (mkfs, read-write mounts). */
int home_init(struct rp_poolset *ps);
/* Copy the home area onto reachable pools whose copy is out of sync. */
int home_resync(struct rp_poolset *ps, FILE *out);

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
/* A mounted volume's record replaced by a newer one of the same volume
 * (a checkpoint, a reader's reload): every field but the name, which never
 * changes while mounted and which other threads read unlocked for their
 * messages (writing it again, even with the same bytes, is a data race). */
_Static_assert(sizeof(struct rp_volrec) == 136, "a field added to rp_volrec: vol_update copies it");
static inline void vol_update(struct rp_volrec *dst, const struct rp_volrec *src)
{
	dst->seq = src->seq;
	memcpy(dst->uuid, src->uuid, sizeof(dst->uuid));
	dst->epoch = src->epoch;
	dst->head = src->head;
	dst->block_size = src->block_size;
	dst->stripe_blocks = src->stripe_blocks;
	dst->lease_ms = src->lease_ms;
	dst->head_tag = src->head_tag;
	dst->created_ns = src->created_ns;
}
/* The volume's lease period: its record's, or 1 s for records from before
 * it was kept. */
static inline uint32_t vol_lease_period(const struct rp_volrec *r)
{
	return r->lease_ms ? r->lease_ms : 1000;
}
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
/* The holder's fence set (again) in every pool connected now: each cuts the
 * connections of the volume's holders with older epochs and remembers this
 * one (rdmapool(7), Fencing); the connections are tagged with it from now
 * on. -ENOLCK: a pool knows a newer holder. */
int lease_fence_pools(struct rp_poolset *ps, const struct rp_lease *l);
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

/* mount.c */
int fs_new(struct rp_poolset *ps, struct rp_fs **out);
/* Read and install the volume's placement (fs->slot set). */
int fs_use_placement(struct rp_fs *fs, char *err, size_t errlen);
void fs_delete(struct rp_fs *fs);

#endif
