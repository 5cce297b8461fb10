/* rdmapool volumes / rmvol: the volumes of a cluster, and removing one. */
#include "config.h"
#include "tool.h"

#include <rdmapool/fs.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tool_print_volumes(struct rp_poolset *ps)
{
	struct rp_volinfo *v;
	size_t n;
	int rc = rp_fs_volumes(ps, &v, &n);
	if (rc < 0) {
		printf("volumes: the volume table is unreadable (%s)\n", strerror(-rc));
		return rc;
	}
	printf("%-16s %6s %11s %7s %6s %9s %6s %7s %s\n", "VOLUME", "COPIES", "USED", "FILES", "DIRS",
	       "LOG", "EPOCH", "READERS", "MOUNTED READ-WRITE BY");
	for (size_t i = 0; i < n; i++) {
		char used[32], log[32], copies[16];
		rp_format_size(v[i].data_blocks * ps->block_size, used, sizeof(used));
		rp_format_size(v[i].log_blocks * ps->block_size, log, sizeof(log));
		snprintf(copies, sizeof(copies), "%u%s", v[i].replicas, v[i].stale_pools ? "!" : "");
		printf("%-16s %6s %11s %7llu %6llu %9s %6llu %7u %s\n", v[i].name, copies, used,
		       (unsigned long long)v[i].files, (unsigned long long)v[i].dirs, log,
		       (unsigned long long)v[i].writer_epoch, v[i].readers,
		       v[i].leased ? v[i].holder : "-");
		if (v[i].error < 0)
			printf("  %s: %s\n", v[i].name, v[i].err);
	}
	if (n == 0)
		printf("(no volumes: make one with 'rdmapool mkfs')\n");
	free(v);
	return 0;
}

int cmd_volumes(int argc, char **argv)
{
	static const struct option opts[] = { { "cluster", required_argument, NULL, 'c' },
					       { "help", no_argument, NULL, 'h' }, { 0 } };
	struct tool_ctx t = { .cluster_file = RP_DEFAULT_CLUSTER_FILE };
	struct rp_poolset *ps;
	int ch;
	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		if (ch == 'c') {
			t.cluster_file = optarg;
		} else {
			printf("Usage: rdmapool volumes [-c CLUSTER_FILE]\n"
			       "Each volume: copies (! when degraded), data in use, files, directories,\n"
			       "metadata log, writer epoch, read-only mounts, the read-write mount.\n");
			return ch == 'h' ? 0 : 2;
		}
	}
	if (tool_load(&t) || tool_open(&t, RP_POOLSET_ALLOW_DOWN, &ps)) {
		tool_done(&t);
		return 1;
	}
	int rc = tool_print_volumes(ps);
	rp_poolset_close(ps);
	tool_done(&t);
	return rc < 0 ? 1 : 0;
}

int cmd_rmvol(int argc, char **argv)
{
	static const struct option opts[] = { { "cluster", required_argument, NULL, 'c' },
					       { "volume", required_argument, NULL, 'v' },
					       { "help", no_argument, NULL, 'h' }, { 0 } };
	struct tool_ctx t = { .cluster_file = RP_DEFAULT_CLUSTER_FILE };
	const char *volume = NULL;
	struct rp_poolset *ps;
	char err[512] = "";
	uint64_t freed;
	int ch;
	while ((ch = getopt_long(argc, argv, "c:v:h", opts, NULL)) != -1) {
		if (ch == 'c') {
			t.cluster_file = optarg;
		} else if (ch == 'v') {
			volume = optarg;
		} else {
			printf("Usage: rdmapool rmvol [-c CLUSTER_FILE] --volume NAME\n"
			       "Remove a volume and free its blocks; refused while it is mounted.\n");
			return ch == 'h' ? 0 : 2;
		}
	}
	if (!volume || optind != argc) {
		fprintf(stderr, "rdmapool rmvol: give the volume with --volume NAME\n");
		return 2;
	}
	if (tool_load(&t) || tool_open(&t, 0, &ps)) {
		tool_done(&t);
		return 1;
	}
	int rc = rp_fs_rmvol(ps, volume, &freed, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "rdmapool rmvol: %s\n", err[0] ? err : strerror(-rc));
	} else {
		char sz[32];
		rp_format_size(freed * ps->block_size, sz, sizeof(sz));
		printf("volume \"%s\" removed: %llu blocks (%s) freed\n", volume,
		       (unsigned long long)freed, sz);
	}
	rp_poolset_close(ps);
	tool_done(&t);
	return rc == -EBUSY ? 3 : rc < 0 ? 1 : 0;
}
