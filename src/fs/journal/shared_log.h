/* The shared log of several writers (rdmapool(7), SEVERAL WRITERS, (M1) and
 * (M2)): positions reserved by one fetch-and-add on a tail word, slots
 * written once (a header claimed by compare-and-swap from empty), a
 * position left empty past the hole bound filled with junk by whoever
 * waits on it, and every reader deciding the same sequence. The tail word
 * and the segment directory are words of the volume table (home area, so
 * every copy of it has them); the slots live in log segments of 64 blocks
 * on the pools, 512 bytes each.
 *
 * Not wired into mounts yet: what uses it today is fstest 083's racers.
 * Pools with copies are refused (a header's claim would have to reach the
 * copies in chain order first). */
#ifndef RDMAPOOL_FS_JOURNAL_SHARED_LOG_H
#define RDMAPOOL_FS_JOURNAL_SHARED_LOG_H

#include <rdmapool/pool.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLOG_SLOT 512
#define SLOG_PART_DATA 496 /* record bytes per slot */
#define SLOG_MAX_PARTS 16
#define SLOG_MAX_RECORD (SLOG_PART_DATA * SLOG_MAX_PARTS)

/* Where the log's words are: home-area offsets (absolute, as home_faa
 * takes them) of the tail word and of dir_n directory words. */
struct slog_anchor {
	uint64_t tail_off;
	uint64_t dir_off;
	uint32_t dir_n;
};

struct slog_entry {
	uint64_t pos;    /* of its first slot */
	uint32_t member; /* the appender's number */
	uint32_t len;
	uint8_t body[SLOG_MAX_RECORD];
};

struct slog;

/* A member (1..255) of the log at anchor; hole_ms: how long a reader waits
 * on an empty slot below the tail before it fills it with junk. */
int slog_open(struct rp_poolset *ps, const struct slog_anchor *a, uint32_t member,
	      uint64_t hole_ms, struct slog **out);
void slog_close(struct slog *l);

/* Append one record (1..SLOG_MAX_RECORD bytes); *pos gets its position.
 * A record whose slots a reader junked first is appended again at a new
 * position (a few times); a failure leaves nothing of it in the log but
 * junk (or, when a claim's answer never came, possibly the record: the
 * caller cannot know, as with any write that timed out). -ENOSPC: the
 * directory is full (compaction is not built yet); -EINPROGRESS: the
 * segment its positions fall in is being published and has not reached
 * every copy of the volume table yet (nothing claimed: try again). */
int slog_append(struct slog *l, const void *body, size_t len, uint64_t *pos);

/* slog_append's two steps, for callers that do work between them: the
 * positions for a record of len bytes (*pos the first; an error may have
 * reserved them all the same), then its slots written and claimed there:
 * -EAGAIN when a reader junked a part first (it waited the hole bound:
 * the record is dead there; reserve again); -EINPROGRESS as for
 * slog_append. */
int slog_reserve(struct slog *l, size_t len, uint64_t *pos);
int slog_put(struct slog *l, uint64_t pos, const void *body, size_t len);

/* The next record in log order: 1 with it in *e, 0 when the next position
 * is not decided yet (call again later: an empty slot is junked once it has
 * waited hole_ms), or a negative errno. Junk and records with a part junked
 * are passed over; every reader gets the same sequence. */
int slog_next(struct slog *l, struct slog_entry *e);
/* What position pos holds, in words (a log that does not advance). */
int slog_describe(struct slog *l, uint64_t pos, char *buf, size_t len);
/* The position slog_next looks at next. */
uint64_t slog_cursor(const struct slog *l);
#ifdef RP_TEST_HOOKS
/* Tests only (fstest 083): fn runs before each part's claim of an append
 * at pos (part 0: after every body is written), where a racer stalls. */
void slog_test_stall(struct slog *l, void (*fn)(void *arg, uint64_t pos, unsigned part),
		     void *arg);
#endif

#endif
