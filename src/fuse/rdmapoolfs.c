/* rdmapoolfs: mount a volume of an rdmapool cluster with FUSE. */
#include "config.h"
#include "fuse_ops.h"
#include "dio_inval.h"
#include "resend.h"
#include "supervisor.h"

#include <rdmapool/cluster.h>
#include <rdmapool/fs.h>
#include <rdmapool/log.h>
#include <rdmapool/metrics_server.h>
#include <rdmapool/pool.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

/* What the kernel may cache on a read-write mount (see main) */
#define RW_CACHE_SECONDS 60.0
#define DEFAULT_THREADS 32
#define MAX_THREADS 256u /* a quarter of the request names a log keeps (fs_impl.h) */

struct options {
	char *cluster, *mountpoint, *volume, *loglevel, *logfile, *metrics, *metrics_addr;
	unsigned commit, follow, threads, metrics_port;
	int foreground, single, ro, help, version, remount, supervise, restart;
};

enum { KEY_RO, KEY_RW, KEY_REMOUNT, KEY_FG, KEY_DEBUG, KEY_SINGLE, KEY_HELP, KEY_VERSION,
       KEY_SUPERVISE, KEY_RESTART };

#define OPT(t, f) { t, offsetof(struct options, f), 0 }
static const struct fuse_opt option_spec[] = {
	OPT("volume=%s", volume),
	OPT("loglevel=%s", loglevel),
	OPT("log=%s", logfile),
	OPT("commit=%u", commit),
	OPT("follow=%u", follow),
	OPT("threads=%u", threads),
	OPT("metrics=%s", metrics),
	OPT("metrics_port=%u", metrics_port),
	OPT("metrics_addr=%s", metrics_addr),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("rw", KEY_RW),
	FUSE_OPT_KEY("remount", KEY_REMOUNT),
	FUSE_OPT_KEY("supervise", KEY_SUPERVISE),
	FUSE_OPT_KEY("--restart", KEY_RESTART),
	FUSE_OPT_KEY("-f", KEY_FG),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("debug", KEY_DEBUG),
	FUSE_OPT_KEY("-s", KEY_SINGLE),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

static int nonopts;

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct options *o = data;
	(void)outargs;
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (nonopts == 0)
			o->cluster = strdup(arg);
		else if (nonopts == 1)
			o->mountpoint = strdup(arg);
		else {
			fprintf(stderr, "rdmapoolfs: unexpected argument '%s'\n", arg);
			return -1;
		}
		nonopts++;
		return 0;
	case KEY_RO: o->ro = 1; return 1;          /* the kernel needs it too */
	case KEY_RW: o->ro = 0; return 1;
	case KEY_REMOUNT: o->remount = 1; return 0;
	case KEY_SUPERVISE: o->supervise = 1; return 0;
	case KEY_RESTART: o->restart = 1; return 0;
	case KEY_FG: o->foreground = 1; return 0;
	case KEY_DEBUG: o->foreground = 1; return 1;
	case KEY_SINGLE: o->single = 1; return 0;
	case KEY_HELP: o->help = 1; return 0;
	case KEY_VERSION: o->version = 1; return 0;
	}
	return 1;
}

/* mount -o remount,ro|rw runs us (through mount.fuse3) on a mounted volume:
 * change the kernel's read-only flag of that mount, keeping its other flags.
 * The daemon serving it stays; a read-only mount refuses changes with EROFS
 * in the kernel, so no record is written until remount,rw. */
static int remount(const char *mountpoint, int ro)
{
	struct statvfs sv;
	if (statvfs(mountpoint, &sv) != 0) {
		fprintf(stderr, "rdmapoolfs: remount %s: %s\n", mountpoint, strerror(errno));
		return 1;
	}
	unsigned long flags = MS_REMOUNT | (ro ? MS_RDONLY : 0);
	if (sv.f_flag & ST_NOSUID) flags |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
	if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
	sync(); /* what is written so far goes out before the flag flips */
	if (mount(NULL, mountpoint, NULL, flags, NULL) != 0) {
		fprintf(stderr, "rdmapoolfs: remount %s %s: %s\n", mountpoint, ro ? "ro" : "rw",
			strerror(errno));
		return 1;
	}
	return 0;
}

static void usage(void)
{
	printf("Usage: rdmapoolfs [OPTIONS] CLUSTER_FILE MOUNTPOINT\n"
	       "       rdmapoolfs --restart MOUNTPOINT\n"
	       "Mount a volume of an rdmapool cluster.\n\n"
	       "  -f                 stay in the foreground\n"
	       "  -s                 single-threaded\n"
	       "  -d, -o debug       FUSE debug output (implies -f)\n"
	       "  -o volume=NAME     volume to mount (default \"" RP_DEFAULT_VOLUME "\")\n"
	       "  -o ro              read-only: no lease; follows the writer's changes\n"
	       "  -o follow=MS       read-only: look for the writer's changes this often\n"
	       "                     (default 500: changes show within 1 s)\n"
	       "  -o remount         with ro or rw: change a mounted volume's read-only flag\n"
	       "  -o supervise       a supervisor keeps the mount alive: it starts a new daemon\n"
	       "                     after a crash, or on 'rdmapoolfs --restart MOUNTPOINT'\n"
	       "                     (an upgrade), without unmounting\n"
	       "  -o commit=MS       flush the metadata log at least this often (default 1000)\n"
	       "  -o threads=N       threads serving FUSE requests at most (default 32, at most 256)\n"
	       "  -o metrics=PATH    serve Prometheus metrics on this unix socket (default\n"
	       "                     " RP_METRICS_DIR "/fs-HASH.sock, per mountpoint; 'off': none)\n"
	       "  -o metrics_port=N  serve them on TCP port N too\n"
	       "  -o metrics_addr=A  of this address (default " RP_METRICS_ADDR "; :: for every one)\n"
	       "  -o loglevel=LEVEL  error, warn, info (default) or debug\n"
	       "  -o log=PATH        append log lines here instead of syslog when detached\n"
	       "  -o allow_other     let other users in (permission checks are the kernel's)\n"
	       "  other -o options are passed to FUSE (see mount.fuse3(8))\n");
}

/* libfuse's default of 10 threads is too few when requests wait on the
 * network: parallel reads and writes (AIO, several processes) each hold one
 * while their one-sided operations are in flight. */
static int serve_mt(struct fuse_session *se, unsigned threads)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, threads);
	fuse_loop_cfg_set_idle_threads(cfg, RP_MIN(threads, 16u));
	int rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

/* Detach before any thread exists; the parent waits for the child's verdict
 * and prints its error, so a failed mount fails the command. */
static int ready_fd = -1;

static void detach(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("rdmapoolfs: pipe");
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("rdmapoolfs: fork");
		exit(1);
	}
	if (pid > 0) {
		char msg[1100];
		close(p[1]);
		ssize_t n = read(p[0], msg, sizeof(msg) - 1);
		if (n <= 0) {
			fprintf(stderr, "rdmapoolfs: mount process died during startup\n");
			_exit(1);
		}
		msg[n] = '\0';
		if (msg[0] == '0')
			_exit(0);
		fprintf(stderr, "rdmapoolfs: %s\n", msg + 1);
		_exit(1);
	}
	close(p[0]);
	ready_fd = p[1];
	setsid();
}

/* Metrics on a unix socket named after the mountpoint ('rdmapool stats
 * MOUNTPOINT' finds it) or the one asked for; a failure costs the metrics,
 * not the mount. */
static struct rp_metrics_server *start_metrics(const struct options *o, const char *mnt,
					       struct rp_fs *fs)
{
	char path[256], err[512];
	struct rp_metrics_server *srv = NULL;
	if (o->metrics && strcmp(o->metrics, "off") == 0 && !o->metrics_port)
		return NULL;
	if (rp_fuse_metrics() < 0 || rp_fs_metrics(fs, mnt) < 0) {
		rp_warn("metrics: out of memory; serving none");
		return NULL;
	}
	const char *sock = o->metrics;
	if (!sock) {
		rp_mount_socket("fs", mnt, path, sizeof(path));
		sock = path;
	} else if (strcmp(sock, "off") == 0) {
		sock = NULL;
	}
	if (rp_metrics_serve(sock, o->metrics_addr, (int)o->metrics_port, &srv, err, sizeof(err)) < 0) {
		rp_warn("%s; no metrics served", err);
		return NULL;
	}
	if (sock)
		rp_debug("metrics on %s", sock);
	return srv;
}

static void report(int ok, const char *msg)
{
	if (ready_fd < 0) {
		if (!ok)
			fprintf(stderr, "rdmapoolfs: %s\n", msg);
		return;
	}
	char buf[1100];
	int n = snprintf(buf, sizeof(buf), "%c%s", ok ? '0' : '1', msg);
	if (write(ready_fd, buf, (size_t)n) < 0)
		rp_err("cannot report to the starting process");
	close(ready_fd);
	ready_fd = -1;
	if (ok) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			close(null);
		}
	}
}

/* A supervised child asked to hand over (SIGUSR1): the loop stops, the
 * volume is flushed and its lease given back, and the mount stays. */
static volatile sig_atomic_t handover;
static struct fuse_session *serving;
static pthread_t main_thread;

static void on_handover(int sig)
{
	handover = 1;
	if (serving)
		fuse_session_exit(serving);
	/* the loop waits in the main thread: wake it if another got this */
	if (!pthread_equal(pthread_self(), main_thread))
		pthread_kill(main_thread, sig);
}

static void catch_handover(struct fuse_session *se)
{
	struct sigaction sa = { .sa_handler = on_handover }; /* no SA_RESTART: waits end */
	sigemptyset(&sa.sa_mask);
	serving = se;
	main_thread = pthread_self();
	sigaction(SIGUSR1, &sa, NULL);
}

/* After a daemon died, what the kernel cached may hold changes the volume
 * never got (records it had not flushed): every inode's attributes and
 * pages are dropped. From a thread of its own once requests are served: an
 * invalidation can wait for a page that a request in flight holds. */
struct inval {
	struct fuse_session *se;
	struct rp_fs *fs;
};

static void *invalidate_all(void *arg)
{
	struct inval *iv = arg;
	uint64_t *inos;
	size_t n;
	if (rp_fs_inode_numbers(iv->fs, &inos, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			fuse_lowlevel_notify_inval_inode(iv->se, inos[i], 0, 0); /* unknown: ENOENT */
		rp_info("dropped the kernel's cache of %zu inodes (the last daemon died)", n);
		free(inos);
	}
	free(iv);
	return NULL;
}

/* Started, and joined before the session and volume go. */
static bool start_invalidation(struct fuse_session *se, struct rp_fs *fs, pthread_t *t)
{
	struct inval *iv = malloc(sizeof(*iv));
	if (!iv)
		return false;
	*iv = (struct inval){ .se = se, .fs = fs };
	if (pthread_create(t, NULL, invalidate_all, iv) != 0) {
		free(iv);
		return false;
	}
	return true;
}

/* Open the volume and serve it at the mountpoint, or (child) on the
 * supervisor's /dev/fuse descriptor. Returns the exit status. */
static int serve(struct options *o, struct fuse_args *args, const char *mnt, const char *volume,
		 struct sup_child *child)
{
	struct rp_cluster *cl = NULL;
	struct rp_poolset *ps = NULL;
	struct rp_fs *fs = NULL;
	struct fuse_session *se = NULL;
	struct fuse_lowlevel_ops ops;
	struct rp_metrics_server *metrics = NULL;
	uint8_t secret[RP_SECRET_MAX];
	size_t secret_len;
	char err[1024];
	pthread_t inval;
	bool invalidating = false;
	int rc = 1;

	if (rp_cluster_load(o->cluster, &cl, err, sizeof(err)) < 0 ||
	    rp_cluster_load_secret(cl, secret, &secret_len, err, sizeof(err)) < 0 ||
	    rp_poolset_open(cl, secret, secret_len, RP_POOLSET_ALLOW_DOWN, &ps, err,
			    sizeof(err)) < 0) {
		report(0, err);
		goto out;
	}
	struct rp_mount_opts mo = { .volume = volume, .readonly = o->ro, .commit_ms = o->commit,
				    .follow_ms = o->follow };
	if (child) {
		mo.kernel_knows = child->restart;
		mo.dead_lease = child->dead_lease;
	}
	if (o->ro) {
		/* changes show within the follow interval plus the kernel's cache time */
		unsigned ms = o->follow ? o->follow : RP_DEFAULT_FOLLOW_MS;
		rp_fuse_attr_timeout = ms < 1000 ? ms / 1000.0 : 1.0;
	} else {
		/* the lease makes this mount the volume's only writer: every change
		 * passes through this kernel, which updates or drops what it caches,
		 * so names, attributes and pages may stay cached (the bound only
		 * limits the harm of a bug) */
		rp_fuse_attr_timeout = RW_CACHE_SECONDS;
		rp_fuse_keep_cache = true;
	}
	if (rp_fs_mount(ps, &mo, &fs, err, sizeof(err)) < 0) {
		report(0, err);
		goto out;
	}
	rp_fuse_ops_metered(&ops);
	se = fuse_session_new(args, &ops, sizeof(ops), fs);
	if (!se) {
		report(0, "bad FUSE options (see above)");
		goto out;
	}
	if (rp_dio_inval_start(se) < 0)
		rp_warn("no thread for O_DIRECT page invalidations: buffered reads racing AIO "
			"O_DIRECT writes may see old bytes");
	/* a supervised daemon serves the supervisor's descriptor, reading it
	 * itself to see which requests the kernel sends again (resend.h) */
	if (fuse_set_signal_handlers(se) != 0 ||
	    (child ? rp_resend_attach(se, child->fuse_fd, child->conn)
		   : fuse_session_mount(se, o->mountpoint)) != 0 ||
	    (child && sup_child_init(child, se) < 0)) {
		snprintf(err, sizeof(err), "cannot mount at %s", o->mountpoint);
		report(0, err);
		goto out;
	}
	if (child)
		catch_handover(se);
	metrics = start_metrics(o, mnt, fs);
	rp_info("volume \"%s\" %s at %s%s", volume, child && child->restart ? "served again" : "mounted",
		o->mountpoint, o->ro ? " read-only" : "");
	report(1, "");
	if (child) {
		sup_child_tell(child, "lease %llx", (unsigned long long)rp_fs_lease_word(fs));
		sup_child_tell(child, "ready");
		if (child->dead_lease)
			invalidating = start_invalidation(se, fs, &inval);
	}
	if (o->single)
		rc = fuse_session_loop(se);
	else
		rc = serve_mt(se, o->threads ? RP_MIN(o->threads, MAX_THREADS) : DEFAULT_THREADS);
	rc = rc ? 1 : 0;
	if (invalidating)
		pthread_join(inval, NULL);
	rp_metrics_stop(metrics);
	if (handover) {
		rc = SUP_EXIT_HANDOVER;
		rp_info("volume \"%s\": handing %s over to a new daemon", volume, o->mountpoint);
	} else if (!child) {
		fuse_session_unmount(se); /* a supervised mount is its supervisor's */
		rp_info("volume \"%s\" unmounted from %s", volume, o->mountpoint);
	}
out:
	if (se) {
		fuse_remove_signal_handlers(se);
		rp_dio_inval_stop();
		fuse_session_destroy(se);
	}
	if (fs && rp_fs_unmount(fs) < 0 && rc != SUP_EXIT_HANDOVER)
		rc = 1;
	rp_poolset_close(ps);
	rp_cluster_free(cl);
	memset(secret, 0, sizeof(secret));
	return rc;
}

static void free_options(struct options *o, struct fuse_args *args)
{
	fuse_opt_free_args(args);
	free(o->cluster);
	free(o->mountpoint);
	free(o->volume);
	free(o->loglevel);
	free(o->logfile);
	free(o->metrics);
	free(o->metrics_addr);
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct options o = { 0 };
	struct sup_child child;
	char opt[512], mnt[PATH_MAX];
	int rc;

	rc = 2;
	if (fuse_opt_parse(&args, &o, option_spec, opt_proc) < 0)
		goto out;
	if (o.help || o.version) {
		if (o.help)
			usage();
		else
			printf("rdmapoolfs %s (libfuse %s)\n", PACKAGE_VERSION, fuse_pkgversion());
		rc = 0;
		goto out;
	}
	if (o.restart && o.cluster && !o.mountpoint) {
		rc = sup_restart_request(o.cluster); /* the one argument: the mountpoint */
		goto out;
	}
	if (!o.cluster || !o.mountpoint) {
		fprintf(stderr, "rdmapoolfs: need CLUSTER_FILE and MOUNTPOINT (see --help)\n");
		goto out;
	}
	if (o.remount) {
		rc = remount(o.mountpoint, o.ro);
		goto out;
	}
	/* before it is mounted: resolving it later would ask ourselves */
	if (!realpath(o.mountpoint, mnt))
		snprintf(mnt, sizeof(mnt), "%s", o.mountpoint);
	enum rp_log_level level = RP_LOG_INFO;
	if (o.loglevel && rp_log_parse_level(o.loglevel, &level) < 0) {
		fprintf(stderr, "rdmapoolfs: loglevel=%s: expected error, warn, info or debug\n", o.loglevel);
		goto out;
	}
	const char *volume = o.volume ? o.volume : RP_DEFAULT_VOLUME;
	if (strlen(volume) > RP_VOLUME_NAME_MAX || strchr(volume, ',')) {
		fprintf(stderr, "rdmapoolfs: volume=%s: not a valid volume name\n", volume);
		goto out;
	}
	snprintf(opt, sizeof(opt), "-odefault_permissions,fsname=rdmapool:%s,subtype=rdmapoolfs", volume);
	fuse_opt_add_arg(&args, opt);

	bool is_child = sup_child_env(&child);
	if (is_child)
		ready_fd = child.ready_fd; /* set up and detached by the supervisor */
	else if (!o.foreground)
		detach();
	if (!o.foreground && !is_child && o.logfile) {
		int lfd = open(o.logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (lfd >= 0) {
			dup2(lfd, STDERR_FILENO);
			close(lfd);
		}
	}
	rp_log_init("rdmapoolfs", level, !o.foreground && !o.logfile);
	signal(SIGPIPE, SIG_IGN);
	if (o.supervise && !is_child) {
		rc = sup_run(argv, &args, mnt, ready_fd);
		ready_fd = -1;
	} else {
		rc = serve(&o, &args, mnt, volume, is_child ? &child : NULL);
	}
out:
	free_options(&o, &args);
	return rc;
}
