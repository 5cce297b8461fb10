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

/* What this thread commits from now on is not the request's change (a
 * failed create's clean-up): its name is not logged with it. */
void rp_resend_forget(void);

/* Tests only (fstest 079), supervised daemons only, compiled out of
 * packages (configure --disable-test-hooks): with RP_TEST_CRASH_AFTER=NAME
 * in the environment, a change of that name that succeeded (rc 0) is
 * flushed to the log and the daemon dies before it answers, as a crash at
 * that moment would; with RP_TEST_CRASH_UNLOGGED=NAME it dies without the
 * flush (the change is lost, and the request sent again does it). */
void rp_resend_test_crash(struct rp_fs *fs, int rc, const char *name);

#endif
