/* Requests the kernel sends again after a supervised restart: libfuse's
 * custom I/O reads /dev/fuse for us, so each request's header (its number,
 * its "sent again" bit) is seen on the thread that then serves it. */
#include "config.h"
#include "resend.h"

#include <rdmapool/log.h>

#include <errno.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef FUSE_UNIQUE_RESEND
#define FUSE_UNIQUE_RESEND (1ULL << 63) /* Linux 6.9: the request is sent again */
#endif

static uint64_t conn_id; /* set once, before the session serves */
static const char *crash_name, *crash_unlogged; /* test hooks */

/* The request this thread serves. */
static _Thread_local struct {
	uint64_t unique;
	bool again;
} current;

/* The changes that must not be carried out twice. */
static bool is_change(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_SYMLINK:
	case FUSE_LINK:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_RENAME:
	case FUSE_RENAME2:
	case FUSE_CREATE:
		return true;
	default:
		return false;
	}
}

static ssize_t read_request(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	ssize_t n = read(fd, buf, len);
	struct fuse_in_header h = { 0 };
	if (n >= (ssize_t)sizeof(h))
		memcpy(&h, buf, sizeof(h));
	current.again = (h.unique & FUSE_UNIQUE_RESEND) != 0;
	current.unique = h.unique & ~FUSE_UNIQUE_RESEND;
	rp_fs_request_set(n >= (ssize_t)sizeof(h) && is_change(h.opcode) ? conn_id : 0,
			  current.unique);
	return n;
}

static ssize_t write_reply(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	return writev(fd, iov, count);
}

int rp_resend_attach(struct fuse_session *se, int fd, uint64_t conn)
{
	static const struct fuse_custom_io io = { .read = read_request, .writev = write_reply };
	conn_id = conn;
#ifdef RP_TEST_HOOKS
	crash_name = conn ? getenv("RP_TEST_CRASH_AFTER") : NULL;
	crash_unlogged = conn ? getenv("RP_TEST_CRASH_UNLOGGED") : NULL;
	if (crash_name || crash_unlogged)
		rp_warn("RP_TEST_CRASH_AFTER/UNLOGGED: this daemon dies after changes so named "
			"(tests only)");
#endif
	if (!conn)
		rp_warn("the supervisor named no connection (one from before this version, after "
			"--restart?): a change the kernel sends again after a crash may be "
			"carried out twice");
	return fuse_session_custom_io(se, &io, fd);
}

bool rp_resend_done(struct rp_fs *fs)
{
	if (!current.again)
		return false;
	bool done = rp_fs_request_done(fs, conn_id, current.unique);
	rp_info("request %llu sent again after a restart: %s",
		(unsigned long long)current.unique,
		done ? "its change is in the log: answered from the state" : "carried out");
	return done;
}

void rp_resend_forget(void)
{
	rp_fs_request_set(0, 0);
}

void rp_resend_test_crash(struct rp_fs *fs, int rc, const char *name)
{
	if (rc != 0 || current.again) /* one death per request: at its first run */
		return;
	if (crash_name && strcmp(name, crash_name) == 0) {
		rp_warn("RP_TEST_CRASH_AFTER: \"%s\" is done and logged (%s); dying before the "
			"answer", name, strerror(-rp_fs_sync(fs)));
		kill(getpid(), SIGKILL);
	}
	if (crash_unlogged && strcmp(name, crash_unlogged) == 0) {
		rp_warn("RP_TEST_CRASH_UNLOGGED: \"%s\" is done, not flushed; dying before the "
			"answer", name);
		kill(getpid(), SIGKILL);
	}
}
