/* The lock-order checker (include/rdmapool/lock_order.h), built in here
 * whatever the build's --enable-lock-check says: locks taken in rank order
 * pass, one taken out of order stops the process with both sites named,
 * RP_LOCK_CHECK=warn reports and goes on, and a trylock is not checked. */
#include "config.h"
#include "tap.h"

#include <rdmapool/lock_order.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t fs_mu = PTHREAD_MUTEX_INITIALIZER, pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t io = PTHREAD_RWLOCK_INITIALIZER;

static void in_order(void)
{
	rp_rwlock_rdlock(&io, RP_LK_INODE_IO);
	rp_mutex_lock(&fs_mu, RP_LK_FS);
	rp_mutex_lock(&pool_mu, RP_LK_POOL);
	rp_mutex_unlock(&pool_mu);
	rp_mutex_unlock(&fs_mu);
	rp_rwlock_unlock(&io);
}

static void inverted(void)
{
	rp_mutex_lock(&fs_mu, RP_LK_FS);
	rp_rwlock_wrlock(&io, RP_LK_INODE_IO); /* the truncate-under-fs->mu mistake */
	rp_rwlock_unlock(&io);
	rp_mutex_unlock(&fs_mu);
}

static void same_rank_twice(void)
{
	static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
	rp_mutex_lock(&a, RP_LK_POOL);
	rp_mutex_lock(&b, RP_LK_POOL);
	rp_mutex_unlock(&b);
	rp_mutex_unlock(&a);
}

static void trylock_inverted(void)
{
	rp_mutex_lock(&pool_mu, RP_LK_POOL);
	if (rp_mutex_trylock(&fs_mu, RP_LK_FS) == 0)
		rp_mutex_unlock(&fs_mu);
	rp_mutex_unlock(&pool_mu);
	in_order(); /* what the trylock noted is forgotten again */
}

/* Runs f in a child with stderr into out; returns its wait status. */
static int run(void (*f)(void), const char *mode, char *out, size_t outlen)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		if (mode)
			setenv("RP_LOCK_CHECK", mode, 1);
		unsetenv("RP_LOCK_CHECK_LOG");
		signal(SIGABRT, SIG_DFL);
		f();
		_exit(0);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < outlen && (r = read(p[0], out + n, outlen - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

int main(void)
{
	char out[4096];
	int st = run(in_order, NULL, out, sizeof(out));
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !out[0], "locks taken in rank order pass");

	st = run(inverted, NULL, out, sizeof(out));
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "a lock taken out of order aborts");
	ok(strstr(out, "lock order: &io (rank 22) taken at") && strstr(out, "while holding &fs_mu (rank 24)"),
	   "the report names both locks and ranks");
	const char *first = strstr(out, "test_lock_order.c:");
	ok(first && strstr(first + 1, "test_lock_order.c:"), "and both sites");

	st = run(same_rank_twice, NULL, out, sizeof(out));
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "two locks of one rank at once abort");

	st = run(inverted, "warn", out, sizeof(out));
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "lock order:"),
	   "RP_LOCK_CHECK=warn reports and goes on");

	st = run(trylock_inverted, NULL, out, sizeof(out));
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !out[0], "a trylock is recorded, not checked");
	return tap_done();
}
