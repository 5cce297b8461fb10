/* mmap_rw FILE: MAP_SHARED writes with msync read back with read(2), and
 * data written with write(2) read back through a mapping. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LEN (3 * 4096 + 123)

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: see the comment at the top of mmap_rw.c\n");
		return 2;
	}
	char buf[LEN];
	int fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, LEN) != 0)
		return 1;
	char *m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 1;
	for (int i = 0; i < LEN; i++)
		m[i] = (char)('a' + i % 26);
	int sync_rc = msync(m, LEN, MS_SYNC);
	munmap(m, LEN);
	close(fd);
	fd = open(argv[1], O_RDONLY);
	ssize_t n = read(fd, buf, LEN);
	int same = n == LEN;
	for (int i = 0; same && i < LEN; i++)
		same = buf[i] == (char)('a' + i % 26);
	printf("mmap write, msync %s, read back %zd bytes: %s\n", sync_rc ? "failed" : "ok", n, same ? "identical" : "DIFFERENT");
	close(fd);
	fd = open(argv[1], O_RDWR);
	if (pwrite(fd, "HELLO", 5, 5000) != 5)
		return 1;
	m = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
	printf("write then mmap read: %.5s\n", m + 5000);
	munmap(m, LEN);
	close(fd);
	return 0;
}
