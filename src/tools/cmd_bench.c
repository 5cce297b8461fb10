/* rdmapool bench: what each pool's transport delivers to this client:
 * latency of small reads, bandwidth of batched 1 MiB reads and writes, and
 * the rate of remote atomics. It writes only into blocks it allocates first
 * (and frees after), and a word reserved for it, so it is safe on pools in
 * use. */
#include "config.h"
#include "tool.h"

#include <rdmapool/util.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Claim a scratch area of n runs of 64 blocks (256 KiB at 4 KiB blocks, all
 * that one run of the bandwidth loop writes) through the allocator, so
 * nothing else is using what bench writes. The allocator may grant shorter
 * runs: those are held until the end (so they are not granted again), then
 * given back, and never written. */
static int scratch(struct rp_poolset *ps, uint32_t pool, struct rp_extent *ext, size_t n, size_t *got)
{
	struct rp_extent shorts[64];
	size_t nshort = 0;
	int rc = 0;
	*got = 0;
	while (*got < n && rc == 0) {
		struct rp_extent e;
		if ((rc = rp_pool_alloc(ps, pool, 64, &e)) < 0)
			break;
		if (e.count == 64)
			ext[(*got)++] = e;
		else if (nshort < sizeof(shorts) / sizeof(shorts[0]))
			shorts[nshort++] = e;
		else {
			rp_pool_free(ps, &e);
			rc = -ENOSPC; /* too fragmented to find whole runs */
		}
	}
	for (size_t i = 0; i < nshort; i++)
		rp_pool_free(ps, &shorts[i]);
	return rc;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option opts[] = { { "cluster", required_argument, NULL, 'c' },
					       { "seconds", required_argument, NULL, 's' },
					       { "help", no_argument, NULL, 'h' }, { 0 } };
	struct tool_ctx t = { .cluster_file = RP_DEFAULT_CLUSTER_FILE };
	struct rp_poolset *ps;
	uint64_t secs = 2;
	int ch;

	while ((ch = getopt_long(argc, argv, "c:s:h", opts, NULL)) != -1) {
		if (ch == 'c')
			t.cluster_file = optarg;
		else if (ch == 's') {
			if (tool_parse_u64("--seconds", optarg, &secs) || secs == 0 || secs > 600)
				return 2;
		} else {
			printf("Usage: rdmapool bench [-c CLUSTER_FILE] [--seconds N]\n");
			return ch == 'h' ? 0 : 2;
		}
	}
	if (tool_load(&t) || tool_open(&t, 0, &ps)) {
		tool_done(&t);
		return 1;
	}
	struct rp_buf *buf;
	if (rp_buf_alloc(ps, 1u << 20, &buf) < 0) {
		fprintf(stderr, "rdmapool bench: cannot register a buffer\n");
		return 1;
	}
	memset(rp_buf_data(buf), 0x5a, 1u << 20);
	printf("%-5s %-9s %10s %10s %12s %12s %12s\n", "PEER", "TRANSPORT", "4K-READ-us", "p99-us",
	       "READ-MB/s", "WRITE-MB/s", "CAS-ops/s");
	int status = 0;
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t p = ps->ids[k];
		struct rp_extent ext[4];
		size_t got;
		const struct rp_pool_sb *sb = &ps->pools[p].sb;
		int rc = scratch(ps, p, ext, 4, &got);
		if (rc < 0 || got < 4) {
			fprintf(stderr, "peer %u: no 4 free runs of 64 blocks for a scratch area: %s\n",
				ps->pools[p].peer.id, strerror(-rc));
			for (size_t i = 0; i < got; i++)
				rp_pool_free(ps, &ext[i]);
			status = 1;
			continue;
		}
		/* latency: 4 KiB reads one at a time */
		enum { NLAT = 2000 };
		static uint64_t lat[NLAT];
		struct rp_io one = { .pool = p, .off = rp_block_offset(sb, ext[0].block), .buf = buf, .len = 4096 };
		for (int i = 0; i < NLAT && rc == 0; i++) {
			uint64_t t0 = rp_now_ns();
			rc = rp_poolset_rw(ps, RP_OP_READ, &one, 1);
			lat[i] = rp_now_ns() - t0;
		}
		qsort(lat, NLAT, sizeof(lat[0]), cmp_u64);
		/* bandwidth: 1 MiB requests as 16 pieces of 64 KiB, one wait each */
		double mbs[2] = { 0, 0 };
		for (int w = 0; w < 2 && rc == 0; w++) {
			struct rp_io ios[16];
			uint64_t bytes = 0, t0 = rp_now_ns(), end = t0 + secs * 1000000000ull / 2;
			/* four pieces per run, inside it whatever the block size */
			uint32_t piece = (uint32_t)RP_MIN(65536ull, 64ull * sb->block_size / 4);
			while (rc == 0 && rp_now_ns() < end) {
				for (int i = 0; i < 16; i++) {
					const struct rp_extent *e = &ext[i % 4];
					ios[i] = (struct rp_io){ .pool = p, .buf = buf, .buf_off = (size_t)i * piece,
								 .len = piece,
								 .off = rp_block_offset(sb, e->block) + (uint64_t)(i / 4) * piece };
				}
				rc = rp_poolset_rw(ps, w ? RP_OP_WRITE : RP_OP_READ, ios, 16);
				bytes += 16ull * piece;
			}
			mbs[w] = (double)bytes / 1e6 / ((double)(rp_now_ns() - t0) / 1e9);
		}
		/* atomics: CAS rate on the reserved bench word */
		uint64_t ncas = 0, old = 0, t0 = rp_now_ns(), end = t0 + secs * 1000000000ull / 2;
		while (rc == 0 && rp_now_ns() < end) {
			rc = rp_pool_cas(ps, p, RP_BENCH_WORD_OFFSET, old, old + 1, &old);
			ncas++;
		}
		double cas = (double)ncas / ((double)(rp_now_ns() - t0) / 1e9);
		for (size_t i = 0; i < got; i++)
			rp_pool_free(ps, &ext[i]);
		if (rc < 0) {
			printf("%-5u error: %s\n", ps->pools[p].peer.id, strerror(-rc));
			status = 1;
			continue;
		}
		printf("%-5u %-9s %10.1f %10.1f %12.0f %12.0f %12.0f\n", ps->pools[p].peer.id,
		       rp_transport_name(rp_pool_transport(&ps->pools[p])), (double)lat[NLAT / 2] / 1e3,
		       (double)lat[NLAT * 99 / 100] / 1e3, mbs[0], mbs[1], cas);
	}
	rp_buf_free(buf);
	rp_poolset_close(ps);
	tool_done(&t);
	return status;
}
