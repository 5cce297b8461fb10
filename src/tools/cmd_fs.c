/* rdmapool mkfs, fsck and rebuild: making, checking and healing volumes. */
#include "config.h"
#include "tool.h"

#include <rdmapool/fs.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_mkfs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "volume", required_argument, NULL, 'v' },
		{ "force", no_argument, NULL, 'f' }, { "stripe-blocks", required_argument, NULL, 's' },
		{ "lease-ms", required_argument, NULL, 'L' }, { "replicas", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct tool_ctx t = { .cluster_file = RP_DEFAULT_CLUSTER_FILE };
	struct rp_mkfs_opts o = { .volume = RP_DEFAULT_VOLUME, .uid = getuid(), .gid = getgid() };
	struct rp_poolset *ps;
	uint64_t v;
	char err[1024] = "";
	int ch;

	while ((ch = getopt_long(argc, argv, "c:v:fh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': t.cluster_file = optarg; break;
		case 'v': o.volume = optarg; break;
		case 'f': o.force = true; break;
		case 's':
			if (tool_parse_u64("--stripe-blocks", optarg, &v) || v == 0 || v > 1u << 20)
				return 2;
			o.stripe_blocks = (uint32_t)v;
			break;
		case 'L':
			if (tool_parse_u64("--lease-ms", optarg, &v) || v < 50 || v > 600000)
				return 2;
			o.lease_ms = (uint32_t)v;
			break;
		case 'R':
			if (tool_parse_u64("--replicas", optarg, &v) || v == 0 || v > RP_MAX_REPLICAS) {
				fprintf(stderr, "rdmapool mkfs: --replicas must be 1..%d\n",
					RP_MAX_REPLICAS);
				return 2;
			}
			o.replicas = (uint32_t)v;
			break;
		case 'h':
			printf("Usage: rdmapool mkfs [-c CLUSTER_FILE] [--volume NAME] [--force]\n"
			       "                    [--stripe-blocks N] [--lease-ms MS] [--replicas N]\n");
			return 0;
		default: return 2;
		}
	}
	if (tool_load(&t) || tool_open(&t, 0, &ps)) {
		tool_done(&t);
		return 1;
	}
	int rc = rp_fs_mkfs(ps, &o, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "rdmapool mkfs: %s\n", err[0] ? err : strerror(-rc));
	else
		printf("volume \"%s\" created on %zu pools, %u cop%s of every block\n", o.volume,
		       ps->npeers, o.replicas ? o.replicas : 1, o.replicas > 1 ? "ies" : "y");
	rp_poolset_close(ps);
	tool_done(&t);
	return rc < 0 ? 1 : 0;
}

int cmd_fsck(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "volume", required_argument, NULL, 'v' },
		{ "repair", no_argument, NULL, 'r' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct tool_ctx t = { .cluster_file = RP_DEFAULT_CLUSTER_FILE };
	struct rp_poolset *ps;
	struct rp_fsck_report rep;
	bool repair = false;
	char err[1024] = "";
	int ch;

	while ((ch = getopt_long(argc, argv, "c:v:rh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': t.cluster_file = optarg; break;
		case 'v': break; /* every volume is checked: they share the bitmaps */
		case 'r': repair = true; break;
		case 'h':
			printf("Usage: rdmapool fsck [-c CLUSTER_FILE] [--volume NAME] [--repair]\n"
			       "Exit status: 0 clean, 1 corruption, 2 usage, 4 leaks only (repaired: 0).\n");
			return 0;
		default: return 2;
		}
	}
	if (tool_load(&t) || tool_open(&t, 0, &ps)) {
		tool_done(&t);
		return 1;
	}
	struct rp_progress *pr = tool_progress_start();
	int rc = rp_fs_fsck(ps, repair, tool_progress_out(), &rep, pr, err, sizeof(err));
	bool stopped = tool_progress_end();
	printf("%llu volumes, %llu inodes (%llu files, %llu directories), %llu data blocks, "
	       "%llu log blocks\n%llu errors, %llu leaked blocks, %llu freed\n",
	       (unsigned long long)rep.volumes, (unsigned long long)rep.inodes,
	       (unsigned long long)rep.files, (unsigned long long)rep.dirs,
	       (unsigned long long)rep.data_blocks, (unsigned long long)rep.log_blocks,
	       (unsigned long long)rep.errors, (unsigned long long)rep.leaked,
	       (unsigned long long)rep.repaired);
	if (rep.counts_off)
		printf("%llu pool(s) with a used-block count off (free space far from full is "
		       "read from it), %llu set right%s\n", (unsigned long long)rep.counts_off,
		       (unsigned long long)rep.counts_set, repair ? "" : " (--repair sets them)");
	if (rc < 0)
		fprintf(stderr, "rdmapool fsck: %s\n", err[0] ? err : strerror(-rc));
	rp_poolset_close(ps);
	tool_done(&t);
	if (stopped && rc == -EINTR)
		return 130; /* as a shell reports an interrupted command */
	if (rc < 0 || rep.errors)
		return 1;
	return rep.leaked > rep.repaired ? 4 : 0;
}

int cmd_rebuild(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "volume", required_argument, NULL, 'v' },
		{ "rate", required_argument, NULL, 'r' }, { "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct tool_ctx t = { .cluster_file = RP_DEFAULT_CLUSTER_FILE };
	const char *volume = RP_DEFAULT_VOLUME;
	struct rp_poolset *ps;
	uint32_t rate = 0;
	bool force = false;
	uint64_t v;
	char err[1024] = "";
	int ch;

	while ((ch = getopt_long(argc, argv, "c:v:r:fh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': t.cluster_file = optarg; break;
		case 'v': volume = optarg; break;
		case 'f': force = true; break;
		case 'r':
			if (tool_parse_u64("--rate", optarg, &v) || v > 1u << 20)
				return 2;
			rate = (uint32_t)v;
			break;
		case 'h':
			printf("Usage: rdmapool rebuild [-c CLUSTER_FILE] [--volume NAME] [--rate MIB_S] "
			       "[--force]\n"
			       "  --force  go on without volume-table copies that are in sync but do not\n"
			       "           answer (any update only they hold is lost)\n"
			       "Exit status: 0 all copies current, 1 error, 3 some stale peer still down.\n");
			return 0;
		default: return 2;
		}
	}
	if (tool_load(&t) || tool_open(&t, RP_POOLSET_ALLOW_DOWN, &ps)) {
		tool_done(&t);
		return 1;
	}
	ps->home_force = force;
	struct rp_progress *pr = tool_progress_start();
	int rc = rp_fs_rebuild(ps, volume, rate, tool_progress_out(), pr, err, sizeof(err));
	bool stopped = tool_progress_end();
	if (rc < 0)
		fprintf(stderr, "rdmapool rebuild: %s\n", err[0] ? err : strerror(-rc));
	rp_poolset_close(ps);
	tool_done(&t);
	if (stopped && rc == -EINTR)
		return 130;
	return rc == -EAGAIN ? 3 : rc < 0 ? 1 : 0;
}
