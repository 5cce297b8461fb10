/* posix_check DIR: run the everyday system calls of POSIX and Linux
 * through their man pages' cases in DIR (empty, writable), one line per case:
 * the errno name or "ok", what the file holds where it matters, and which
 * timestamps changed ("m+" / "m=", "c+" / "c="). The fstests run it on a
 * tmpfs and on rdmapoolfs and compare: every difference is a bug or has a
 * written reason. Needs root for the chown cases. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static const char *ename(int e)
{
	switch (e) {
	case 0: return "ok";
	case EEXIST: return "EEXIST";
	case ENOENT: return "ENOENT";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ELOOP: return "ELOOP";
	case EINVAL: return "EINVAL";
	case ENOTEMPTY: return "ENOTEMPTY";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EXDEV: return "EXDEV";
	case EBADF: return "EBADF";
	case EFBIG: return "EFBIG";
	default: return strerror(e);
	}
}

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* The call runs before the result is printed (arguments of one call run in
 * any order, so RES goes into r first where the line also reads the file). */
#define RES(call) ((call) < 0 ? ename(errno) : "ok")
static const char *r;

/* Timestamps: set old times on the paths, then after the operation tell
 * which of mtime and ctime moved. */
#define MAXW 4
static struct stat before[MAXW];
static const char *watched[MAXW];
static int nwatched;

static void watch(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	nwatched = n;
	for (int i = 0; i < n; i++) {
		watched[i] = va_arg(ap, const char *);
		utimensat(AT_FDCWD, watched[i], old, AT_SYMLINK_NOFOLLOW);
		lstat(watched[i], &before[i]);
	}
	va_end(ap);
	struct timespec d = { 0, 20 * 1000 * 1000 };
	nanosleep(&d, NULL); /* so that "now" differs from the ctime utimensat set */
}

static const char *changed(void)
{
	static char out[128];
	size_t o = 0;
	out[0] = 0;
	for (int i = 0; i < nwatched; i++) {
		struct stat st;
		if (lstat(watched[i], &st) < 0) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, " %s:gone", watched[i]);
			continue;
		}
		int m = st.st_mtim.tv_sec != before[i].st_mtim.tv_sec ||
			st.st_mtim.tv_nsec != before[i].st_mtim.tv_nsec;
		int c = st.st_ctim.tv_sec != before[i].st_ctim.tv_sec ||
			st.st_ctim.tv_nsec != before[i].st_ctim.tv_nsec;
		o += (size_t)snprintf(out + o, sizeof(out) - o, " %s:m%c,c%c", watched[i], m ? '+' : '=',
				      c ? '+' : '=');
	}
	return out;
}

static void put(const char *path, const char *data)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		say("setup of %s failed: %s", path, strerror(errno));
	close(fd);
}

static const char *content(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return ename(errno);
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = '|';
		else if (buf[i] == 0)
			buf[i] = '0';
	return buf;
}

static long long size_of(const char *path)
{
	struct stat st;
	return stat(path, &st) < 0 ? -1 : (long long)st.st_size;
}

/* ---- open and creat ---- */
static void trunc_case(const char *name, int flags, int use_creat)
{
	put(name, "hello world\n");
	watch(2, name, ".");
	int fd = use_creat ? creat(name, 0644) : open(name, flags, 0644);
	const char *r = fd < 0 ? ename(errno) : "ok";
	if (fd >= 0 && (flags & O_ACCMODE) != O_RDONLY && write(fd, "abc\n", 4) != 4)
		r = "write failed";
	close(fd);
	say("%s: %s size=%lld \"%s\"%s", name, r, size_of(name), content(name), changed());
}

static void open_cases(void)
{
	trunc_case("trunc_wronly", O_WRONLY | O_TRUNC, 0);
	trunc_case("trunc_rdwr", O_RDWR | O_TRUNC, 0);
	trunc_case("trunc_rdonly", O_RDONLY | O_TRUNC, 0);
	trunc_case("trunc_creat", 0, 1);
	trunc_case("trunc_ocreat", O_CREAT | O_WRONLY | O_TRUNC, 0);
	trunc_case("append_no_trunc", O_WRONLY | O_APPEND, 0);
	trunc_case("wronly_no_trunc", O_WRONLY, 0);

	put("empty", "");
	watch(1, "empty");
	int fd = open("empty", O_WRONLY | O_TRUNC);
	close(fd);
	say("O_TRUNC of an empty file: %s size=%lld%s", fd < 0 ? ename(errno) : "ok",
	    size_of("empty"), changed());

	/* O_TRUNC while another descriptor has the file open */
	char big[10000];
	memset(big, 'x', sizeof(big));
	int fd1 = open("shared", O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (write(fd1, big, sizeof(big)) != (ssize_t)sizeof(big))
		say("setup of shared failed");
	int fd2 = open("shared", O_WRONLY | O_TRUNC);
	struct stat st;
	fstat(fd1, &st);
	char b[16];
	ssize_t n = pread(fd1, b, sizeof(b), 0);
	ssize_t w = pwrite(fd1, "end", 3, 20);
	ssize_t z = pread(fd1, b, 4, 0);
	say("O_TRUNC while open elsewhere: other fd sees size %lld, reads %zd; write at 20: %zd, "
	    "bytes before it: %s",
	    (long long)st.st_size, n, w, z == 4 && !memcmp(b, "\0\0\0\0", 4) ? "zeros" : "NOT ZERO");
	close(fd1);
	close(fd2);

	put("exists", "x\n");
	say("O_CREAT|O_EXCL on an existing file: %s", RES(open("exists", O_CREAT | O_EXCL | O_WRONLY, 0644)));
	say("open of a missing file: %s", RES(open("missing", O_RDONLY)));
	say("open through a file: %s", RES(open("exists/x", O_RDONLY)));
	mkdir("adir", 0755);
	say("open of a directory for writing: %s", RES(open("adir", O_WRONLY)));
	say("O_TRUNC of a directory: %s", RES(open("adir", O_RDONLY | O_TRUNC)));
	char longname[300];
	memset(longname, 'n', 256);
	longname[256] = 0;
	say("create with a 256-byte name: %s", RES(open(longname, O_CREAT | O_WRONLY, 0644)));
	longname[255] = 0;
	fd = open(longname, O_CREAT | O_WRONLY, 0644);
	say("create with a 255-byte name: %s", fd < 0 ? ename(errno) : "ok");
	close(fd);
	unlink(longname);
	symlink("exists", "alink");
	say("O_NOFOLLOW on a symlink: %s", RES(open("alink", O_RDONLY | O_NOFOLLOW)));
	say("O_CREAT|O_EXCL on a symlink: %s", RES(open("alink", O_CREAT | O_EXCL | O_WRONLY, 0644)));
	say("O_DIRECTORY on a file: %s", RES(open("exists", O_RDONLY | O_DIRECTORY)));
	watch(1, ".");
	fd = open("newfile", O_CREAT | O_WRONLY, 0644);
	close(fd);
	say("create: parent%s", changed());
}

/* ---- truncate ---- */
static void truncate_cases(void)
{
	put("t", "0123456789");
	watch(1, "t");
	r = RES(truncate("t", 10));
	say("truncate to the same size: %s%s", r, changed());
	int fd = open("t", O_RDWR);
	watch(1, "t");
	r = RES(ftruncate(fd, 10));
	say("ftruncate to the same size: %s%s", r, changed());
	watch(1, "t");
	r = RES(truncate("t", 4));
	say("truncate down to 4: %s \"%s\"%s", r, content("t"), changed());
	watch(1, "t");
	r = RES(ftruncate(fd, 8));
	say("ftruncate up to 8: %s \"%s\"%s", r, content("t"), changed());
	close(fd);
	say("truncate of a directory: %s", RES(truncate("adir", 0)));
	say("truncate to -1: %s", RES(truncate("t", -1)));
	say("truncate of a missing file: %s", RES(truncate("missing", 0)));
	fd = open("t", O_RDONLY);
	say("ftruncate of a read-only descriptor: %s", RES(ftruncate(fd, 0)));
	close(fd);
}

/* ---- rename ---- */
static void rename_cases(void)
{
	mkdir("r1", 0755);
	mkdir("r2", 0755);
	put("r1/a", "A\n");
	put("r2/b", "B\n");
	watch(3, "r1", "r2", "r1/a");
	r = RES(rename("r1/a", "r2/b"));
	say("rename over a file: %s%s", r, changed());
	say("  target holds \"%s\", source %s", content("r2/b"), content("r1/a"));
	mkdir("r1/d", 0755);
	put("r1/f", "F\n");
	say("rename a file over a directory: %s", RES(rename("r1/f", "r1/d")));
	say("rename a directory over a file: %s", RES(rename("r1/d", "r1/f")));
	mkdir("r2/full", 0755);
	put("r2/full/x", "x");
	int rc = rename("r1/d", "r2/full");
	say("rename a directory over a non-empty one: %s", rc < 0 && errno == EEXIST ? "ENOTEMPTY" : RES(rc));
	mkdir("r1/d/sub", 0755);
	say("rename a directory into itself: %s", RES(rename("r1/d", "r1/d/sub/x")));
	say("rename a missing name: %s", RES(rename("r1/missing", "r1/y")));
	r = RES(rename("r1/f", "r1/f"));
	say("rename a file onto itself: %s \"%s\"", r, content("r1/f"));
	link("r1/f", "r1/f2");
	say("rename onto a hard link of itself: %s both=%d", RES(rename("r1/f", "r1/f2")),
	    access("r1/f", F_OK) == 0 && access("r1/f2", F_OK) == 0);
	struct stat a, b;
	stat("r1", &a);
	say("rename a directory to another parent: %s", RES(rename("r1/d", "r2/d")));
	stat("r1", &b);
	say("  old parent nlink %ld -> %ld", (long)a.st_nlink, (long)b.st_nlink);
	say("rename to a 256-byte name: %s", RES(rename("r1/f", "r1/nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn")));
}

/* ---- link, unlink, mkdir, rmdir, symlink ---- */
static void name_cases(void)
{
	put("l", "L\n");
	watch(2, "l", ".");
	r = RES(link("l", "l2"));
	say("link: %s%s", r, changed());
	struct stat st;
	stat("l", &st);
	say("  nlink %ld", (long)st.st_nlink);
	say("link onto an existing name: %s", RES(link("l", "exists")));
	say("link of a directory: %s", RES(link("adir", "adir2")));
	say("link of a missing file: %s", RES(link("missing", "m2")));
	watch(2, "l", ".");
	r = RES(unlink("l2"));
	say("unlink one of two links: %s%s", r, changed());
	say("unlink of a directory: %s", RES(unlink("adir")));
	say("unlink of a missing name: %s", RES(unlink("missing")));
	say("mkdir of an existing name: %s", RES(mkdir("exists", 0755)));
	say("mkdir in a missing directory: %s", RES(mkdir("missing/d", 0755)));
	stat(".", &st);
	long n0 = (long)st.st_nlink;
	watch(1, ".");
	r = RES(mkdir("nd", 0755));
	say("mkdir: %s%s", r, changed());
	stat(".", &st);
	say("  parent nlink +%ld", (long)st.st_nlink - n0);
	put("nd/x", "");
	say("rmdir of a non-empty directory: %s", RES(rmdir("nd")));
	say("rmdir of a file: %s", RES(rmdir("exists")));
	say("rmdir of \".\": %s", RES(rmdir("nd/.")));
	unlink("nd/x");
	watch(1, ".");
	r = RES(rmdir("nd"));
	say("rmdir: %s%s", r, changed());
	stat(".", &st);
	say("  parent nlink +%ld", (long)st.st_nlink - n0);
	say("symlink onto an existing name: %s", RES(symlink("x", "exists")));
	say("symlink: %s", RES(symlink("some/target/path", "sl")));
	lstat("sl", &st);
	char t[64] = { 0 };
	ssize_t n = readlink("sl", t, sizeof(t) - 1);
	say("  readlink %zd \"%s\", lstat size %lld", n, t, (long long)st.st_size);
	say("readlink of a file: %s", RES(readlink("exists", t, sizeof(t))));
}

/* ---- attributes ---- */
static void attr_cases(void)
{
	put("c", "C\n");
	watch(1, "c");
	r = RES(chmod("c", 0600));
	say("chmod: %s%s", r, changed());
	watch(1, "c");
	r = RES(chown("c", 65534, 65534));
	say("chown: %s%s", r, changed());
	static const struct { mode_t mode; const char *what; } setid[] = {
		{ 04755, "set-uid" }, { 02755, "set-gid with group-exec" },
		{ 02745, "set-gid without group-exec" }, { 06755, "both" },
	};
	for (size_t i = 0; i < sizeof(setid) / sizeof(setid[0]); i++) {
		put("s", "S");
		chown("s", 0, 0);
		chmod("s", setid[i].mode);
		int rc = chown("s", 65534, -1);
		struct stat st;
		stat("s", &st);
		say("chown of a %s file: %s mode %04o", setid[i].what, rc < 0 ? ename(errno) : "ok",
		    (unsigned)(st.st_mode & 07777));
		chmod("s", setid[i].mode);
		chown("s", -1, 65534);
		stat("s", &st);
		say("chgrp of a %s file: mode %04o", setid[i].what, (unsigned)(st.st_mode & 07777));
	}
	mkdir("sd", 02755);
	chmod("sd", 02755);
	chown("sd", 65534, 65534);
	struct stat st;
	stat("sd", &st);
	say("chown of a set-gid directory: mode %04o", (unsigned)(st.st_mode & 07777));
	put("sd/inherit", "");
	mkdir("sd/subdir", 0755);
	struct stat f, d;
	stat("sd/inherit", &f);
	stat("sd/subdir", &d);
	say("  new file group %u, new directory group %u mode %04o", (unsigned)f.st_gid,
	    (unsigned)d.st_gid, (unsigned)(d.st_mode & 07777));

	struct timespec ts[2] = { { 1234567890, 123456789 }, { 1234567891, 987654321 } };
	watch(1, "c");
	utimensat(AT_FDCWD, "c", ts, 0);
	stat("c", &st);
	say("utimensat explicit: atime %lld.%09ld mtime %lld.%09ld%s", (long long)st.st_atim.tv_sec,
	    st.st_atim.tv_nsec, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, changed());
	struct timespec omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
	utimensat(AT_FDCWD, "c", omit, 0);
	stat("c", &st);
	say("utimensat OMIT/NOW: atime kept %d, mtime now %d", st.st_atim.tv_sec == 1234567890,
	    st.st_mtim.tv_sec > 1234567891);
	struct timespec bad[2] = { { 0, 1000000000 }, { 0, 0 } };
	say("utimensat with a bad nsec: %s", RES(utimensat(AT_FDCWD, "c", bad, 0)));
	say("utimensat of a missing file: %s", RES(utimensat(AT_FDCWD, "missing", NULL, 0)));
}

static void special_cases(void)
{
	struct stat st;
	say("mkfifo: %s", RES(mkfifo("fifo", 0640)));
	lstat("fifo", &st);
	say("  type fifo %d mode %04o", S_ISFIFO(st.st_mode), (unsigned)(st.st_mode & 07777));
	say("mkfifo of an existing name: %s", RES(mkfifo("fifo", 0640)));
	say("mknod of a regular file: %s", RES(mknod("node", S_IFREG | 0600, 0)));
	lstat("node", &st);
	say("  regular %d size %lld", S_ISREG(st.st_mode), (long long)st.st_size);
	say("mknod of a character device: %s", RES(mknod("cdev", S_IFCHR | 0600, makedev(1, 3))));
	lstat("cdev", &st);
	say("  char %d rdev %u:%u", S_ISCHR(st.st_mode), major(st.st_rdev), minor(st.st_rdev));
	say("open O_TRUNC of a fifo (nonblocking): %s",
	    RES(open("fifo", O_RDONLY | O_NONBLOCK | O_TRUNC)));
}

int main(int argc, char **argv)
{
	if (argc != 2 || chdir(argv[1]) != 0) {
		fprintf(stderr, "usage: posix_check DIR\n");
		return 2;
	}
	umask(022);
	open_cases();
	truncate_cases();
	rename_cases();
	name_cases();
	attr_cases();
	special_cases();
	return 0;
}
