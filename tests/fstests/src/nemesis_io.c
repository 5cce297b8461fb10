/* nemesis_io: the workload and the checker of the nemesis test (fstest 062).
 *
 *   nemesis_io run DIR ID SEED SECONDS LOG   write, append, truncate,
 *                                            replace and read-verify
 *   nemesis_io check DIR ID LOG              verify every sector against LOG
 *   nemesis_io follow DIR NW LOGPREFIX SEED SECONDS
 *                                            read writers 1..NW's files (LOGs
 *                                            LOGPREFIX.W) through a follower
 *
 * Writer ID owns files DIR/nID.0 .. DIR/nID.3, up to FBLOCKS blocks of 4 KiB.
 * Every 512-byte sector of every write describes itself: writer, file,
 * block, sector, version, and a checksum over it all, so a read can tell a
 * byte that was never written to that place from one that was. Versions
 * count a file's operations; an operation gives the sectors it writes or
 * cuts the file's next one:
 *   T k b v / A: a block write at block b;
 *   W k s v / w: an append (O_APPEND) of a block's worth of sectors at the
 *                end, sector s (fstat said so; one writer per file);
 *   t k s v / a: a truncate to sector s, half the time extended again at
 *                once (zeros from s on: issue 17's defect 2), then
 *                logging X k e v with its new end e;
 *   R k n v / r: a replace: a new file of n sectors written under a
 *                temporary name, fsync'ed, renamed over the old one and the
 *                directory fsync'ed (create, rename and unlink in one).
 * The upper-case line goes to LOG before the operation, the lower-case (A
 * for T) after it and its fsync returned. A sector read back must then hold
 * a write of a version between the last acknowledged and the last tried
 * one for that sector, or zeros where nothing was acknowledged or a cut in
 * that range may have taken effect. At the check, each file's size must
 * be whole sectors no larger than its operations may have made it.
 * Errors from the mount under faults are allowed (counted); wrong bytes, an
 * acknowledged operation gone, a size no operation made, a call that takes
 * longer than BOUND_S, and a run in which nothing was acknowledged (no
 * progress) are violations.
 * A follower may lag the writer by any amount, so its reads are held to
 * less: every sector zeros or a valid sector of that writer, file and place,
 * of a version the writer had tried by the time the read returned (its LOG,
 * read on after the read). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NFILES 4
#define FBLOCKS 64
#define BLK 4096
#define SECT 512
#define MAGIC 0x4e454d53u /* "NEMS" */
#define BOUND_S 60.0
#define SPB (BLK / SECT)
#define NSECT (FBLOCKS * SPB)

struct sect_hdr {
	uint32_t magic, writer, file, block, sector, pad;
	uint64_t version;
};

/* per sector: the last version tried and acknowledged, and the versions of
 * the cuts that reached it (ascending: zeros allowed between them) */
struct cuts {
	uint64_t *v;
	size_t n, cap;
};
static uint64_t ver[NFILES], tried[NFILES][NSECT], acked[NFILES][NSECT];
static struct cuts cut[NFILES][NSECT];
/* per file: the versions of its replaces (ascending, as the log is) */
static struct cuts replaces[NFILES];
/* per file: the largest size in sectors it may have now. A writer's
 * operations run one after the other: one acknowledged sets the size it
 * made, and one that failed may or may not have happened, so it can only
 * raise the bound. A truncate that extends again logs X (its new end) after
 * its t. */
static uint32_t size_hi[NFILES], ext_to[NFILES];
static uint64_t ext_v[NFILES];
static unsigned long n_writes, n_appends, n_replaces, n_truncates, n_acked, n_reads, n_errors;
static unsigned long n_violations;
static FILE *logf;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void make_sector(uint8_t *s, uint32_t id, uint32_t k, uint32_t b, uint32_t i, uint64_t v)
{
	struct sect_hdr h = { MAGIC, id, k, b, i, 0, v };
	memcpy(s, &h, sizeof(h));
	uint64_t x = mix(((uint64_t)id << 48) ^ ((uint64_t)k << 40) ^ ((uint64_t)b << 32) ^
			 ((uint64_t)i << 24) ^ v);
	for (size_t o = sizeof(h); o + 8 <= SECT - 8; o += 8) {
		x = mix(x + o);
		memcpy(s + o, &x, 8);
	}
	uint64_t c = fnv(s, SECT - 8);
	memcpy(s + SECT - 8, &c, 8);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void violation(const char *what, uint32_t id, uint32_t k, uint32_t b, uint32_t i,
		      const char *detail)
{
	n_violations++;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts); /* the nemesis logs its faults by the same clock */
	printf("VIOLATION at %lld.%03ld: %s: writer %u file %u block %u sector %u: %s\n",
	       (long long)ts.tv_sec, ts.tv_nsec / 1000000, what, id, k, b, i, detail);
	fflush(stdout);
}

static int cuts_push(struct cuts *c, uint64_t v)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		uint64_t *nv = realloc(c->v, cap * sizeof(*nv));
		if (!nv)
			return -1;
		c->v = nv;
		c->cap = cap;
	}
	c->v[c->n++] = v;
	return 0;
}

/* The sectors a log entry of this kind gives version v, [*from, *to), and
 * of those the ones it cuts to zeros, [*cut, *to). Returns false for an
 * entry that does not fit a file (a torn line). */
static bool op_range(char kind, uint32_t x, uint32_t *from, uint32_t *to, uint32_t *cut)
{
	*from = 0;
	*to = NSECT;
	*cut = NSECT;
	switch (kind) {
	case 'T': case 'A': /* block x */
		*from = x * SPB;
		*to = *from + SPB;
		break;
	case 'W': case 'w': /* SPB sectors from sector x */
		*from = x;
		*to = x + SPB;
		break;
	case 't': case 'a': /* cut at sector x */
		*from = *cut = x;
		break;
	case 'R': case 'r': /* a new file of x sectors: the rest is gone */
		*cut = x;
		break;
	default:
		return false;
	}
	return x <= NSECT && *from <= *to && *to <= NSECT;
}

/* An entry into the size bound (size_hi). */
static void apply_size(char kind, uint32_t k, uint32_t to, uint32_t x, uint64_t v)
{
	uint32_t *hi = &size_hi[k];
	switch (kind) {
	case 'T': case 'W': /* may have written up to sector to */
		*hi = to > *hi ? to : *hi;
		break;
	case 'R': /* may have made a new file of x sectors */
		*hi = x > *hi ? x : *hi;
		break;
	case 'a': /* cut at x, extended again to ext_to when it logged X */
		*hi = ext_v[k] == v ? ext_to[k] : x;
		break;
	case 'r':
		*hi = x;
		break;
	}
}

/* One log entry into the model. */
static int apply(char kind, uint32_t k, uint32_t x, uint64_t v)
{
	uint32_t from, to, cut_from;
	bool tries = strchr("TWtR", kind) != NULL;
	if (kind == 'X' && k < NFILES && x <= NSECT) {
		ext_v[k] = v;
		ext_to[k] = x;
		size_hi[k] = x > size_hi[k] ? x : size_hi[k]; /* (it may have happened) */
		return 0;
	}
	if (k >= NFILES || !op_range(kind, x, &from, &to, &cut_from))
		return 0;
	apply_size(kind, k, to, x, v);
	for (uint32_t s = from; s < to; s++) {
		if (tries && v > tried[k][s])
			tried[k][s] = v;
		if (!tries && v > acked[k][s])
			acked[k][s] = v;
		if (tries && s >= cut_from && cuts_push(&cut[k][s], v) < 0)
			return -1;
	}
	if (kind == 'R' && cuts_push(&replaces[k], v) < 0)
		return -1;
	if (v > ver[k])
		ver[k] = v;
	return 0;
}

static bool holds(const struct cuts *c, uint64_t v)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->v[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->n && c->v[lo] == v;
}

/* One read sees one inode. A replace's version is only ever in its new
 * file and every older version only in the files before it, so a block
 * with a sector a replace wrote beside an older one is half a rename. */
static void check_whole(const uint8_t *buf, const struct cuts *repl, uint32_t id, uint32_t k,
			uint32_t b, const char *how)
{
	uint64_t newest_repl = 0, oldest = UINT64_MAX;
	for (uint32_t i = 0; i < SPB; i++) {
		const uint8_t *p = buf + (size_t)i * SECT;
		struct sect_hdr h;
		uint64_t c;
		memcpy(&h, p, sizeof(h));
		memcpy(&c, p + SECT - 8, 8);
		if (all_zero(p, SECT) || h.magic != MAGIC || c != fnv(p, SECT - 8))
			continue; /* (garbage is a violation of its own) */
		if (holds(repl, h.version) && h.version > newest_repl)
			newest_repl = h.version;
		if (h.version < oldest)
			oldest = h.version;
	}
	if (newest_repl && oldest < newest_repl) {
		char d[160];
		snprintf(d, sizeof(d), "the replace of version %" PRIu64 " beside version %" PRIu64
			 " in one read: half a rename (%s)", newest_repl, oldest, how);
		violation("replace not atomic", id, k, b, 0, d);
	}
}

static void note(char kind, uint32_t k, uint32_t x, uint64_t v)
{
	fprintf(logf, "%c %u %u %" PRIu64 "\n", kind, k, x, v);
	fflush(logf);
	if (apply(kind, k, x, v) < 0) {
		perror("nemesis_io");
		exit(2);
	}
}

/* zeros are a state sector s may be in: never acknowledged, or a cut
 * between the acknowledged and the tried version */
static bool zero_allowed(uint32_t k, uint32_t s)
{
	const struct cuts *c = &cut[k][s];
	if (!acked[k][s])
		return true;
	for (size_t i = c->n; i-- > 0 && c->v[i] >= acked[k][s];)
		if (c->v[i] <= tried[k][s])
			return true;
	return false;
}

/* One block read back: every sector valid, in place, of an allowed version. */
static void verify_block(const uint8_t *buf, uint32_t id, uint32_t k, uint32_t b, const char *how)
{
	for (uint32_t i = 0; i < SPB; i++) {
		const uint8_t *p = buf + (size_t)i * SECT;
		uint32_t s = b * SPB + i;
		char d[200];
		struct sect_hdr h;
		if (all_zero(p, SECT)) {
			if (!zero_allowed(k, s)) {
				snprintf(d, sizeof(d), "zeros, version %" PRIu64 " was acknowledged (%s)",
					 acked[k][s], how);
				violation("acknowledged write lost", id, k, b, i, d);
			}
			continue;
		}
		memcpy(&h, p, sizeof(h));
		uint64_t c;
		memcpy(&c, p + SECT - 8, 8);
		if (h.magic != MAGIC || c != fnv(p, SECT - 8)) {
			snprintf(d, sizeof(d), "bytes no write ever made (%s)", how);
			violation("garbage", id, k, b, i, d);
		} else if (h.writer != id || h.file != k || h.block != b || h.sector != i) {
			snprintf(d, sizeof(d), "bytes of writer %u file %u block %u sector %u, "
				 "version %" PRIu64 " (%s)", h.writer, h.file, h.block, h.sector,
				 h.version, how);
			violation("misplaced", id, k, b, i, d);
		} else if (h.version < acked[k][s] || h.version > tried[k][s]) {
			snprintf(d, sizeof(d), "version %" PRIu64 ", allowed %" PRIu64 "..%" PRIu64 " (%s)",
				 h.version, acked[k][s], tried[k][s], how);
			violation(h.version < acked[k][s] ? "acknowledged operation lost"
							   : "version never written",
				  id, k, b, i, d);
		}
	}
	check_whole(buf, &replaces[k], id, k, b, how);
}

static void timed(double t0, const char *call, uint32_t id)
{
	double el = now_s() - t0;
	if (el > BOUND_S) {
		char d[100];
		snprintf(d, sizeof(d), "%s took %.1f s, bound %.0f s", call, el, BOUND_S);
		violation("hang", id, 0, 0, 0, d);
	}
}

static int open_file(const char *dir, uint32_t id, uint32_t k, bool direct)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/n%u.%u", dir, id, k);
	return open(path, O_RDWR | O_CREAT | (direct ? O_DIRECT : 0), 0644);
}

static void read_check(const char *dir, uint32_t id, uint32_t k, uint32_t b, bool direct,
		       uint8_t *buf)
{
	double t0 = now_s();
	int fd = open_file(dir, id, k, direct);
	if (fd < 0) {
		n_errors++;
		timed(t0, "open", id);
		return;
	}
	ssize_t r = pread(fd, buf, BLK, (off_t)b * BLK);
	timed(t0, "read", id);
	close(fd);
	n_reads++;
	if (r < 0) {
		n_errors++;
		return;
	}
	if (r < BLK)
		memset(buf + r, 0, BLK - (size_t)r); /* past the end: as zeros */
	verify_block(buf, id, k, b, direct ? "O_DIRECT read" : "buffered read");
}

/* The end of an operation on fd (-1: its open failed): timed, closed, and
 * acknowledged in LOG with kind ack when it all succeeded. */
static void finish_op(int fd, bool ok, double t0, const char *call, uint32_t id, char ack,
		      uint32_t k, uint32_t x, uint64_t v)
{
	timed(t0, fd < 0 ? "open" : call, id);
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (fd < 0 || !ok) {
		n_errors++;
		return;
	}
	n_acked++;
	note(ack, k, x, v);
}

/* Sectors [s0, s0 + n) of file k at version v, into buf. */
static void fill_sectors(uint8_t *buf, uint32_t id, uint32_t k, uint32_t s0, uint32_t n,
			 uint64_t v)
{
	for (uint32_t j = 0; j < n; j++)
		make_sector(buf + (size_t)j * SECT, id, k, (s0 + j) / SPB, (s0 + j) % SPB, v);
}

static void write_one(const char *dir, uint32_t id, uint32_t k, uint32_t b, uint8_t *buf)
{
	uint64_t v = ver[k] + 1;
	fill_sectors(buf, id, k, b * SPB, SPB, v);
	note('T', k, b, v);
	n_writes++;
	double t0 = now_s();
	int fd = open_file(dir, id, k, false);
	bool ok = fd >= 0 && pwrite(fd, buf, BLK, (off_t)b * BLK) == BLK && fsync(fd) == 0;
	finish_op(fd, ok, t0, "write+fsync", id, 'A', k, b, v);
}

/* A block's worth of sectors appended to file k with O_APPEND, at its end
 * as fstat tells it (one writer per file: nothing moves the end between).
 * Every operation leaves a size that is whole sectors within FBLOCKS; any
 * other is a violation. Returns false when the file is full (no append). */
static bool append_one(const char *dir, uint32_t id, uint32_t k, uint8_t *buf)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s/n%u.%u", dir, id, k);
	double t0 = now_s();
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0 || fstat(fd, &st) != 0) {
		finish_op(fd, false, t0, "fstat", id, 'w', k, 0, 0);
		return true;
	}
	if (st.st_size % SECT || st.st_size > (off_t)NSECT * SECT) {
		char d[100];
		snprintf(d, sizeof(d), "size %lld, not whole sectors within the file's %u",
			 (long long)st.st_size, NSECT);
		violation("size no operation made", id, k, 0, 0, d);
	}
	uint32_t s0 = (uint32_t)(st.st_size / SECT);
	if (st.st_size % SECT || s0 + SPB > NSECT) {
		close(fd);
		return false;
	}
	uint64_t v = ver[k] + 1;
	fill_sectors(buf, id, k, s0, SPB, v);
	note('W', k, s0, v);
	n_appends++;
	bool ok = write(fd, buf, BLK) == BLK;
	off_t at = ok ? lseek(fd, 0, SEEK_CUR) : -1;
	if (ok && at != (off_t)(s0 + SPB) * SECT) {
		/* O_APPEND wrote where fstat did not say the end was */
		char d[120];
		snprintf(d, sizeof(d), "append ended at %lld, fstat had put the end at %lld",
			 (long long)at, (long long)s0 * SECT);
		violation("append misplaced", id, k, s0 / SPB, s0 % SPB, d);
	}
	ok = ok && fsync(fd) == 0;
	finish_op(fd, ok, t0, "append+fsync", id, 'w', k, s0, v);
	return true;
}

/* Cut file k at sector s (zeros from there on), then, half the time,
 * extend it again past the cut: the case of issue 17's defect 2. */
static void truncate_one(const char *dir, uint32_t id, uint32_t k, uint32_t s, uint32_t ext)
{
	uint64_t v = ver[k] + 1;
	note('t', k, s, v);
	if (ext > s)
		note('X', k, ext, v);
	n_truncates++;
	double t0 = now_s();
	int fd = open_file(dir, id, k, false);
	bool ok = fd >= 0 && ftruncate(fd, (off_t)s * SECT) == 0;
	if (ok && ext > s)
		ok = ftruncate(fd, (off_t)ext * SECT) == 0;
	ok = ok && fsync(fd) == 0;
	finish_op(fd, ok, t0, "truncate+fsync", id, 'a', k, s, v);
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

/* File k replaced by a new one of n sectors at version v: written under a
 * temporary name, fsync'ed, renamed over the old file (whose inode goes),
 * and the directory fsync'ed, so the rename is durable too: until then a
 * read may find the old file or the new one, whole. */
static void replace_one(const char *dir, uint32_t id, uint32_t k, uint32_t n, uint8_t *buf)
{
	char tmp[4096], path[4096];
	snprintf(tmp, sizeof(tmp), "%s/n%u.%u.new", dir, id, k);
	snprintf(path, sizeof(path), "%s/n%u.%u", dir, id, k);
	uint64_t v = ver[k] + 1;
	note('R', k, n, v);
	n_replaces++;
	double t0 = now_s();
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bool ok = fd >= 0;
	for (uint32_t s = 0; ok && s < n; s += SPB) {
		uint32_t m = n - s < SPB ? n - s : SPB;
		fill_sectors(buf, id, k, s, m, v);
		ok = pwrite(fd, buf, (size_t)m * SECT, (off_t)s * SECT) == (ssize_t)m * SECT;
	}
	ok = ok && fsync(fd) == 0 && rename(tmp, path) == 0 && fsync_dir(dir) == 0;
	finish_op(fd, ok, t0, "replace", id, 'r', k, n, v);
}

static int run(const char *dir, uint32_t id, uint64_t seed, double seconds)
{
	uint8_t *buf = aligned_alloc(BLK, BLK);
	if (!buf)
		return 2;
	uint64_t r = mix(seed ^ id);
	double end = now_s() + seconds;
	unsigned long ops = 0;
	while (now_s() < end) {
		r = mix(r + 1);
		uint32_t k = (uint32_t)(r % NFILES), b = (uint32_t)((r >> 8) % FBLOCKS);
		unsigned what = (unsigned)((r >> 20) % 20);
		uint32_t cut_at = (uint32_t)((r >> 28) % (NSECT + 1));
		if (what == 9 && append_one(dir, id, k, buf))
			;
		else if (what == 10)
			replace_one(dir, id, k, cut_at, buf);
		else if (what < 11)
			write_one(dir, id, k, b, buf);
		else if (what < 12)
			truncate_one(dir, id, k, cut_at, (r >> 48) % 2 ? (uint32_t)NSECT : 0);
		else
			read_check(dir, id, k, b, what < 16, buf);
		ops++;
		if (n_errors && (r >> 40) % 4 == 0)
			usleep(20000); /* under a fault: do not spin on errors */
	}
	if (!n_acked)
		violation("no progress", id, 0, 0, 0, "nothing acknowledged in the whole run");
	printf("writer %u: %lu ops, %lu writes, %lu appends, %lu replaces and %lu truncates "
	       "(%lu acknowledged), %lu reads, %lu errors, %lu violations\n",
	       id, ops, n_writes, n_appends, n_replaces, n_truncates, n_acked, n_reads, n_errors,
	       n_violations);
	free(buf);
	return n_violations ? 1 : 0;
}

static int load_log(const char *path)
{
	FILE *f = fopen(path, "r");
	char t;
	unsigned k, b;
	uint64_t v;
	if (!f) {
		perror(path);
		return -1;
	}
	int rc = 0;
	while (rc == 0 && fscanf(f, " %c %u %u %" SCNu64, &t, &k, &b, &v) == 4)
		rc = apply(t, k, b, v);
	fclose(f);
	return rc;
}

/* The size of file k against the model: whole sectors, and no larger
 * than the operations could have made it (an acknowledged truncate that
 * came back as zeros up to an older end passes every sector's check). */
static void check_size(const char *dir, uint32_t id, uint32_t k)
{
	char path[4096], d[160];
	struct stat st;
	snprintf(path, sizeof(path), "%s/n%u.%u", dir, id, k);
	if (stat(path, &st) != 0) {
		if (errno != ENOENT)
			n_errors++;
		return; /* (no file: zeros everywhere, which the sectors check) */
	}
	if (st.st_size % SECT == 0 && st.st_size <= (off_t)size_hi[k] * SECT)
		return;
	snprintf(d, sizeof(d), "size %lld, the operations allow whole sectors up to %u (%lld bytes)",
		 (long long)st.st_size, size_hi[k], (long long)size_hi[k] * SECT);
	violation("size no operation made", id, k, 0, 0, d);
}

static int check(const char *dir, uint32_t id)
{
	uint8_t *buf = aligned_alloc(BLK, BLK);
	if (!buf)
		return 2;
	for (uint32_t k = 0; k < NFILES; k++)
		check_size(dir, id, k);
	for (int direct = 0; direct <= 1; direct++)
		for (uint32_t k = 0; k < NFILES; k++)
			for (uint32_t b = 0; b < FBLOCKS; b++) {
				bool any = false;
				for (uint32_t x = 0; x < NSECT; x++)
					any |= tried[k][x] != 0;
				if (!any)
					continue;
				read_check(dir, id, k, b, direct, buf);
			}
	printf("check %u: %lu blocks read, %lu errors, %lu violations\n", id, n_reads, n_errors,
	       n_violations);
	free(buf);
	return n_violations || n_errors ? 1 : 0;
}

/* The follower's view of writer w: the last version it tried per sector,
 * read on from its LOG as the writer appends (whole lines only). */
#define MAXW 8
struct tail {
	FILE *f;
	uint64_t tried[NFILES][NSECT];
	struct cuts replaces[NFILES];
};
static struct tail tails[MAXW];

static void tail_read(struct tail *t)
{
	char line[128];
	for (;;) {
		long at = ftell(t->f);
		if (!fgets(line, sizeof(line), t->f)) {
			clearerr(t->f);
			return;
		}
		size_t n = strlen(line);
		if (n == 0 || line[n - 1] != '\n') { /* a line still being written */
			fseek(t->f, at, SEEK_SET);
			return;
		}
		char kind;
		unsigned k, x;
		uint64_t v;
		if (sscanf(line, " %c %u %u %" SCNu64, &kind, &k, &x, &v) != 4 || k >= NFILES)
			continue;
		uint32_t from, to, cut_from;
		if (!strchr("TWtR", kind) || !op_range(kind, x, &from, &to, &cut_from))
			continue;
		for (uint32_t s = from; s < to; s++)
			if (v > t->tried[k][s])
				t->tried[k][s] = v;
		if (kind == 'R' && cuts_push(&t->replaces[k], v) < 0) {
			perror("nemesis_io");
			exit(2);
		}
	}
}

/* Returns how many sectors held a write (not zeros). */
static unsigned follow_check(const uint8_t *buf, uint32_t w, uint32_t k, uint32_t b)
{
	unsigned written = 0;
	tail_read(&tails[w - 1]);
	for (uint32_t i = 0; i < SPB; i++) {
		const uint8_t *p = buf + (size_t)i * SECT;
		struct sect_hdr h;
		uint64_t c, top = tails[w - 1].tried[k][b * SPB + i];
		char d[200];
		if (all_zero(p, SECT))
			continue;
		written++;
		memcpy(&h, p, sizeof(h));
		memcpy(&c, p + SECT - 8, 8);
		if (h.magic != MAGIC || c != fnv(p, SECT - 8)) {
			violation("garbage", w, k, b, i, "bytes no write ever made (follower read)");
		} else if (h.writer != w || h.file != k || h.block != b || h.sector != i) {
			snprintf(d, sizeof(d), "bytes of writer %u file %u block %u sector %u (follower read)",
				 h.writer, h.file, h.block, h.sector);
			violation("misplaced", w, k, b, i, d);
		} else if (h.version > top) {
			snprintf(d, sizeof(d), "version %" PRIu64 ", the writer had tried up to %" PRIu64
				 " (follower read)", h.version, top);
			violation("version never written", w, k, b, i, d);
		}
	}
	check_whole(buf, &tails[w - 1].replaces[k], w, k, b, "follower read");
	return written;
}

static int follow(const char *dir, uint32_t nw, const char *prefix, uint64_t seed, double seconds)
{
	if (nw < 1 || nw > MAXW)
		return 2;
	for (uint32_t w = 1; w <= nw; w++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s.%u", prefix, w);
		if (!(tails[w - 1].f = fopen(path, "r"))) {
			perror(path);
			return 2;
		}
	}
	uint8_t *buf = aligned_alloc(BLK, BLK);
	if (!buf)
		return 2;
	uint64_t r = mix(seed ^ 0xf0110);
	unsigned long written = 0;
	double end = now_s() + seconds;
	while (now_s() < end) {
		r = mix(r + 1);
		uint32_t w = 1 + (uint32_t)(r % nw), k = (uint32_t)((r >> 8) % NFILES);
		uint32_t b = (uint32_t)((r >> 16) % FBLOCKS);
		char path[4096];
		snprintf(path, sizeof(path), "%s/n%u.%u", dir, w, k);
		double t0 = now_s();
		int fd = open(path, O_RDONLY | ((r >> 32) % 2 ? O_DIRECT : 0));
		ssize_t n = fd < 0 ? -1 : pread(fd, buf, BLK, (off_t)b * BLK);
		timed(t0, "follower read", w);
		if (fd >= 0)
			close(fd);
		n_reads++;
		if (n < 0) {
			n_errors++;
			usleep(10000);
			continue;
		}
		memset(buf + n, 0, BLK - (size_t)n);
		written += follow_check(buf, w, k, b);
	}
	if (n_reads == n_errors)
		violation("no progress", 0, 0, 0, 0, "no follower read succeeded in the whole run");
	/* zeros always pass: a follower that never applied a record would */
	else if (written == 0)
		violation("no progress", 0, 0, 0, 0, "the follower never read a written sector");
	printf("follower: %lu reads, %lu errors, %lu sectors with data checked, %lu violations\n",
	       n_reads, n_errors, written, n_violations);
	for (uint32_t w = 1; w <= nw; w++)
		fclose(tails[w - 1].f);
	free(buf);
	return n_violations ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && strcmp(argv[1], "run") == 0) {
		if (!(logf = fopen(argv[6], "w"))) {
			perror(argv[6]);
			return 2;
		}
		int rc = run(argv[2], (uint32_t)atoi(argv[3]), strtoull(argv[4], NULL, 0), atof(argv[5]));
		fclose(logf);
		return rc;
	}
	if (argc == 5 && strcmp(argv[1], "check") == 0) {
		if (load_log(argv[4]) < 0)
			return 2;
		return check(argv[2], (uint32_t)atoi(argv[3]));
	}
	if (argc == 7 && strcmp(argv[1], "follow") == 0)
		return follow(argv[2], (uint32_t)atoi(argv[3]), argv[4], strtoull(argv[5], NULL, 0),
			      atof(argv[6]));
	fprintf(stderr, "usage: nemesis_io run DIR ID SEED SECONDS LOG | check DIR ID LOG | "
			"follow DIR NW LOGPREFIX SEED SECONDS\n");
	return 2;
}
