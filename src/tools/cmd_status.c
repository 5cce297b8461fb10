/* rdmapool status: every peer's reachability, transport, size and usage,
 * the round-trip time of a small read, and each volume's copies. */
#include "config.h"
#include "tool.h"

#include <rdmapool/fs.h>
#include <rdmapool/util.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = { { "cluster", required_argument, NULL, 'c' },
					       { "help", no_argument, NULL, 'h' }, { 0 } };
	struct tool_ctx t = { .cluster_file = RP_DEFAULT_CLUSTER_FILE };
	struct rp_poolset *ps;
	int ch, down = 0;

	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		if (ch == 'c')
			t.cluster_file = optarg;
		else {
			printf("Usage: rdmapool status [-c CLUSTER_FILE]\n"
			       "Exit status: 0 all pools up, 3 some unreachable, 1 error.\n");
			return ch == 'h' ? 0 : 2;
		}
	}
	if (tool_load(&t) || tool_open(&t, RP_POOLSET_ALLOW_DOWN, &ps)) {
		tool_done(&t);
		return 1;
	}
	printf("cluster \"%s\" (%s): %zu peers, block size %u\n", t.cl->name, t.cluster_file, ps->npeers,
	       ps->block_size);
	printf("%-5s %-22s %-6s %-9s %11s %11s %11s %9s\n", "PEER", "ADDRESS", "STATE", "TRANSPORT",
	       "SIZE", "USED", "FREE", "RTT");
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t i = ps->ids[k];
		struct rp_pool *p = &ps->pools[i];
		char addr[300], size[32], used[32], freeb[32], rtt[32] = "-";
		uint64_t nfree = 0, total = 0;
		snprintf(addr, sizeof(addr), "%s:%u", p->peer.host, p->peer.port);
		int rc = rp_pool_up(p) ? rp_pool_usage(ps, i, false, &nfree, &total) : p->error;
		if (rc == 0) {
			uint64_t samples[9];
			uint8_t probe[64];
			for (int k = 0; k < 9 && rc == 0; k++) {
				uint64_t t0 = rp_now_ns();
				rc = rp_pool_read(ps, i, 0, probe, sizeof(probe));
				samples[k] = rp_now_ns() - t0;
			}
			if (rc == 0) {
				qsort(samples, 9, sizeof(samples[0]), cmp_u64);
				snprintf(rtt, sizeof(rtt), "%.1fus", (double)samples[4] / 1000.0);
			}
		}
		if (rc < 0) {
			down++;
			printf("%-5u %-22s %-6s %-9s %s\n", p->peer.id, addr, "down", "-",
			       p->err[0] ? p->err : strerror(-rc));
			continue;
		}
		rp_format_size(p->sb.region_size, size, sizeof(size));
		rp_format_size((total - nfree) * ps->block_size, used, sizeof(used));
		rp_format_size(nfree * ps->block_size, freeb, sizeof(freeb));
		printf("%-5u %-22s %-6s %-9s %11s %11s %11s %9s\n", p->peer.id, addr, "up",
		       rp_transport_name(rp_pool_transport(p)), size, used, freeb, rtt);
		printf("      blocks: %llu total, %llu used, %llu free\n", (unsigned long long)total,
		       (unsigned long long)(total - nfree), (unsigned long long)nfree);
	}
	printf("\n");
	tool_print_volumes(ps);
	int vrc = rp_fs_describe_volumes(ps, stdout);
	if (vrc < 0)
		printf("volumes: the volume table is unreadable (%s)\n", strerror(-vrc));
	rp_poolset_close(ps);
	tool_done(&t);
	return down ? 3 : 0;
}
