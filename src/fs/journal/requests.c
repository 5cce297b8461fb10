/* The names of requests whose changes are in the log, so that a request the
 * kernel sends again after a supervised restart is not carried out twice
 * (rdmapool(7), "Requests sent again"). A name is the mount's connection
 * (random per mount) and the kernel's request number; the last
 * FS_REQS_KEPT applied are kept, under fs->mu, and every checkpoint writes
 * them into its image. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/lock_order.h>

#include <string.h>

/* The request this thread serves: set by the FUSE layer as it reads one. */
static _Thread_local struct rp_reqname current;

void rp_fs_request_set(uint64_t conn, uint64_t unique)
{
	current.conn = conn;
	current.unique = unique;
}

bool fs_request_rec(struct rp_rec *r)
{
	if (!current.conn)
		return false;
	memset(r, 0, sizeof(*r));
	r->type = REC_REQ;
	r->ino = current.conn;
	r->ino2 = current.unique;
	return true;
}

void fs_request_note(struct rp_fs *fs, uint64_t conn, uint64_t unique)
{
	if (!conn)
		return;
	fs->reqs[fs->reqs_next++ % FS_REQS_KEPT] = (struct rp_reqname){ conn, unique };
}

bool rp_fs_request_done(struct rp_fs *fs, uint64_t conn, uint64_t unique)
{
	bool done = false;
	if (!conn)
		return false;
	rp_mutex_lock(&fs->mu, RP_LK_FS);
	for (unsigned i = 0; i < FS_REQS_KEPT && !done; i++)
		done = fs->reqs[i].conn == conn && fs->reqs[i].unique == unique;
	rp_mutex_unlock(&fs->mu);
	return done;
}

int fs_requests_write(struct rp_fs *fs, int (*put)(struct rp_fs *, struct rp_logw *,
						   struct rp_rec *), struct rp_logw *w)
{
	/* oldest first, so that replaying the image keeps the same ones */
	unsigned n = fs->reqs_next < FS_REQS_KEPT ? fs->reqs_next : FS_REQS_KEPT;
	for (unsigned k = 0; k < n; k++) {
		const struct rp_reqname *q = &fs->reqs[(fs->reqs_next - n + k) % FS_REQS_KEPT];
		if (!q->conn)
			continue;
		struct rp_rec r;
		memset(&r, 0, sizeof(r));
		r.type = REC_REQ;
		r.ino = q->conn;
		r.ino2 = q->unique;
		int rc = put(fs, w, &r);
		if (rc < 0)
			return rc;
	}
	return 0;
}
