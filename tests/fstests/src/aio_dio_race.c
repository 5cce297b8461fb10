/* Buffered reads racing asynchronous O_DIRECT writes (after xfstests
 * generic/451): one thread reads the file through the page cache without
 * pause while the main thread submits O_DIRECT writes of a new pattern
 * with io_submit and waits for them; once a write completed, a buffered
 * read of its range must return the new bytes. Prints the rounds and the
 * rounds whose buffered read was stale.
 *   aio_dio_race FILE ROUNDS */
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SIZE (64 * 1024)

static atomic_bool done;
static const char *path;

static void *reader(void *arg)
{
	(void)arg;
	char *b = malloc(SIZE);
	int fd = open(path, O_RDONLY);
	if (!b || fd < 0) {
		perror("reader");
		exit(1);
	}
	while (!atomic_load(&done))
		if (pread(fd, b, SIZE, 0) < 0) {
			perror("reader: pread");
			exit(1);
		}
	close(fd);
	free(b);
	return NULL;
}

/* one O_DIRECT write of the whole range, submitted and waited for */
static int aio_write(aio_context_t ctx, int fd, void *buf)
{
	struct iocb cb = { .aio_fildes = (uint32_t)fd, .aio_lio_opcode = IOCB_CMD_PWRITE,
			   .aio_buf = (uint64_t)(uintptr_t)buf, .aio_nbytes = SIZE };
	struct iocb *cbs[1] = { &cb };
	struct io_event ev;
	if (syscall(SYS_io_submit, ctx, 1, cbs) != 1) {
		perror("io_submit");
		return -1;
	}
	if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1) {
		perror("io_getevents");
		return -1;
	}
	if ((long long)ev.res != SIZE) {
		fprintf(stderr, "aio write: result %lld\n", (long long)ev.res);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: aio_dio_race FILE ROUNDS\n");
		return 2;
	}
	path = argv[1];
	int rounds = atoi(argv[2]), stale = 0;
	int dfd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644), bfd = open(path, O_RDONLY);
	void *w, *r = malloc(SIZE);
	aio_context_t ctx = 0;
	if (dfd < 0 || bfd < 0 || !r || posix_memalign(&w, 4096, SIZE) != 0) {
		perror(path);
		return 1;
	}
	if (syscall(SYS_io_setup, 1, &ctx) < 0) {
		perror("io_setup");
		return 1;
	}
	memset(w, 0, SIZE);
	if (aio_write(ctx, dfd, w) < 0) /* the file has its size: no extending writes */
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, reader, NULL);
	for (int i = 1; i <= rounds; i++) {
		memset(w, 'a' + i % 26, SIZE);
		if (aio_write(ctx, dfd, w) < 0)
			return 1;
		if (pread(bfd, r, SIZE, 0) != SIZE) {
			perror("pread");
			return 1;
		}
		if (memcmp(r, w, SIZE) != 0)
			stale++;
	}
	atomic_store(&done, true);
	pthread_join(t, NULL);
	syscall(SYS_io_destroy, ctx);
	close(dfd);
	close(bfd);
	free(w);
	free(r);
	printf("%d rounds, %d with a stale buffered read\n", rounds, stale);
	return stale ? 1 : 0;
}
