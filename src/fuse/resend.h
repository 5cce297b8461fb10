/* Requests the kernel sends again after a supervised restart (rdmapool(7),
 * "Requests sent again"). */
#ifndef RDMAPOOL_FUSE_RESEND_H
#define RDMAPOOL_FUSE_RESEND_H

#include "fuse_ops.h"

#include <rdmapool/fs.h>

#include <stdbool.h>
#include <stdint.h>

/* Serve the mount's /dev/fuse descriptor fd through reads that see each
 * request's header: a namespace change is named to the fs layer as
 * (conn, the kernel's number), and a request sent again is marked. For a
 * supervised daemon (conn: the supervisor's); 0 or a negative errno. */
int rp_resend_attach(struct fuse_session *se, int fd, uint64_t conn);

/* Is the request this thread serves one sent again whose change the log
 * already holds? Then it is answered from the state, not carried out. */
bool rp_resend_done(struct rp_fs *fs);

/* Tests only (fstest 079), supervised daemons only: with
 * RP_TEST_CRASH_AFTER=NAME in the environment, a change of that name that
 * succeeded (rc 0) is flushed to the log and the daemon dies before it
 * answers, as a crash at that moment would. */
void rp_resend_test_crash(struct rp_fs *fs, int rc, const char *name);

#endif
