/* opseq SEED NOPS MODEL_DIR TEST_DIR: a seeded random sequence of namespace
 * and data operations (create, open with O_TRUNC, write, truncate, rename,
 * link, unlink, mkdir, rmdir, setxattr, chmod, chown) done on both trees,
 * MODEL_DIR on a local filesystem (the model) and TEST_DIR on rdmapoolfs.
 * After every step the result (errno) and the state of the names the step
 * touched must agree; at the end every name is compared. Prints the first
 * difference and exits 1, else a summary line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define NDIRS 4
#define NFILES 8
#define MAXDATA 70000

static const char *roots[2];
static unsigned long long rng;
static long step;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((rng >> 33) % n);
}

/* A random name: a directory dN, or a file fM in the root or in a dN. */
static void pick(char *out, size_t len, int dir)
{
	if (dir || rnd(4) == 0)
		snprintf(out, len, "d%u", rnd(NDIRS));
	else if (rnd(2))
		snprintf(out, len, "f%u", rnd(NFILES));
	else
		snprintf(out, len, "d%u/f%u", rnd(NDIRS), rnd(NFILES));
}

static void path(char *out, size_t len, int t, const char *name)
{
	snprintf(out, len, "%s/%s", roots[t], name);
}

/* Compare what a name is in both trees: type, size, mode, nlink, owner,
 * contents of files, the user.x attribute. */
static int same(const char *name, char *why, size_t wl)
{
	struct stat st[2];
	int rc[2];
	char p[2][4096];
	for (int t = 0; t < 2; t++) {
		path(p[t], sizeof(p[t]), t, name);
		rc[t] = lstat(p[t], &st[t]) < 0 ? errno : 0;
	}
	if (rc[0] != rc[1]) {
		snprintf(why, wl, "%s: lstat %s vs %s", name, strerror(rc[0]), strerror(rc[1]));
		return 0;
	}
	if (rc[0])
		return 1;
	if (st[0].st_mode != st[1].st_mode || st[0].st_uid != st[1].st_uid ||
	    (!S_ISDIR(st[0].st_mode) && st[0].st_nlink != st[1].st_nlink) ||
	    (S_ISREG(st[0].st_mode) && st[0].st_size != st[1].st_size)) {
		snprintf(why, wl, "%s: mode %o/%o uid %u/%u nlink %lu/%lu size %lld/%lld", name,
			 st[0].st_mode, st[1].st_mode, st[0].st_uid, st[1].st_uid,
			 (unsigned long)st[0].st_nlink, (unsigned long)st[1].st_nlink,
			 (long long)st[0].st_size, (long long)st[1].st_size);
		return 0;
	}
	if (S_ISREG(st[0].st_mode)) {
		static char a[MAXDATA * 2], b[MAXDATA * 2];
		int fa = open(p[0], O_RDONLY), fb = open(p[1], O_RDONLY);
		ssize_t na = read(fa, a, sizeof(a)), nb = read(fb, b, sizeof(b));
		close(fa);
		close(fb);
		if (na != nb || (na > 0 && memcmp(a, b, (size_t)na))) {
			snprintf(why, wl, "%s: contents differ (%zd / %zd bytes read)", name, na, nb);
			return 0;
		}
	}
	char xa[64] = "", xb[64] = "";
	ssize_t la = lgetxattr(p[0], "user.x", xa, sizeof(xa) - 1);
	ssize_t lb = lgetxattr(p[1], "user.x", xb, sizeof(xb) - 1);
	if (la != lb || (la > 0 && memcmp(xa, xb, (size_t)la))) {
		snprintf(why, wl, "%s: user.x differs", name);
		return 0;
	}
	return 1;
}

/* One operation on tree t; returns 0 or errno. */
static int op(int t, int kind, const char *a, const char *b, long arg, const char *data, size_t len)
{
	char pa[4096], pb[4096];
	path(pa, sizeof(pa), t, a);
	path(pb, sizeof(pb), t, b);
	int fd, rc = 0;
	switch (kind) {
	case 0: /* create or overwrite with O_TRUNC */
	case 1: /* open O_TRUNC an existing file and write */
		fd = open(pa, (kind == 0 ? O_CREAT : 0) | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0)
			return errno;
		if (write(fd, data, len) != (ssize_t)len)
			rc = errno;
		close(fd);
		return rc;
	case 2: /* write at an offset */
		fd = open(pa, O_WRONLY);
		if (fd < 0)
			return errno;
		if (pwrite(fd, data, len, arg) != (ssize_t)len)
			rc = errno;
		close(fd);
		return rc;
	case 3: return truncate(pa, arg) < 0 ? errno : 0;
	case 4: return rename(pa, pb) < 0 ? errno : 0;
	case 5: return link(pa, pb) < 0 ? errno : 0;
	case 6: return unlink(pa) < 0 ? errno : 0;
	case 7: return mkdir(pa, 0755) < 0 ? errno : 0;
	case 8: return rmdir(pa) < 0 ? errno : 0;
	case 9: return lsetxattr(pa, "user.x", data, len % 40, 0) < 0 ? errno : 0;
	case 10: return chmod(pa, (mode_t)(arg & 0777)) < 0 ? errno : 0;
	default: return lchown(pa, (uid_t)(arg % 3), (gid_t)-1) < 0 ? errno : 0;
	}
}

static const char *opname[] = { "create", "open-trunc", "pwrite", "truncate", "rename", "link",
				"unlink", "mkdir", "rmdir", "setxattr", "chmod", "chown" };

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: opseq SEED NOPS MODEL_DIR TEST_DIR\n");
		return 2;
	}
	rng = strtoull(argv[1], NULL, 0) * 2654435761ull + 1;
	long nops = atol(argv[2]);
	roots[0] = argv[3];
	roots[1] = argv[4];
	static char data[MAXDATA];
	long counts[12] = { 0 };
	char why[512];
	for (step = 1; step <= nops; step++) {
		int kind = (int)rnd(12);
		char a[64], b[64];
		pick(a, sizeof(a), kind == 7 || kind == 8);
		pick(b, sizeof(b), kind == 4 && rnd(3) == 0);
		size_t len = rnd(5) == 0 ? rnd(MAXDATA) : rnd(5000);
		long arg = kind == 2 || kind == 3 ? (long)rnd(MAXDATA) : (long)rnd(1 << 20);
		for (size_t i = 0; i < len; i++)
			data[i] = (char)('a' + (step + (long)i) % 26);
		int r0 = op(0, kind, a, b, arg, data, len);
		int r1 = op(1, kind, a, b, arg, data, len);
		if (r0 != r1) {
			printf("step %ld: %s %s %s: %s on the model, %s here\n", step, opname[kind], a, b,
			       strerror(r0), strerror(r1));
			return 1;
		}
		counts[kind] += r0 == 0;
		if (!same(a, why, sizeof(why)) || !same(b, why, sizeof(why))) {
			printf("step %ld: after %s %s %s: %s\n", step, opname[kind], a, b, why);
			return 1;
		}
	}
	/* every name at the end */
	for (unsigned d = 0; d <= NDIRS; d++)
		for (unsigned f = 0; f <= NFILES; f++) {
			char n[64];
			if (d == NDIRS)
				snprintf(n, sizeof(n), f == NFILES ? "." : "f%u", f);
			else
				snprintf(n, sizeof(n), f == NFILES ? "d%u" : "d%u/f%u", d, f);
			if (!same(n, why, sizeof(why))) {
				printf("at the end: %s\n", why);
				return 1;
			}
		}
	long ok = 0;
	for (int k = 0; k < 12; k++)
		ok += counts[k];
	printf("%ld operations agree with the model (%ld succeeded)\n", nops, ok);
	return 0;
}
