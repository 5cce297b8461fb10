/* A process that keeps one file open and reads and writes it for a while,
 * as an application would across a restart of the daemon: every write is
 * fsync'ed and read back. Prints the number of rounds, the errors (failed
 * calls, wrong bytes) and, on stderr, the longest a round took.
 *   rw_loop FILE SECONDS [STOP_FILE]   (stops early once STOP_FILE exists) */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096
#define BLOCKS 64

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void fill(uint8_t *b, unsigned round)
{
	for (unsigned i = 0; i < BLOCK; i++)
		b[i] = (uint8_t)(round * 31 + i * 7);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rw_loop FILE SECONDS [STOP_FILE]\n");
		return 2;
	}
	int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	uint64_t end = now_ms() + (uint64_t)atoi(argv[2]) * 1000, worst = 0;
	uint8_t w[BLOCK], r[BLOCK];
	unsigned rounds = 0, errors = 0;
	while (now_ms() < end && !(argc > 3 && access(argv[3], F_OK) == 0)) {
		uint64_t t0 = now_ms();
		off_t off = (off_t)(rounds % BLOCKS) * BLOCK;
		fill(w, rounds);
		if (pwrite(fd, w, BLOCK, off) != BLOCK || fsync(fd) != 0) {
			fprintf(stderr, "round %u: write: %s\n", rounds, strerror(errno));
			errors++;
		} else if (pread(fd, r, BLOCK, off) != BLOCK) {
			fprintf(stderr, "round %u: read: %s\n", rounds, strerror(errno));
			errors++;
		} else if (memcmp(w, r, BLOCK) != 0) {
			fprintf(stderr, "round %u: read back other bytes\n", rounds);
			errors++;
		}
		uint64_t took = now_ms() - t0;
		if (took > worst)
			worst = took;
		rounds++;
	}
	if (close(fd) != 0) {
		perror("close");
		errors++;
	}
	printf("rounds %u errors %u\n", rounds, errors);
	fprintf(stderr, "longest round: %llu ms\n", (unsigned long long)worst);
	return errors ? 1 : 0;
}
