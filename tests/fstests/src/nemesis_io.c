/* nemesis_io: the workload and the checker of the nemesis test (fstest 062).
 *
 *   nemesis_io run DIR ID SEED SECONDS LOG   write and read-verify for SECONDS
 *   nemesis_io check DIR ID LOG              verify every block against LOG
 *
 * Writer ID owns files DIR/nID.0 .. DIR/nID.3, each FBLOCKS blocks of 4 KiB.
 * Every 512-byte sector of every write describes itself: writer, file,
 * block, sector, version, and a checksum over it all, so a read can tell a
 * byte that was never written to that place from one that was. Before a
 * write LOG gets "T k b v" (tried), after its fsync returned "A k b v"
 * (acknowledged). A sector read back must then be valid and of a version
 * between the last acknowledged and the last tried one for its block, or
 * zero where nothing was ever acknowledged. Errors from the mount under
 * faults are allowed (counted); wrong bytes, an acknowledged write gone and
 * a call that takes longer than BOUND_S are violations (exit 1). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NFILES 4
#define FBLOCKS 64
#define BLK 4096
#define SECT 512
#define MAGIC 0x4e454d53u /* "NEMS" */
#define BOUND_S 60.0

struct sect_hdr {
	uint32_t magic, writer, file, block, sector, pad;
	uint64_t version;
};

static uint64_t tried[NFILES][FBLOCKS], acked[NFILES][FBLOCKS];
static unsigned long n_writes, n_acked, n_reads, n_errors, n_violations;
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
	printf("VIOLATION: %s: writer %u file %u block %u sector %u: %s\n", what, id, k, b, i, detail);
	fflush(stdout);
}

/* One block read back: every sector valid, in place, of an allowed version. */
static void verify_block(const uint8_t *buf, uint32_t id, uint32_t k, uint32_t b, const char *how)
{
	for (uint32_t i = 0; i < BLK / SECT; i++) {
		const uint8_t *s = buf + (size_t)i * SECT;
		char d[200];
		struct sect_hdr h;
		if (all_zero(s, SECT)) {
			if (acked[k][b]) {
				snprintf(d, sizeof(d), "zeros, version %" PRIu64 " was acknowledged (%s)",
					 acked[k][b], how);
				violation("acknowledged write lost", id, k, b, i, d);
			}
			continue;
		}
		memcpy(&h, s, sizeof(h));
		uint64_t c;
		memcpy(&c, s + SECT - 8, 8);
		if (h.magic != MAGIC || c != fnv(s, SECT - 8)) {
			snprintf(d, sizeof(d), "bytes no write ever made (%s)", how);
			violation("garbage", id, k, b, i, d);
		} else if (h.writer != id || h.file != k || h.block != b || h.sector != i) {
			snprintf(d, sizeof(d), "bytes of writer %u file %u block %u sector %u (%s)",
				 h.writer, h.file, h.block, h.sector, how);
			violation("misplaced", id, k, b, i, d);
		} else if (h.version < acked[k][b] || h.version > tried[k][b]) {
			snprintf(d, sizeof(d), "version %" PRIu64 ", allowed %" PRIu64 "..%" PRIu64 " (%s)",
				 h.version, acked[k][b], tried[k][b], how);
			violation(h.version < acked[k][b] ? "acknowledged write lost" : "version never written",
				  id, k, b, i, d);
		}
	}
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

static void write_one(const char *dir, uint32_t id, uint32_t k, uint32_t b, uint8_t *buf)
{
	uint64_t v = ++tried[k][b];
	for (uint32_t i = 0; i < BLK / SECT; i++)
		make_sector(buf + (size_t)i * SECT, id, k, b, i, v);
	fprintf(logf, "T %u %u %" PRIu64 "\n", k, b, v);
	fflush(logf);
	n_writes++;
	double t0 = now_s();
	int fd = open_file(dir, id, k, false);
	if (fd < 0) {
		n_errors++;
		timed(t0, "open", id);
		return;
	}
	bool ok = pwrite(fd, buf, BLK, (off_t)b * BLK) == BLK && fsync(fd) == 0;
	timed(t0, "write+fsync", id);
	if (close(fd) != 0)
		ok = false;
	if (!ok) {
		n_errors++;
		return;
	}
	acked[k][b] = v;
	n_acked++;
	fprintf(logf, "A %u %u %" PRIu64 "\n", k, b, v);
	fflush(logf);
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
		unsigned what = (unsigned)((r >> 20) % 10);
		if (what < 6)
			write_one(dir, id, k, b, buf);
		else
			read_check(dir, id, k, b, what < 8, buf);
		ops++;
		if (n_errors && (r >> 40) % 4 == 0)
			usleep(20000); /* under a fault: do not spin on errors */
	}
	printf("writer %u: %lu ops, %lu writes (%lu acknowledged), %lu reads, %lu errors, %lu violations\n",
	       id, ops, n_writes, n_acked, n_reads, n_errors, n_violations);
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
	while (fscanf(f, " %c %u %u %" SCNu64, &t, &k, &b, &v) == 4) {
		if (k >= NFILES || b >= FBLOCKS)
			continue;
		if (t == 'T' && v > tried[k][b])
			tried[k][b] = v;
		if (t == 'A' && v > acked[k][b])
			acked[k][b] = v;
	}
	fclose(f);
	return 0;
}

static int check(const char *dir, uint32_t id)
{
	uint8_t *buf = aligned_alloc(BLK, BLK);
	if (!buf)
		return 2;
	for (int direct = 0; direct <= 1; direct++)
		for (uint32_t k = 0; k < NFILES; k++)
			for (uint32_t b = 0; b < FBLOCKS; b++) {
				bool any = false;
				for (uint32_t x = 0; x < FBLOCKS; x++)
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
	fprintf(stderr, "usage: nemesis_io run DIR ID SEED SECONDS LOG | check DIR ID LOG\n");
	return 2;
}
