/* direct_mmap FILE: open FILE with O_DIRECT, map it, and check that O_DIRECT
 * writes show in the mapping, mapped stores (msync) show in O_DIRECT reads,
 * and a mapping of a file opened without O_DIRECT agrees too. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LEN (4 * 4096)

static int check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "yes" : "NO");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: direct_mmap FILE\n");
		return 2;
	}
	void *buf;
	if (posix_memalign(&buf, 4096, LEN) != 0)
		return 1;
	int fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0) {
		perror("open O_DIRECT");
		return 1;
	}
	memset(buf, 'a', LEN);
	if (pwrite(fd, buf, LEN, 0) != LEN) {
		perror("O_DIRECT write");
		return 1;
	}
	char *m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap of an O_DIRECT file");
		return 1;
	}
	int bad = check("mapped an O_DIRECT file", 1);
	bad |= check("mapping shows the O_DIRECT write", m[0] == 'a' && m[LEN - 1] == 'a');
	memset(buf, 'b', 4096);
	if (pwrite(fd, buf, 4096, 4096) != 4096)
		return 1;
	bad |= check("mapping shows a later O_DIRECT write", m[4096] == 'b' && m[8191] == 'b');
	memset(m + 8192, 'c', 4096);
	if (msync(m, LEN, MS_SYNC) != 0)
		return 1;
	if (pread(fd, buf, LEN, 0) != LEN)
		return 1;
	char *c = buf;
	bad |= check("O_DIRECT read shows mapped stores", c[8192] == 'c' && c[12287] == 'c' &&
							  c[4096] == 'b' && c[0] == 'a');
	int fd2 = open(argv[1], O_RDONLY);
	char *m2 = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd2, 0);
	bad |= check("a buffered mapping agrees", m2 != MAP_FAILED && memcmp(m2, buf, LEN) == 0);
	munmap(m, LEN);
	close(fd);
	close(fd2);
	free(buf);
	return bad;
}
