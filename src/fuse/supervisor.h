/* Keeping a mount alive across a restart of the daemon that serves it
 * (-o supervise). The supervisor holds the mount's /dev/fuse descriptor
 * and the kernel's INIT message; the process that serves (the child) gets
 * both, so a new child can take over a live mount: after a crash of the
 * old one, or on 'rdmapoolfs --restart MOUNTPOINT' (the old child flushes,
 * gives the lease back and leaves; an upgraded program file is used for the
 * new one). Requests wait in the kernel meanwhile. */
#ifndef RDMAPOOLFS_SUPERVISOR_H
#define RDMAPOOLFS_SUPERVISOR_H

#include "fuse_ops.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The child's exit status after a handover on request. */
#define SUP_EXIT_HANDOVER 75
#define SUP_INIT_MAX 512

/* What a child learns from its environment (set by the supervisor). */
struct sup_child {
	int fuse_fd;     /* the mount's /dev/fuse */
	int state_fd;    /* lines to the supervisor: init, lease, ready */
	int ready_fd;    /* first child: the mount command waits on it; else -1 */
	bool restart;    /* the kernel has used this mount before */
	uint64_t dead_lease;
	uint64_t conn;   /* the mount's connection, for request names (resend.h) */
	uint8_t init[SUP_INIT_MAX]; /* the kernel's INIT request, to replay */
	size_t init_len;
};

/* Is this process a supervised child? Fills c from the environment. */
bool sup_child_env(struct sup_child *c);
/* A line to the supervisor ("init HEX", "lease HEX", "ready"). */
void sup_child_tell(const struct sup_child *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Serve se's first request, which must be the kernel's INIT: replayed
 * from c when the mount was served before, else read and sent to the
 * supervisor. 0 or a negative errno. */
int sup_child_init(struct sup_child *c, struct fuse_session *se);

/* This process supervises: mounts at mountpoint (args: the FUSE options),
 * runs argv as the child (again after a crash or on request) and returns
 * the exit status when the mount ends. ready_fd: where the starting command
 * waits for the first child's verdict (-1: none). */
int sup_run(char **argv, struct fuse_args *args, const char *mountpoint, int ready_fd);

/* rdmapoolfs --restart MOUNTPOINT: ask the mount's supervisor for a new
 * child; prints the outcome, returns the exit status. */
int sup_restart_request(const char *mountpoint);

#endif
