/* rdmapoold: donates one memory region to the cluster as a pool. */
#include "config.h"
#include "region.h"
#include "server_metrics.h"

#include <rdmapool/cluster.h>
#include <rdmapool/layout.h>
#include <rdmapool/log.h>
#include <rdmapool/notify.h>
#include <rdmapool/transport.h>
#include <rdmapool/transport_server.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct options {
	const char *cluster_file;
	long id;
	uint64_t size;
	const char *backing_file;
	const char *backing_dir;
	const char *pid_file;
	const char *log_file;
	const char *metrics;
	const char *metrics_addr;
	long metrics_port;
	bool foreground;
	bool syslog;
	bool reformat;
	enum rp_log_level level;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmapoold [OPTIONS] --id N --size SIZE\n"
		"Donate a memory region to an rdmapool cluster as a pool.\n\n"
		"  -c, --cluster FILE       cluster file (default " RP_DEFAULT_CLUSTER_FILE ")\n"
		"  -i, --id N               this server's peer id in the cluster file\n"
		"  -s, --size SIZE          region size, e.g. 1G, 512M\n"
		"  -b, --backing-file PATH  keep the region in this file (survives restarts)\n"
		"      --backing-dir DIR    the same, in DIR/CLUSTER-ID.pool\n"
		"      --reformat           wipe an existing backing file's pool\n"
		"  -f, --foreground         do not detach; log to stderr\n"
		"  -p, --pid-file PATH      write the server's pid here once it listens\n"
		"      --log-file PATH      append log lines here (detached mode)\n"
		"      --syslog             log to syslog\n"
		"      --metrics PATH       Prometheus metrics on this unix socket (default\n"
		"                           " RP_METRICS_DIR "/pool-CLUSTER-ID.sock; off: none)\n"
		"      --metrics-port N     ... and on TCP port N\n"
		"      --metrics-addr ADDR  of this address (default " RP_METRICS_ADDR "; :: for every one)\n"
		"  -l, --log-level LEVEL    error, warn, info (default) or debug\n"
		"  -h, --help               this help\n"
		"  -V, --version            print the version\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "cluster", required_argument, NULL, 'c' },
		{ "id", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "backing-file", required_argument, NULL, 'b' },
		{ "backing-dir", required_argument, NULL, 'B' },
		{ "reformat", no_argument, NULL, 'R' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "log-file", required_argument, NULL, 'L' },
		{ "syslog", no_argument, NULL, 'S' },
		{ "metrics", required_argument, NULL, 'M' },
		{ "metrics-port", required_argument, NULL, 'P' },
		{ "metrics-addr", required_argument, NULL, 'A' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int ch;
	char *end;

	o->cluster_file = RP_DEFAULT_CLUSTER_FILE;
	o->id = -1;
	o->level = RP_LOG_INFO;
	while ((ch = getopt_long(argc, argv, "c:i:s:b:fp:l:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': o->cluster_file = optarg; break;
		case 'i':
			errno = 0;
			o->id = strtol(optarg, &end, 10);
			if (errno || *end || o->id < 0 || o->id > 65535) {
				fprintf(stderr, "rdmapoold: --id %s: expected a peer id 0..65535\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (rp_parse_size(optarg, &o->size) < 0) {
				fprintf(stderr, "rdmapoold: --size %s: expected a size like 512M or 1G\n", optarg);
				return 2;
			}
			break;
		case 'b': o->backing_file = optarg; break;
		case 'B': o->backing_dir = optarg; break;
		case 'R': o->reformat = true; break;
		case 'f': o->foreground = true; break;
		case 'p': o->pid_file = optarg; break;
		case 'L': o->log_file = optarg; break;
		case 'S': o->syslog = true; break;
		case 'M': o->metrics = optarg; break;
		case 'A': o->metrics_addr = optarg; break;
		case 'P':
			errno = 0;
			o->metrics_port = strtol(optarg, &end, 10);
			if (errno || *end || o->metrics_port < 1 || o->metrics_port > 65535) {
				fprintf(stderr, "rdmapoold: --metrics-port %s: expected a port 1..65535\n", optarg);
				return 2;
			}
			break;
		case 'l':
			if (rp_log_parse_level(optarg, &o->level) < 0) {
				fprintf(stderr, "rdmapoold: --log-level %s: expected error, warn, info or debug\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("rdmapoold %s\n", PACKAGE_VERSION); exit(0);
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmapoold: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o->backing_file && o->backing_dir) {
		fprintf(stderr, "rdmapoold: --backing-file and --backing-dir: give one\n");
		return 2;
	}
	if (o->id < 0 || o->size == 0) {
		fprintf(stderr, "rdmapoold: --id and --size are required (see --help)\n");
		return 2;
	}
	return 0;
}

/* Detach; the parent exits only when the child reports it is serving (or
 * failed), so "rdmapoold ... && next" is race-free. */
static int detach(int *ready_fd)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		char status = 1;
		close(pfd[1]);
		if (read(pfd[0], &status, 1) != 1)
			status = 1;
		_exit(status);
	}
	close(pfd[0]);
	setsid();
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
	*ready_fd = pfd[1];
	return 0;
}

static void report_ready(int *ready_fd, char status)
{
	if (*ready_fd >= 0) {
		if (write(*ready_fd, &status, 1) != 1)
			rp_warn("could not notify the starting process");
		close(*ready_fd);
		*ready_fd = -1;
	}
}

/* A service manager (systemd, Type=notify) learns that the region is
 * registered and the listeners are up; after detaching, our pid is not the
 * one it started, so it is named. */
static void notify_ready(uint32_t id, const char *size, bool rdma)
{
	char msg[256];
	snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%ld\nSTATUS=peer %u serving %s over %s",
		 (long)getpid(), id, size, rdma ? "rdma" : "tcp");
	int rc = rp_notify(msg);
	if (rc < 0)
		rp_warn("cannot notify the service manager ($NOTIFY_SOCKET): %s", strerror(-rc));
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct rp_cluster *cl = NULL;
	struct rp_region region = { .fd = -1 };
	struct rp_listener *tcp = NULL, *rdma = NULL;
	struct rp_serve_stats stats = { 0 };
	struct rp_metrics_server *metrics = NULL;
	uint8_t secret[RP_SECRET_MAX];
	size_t secret_len = 0;
	char err[1024];
	int ready_fd = -1, rc, exit_code = 1;
	sigset_t sigs;

	if ((rc = parse_args(argc, argv, &o)))
		return rc;
	rp_log_init("rdmapoold", o.level, o.syslog);
	if (rp_cluster_load(o.cluster_file, &cl, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmapoold: %s\n", err);
		return 1;
	}
	const struct rp_peer *self = rp_cluster_peer(cl, (uint32_t)o.id);
	if (!self) {
		fprintf(stderr, "rdmapoold: %s: no peer with id %ld\n", o.cluster_file, o.id);
		goto out;
	}
	char backing[4096];
	if (o.backing_dir) {
		/* one folder for every instance of the service unit */
		if ((size_t)snprintf(backing, sizeof(backing), "%s/%s-%u.pool", o.backing_dir,
				     cl->name, self->id) >= sizeof(backing)) {
			fprintf(stderr, "rdmapoold: --backing-dir %s: name too long\n", o.backing_dir);
			goto out;
		}
		o.backing_file = backing;
	}
	if (rp_cluster_load_secret(cl, secret, &secret_len, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmapoold: %s\n", err);
		goto out;
	}
	if (!o.foreground) {
		if (detach(&ready_fd) < 0) {
			fprintf(stderr, "rdmapoold: cannot detach: %s\n", strerror(errno));
			goto out;
		}
		if (o.log_file) {
			int lfd = open(o.log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (lfd >= 0) {
				dup2(lfd, STDERR_FILENO);
				close(lfd);
			}
		}
	}
	signal(SIGPIPE, SIG_IGN);
	/* Every thread inherits this mask; only the main thread takes signals. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (rp_region_map(&region, o.size, o.backing_file, err, sizeof(err)) < 0 ||
	    rp_region_prepare(&region, cl, self->id, o.reformat, err, sizeof(err)) < 0) {
		rp_err("%s", err);
		goto out;
	}
	struct rp_serve_params sp = {
		.self = self, .cluster_name = cl->name, .secret = secret, .secret_len = secret_len,
		.base = region.base, .size = region.size, .stats = &stats,
		/* in the region: a restart on the backing file still fences */
		.fences = rp_fence_memo_open((uint8_t *)region.base + RP_FENCES_OFFSET, RP_FENCES_SIZE),
	};
	struct rp_pool_sb sb;
	if (rp_sb_decode(region.base, &sb) < 0) {
		rp_err("the region's superblock does not decode after formatting");
		goto out;
	}
	memcpy(sp.pool_uuid, sb.pool_uuid, sizeof(sp.pool_uuid));
	/* rdma first: a pool's atomics go through one domain, so when the NIC
	 * serves them the tcp listener only tells tcp clients why not */
	bool serve_rdma = self->transport != RP_TRANSPORT_TCP;
	if (serve_rdma && !rp_region_pinnable(&region)) {
		/* older kernels register it, but writeback never sees what RDMA
		 * writes into pinned page-cache pages: bytes lost on restart */
		static const char why[] = "a shared mapping of a file on this filesystem is not "
			"safe to register for RDMA (Linux 6.5 and later refuse it; older ones lose what "
			"RDMA writes at writeback); put the backing file on tmpfs (/dev/shm: it survives "
			"a restart of the daemon, not of the machine) or hugetlbfs, or serve this pool "
			"with transport tcp";
		if (self->transport == RP_TRANSPORT_RDMA) {
			rp_err("%s: %s", region.path, why);
			goto out;
		}
		rp_warn("rdma not served: %s: %s; serving tcp only (transport auto)", region.path, why);
		serve_rdma = false;
	}
	if (serve_rdma) {
		rc = rp_rdma_listen(&sp, &rdma, err, sizeof(err));
		if (rc < 0 && self->transport == RP_TRANSPORT_RDMA) {
			rp_err("%s (the cluster file asks for transport \"rdma\")", err);
			goto out;
		}
		if (rc < 0)
			rp_warn("rdma not served: %s; serving tcp only (transport auto)", err);
	}
	sp.rdma_served = rdma != NULL;
	if (self->transport != RP_TRANSPORT_RDMA) {
		if (rp_tcp_listen(&sp, &tcp, err, sizeof(err)) < 0) {
			rp_err("%s", err);
			goto out;
		}
		if (rdma)
			rp_info("tcp clients are refused: this pool's atomics are the NIC's");
	}
	if (o.pid_file) {
		FILE *pf = fopen(o.pid_file, "w");
		if (!pf || fprintf(pf, "%ld\n", (long)getpid()) < 0 || fclose(pf) != 0) {
			rp_err("%s: cannot write pid file", o.pid_file);
			goto out;
		}
	}
	char sz[32];
	rp_format_size(region.size, sz, sizeof(sz));
	rp_info("peer %u serving %s%s%s%s on %s:%u over %s", self->id, sz,
		region.hugepages ? " (huge pages)" : "", region.fd >= 0 ? " backed by " : "",
		region.fd >= 0 ? region.path : "", self->host, self->port, rdma ? "rdma" : "tcp");
	metrics = server_metrics_start(&stats, cl->name, self->id, region.size, rdma ? "rdma" : "tcp",
				       o.metrics, o.metrics_addr, (int)o.metrics_port);
	report_ready(&ready_fd, 0);
	notify_ready(self->id, sz, rdma != NULL);

	int sig = 0;
	while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP)
		rp_info("SIGHUP ignored");
	rp_info("signal %d: shutting down", sig);
	rp_notify("STOPPING=1");
	exit_code = 0;
out:
	rp_metrics_stop(metrics);
	rp_metrics_drop(&stats);
	rp_listener_stop(rdma);
	rp_listener_stop(tcp);
	if (region.base) {
		if ((rc = rp_region_sync(&region)) < 0) {
			rp_err("%s: sync failed: %s", region.path, strerror(-rc));
			exit_code = 1;
		}
		rp_region_unmap(&region);
	}
	if (o.pid_file && exit_code == 0)
		unlink(o.pid_file);
	report_ready(&ready_fd, 1);
	memset(secret, 0, sizeof(secret));
	rp_cluster_free(cl);
	return exit_code;
}
