/* Write intent: which parts of files a replicated volume's writer may be
 * overwriting in place, so that after it dies only those are made the same
 * on every copy, not the whole volume (rdmapool(7), "Write intent").
 *
 * A file's bytes are cut into 4 MiB chunks, hashed with the inode number
 * into INTENT_BUCKETS buckets. Before an in-place write (blocks the log
 * already maps) its buckets' bits must be durable in the log (an INTENT
 * record with the word's new value, flushed); writes count themselves
 * busy in their buckets while they run. The background thread clears the
 * bits of buckets that were neither busy nor touched for IDLE_TICKS ticks
 * of INTENT_TICK_MS
 * (so that a file written now and then does not pay a flush each time), in
 * a record it does not flush (losing it costs only a larger resync). A write that
 * failed leaves its buckets set until the next mount (its copies may differ
 * until the diverged ranges are resynced, and perhaps after). */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>

#include <string.h>

#define IDLE_TICKS 4

static uint32_t bucket(uint64_t ino, uint64_t chunk)
{
	uint64_t h = ino * 0x9E3779B97F4A7C15ull ^ (chunk + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
	h ^= h >> 31;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 29;
	return (uint32_t)(h % INTENT_BUCKETS);
}

static bool tracked(const struct rp_fs *fs)
{
	return !fs->ro && rp_poolset_replicated(fs->ps);
}

/* The buckets of [off, off+len) of ino, each once per chunk (all of them
 * when there are more chunks than buckets); fn(fs, b, arg). */
static void each_bucket(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
			void (*fn)(struct rp_fs *, uint32_t, void *), void *arg)
{
	if (len == 0)
		return;
	uint64_t first = off >> INTENT_CHUNK_SHIFT, last = (off + len - 1) >> INTENT_CHUNK_SHIFT;
	if (last - first >= INTENT_BUCKETS) {
		for (uint32_t b = 0; b < INTENT_BUCKETS; b++)
			fn(fs, b, arg);
		return;
	}
	for (uint64_t c = first; c <= last; c++)
		fn(fs, bucket(ino, c), arg);
}

static bool is_set(struct rp_fs *fs, uint32_t b)
{
	return atomic_load(&fs->intent.set[b / 64]) & (1ull << (b % 64));
}

static void mark_busy(struct rp_fs *fs, uint32_t b, void *missing)
{
	atomic_fetch_add(&fs->intent.busy[b], 1);
	atomic_fetch_or(&fs->intent.touched[b / 64], 1ull << (b % 64));
	if (!is_set(fs, b))
		*(bool *)missing = true;
}

static void unmark_busy(struct rp_fs *fs, uint32_t b, void *failed)
{
	if (*(bool *)failed)
		atomic_fetch_or(&fs->intent.sticky[b / 64], 1ull << (b % 64));
	atomic_fetch_sub(&fs->intent.busy[b], 1);
}

static void want_set(struct rp_fs *fs, uint32_t b, void *want)
{
	if (!is_set(fs, b))
		((uint64_t *)want)[b / 64] |= 1ull << (b % 64);
}

static int log_word(struct rp_fs *fs, uint32_t word, uint64_t value)
{
	struct rp_rec r;
	memset(&r, 0, sizeof(r));
	r.type = REC_INTENT;
	r.flags = REC_F_END;
	r.fblock = word;
	r.count = value;
	int rc = checkpoint_settle(fs); /* (no record while a checkpoint is in doubt) */
	return rc < 0 ? rc : log_append(fs, &fs->log, &r);
}

/* The bits want names made durable, then set; with fs->mu held. */
static int set_durably(struct rp_fs *fs, const uint64_t *want)
{
	int rc = 0;
	bool any = false;
	for (uint32_t w = 0; w < INTENT_WORDS && rc == 0; w++)
		if (want[w] & ~atomic_load(&fs->intent.set[w])) {
			rc = log_word(fs, w, atomic_load(&fs->intent.set[w]) | want[w]);
			any = true;
		}
	if (rc == 0 && any)
		rc = log_flush(fs, &fs->log);
	if (rc < 0)
		return rc;
	for (uint32_t w = 0; w < INTENT_WORDS; w++)
		atomic_fetch_or(&fs->intent.set[w], want[w]);
	return 0;
}

int intent_begin(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len, bool mu_held)
{
	if (!tracked(fs))
		return 0;
	bool missing = false;
	/* busy first, then the bits: the clearer clears a bit, then looks at
	 * busy again, so one of the two sees the other */
	each_bucket(fs, ino, off, len, mark_busy, &missing);
	if (!missing)
		return 0;
	uint64_t want[INTENT_WORDS] = { 0 };
	if (!mu_held)
		rp_mutex_lock(&fs->mu, RP_LK_FS);
	each_bucket(fs, ino, off, len, want_set, want);
	int rc = set_durably(fs, want);
	if (!mu_held)
		rp_mutex_unlock(&fs->mu);
	if (rc < 0) {
		bool failed = false;
		each_bucket(fs, ino, off, len, unmark_busy, &failed);
	}
	return rc;
}

void intent_end(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len, int rc)
{
	if (!tracked(fs))
		return;
	bool failed = rc < 0;
	each_bucket(fs, ino, off, len, unmark_busy, &failed);
}

void intent_clear_idle(struct rp_fs *fs)
{
	if (!tracked(fs))
		return;
	for (uint32_t w = 0; w < INTENT_WORDS; w++) {
		uint64_t touched = atomic_exchange(&fs->intent.touched[w], 0);
		uint64_t set = atomic_load(&fs->intent.set[w]);
		uint64_t idle = set & ~touched & ~atomic_load(&fs->intent.sticky[w]);
		for (uint32_t k = 0; k < 64; k++) {
			uint8_t *rest = &fs->intent.rest[w * 64 + k];
			if (!(idle & (1ull << k)))
				*rest = 0;
			else if (++*rest < IDLE_TICKS)
				idle &= ~(1ull << k);
		}
		if (!idle)
			continue;
		uint64_t cleared = idle;
		atomic_fetch_and(&fs->intent.set[w], ~cleared);
		/* a write that counted itself busy before the bit went may have
		 * seen it set: its bit comes back */
		for (uint32_t k = 0; k < 64; k++)
			if ((idle & (1ull << k)) && atomic_load(&fs->intent.busy[w * 64 + k]))
				idle &= ~(1ull << k);
		atomic_fetch_or(&fs->intent.set[w], cleared & ~idle);
		if (idle && log_word(fs, w, set & ~idle) < 0)
			atomic_fetch_or(&fs->intent.set[w], idle); /* not logged: still set */
	}
}

void intent_apply(struct rp_fs *fs, const struct rp_rec *r)
{
	if (r->fblock < INTENT_WORDS)
		atomic_store(&fs->intent.set[r->fblock], r->count);
	fs->intent.known = true;
}

bool intent_any(struct rp_fs *fs)
{
	for (uint32_t w = 0; w < INTENT_WORDS; w++)
		if (atomic_load(&fs->intent.set[w]))
			return true;
	return false;
}

static void any_set(struct rp_fs *fs, uint32_t b, void *found)
{
	if (is_set(fs, b))
		*(bool *)found = true;
}

bool intent_dirty(struct rp_fs *fs, uint64_t ino, uint64_t off, uint64_t len)
{
	bool found = false;
	each_bucket(fs, ino, off, len, any_set, &found);
	return found;
}

void intent_reset(struct rp_fs *fs)
{
	memset(fs->intent.rest, 0, sizeof(fs->intent.rest));
	for (uint32_t w = 0; w < INTENT_WORDS; w++) {
		atomic_store(&fs->intent.set[w], 0);
		atomic_store(&fs->intent.sticky[w], 0);
	}
}

int intent_write_image(struct rp_fs *fs, int (*put)(struct rp_fs *, struct rp_logw *,
						     struct rp_rec *), struct rp_logw *w)
{
	if (!tracked(fs))
		return 0;
	/* word 0 always: a log with an INTENT record was written by a writer
	 * that kept them (else a takeover resyncs everything) */
	for (uint32_t k = 0; k < INTENT_WORDS; k++) {
		uint64_t v = atomic_load(&fs->intent.set[k]);
		if (k && !v)
			continue;
		struct rp_rec r;
		memset(&r, 0, sizeof(r));
		r.type = REC_INTENT;
		r.fblock = k;
		r.count = v;
		int rc = put(fs, w, &r);
		if (rc < 0)
			return rc;
	}
	return 0;
}
