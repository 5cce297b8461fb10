/* Shared plumbing of the rdmapool admin tool's subcommands. */
#ifndef RDMAPOOL_TOOL_H
#define RDMAPOOL_TOOL_H

#include <rdmapool/cluster.h>
#include <rdmapool/pool.h>

#include <stdbool.h>
#include <stdio.h>

struct tool_ctx {
	const char *cluster_file;
	struct rp_cluster *cl;
	uint8_t secret[RP_SECRET_MAX];
	size_t secret_len;
};

/* Load the cluster file and secret; prints the error and returns non-zero. */
int tool_load(struct tool_ctx *t);
/* Open the pool set; prints the error. */
int tool_open(struct tool_ctx *t, int flags, struct rp_poolset **ps);
void tool_done(struct tool_ctx *t);
/* Index of the peer with this id, or prints an error and returns -1. */
int tool_peer_index(struct tool_ctx *t, const char *id);
int tool_parse_u64(const char *what, const char *s, uint64_t *out);

int cmd_status(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_write(int argc, char **argv);
int cmd_cas(int argc, char **argv);
int cmd_faa(int argc, char **argv);
int cmd_mkfs(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_rebuild(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_volumes(int argc, char **argv);
int cmd_rmvol(int argc, char **argv);
/* Progress of long work (progress.c): start gives the sink to hand to the
 * fs layer and catches Ctrl-C; out is where the work's own lines go; end
 * says whether it was asked to stop. */
struct rp_progress *tool_progress_start(void);
FILE *tool_progress_out(void);
bool tool_progress_end(void);
/* The volume table (rdmapool volumes, status); 0 or a negative errno. */
int tool_print_volumes(struct rp_poolset *ps);

#endif
