/* rdmapool read|write|cas|faa: one raw operation on one pool, for debugging
 * and for tests of the servers' checks (--rkey sends a chosen key). */
#include "config.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmapool/util.h>

#define MAX_DEBUG_IO (64u << 20)

struct debug_args {
	struct tool_ctx t;
	const char *peer;
	uint64_t offset, length, expect, swap, add;
	bool have_offset, have_length, have_expect, have_swap, have_add, have_rkey;
	uint64_t rkey;
	const char *data, *in, *out;
};

static int parse(int argc, char **argv, const char *cmd, const char *usage, struct debug_args *a)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "peer", required_argument, NULL, 'p' },
		{ "offset", required_argument, NULL, 'o' }, { "length", required_argument, NULL, 'n' },
		{ "expect", required_argument, NULL, 'e' }, { "swap", required_argument, NULL, 's' },
		{ "add", required_argument, NULL, 'a' }, { "data", required_argument, NULL, 'd' },
		{ "in", required_argument, NULL, 'i' }, { "out", required_argument, NULL, 'O' },
		{ "rkey", required_argument, NULL, 'k' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	int ch;
	a->t.cluster_file = RP_DEFAULT_CLUSTER_FILE;
	while ((ch = getopt_long(argc, argv, "c:p:o:n:e:s:a:d:i:O:k:h", opts, NULL)) != -1) {
		int bad = 0;
		switch (ch) {
		case 'c': a->t.cluster_file = optarg; break;
		case 'p': a->peer = optarg; break;
		case 'o': bad = tool_parse_u64("--offset", optarg, &a->offset); a->have_offset = 1; break;
		case 'n': bad = tool_parse_u64("--length", optarg, &a->length); a->have_length = 1; break;
		case 'e': bad = tool_parse_u64("--expect", optarg, &a->expect); a->have_expect = 1; break;
		case 's': bad = tool_parse_u64("--swap", optarg, &a->swap); a->have_swap = 1; break;
		case 'a': bad = tool_parse_u64("--add", optarg, &a->add); a->have_add = 1; break;
		case 'd': a->data = optarg; break;
		case 'i': a->in = optarg; break;
		case 'O': a->out = optarg; break;
		case 'k': bad = tool_parse_u64("--rkey", optarg, &a->rkey); a->have_rkey = 1; break;
		case 'h': printf("Usage: rdmapool %s %s\n", cmd, usage); exit(0);
		default: bad = 1;
		}
		if (bad)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "rdmapool %s: unexpected argument '%s'\n", cmd, argv[optind]);
		return 2;
	}
	if (!a->have_offset) {
		fprintf(stderr, "rdmapool %s: --offset is required\n", cmd);
		return 2;
	}
	return 0;
}

/* Load, open, and resolve the peer; returns its id (pools are named by
 * peer id) or -1. */
static int open_peer(struct debug_args *a, struct rp_poolset **ps)
{
	if (tool_load(&a->t))
		return -1;
	int i = tool_peer_index(&a->t, a->peer);
	if (i < 0 || tool_open(&a->t, RP_POOLSET_ALLOW_DOWN, ps))
		return -1;
	int idx = (int)a->t.cl->peers[i].id;
	if (!rp_pool_up(&(*ps)->pools[idx])) {
		fprintf(stderr, "rdmapool: %s\n", (*ps)->pools[idx].err);
		rp_poolset_close(*ps);
		return -1;
	}
	if (a->have_rkey)
		rp_pool_debug_set_rkey(*ps, (uint32_t)idx, (uint32_t)a->rkey);
	return idx;
}

static int report(const char *cmd, const struct debug_args *a, int rc)
{
	if (rc < 0)
		fprintf(stderr, "rdmapool %s: peer %s offset %" PRIu64 ": %s\n", cmd, a->peer, a->offset,
			strerror(-rc));
	return rc < 0 ? 1 : 0;
}

int cmd_read(int argc, char **argv)
{
	struct debug_args a = { 0 };
	struct rp_poolset *ps;
	int rc = parse(argc, argv, "read", "-c FILE --peer ID --offset N --length N [--out FILE] [--rkey K]", &a);
	if (rc)
		return rc;
	if (!a.have_length || a.length > MAX_DEBUG_IO) {
		fprintf(stderr, "rdmapool read: --length 1..%u is required\n", MAX_DEBUG_IO);
		return 2;
	}
	int idx = open_peer(&a, &ps);
	if (idx < 0) {
		tool_done(&a.t);
		return 1;
	}
	uint8_t *buf = malloc(a.length ? a.length : 1);
	rc = buf ? rp_pool_read(ps, (uint32_t)idx, a.offset, buf, a.length) : -ENOMEM;
	if (rc == 0) {
		int fd = a.out ? open(a.out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : STDOUT_FILENO;
		if (fd < 0 || rp_write_full(fd, buf, a.length) < 0)
			rc = -errno;
		if (a.out && fd >= 0)
			close(fd);
	}
	free(buf);
	rp_poolset_close(ps);
	tool_done(&a.t);
	return report("read", &a, rc);
}

int cmd_write(int argc, char **argv)
{
	struct debug_args a = { 0 };
	struct rp_poolset *ps;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc = parse(argc, argv, "write", "-c FILE --peer ID --offset N (--data TEXT | --in FILE) [--rkey K]", &a);
	if (rc)
		return rc;
	if (!!a.data == !!a.in) {
		fprintf(stderr, "rdmapool write: give exactly one of --data or --in\n");
		return 2;
	}
	if (a.data) {
		len = strlen(a.data);
		buf = (uint8_t *)strdup(a.data);
	} else {
		FILE *f = fopen(a.in, "rb");
		buf = malloc(MAX_DEBUG_IO);
		if (!f || !buf) {
			fprintf(stderr, "rdmapool write: %s: %s\n", a.in, strerror(errno));
			free(buf);
			if (f)
				fclose(f);
			return 1;
		}
		len = fread(buf, 1, MAX_DEBUG_IO, f);
		fclose(f);
	}
	int idx = open_peer(&a, &ps);
	if (idx < 0) {
		free(buf);
		tool_done(&a.t);
		return 1;
	}
	rc = rp_pool_write(ps, (uint32_t)idx, a.offset, buf, len);
	free(buf);
	rp_poolset_close(ps);
	tool_done(&a.t);
	return report("write", &a, rc);
}

int cmd_cas(int argc, char **argv)
{
	struct debug_args a = { 0 };
	struct rp_poolset *ps;
	uint64_t old = 0;
	int rc = parse(argc, argv, "cas", "-c FILE --peer ID --offset N --expect V --swap V [--rkey K]", &a);
	if (rc)
		return rc;
	if (!a.have_expect || !a.have_swap) {
		fprintf(stderr, "rdmapool cas: --expect and --swap are required\n");
		return 2;
	}
	int idx = open_peer(&a, &ps);
	if (idx < 0) {
		tool_done(&a.t);
		return 1;
	}
	rc = rp_pool_cas(ps, (uint32_t)idx, a.offset, a.expect, a.swap, &old);
	if (rc == 0)
		printf("old=%" PRIu64 " %s\n", old, old == a.expect ? "swapped" : "unchanged");
	rp_poolset_close(ps);
	tool_done(&a.t);
	return report("cas", &a, rc);
}

int cmd_faa(int argc, char **argv)
{
	struct debug_args a = { 0 };
	struct rp_poolset *ps;
	uint64_t old = 0;
	int rc = parse(argc, argv, "faa", "-c FILE --peer ID --offset N --add V [--rkey K]", &a);
	if (rc)
		return rc;
	if (!a.have_add) {
		fprintf(stderr, "rdmapool faa: --add is required\n");
		return 2;
	}
	int idx = open_peer(&a, &ps);
	if (idx < 0) {
		tool_done(&a.t);
		return 1;
	}
	rc = rp_pool_faa(ps, (uint32_t)idx, a.offset, a.add, &old);
	if (rc == 0)
		printf("old=%" PRIu64 "\n", old);
	rp_poolset_close(ps);
	tool_done(&a.t);
	return report("faa", &a, rc);
}
