/* ro_check writer DIR SECONDS | reader DIR SECONDS: churn and watch files
 * whose every byte names the file. The writer deletes and recreates files
 * f0..f63 (file fN holds only the byte N+1, in random sizes), so freed
 * blocks are soon reused by other files. The reader, on a read-only mount
 * of the same volume, reads them over and over: a byte that is not its
 * file's own is another file's data, and is reported. Prints a summary. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NFILES 64
#define MAXSIZE (256 * 1024)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int writer(const char *dir, double secs)
{
	static char buf[MAXSIZE];
	long rounds = 0, nospc = 0;
	double end = now() + secs;
	srand(4242);
	while (now() < end) {
		int id = rand() % NFILES;
		char p[4096];
		snprintf(p, sizeof(p), "%s/f%d", dir, id);
		unlink(p);
		size_t len = (size_t)(rand() % MAXSIZE) + 1;
		memset(buf, id + 1, len);
		int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
			if (errno != ENOSPC) {
				perror(p);
				return 1;
			}
			nospc++;
		}
		close(fd);
		rounds++;
	}
	printf("writer: %s\n", rounds > 20 ? "many files rewritten" : "FEW ROUNDS");
	fprintf(stderr, "writer: %ld files rewritten, %ld ENOSPC\n", rounds, nospc);
	return 0;
}

static int reader(const char *dir, double secs)
{
	static char buf[MAXSIZE];
	long reads = 0, bytes = 0, foreign = 0, errors = 0;
	double end = now() + secs;
	while (now() < end) {
		for (int id = 0; id < NFILES; id++) {
			char p[4096];
			snprintf(p, sizeof(p), "%s/f%d", dir, id);
			int fd = open(p, O_RDONLY);
			if (fd < 0)
				continue; /* deleted meanwhile */
			ssize_t n = read(fd, buf, sizeof(buf));
			close(fd);
			if (n < 0) {
				errors++;
				continue;
			}
			reads++;
			bytes += n;
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] != (char)(id + 1)) {
					if (foreign++ < 5)
						fprintf(stderr, "%s: byte %zd is %d, not %d\n", p, i,
							buf[i], id + 1);
					break;
				}
		}
	}
	printf("reader: files with bytes of another file: %ld\n", foreign);
	printf("reader: %s\n", reads > 20 && bytes > 0 ? "many files read" : "FEW READS");
	fprintf(stderr, "reader: %ld reads, %ld bytes, %ld read errors\n", reads, bytes, errors);
	return foreign ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: ro_check writer|reader DIR SECONDS\n");
		return 2;
	}
	double secs = atof(argv[3]);
	if (strcmp(argv[1], "writer") == 0)
		return writer(argv[2], secs);
	return reader(argv[2], secs);
}
