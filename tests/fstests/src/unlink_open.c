/* unlink_open FILE: write, unlink while open, read back through the open
 * descriptor, close. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: see the comment at the top of unlink_open.c\n");
		return 2;
	}
	char data[100000], back[100000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + 3);
	int fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, sizeof(data)) != (ssize_t)sizeof(data))
		return 1;
	if (unlink(argv[1]) != 0)
		return 1;
	struct stat st;
	fstat(fd, &st);
	printf("after unlink: exists=%d nlink=%lu size=%lld\n", access(argv[1], F_OK) == 0,
	       (unsigned long)st.st_nlink, (long long)st.st_size);
	if (pwrite(fd, "tail", 4, sizeof(data)) != 4)
		return 1;
	ssize_t n = pread(fd, back, sizeof(back), 0);
	printf("read back %zd bytes: %s\n", n, n == (ssize_t)sizeof(data) && !memcmp(data, back, sizeof(data)) ? "identical" : "DIFFERENT");
	close(fd);
	return 0;
}
