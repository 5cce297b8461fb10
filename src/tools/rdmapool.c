/* rdmapool: the admin tool. Dispatches to subcommands. */
#include "config.h"
#include "tool.h"

#include <rdmapool/log.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{ "mkfs", cmd_mkfs, "create a filesystem volume in the cluster" },
	{ "volumes", cmd_volumes, "list the volumes: copies, use, log, who mounts them" },
	{ "rmvol", cmd_rmvol, "remove a volume that nobody mounts, freeing its blocks" },
	{ "fsck", cmd_fsck, "check volumes against the pool bitmaps; --repair frees leaks" },
	{ "rebuild", cmd_rebuild, "copy what stale pools of a replicated volume miss" },
	{ "bench", cmd_bench, "latency, bandwidth and atomic rate of each pool" },
	{ "status", cmd_status, "show each pool: reachable, transport, size, usage, latency" },
	{ "stats", cmd_stats, "a mount's (or a pool server's) metrics: ops, latency, bytes, log" },
	{ "read", cmd_read, "read bytes from a pool (debugging)" },
	{ "write", cmd_write, "write bytes to a pool (debugging)" },
	{ "cas", cmd_cas, "64-bit compare-and-swap on a pool (debugging)" },
	{ "faa", cmd_faa, "64-bit fetch-and-add on a pool (debugging)" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: rdmapool COMMAND [-c CLUSTER_FILE] [OPTIONS]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nRun 'rdmapool COMMAND --help' for a command's options. See rdmapool(8).\n");
}

int tool_load(struct tool_ctx *t)
{
	char err[1024];
	if (rp_cluster_load(t->cluster_file, &t->cl, err, sizeof(err)) < 0 ||
	    rp_cluster_load_secret(t->cl, t->secret, &t->secret_len, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmapool: %s\n", err);
		return 1;
	}
	return 0;
}

int tool_open(struct tool_ctx *t, int flags, struct rp_poolset **ps)
{
	char err[1024] = "";
	int rc = rp_poolset_open(t->cl, t->secret, t->secret_len, flags, ps, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "rdmapool: %s\n", err[0] ? err : strerror(-rc));
		return 1;
	}
	return 0;
}

void tool_done(struct tool_ctx *t)
{
	rp_cluster_free(t->cl);
	memset(t->secret, 0, sizeof(t->secret));
}

int tool_parse_u64(const char *what, const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "rdmapool: %s '%s': expected a non-negative integer\n", what, s);
		return -1;
	}
	*out = v;
	return 0;
}

int tool_peer_index(struct tool_ctx *t, const char *id)
{
	uint64_t v;
	if (!id) {
		fprintf(stderr, "rdmapool: --peer ID is required\n");
		return -1;
	}
	if (tool_parse_u64("--peer", id, &v) < 0)
		return -1;
	int i = rp_cluster_peer_index(t->cl, (uint32_t)v);
	if (i < 0 || v > UINT32_MAX)
		fprintf(stderr, "rdmapool: %s: no peer with id %s\n", t->cluster_file, id);
	return i;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	rp_log_init("rdmapool", RP_LOG_WARN, 0);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("rdmapool %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "rdmapool: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
