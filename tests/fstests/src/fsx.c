/* fsx: random write, read, truncate, punch-hole, fallocate, mmap-read and
 * mmap-write operations on a file, mirrored on a file on tmpfs. After every
 * operation the sizes and the touched range are compared; the whole file is
 * compared every 500 operations and at the end. The seed is printed so a
 * failure can be replayed: fsx -S SEED -N OPS FILE.
 *   fsx [-S seed] [-N ops] [-l maxlen] [-o maxop] [-q] FILE [MIRROR] */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static int fd, mfd;
static long maxlen = 256 * 1024, maxop = 64 * 1024, op_no;
static char *buf, *mbuf;
static const char *names[] = { "write", "read", "truncate", "punch", "falloc", "mapread", "mapwrite" };

static void fail(const char *what, long off, long len)
{
	printf("fsx: FAILED at op %ld (%s off %ld len %ld): %s; replay with -S %llu\n", op_no, what,
	       off, len, errno ? strerror(errno) : "data mismatch", (unsigned long long)rs);
	exit(1);
}

static off_t fsize(int f)
{
	struct stat st;
	fstat(f, &st);
	return st.st_size;
}

static void compare(long off, long len)
{
	off_t a = fsize(fd), b = fsize(mfd);
	if (a != b) {
		printf("fsx: size %lld, expected %lld\n", (long long)a, (long long)b);
		fail("size", off, len);
	}
	if (off >= a)
		return;
	if (off + len > a)
		len = a - off;
	if (pread(fd, buf, (size_t)len, off) != len || pread(mfd, mbuf, (size_t)len, off) != len)
		fail("compare-read", off, len);
	if (memcmp(buf, mbuf, (size_t)len)) {
		for (long i = 0; i < len; i++)
			if (buf[i] != mbuf[i]) {
				printf("fsx: byte %ld is 0x%02x, expected 0x%02x\n", off + i,
				       (unsigned char)buf[i], (unsigned char)mbuf[i]);
				break;
			}
		errno = 0;
		fail("compare", off, len);
	}
}

static void both_pwrite(const char *data, long off, long len)
{
	if (pwrite(fd, data, (size_t)len, off) != len || pwrite(mfd, data, (size_t)len, off) != len)
		fail("write", off, len);
}

int main(int argc, char **argv)
{
	long ops = 10000;
	int quiet = 0, c;
	uint64_t seed = 0;
	while ((c = getopt(argc, argv, "S:N:l:o:q")) != -1) {
		switch (c) {
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'N': ops = atol(optarg); break;
		case 'l': maxlen = atol(optarg); break;
		case 'o': maxop = atol(optarg); break;
		case 'q': quiet = 1; break;
		default: return 2;
		}
	}
	if (optind >= argc)
		return 2;
	if (!seed)
		seed = (uint64_t)getpid() * 2654435761u + 1;
	rs = seed;
	char mirror[4096];
	if (optind + 1 < argc)
		snprintf(mirror, sizeof(mirror), "%s", argv[optind + 1]);
	else
		snprintf(mirror, sizeof(mirror), "/dev/shm/fsx-mirror.%d", getpid());
	fd = open(argv[optind], O_RDWR | O_CREAT | O_TRUNC, 0644);
	mfd = open(mirror, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || mfd < 0) {
		perror("open");
		return 1;
	}
	buf = malloc((size_t)maxlen + (size_t)maxop);
	mbuf = malloc((size_t)maxlen + (size_t)maxop);
	char *data = malloc((size_t)maxop);
	printf("fsx: seed %llu, %ld operations, file size up to %ld\n", (unsigned long long)seed, ops, maxlen);
	fflush(stdout);
	long count[7] = { 0 };
	for (op_no = 1; op_no <= ops; op_no++) {
		int op = (int)(rnd() % 7);
		long size = (long)fsize(mfd);
		long off = (long)(rnd() % (uint64_t)maxlen), len = 1 + (long)(rnd() % (uint64_t)maxop);
		if (off + len > maxlen)
			len = maxlen - off;
		if (len <= 0)
			len = 1;
		errno = 0;
		switch (op) {
		case 0:
			for (long i = 0; i < len; i++)
				data[i] = (char)(rnd() | 1);
			both_pwrite(data, off, len);
			break;
		case 1:
			break; /* compare below reads the range */
		case 2:
			off = (long)(rnd() % (uint64_t)maxlen);
			if (ftruncate(fd, off) || ftruncate(mfd, off))
				fail("truncate", off, 0);
			len = 4096;
			off = off > 2048 ? off - 2048 : 0;
			break;
		case 3:
			if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len) ||
			    fallocate(mfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len))
				fail("punch", off, len);
			break;
		case 4: {
			int mode = rnd() % 2 ? FALLOC_FL_KEEP_SIZE : 0;
			if (fallocate(fd, mode, off, len) || fallocate(mfd, mode, off, len))
				fail("falloc", off, len);
			break;
		}
		case 5:
		case 6: {
			if (size == 0) {
				op = 1;
				break;
			}
			off = (long)(rnd() % (uint64_t)size);
			if (off + len > size)
				len = size - off;
			long pg = off & ~4095L;
			char *m = mmap(NULL, (size_t)(len + (off - pg)), op == 5 ? PROT_READ : PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, pg);
			if (m == MAP_FAILED)
				fail(names[op], off, len);
			if (op == 5) {
				if (pread(mfd, mbuf, (size_t)len, off) != len || memcmp(m + (off - pg), mbuf, (size_t)len)) {
					errno = 0;
					fail("mapread", off, len);
				}
			} else {
				for (long i = 0; i < len; i++)
					data[i] = (char)(rnd() | 1);
				memcpy(m + (off - pg), data, (size_t)len);
				if (msync(m, (size_t)(len + (off - pg)), MS_SYNC))
					fail("msync", off, len);
				if (pwrite(mfd, data, (size_t)len, off) != len)
					fail("mirror", off, len);
			}
			munmap(m, (size_t)(len + (off - pg)));
			break;
		}
		}
		count[op]++;
		compare(off, len);
		long r = (long)(rnd() % (uint64_t)maxlen);
		compare(r, 4096);
		if (op_no % 500 == 0) {
			compare(0, maxlen);
			if (!quiet && op_no % 20000 == 0) {
				printf("fsx: %ld operations done\n", op_no);
				fflush(stdout);
			}
		}
	}
	compare(0, maxlen);
	printf("fsx: %ld operations, all compared equal (", ops);
	for (int i = 0; i < 7; i++)
		printf("%s%s %ld", i ? ", " : "", names[i], count[i]);
	printf(")\n");
	close(fd);
	close(mfd);
	unlink(mirror);
	free(buf);
	free(mbuf);
	free(data);
	return 0;
}
