/* Answering O_DIRECT writes once the kernel's cached pages of their range
 * are dropped, from a thread of its own (dio_inval.c says why). */
#ifndef RDMAPOOLFS_DIO_INVAL_H
#define RDMAPOOLFS_DIO_INVAL_H

#include "fuse_ops.h"

/* Start before the session serves requests; -1 when no thread could be
 * made (writes are then answered at once, without the invalidation). */
int rp_dio_inval_start(struct fuse_session *se);
/* Answer what is queued, then stop: after the session loop ended, before
 * the session goes. */
void rp_dio_inval_stop(void);
/* Drop the kernel's pages of [off, off + n) of ino, then answer req with n. */
void rp_dio_inval_reply(fuse_req_t req, fuse_ino_t ino, off_t off, size_t n);

#endif
