/* Processes that each, in a tight loop, write a small file, read it back,
 * close and unlink it: every read is answered while the kernel may close,
 * unlink and forget the file right after, racing whatever the daemon still
 * does for that read (fstest 075). Prints the failed calls and wrong reads.
 *   read_unlink DIR PROCESSES SECONDS */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int worker(const char *dir, int id, time_t end)
{
	char path[4096], want[64], got[64];
	int bad = 0;
	snprintf(path, sizeof(path), "%s/r%d", dir, id);
	for (unsigned n = 0; time(NULL) < end && bad < 10; n++) {
		int len = snprintf(want, sizeof(want), "process %d round %u\n", id, n);
		int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
		if (fd < 0) {
			fprintf(stderr, "%s: create: %s\n", path, strerror(errno));
			bad++;
			continue;
		}
		ssize_t w = write(fd, want, (size_t)len);
		int werr = w < 0 ? errno : 0;
		if (close(fd) < 0 && !werr)
			werr = errno;
		if (w != len || werr) {
			fprintf(stderr, "%s: wrote %zd of %d bytes: %s\n", path, w, len,
				werr ? strerror(werr) : "short write");
			bad++;
			continue;
		}
		fd = open(path, O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "%s: open: %s\n", path, strerror(errno));
			bad++;
			continue;
		}
		ssize_t r = read(fd, got, sizeof(got));
		close(fd);
		if (r != len || memcmp(got, want, (size_t)len) != 0) {
			fprintf(stderr, "%s: read %zd bytes, not the %d written\n", path, r, len);
			bad++;
		}
		if (unlink(path) < 0) {
			fprintf(stderr, "%s: unlink: %s\n", path, strerror(errno));
			bad++;
		}
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: read_unlink DIR PROCESSES SECONDS\n");
		return 2;
	}
	int np = atoi(argv[2]), failed = 0;
	time_t end = time(NULL) + atoi(argv[3]);
	for (int i = 0; i < np; i++) {
		pid_t p = fork();
		if (p == 0)
			_exit(worker(argv[1], i, end));
		if (p < 0) {
			perror("fork");
			failed++;
		}
	}
	int st;
	while (wait(&st) > 0)
		failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	printf("processes that failed: %d\n", failed);
	return failed ? 1 : 0;
}
