/* handle_check MOUNT PATH...: for each PATH take a file handle with
 * name_to_handle_at, make the kernel forget the inodes (drop the dentry and
 * inode caches), open each handle again with open_by_handle_at and compare
 * what it reads with what the path read before. Also resolves a directory
 * handle's parent (".." lookup). Prints one line per path; needs root. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXP 16
#define MAXREAD (1 << 20)

static ssize_t slurp(int fd, char *buf)
{
	ssize_t n, got = 0;
	while (got < MAXREAD && (n = read(fd, buf + got, (size_t)(MAXREAD - got))) > 0)
		got += n;
	return n < 0 ? -1 : got;
}

static void drop_caches(void)
{
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "2", 1) != 1)
			perror("drop_caches");
		close(fd);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc - 2 > MAXP) {
		fprintf(stderr, "usage: handle_check MOUNT PATH... (at most %d)\n", MAXP);
		return 2;
	}
	int n = argc - 2, bad = 0;
	struct file_handle *h[MAXP];
	char *before[MAXP];
	ssize_t blen[MAXP];
	int mfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (mfd < 0) {
		perror(argv[1]);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		const char *p = argv[i + 2];
		int mnt;
		h[i] = malloc(sizeof(*h[i]) + MAX_HANDLE_SZ);
		before[i] = malloc(MAXREAD);
		h[i]->handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(AT_FDCWD, p, h[i], &mnt, 0) != 0) {
			printf("%s: name_to_handle_at: %s\n", p, strerror(errno));
			return 1;
		}
		struct stat st;
		stat(p, &st);
		blen[i] = 0;
		if (S_ISREG(st.st_mode)) {
			int fd = open(p, O_RDONLY);
			blen[i] = fd < 0 ? -1 : slurp(fd, before[i]);
			close(fd);
		}
	}
	drop_caches();
	for (int i = 0; i < n; i++) {
		const char *p = argv[i + 2];
		int fd = open_by_handle_at(mfd, h[i], O_RDONLY);
		if (fd < 0) {
			printf("%s: open_by_handle_at: %s\n", p, strerror(errno));
			bad = 1;
			continue;
		}
		struct stat st;
		fstat(fd, &st);
		if (S_ISDIR(st.st_mode)) {
			/* the parent of a directory found by handle */
			struct stat up;
			int ok = fstatat(fd, "..", &up, 0) == 0;
			printf("%s: directory reopened by handle, parent %s\n", p,
			       ok ? "found" : strerror(errno));
		} else {
			char *after = malloc(MAXREAD);
			ssize_t alen = slurp(fd, after);
			printf("%s: reopened by handle, nlink %lu, contents %s\n", p,
			       (unsigned long)st.st_nlink,
			       alen == blen[i] && memcmp(after, before[i], (size_t)alen) == 0 ? "identical"
											  : "DIFFERENT");
			free(after);
		}
		close(fd);
	}
	for (int i = 0; i < n; i++) {
		free(h[i]);
		free(before[i]);
	}
	return bad;
}
