/* errno_probe OP ARGS...: one system call, printing "ok" or the errno name,
 * so tests can show POSIX error codes in golden output.
 *   open PATH FLAGS(r|w|rw|c|cx|t|d)   mkdir PATH   rmdir PATH   unlink PATH
 *   link OLD NEW   symlink TARGET PATH   rename OLD NEW   truncate PATH SIZE
 *   chmod PATH MODE   chown PATH UID GID   utime PATH   readlink PATH   write PATH OFF
 *   setxattr PATH NAME VALUE [create|replace]  getxattr PATH NAME  removexattr PATH NAME */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static int openflags(const char *s)
{
	int f = 0;
	if (strchr(s, 'r') && strchr(s, 'w')) f |= O_RDWR;
	else if (strchr(s, 'w')) f |= O_WRONLY;
	if (strchr(s, 'c')) f |= O_CREAT;
	if (strchr(s, 'x')) f |= O_EXCL;
	if (strchr(s, 't')) f |= O_TRUNC;
	if (strchr(s, 'd')) f |= O_DIRECTORY;
	if (strchr(s, 'D')) f |= O_DIRECT;
	return f;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *op = argv[1], *p = argv[2];
	int rc = -1;
	char buf[8192];
	if (!strcmp(op, "open")) { rc = open(p, openflags(argc > 3 ? argv[3] : "r"), 0644); if (rc >= 0) { close(rc); rc = 0; } }
	else if (!strcmp(op, "mkdir")) rc = mkdir(p, 0755);
	else if (!strcmp(op, "rmdir")) rc = rmdir(p);
	else if (!strcmp(op, "unlink")) rc = unlink(p);
	else if (!strcmp(op, "link") && argc > 3) rc = link(p, argv[3]);
	else if (!strcmp(op, "symlink") && argc > 3) rc = symlink(p, argv[3]);
	else if (!strcmp(op, "rename") && argc > 3) rc = rename(p, argv[3]);
	else if (!strcmp(op, "truncate") && argc > 3) rc = truncate(p, strtoll(argv[3], NULL, 0));
	else if (!strcmp(op, "chmod") && argc > 3) rc = chmod(p, (mode_t)strtol(argv[3], NULL, 8));
	else if (!strcmp(op, "chown") && argc > 4) rc = chown(p, (uid_t)atoi(argv[3]), (gid_t)atoi(argv[4]));
	else if (!strcmp(op, "utime")) rc = utimensat(AT_FDCWD, p, NULL, 0);
	else if (!strcmp(op, "readlink")) rc = readlink(p, buf, sizeof(buf)) < 0 ? -1 : 0;
	else if (!strcmp(op, "write") && argc > 3) {
		int fd = open(p, O_WRONLY);
		rc = fd < 0 ? -1 : (pwrite(fd, "x", 1, strtoll(argv[3], NULL, 0)) == 1 ? 0 : -1);
		int e = errno;
		if (fd >= 0) close(fd);
		errno = e;
	}
	else if (!strcmp(op, "setxattr") && argc > 4) {
		int fl = argc > 5 ? (!strcmp(argv[5], "create") ? XATTR_CREATE : XATTR_REPLACE) : 0;
		rc = setxattr(p, argv[3], argv[4], strlen(argv[4]), fl);
	}
	else if (!strcmp(op, "getxattr") && argc > 3) rc = getxattr(p, argv[3], buf, sizeof(buf)) < 0 ? -1 : 0;
	else if (!strcmp(op, "removexattr") && argc > 3) rc = removexattr(p, argv[3]);
	else { fprintf(stderr, "errno_probe: bad op %s\n", op); return 2; }
	printf("%s %s\n", op, rc == 0 ? "ok" : strerrorname_np(errno));
	return 0;
}
