/* The supervisor of a mount (-o supervise) and its child's side of it.
 *
 * The supervisor mounts, keeps the /dev/fuse descriptor, and runs the
 * program again as its child with the descriptor inherited; the child
 * opens the volume and serves. The child sends the supervisor the kernel's
 * INIT request (the kernel sends it once per mount, and a new child must
 * see it to set up its session), its lease word and "ready". When the
 * child dies, the supervisor starts another one (the lease of the dead one
 * is taken at once: it is known dead); on 'rdmapoolfs --restart', it asks
 * the child to hand over (SIGUSR1: stop serving, flush, give the lease
 * back, exit 75) and starts the new one. The supervisor alone unmounts. */
#include "config.h"
#include "supervisor.h"

#include <rdmapool/log.h>
#include <rdmapool/metrics_server.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define ENV_FD "RDMAPOOLFS_FUSE_FD"
#define ENV_STATE "RDMAPOOLFS_STATE_FD"
#define ENV_READY "RDMAPOOLFS_READY_FD"
#define ENV_INIT "RDMAPOOLFS_INIT"
#define ENV_LEASE "RDMAPOOLFS_DEAD_LEASE"
#define ENV_CONN "RDMAPOOLFS_CONN" /* names the mount's requests (resend.h) */
#define CRASH_WINDOW_MS 10000
#define CRASH_MAX 3 /* deaths within the window before the mount is given up */
#define HANDOVER_TIMEOUT_MS 60000

static void hex_encode(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
}

static size_t hex_decode(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned v;
	while (s[0] && s[1] && n < max && sscanf(s, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static void ctl_path(const char *mountpoint, char *out, size_t len)
{
	rp_mount_socket("ctl", mountpoint, out, len);
}

/* ---- the child's side ---- */

static int env_int(const char *name)
{
	const char *v = getenv(name);
	return v ? atoi(v) : -1;
}

bool sup_child_env(struct sup_child *c)
{
	memset(c, 0, sizeof(*c));
	c->fuse_fd = env_int(ENV_FD);
	if (c->fuse_fd < 0)
		return false;
	c->state_fd = env_int(ENV_STATE);
	c->ready_fd = env_int(ENV_READY);
	const char *init = getenv(ENV_INIT), *lease = getenv(ENV_LEASE), *conn = getenv(ENV_CONN);
	if (init)
		c->init_len = hex_decode(init, c->init, sizeof(c->init));
	c->restart = c->init_len > 0;
	if (lease)
		c->dead_lease = strtoull(lease, NULL, 16);
	if (conn)
		c->conn = strtoull(conn, NULL, 16);
	/* not for whatever this process starts */
	unsetenv(ENV_FD);
	unsetenv(ENV_STATE);
	unsetenv(ENV_READY);
	unsetenv(ENV_INIT);
	unsetenv(ENV_LEASE);
	unsetenv(ENV_CONN);
	fcntl(c->fuse_fd, F_SETFD, FD_CLOEXEC);
	if (c->state_fd >= 0)
		fcntl(c->state_fd, F_SETFD, FD_CLOEXEC);
	return true;
}

void sup_child_tell(const struct sup_child *c, const char *fmt, ...)
{
	char line[2 * SUP_INIT_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (c->state_fd < 0 || n < 0 || (size_t)n >= sizeof(line) - 1)
		return;
	line[n++] = '\n';
	if (rp_write_full(c->state_fd, line, (size_t)n) < 0)
		rp_warn("cannot reach the supervisor");
}

/* Requests the last daemon had read but not answered (it died, or a
 * cancelled read raced with one) would wait forever: the kernel is asked to
 * queue them again (FUSE_NOTIFY_RESEND, Linux 6.9). Before anything is read
 * here, so that no request is served twice. */
static void resend_pending(struct fuse_session *se)
{
	struct {
		uint32_t len;
		int32_t error; /* the notification's code */
		uint64_t unique;
	} h = { .len = sizeof(h), .error = 7 /* FUSE_NOTIFY_RESEND */, .unique = 0 };
	if (write(fuse_session_fd(se), &h, sizeof(h)) != (ssize_t)sizeof(h))
		rp_warn("the kernel cannot resend requests the last daemon left unanswered (%s; "
			"Linux 6.9 can): processes waiting on them wait until unmount",
			strerror(errno));
}

int sup_child_init(struct sup_child *c, struct fuse_session *se)
{
	struct fuse_buf buf = { 0 };
	if (c->init_len) {
		/* the kernel answered this INIT long ago: our reply to it is
		 * refused (ENOENT, which libfuse ignores), and the session is
		 * set up as the first child's was */
		buf.mem = c->init;
		buf.size = c->init_len;
		fuse_session_process_buf(se, &buf);
		resend_pending(se);
		return 0;
	}
	int n = fuse_session_receive_buf(se, &buf);
	if (n <= 0)
		return n < 0 ? n : -ENODEV;
	if ((size_t)n <= SUP_INIT_MAX && !(buf.flags & FUSE_BUF_IS_FD)) {
		char hex[2 * SUP_INIT_MAX + 1];
		hex_encode(buf.mem, (size_t)n, hex);
		sup_child_tell(c, "init %s", hex);
	} else {
		rp_warn("the kernel's INIT request could not be kept: a restart will not be possible");
	}
	buf.size = (size_t)n;
	fuse_session_process_buf(se, &buf);
	free(buf.mem);
	return 0;
}

/* ---- the supervisor ---- */

struct sup {
	char **argv;
	char exe[PATH_MAX];
	const char *mnt;
	struct fuse_session *se;
	int fuse_fd, ctl_fd, state_rd, ready_fd;
	int sig[2];              /* signals, as bytes */
	pid_t child;
	bool serving, stopping, restarting;
	char init_hex[2 * SUP_INIT_MAX + 1];
	uint64_t lease;
	uint64_t conn;           /* drawn once per mount: the children's request names */
	char line[4096];         /* from the child, not yet a whole line */
	size_t line_len;
	int waiter;              /* a --restart request waiting for "ready" */
	uint64_t asked_ms;
	uint64_t crash_ms[CRASH_MAX];
	unsigned crashes;
};

static int sig_wr = -1;

static void on_signal(int s)
{
	uint8_t b = (uint8_t)s;
	int e = errno;
	if (write(sig_wr, &b, 1) < 0) {
		/* the pipe is full: enough is pending */
	}
	errno = e;
}

static int spawn(struct sup *s, uint64_t dead_lease)
{
	int st[2];
	if (pipe2(st, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(st[0]);
		close(st[1]);
		return -e;
	}
	if (pid == 0) {
		char v[64];
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		fcntl(s->fuse_fd, F_SETFD, 0);
		fcntl(st[1], F_SETFD, 0);
		snprintf(v, sizeof(v), "%d", s->fuse_fd);
		setenv(ENV_FD, v, 1);
		snprintf(v, sizeof(v), "%d", st[1]);
		setenv(ENV_STATE, v, 1);
		if (s->ready_fd >= 0) {
			fcntl(s->ready_fd, F_SETFD, 0);
			snprintf(v, sizeof(v), "%d", s->ready_fd);
			setenv(ENV_READY, v, 1);
		}
		if (s->init_hex[0])
			setenv(ENV_INIT, s->init_hex, 1);
		if (dead_lease) {
			snprintf(v, sizeof(v), "%llx", (unsigned long long)dead_lease);
			setenv(ENV_LEASE, v, 1);
		}
		snprintf(v, sizeof(v), "%llx", (unsigned long long)s->conn);
		setenv(ENV_CONN, v, 1);
		execv(s->exe, s->argv);
		fprintf(stderr, "rdmapoolfs: supervisor: cannot run %s: %s\n", s->exe, strerror(errno));
		_exit(127);
	}
	close(st[1]);
	if (s->state_rd >= 0)
		close(s->state_rd);
	s->state_rd = st[0];
	s->line_len = 0;
	s->child = pid;
	s->serving = false;
	if (s->ready_fd >= 0) { /* the first child reports to the mount command */
		close(s->ready_fd);
		s->ready_fd = -1;
	}
	return 0;
}

static void answer_waiter(struct sup *s, const char *msg)
{
	if (s->waiter < 0)
		return;
	if (rp_write_full(s->waiter, msg, strlen(msg)) < 0)
		rp_warn("supervisor: the restart request went away");
	close(s->waiter);
	s->waiter = -1;
}

static void child_line(struct sup *s, char *l)
{
	if (strncmp(l, "init ", 5) == 0) {
		snprintf(s->init_hex, sizeof(s->init_hex), "%s", l + 5);
	} else if (strncmp(l, "lease ", 6) == 0) {
		s->lease = strtoull(l + 6, NULL, 16);
	} else if (strcmp(l, "ready") == 0) {
		s->serving = true;
		if (s->restarting) {
			char msg[128];
			snprintf(msg, sizeof(msg), "ok: a new rdmapoolfs (pid %ld) serves; requests "
				 "waited %llu ms\n", (long)s->child,
				 (unsigned long long)(rp_now_ms() - s->asked_ms));
			rp_info("supervisor: %s", msg + 4);
			answer_waiter(s, msg);
			s->restarting = false;
		}
	}
}

static void read_child(struct sup *s)
{
	ssize_t n = read(s->state_rd, s->line + s->line_len, sizeof(s->line) - 1 - s->line_len);
	if (n <= 0) {
		close(s->state_rd);
		s->state_rd = -1;
		return;
	}
	s->line_len += (size_t)n;
	s->line[s->line_len] = '\0';
	char *start = s->line, *nl;
	while ((nl = strchr(start, '\n'))) {
		*nl = '\0';
		child_line(s, start);
		start = nl + 1;
	}
	s->line_len = strlen(start);
	memmove(s->line, start, s->line_len + 1);
}

static void ctl_request(struct sup *s)
{
	int fd = accept4(s->ctl_fd, NULL, NULL, SOCK_CLOEXEC);
	char req[64] = "";
	if (fd < 0)
		return;
	struct timeval tv = { .tv_sec = 2 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ssize_t n = recv(fd, req, sizeof(req) - 1, 0);
	req[n > 0 ? n : 0] = '\0';
	const char *no = NULL;
	if (strncmp(req, "restart", 7) != 0)
		no = "error: unknown request\n";
	else if (s->restarting || s->waiter >= 0)
		no = "error: a restart is under way\n";
	else if (!s->serving || !s->init_hex[0])
		no = "error: the daemon is not serving yet\n";
	if (no) {
		if (rp_write_full(fd, no, strlen(no)) < 0) {
			/* the asker left */
		}
		close(fd);
		return;
	}
	rp_info("supervisor: restart asked: the daemon (pid %ld) hands over", (long)s->child);
	s->waiter = fd;
	s->restarting = true;
	s->asked_ms = rp_now_ms();
	kill(s->child, SIGUSR1);
}

/* Too many deaths in a short time: a child that cannot serve. */
static bool crash_loop(struct sup *s)
{
	uint64_t now = rp_now_ms();
	s->crash_ms[s->crashes++ % CRASH_MAX] = now;
	return s->crashes >= CRASH_MAX &&
	       now - s->crash_ms[s->crashes % CRASH_MAX] < CRASH_WINDOW_MS;
}

/* The child ended: start the next one, or say the mount is over (returns
 * the exit status then, else -1). */
static int child_ended(struct sup *s, int status)
{
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	bool handed = WIFEXITED(status) && WEXITSTATUS(status) == SUP_EXIT_HANDOVER;
	bool was_serving = s->serving;
	s->child = -1;
	s->serving = false;
	if (s->stopping || clean)
		return clean ? 0 : 1;
	if (handed && s->restarting) {
		if (spawn(s, 0) == 0)
			return -1;
		answer_waiter(s, "error: could not start the new daemon\n");
		return 1;
	}
	if (!was_serving && !s->init_hex[0]) {
		rp_err("supervisor: the daemon did not start; giving the mount up");
		return 1;
	}
	if (WIFSIGNALED(status))
		rp_err("supervisor: the daemon died (signal %d); starting another", WTERMSIG(status));
	else
		rp_err("supervisor: the daemon exited with status %d; starting another",
		       WEXITSTATUS(status));
	if (crash_loop(s)) {
		rp_err("supervisor: %d deaths within %d s: giving the mount up", CRASH_MAX,
		       CRASH_WINDOW_MS / 1000);
		answer_waiter(s, "error: the new daemon keeps dying\n");
		return 1;
	}
	return spawn(s, s->lease) == 0 ? -1 : 1;
}

static void on_signal_byte(struct sup *s, int sig)
{
	if (sig == SIGTERM || sig == SIGINT) {
		s->stopping = true;
		if (s->child > 0)
			kill(s->child, SIGTERM);
	}
}

/* Run until the mount ends; returns the exit status. */
static int loop(struct sup *s)
{
	for (;;) {
		int status;
		pid_t w = s->child > 0 ? waitpid(s->child, &status, WNOHANG) : 0;
		if (w == s->child && w > 0) {
			int rc = child_ended(s, status);
			if (rc >= 0)
				return rc;
		}
		if (s->child <= 0)
			return 1;
		if (s->restarting && rp_now_ms() - s->asked_ms > HANDOVER_TIMEOUT_MS) {
			rp_err("supervisor: the daemon did not hand over in %d s; stopping it",
			       HANDOVER_TIMEOUT_MS / 1000);
			kill(s->child, SIGKILL); /* then started anew as after a crash */
			s->asked_ms = rp_now_ms();
		}
		struct pollfd p[3] = { { .fd = s->sig[0], .events = POLLIN },
				       { .fd = s->ctl_fd, .events = POLLIN },
				       { .fd = s->state_rd, .events = POLLIN } };
		if (poll(p, 3, 1000) < 0 && errno != EINTR)
			return 1;
		if (p[0].revents & POLLIN) {
			uint8_t b;
			if (read(s->sig[0], &b, 1) == 1)
				on_signal_byte(s, b);
		}
		if (p[1].revents & POLLIN)
			ctl_request(s);
		if (p[2].revents & (POLLIN | POLLHUP))
			read_child(s);
	}
}

static int listen_ctl(struct sup *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	ctl_path(s->mnt, sa.sun_path, sizeof(sa.sun_path));
	mkdir(RP_METRICS_DIR, 0755);
	unlink(sa.sun_path);
	s->ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->ctl_fd < 0 || bind(s->ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(s->ctl_fd, 4) < 0) {
		rp_warn("supervisor: control socket %s: %s; 'rdmapoolfs --restart' will not reach "
			"this mount", sa.sun_path, strerror(errno));
		if (s->ctl_fd >= 0)
			close(s->ctl_fd);
		s->ctl_fd = -1;
		return -1;
	}
	chmod(sa.sun_path, 0600);
	return 0;
}

static void setup_signals(struct sup *s)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sig_wr = s->sig[1];
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
}

static bool still_mounted(const char *mnt)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], path[PATH_MAX];
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %*s %*s %*s %4095s", path) == 1 && strcmp(path, mnt) == 0;
	if (f)
		fclose(f);
	return found;
}

int sup_run(char **argv, struct fuse_args *args, const char *mountpoint, int ready_fd)
{
	static const struct fuse_lowlevel_ops none;
	struct sup s = { .argv = argv, .mnt = mountpoint, .ctl_fd = -1, .state_rd = -1,
			 .ready_fd = ready_fd, .child = -1, .waiter = -1 };
	ssize_t n = readlink("/proc/self/exe", s.exe, sizeof(s.exe) - 1);
	if (n <= 0)
		return 1;
	s.exe[n] = '\0';
	char *del = strstr(s.exe, " (deleted)"); /* upgraded: the new file has the name */
	if (del)
		*del = '\0';
	if (pipe2(s.sig, O_CLOEXEC | O_NONBLOCK) < 0)
		return 1;
	while (!s.conn && rp_random_bytes(&s.conn, sizeof(s.conn)) == 0) {
		/* 0 names no connection: draw again */
	}
	setup_signals(&s);
	s.se = fuse_session_new(args, &none, sizeof(none), NULL);
	if (!s.se || fuse_session_mount(s.se, mountpoint) != 0) {
		char msg[PATH_MAX + 64];
		int l = snprintf(msg, sizeof(msg), "1cannot mount at %s", mountpoint);
		if (ready_fd >= 0 && write(ready_fd, msg, (size_t)l) < 0)
			rp_err("%s", msg + 1);
		if (s.se)
			fuse_session_destroy(s.se);
		return 1;
	}
	s.fuse_fd = fuse_session_fd(s.se);
	listen_ctl(&s);
	int rc = spawn(&s, 0) == 0 ? loop(&s) : 1;
	if (s.child > 0) {
		kill(s.child, SIGKILL);
		waitpid(s.child, NULL, 0);
	}
	if (still_mounted(mountpoint))
		fuse_session_unmount(s.se);
	fuse_session_destroy(s.se);
	if (s.ctl_fd >= 0) {
		char p[256];
		ctl_path(mountpoint, p, sizeof(p));
		unlink(p);
		close(s.ctl_fd);
	}
	answer_waiter(&s, "error: the mount ended\n");
	return rc;
}

/* ---- rdmapoolfs --restart ---- */

int sup_restart_request(const char *mountpoint)
{
	char mnt[PATH_MAX];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (!realpath(mountpoint, mnt)) {
		fprintf(stderr, "rdmapoolfs: %s: %s\n", mountpoint, strerror(errno));
		return 1;
	}
	ctl_path(mnt, sa.sun_path, sizeof(sa.sun_path));
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "rdmapoolfs: %s: no supervisor answers (%s): restart needs a mount "
			"made with -o supervise\n", mnt, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	struct timeval tv = { .tv_sec = HANDOVER_TIMEOUT_MS / 1000 + 30 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char reply[256] = "";
	size_t got = 0;
	if (send(fd, "restart\n", 8, MSG_NOSIGNAL) != 8) {
		close(fd);
		return 1;
	}
	ssize_t r;
	while (got < sizeof(reply) - 1 && (r = recv(fd, reply + got, sizeof(reply) - 1 - got, 0)) > 0)
		got += (size_t)r;
	close(fd);
	reply[got] = '\0';
	if (strncmp(reply, "ok", 2) != 0) {
		fprintf(stderr, "rdmapoolfs: restart of %s: %s", mnt,
			got ? reply : "no answer from the supervisor\n");
		return 1;
	}
	printf("%s: %s", mnt, reply + 4);
	return 0;
}
