/* After an O_DIRECT write, the kernel's cached pages of its range are
 * dropped before the write is answered: the kernel drops them itself only
 * around synchronous direct writes, so a buffered read that ran while an
 * AIO O_DIRECT write was in flight would leave the old bytes cached.
 *
 * The invalidation waits for every page lock in the range, and a page a
 * buffered read is filling stays locked until a worker answers that read:
 * done in the worker that served the write, it could wait on a read no
 * free worker is left to answer (at once with -s). So one thread of its
 * own invalidates and then answers the write; the workers stay free. */
#include "config.h"
#include "dio_inval.h"

#include <rdmapool/lock_order.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct pending {
	struct pending *next;
	fuse_req_t req;
	fuse_ino_t ino;
	off_t off;
	size_t n;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pending *head, **tail;
	struct fuse_session *se;
	pthread_t thread;
	bool running, stopping;
} q = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .tail = &q.head };

static void *inval_main(void *arg)
{
	(void)arg;
	rp_mutex_lock(&q.mu, RP_LK_DIO_INVAL);
	for (;;) {
		while (!q.head && !q.stopping)
			pthread_cond_wait(&q.cv, &q.mu);
		struct pending *p = q.head;
		if (!p)
			break; /* stopping, and nothing left to answer */
		q.head = p->next;
		if (!q.head)
			q.tail = &q.head;
		rp_mutex_unlock(&q.mu);
		/* -ENOENT: the kernel holds no pages of it; either way, answer */
		fuse_lowlevel_notify_inval_inode(q.se, p->ino, p->off, (off_t)p->n);
		fuse_reply_write(p->req, p->n);
		free(p);
		rp_mutex_lock(&q.mu, RP_LK_DIO_INVAL);
	}
	rp_mutex_unlock(&q.mu);
	return NULL;
}

int rp_dio_inval_start(struct fuse_session *se)
{
	q.se = se;
	q.stopping = false;
	if (pthread_create(&q.thread, NULL, inval_main, NULL) != 0)
		return -1;
	q.running = true;
	return 0;
}

void rp_dio_inval_stop(void)
{
	if (!q.running)
		return;
	rp_mutex_lock(&q.mu, RP_LK_DIO_INVAL);
	q.stopping = true;
	pthread_cond_signal(&q.cv);
	rp_mutex_unlock(&q.mu);
	pthread_join(q.thread, NULL); /* answers what is queued first */
	q.running = false;
	q.se = NULL;
}

void rp_dio_inval_reply(fuse_req_t req, fuse_ino_t ino, off_t off, size_t n)
{
	struct pending *p = q.running ? malloc(sizeof(*p)) : NULL;
	if (!p) { /* no thread (not serving yet) or no memory: answer as before */
		fuse_reply_write(req, n);
		return;
	}
	*p = (struct pending){ .req = req, .ino = ino, .off = off, .n = n };
	rp_mutex_lock(&q.mu, RP_LK_DIO_INVAL);
	*q.tail = p;
	q.tail = &p->next;
	pthread_cond_signal(&q.cv);
	rp_mutex_unlock(&q.mu);
}
