/* The lock order of every process, outer first (rdmapool(7), LOCK ORDER).
 *
 * A thread takes a lock only while every lock it holds ranks lower; locks of
 * one rank are never held two at a time, except where the rank says so.
 * Layers nest downwards (fuse, fs, pool, transport), so a layer's locks
 * rank above the ones of the layers over it; the metrics registry, which
 * calls up into every layer, ranks first. Take and release locks
 * with the wrappers below: builds configured with --enable-lock-check (the
 * sanitizer builds turn it on) record what each thread holds and, on a
 * lock taken out of order, print both sites and abort. Other builds call
 * pthreads directly. A trylock cannot deadlock, so it is recorded, not
 * checked. */
#ifndef RDMAPOOL_LOCK_ORDER_H
#define RDMAPOOL_LOCK_ORDER_H

#include <pthread.h>

enum rp_lock_rank {
	/* common/metrics.c: the registry, held while a render calls every
	 * provider's callback (which take the locks of their layers) */
	RP_LK_METRICS = 5,
	/* fuse/ */
	RP_LK_DIO_INVAL = 10, /* dio_inval.c: the invalidation queue */
	/* fs/ */
	RP_LK_APPLY = 20,     /* rp_fs.follow.apply (read-only): records against data reads */
	RP_LK_INODE_IO = 22,  /* rp_inode.io: data I/O against truncation */
	RP_LK_FS = 24,        /* rp_fs.mu: namespace, inode table, log */
	RP_LK_DIVERGED = 28,  /* rp_fs.div.mu */
	RP_LK_PREALLOC = 30,  /* rp_fs.prealloc.mu */
	RP_LK_PLACE = 32,     /* rp_fs.place.mu */
	RP_LK_LEASE = 33,     /* rp_fs.lease.mu (lease_guard waits under place.mu) */
	RP_LK_HOME = 34,      /* home.c: which home copies are in sync */
	RP_LK_BG = 36,        /* rp_fs.bg.mu: the background thread's wake-ups */
	RP_LK_FS_BUFS = 38,   /* rp_fs.bufs.mu: registered I/O buffers */
	RP_LK_RING = 39,      /* rp_fs.space.ring_mu: the replicated free count's cache */
	/* pool/ */
	RP_LK_POOL = 40,      /* rp_pool.mu: its allocation cursor and span, its reconnect */
	RP_LK_POOL_BUFS = 42, /* rp_poolset.bufs_mu */
	RP_LK_MISSED = 44,    /* rp_poolset.missed_mu: frees a copy missed (missed.c) */
	/* transport/ */
	RP_LK_BOUNCE = 48,    /* a connection's bounce buffer, held across its I/O */
	RP_LK_CONN = 50,      /* a client connection: posting and reconnecting */
	RP_LK_CONN_FD = 52,   /* tcp: the socket against an abort during a swap */
	RP_LK_INFLIGHT = 54,  /* a connection's in-flight table */
	RP_LK_COMPLETION = 56, /* a caller's completion */
	RP_LK_RDMA_PD = 60,   /* rdma: the protection domains */
	RP_LK_SESSIONS = 62,  /* tcp server: the session table */
	RP_LK_SESSION = 64,   /* tcp server: one session (requests read, fences write) */
};

#ifdef RP_LOCK_CHECK
void rp_lock_check(const void *lk, enum rp_lock_rank r, const char *name, const char *file,
		   int line);
void rp_lock_note(const void *lk, enum rp_lock_rank r, const char *name, const char *file,
		  int line);
void rp_lock_forget(const void *lk);
#else
static inline void rp_lock_check(const void *lk, enum rp_lock_rank r, const char *name,
				 const char *file, int line)
{
	(void)lk, (void)r, (void)name, (void)file, (void)line;
}
static inline void rp_lock_note(const void *lk, enum rp_lock_rank r, const char *name,
				const char *file, int line)
{
	(void)lk, (void)r, (void)name, (void)file, (void)line;
}
static inline void rp_lock_forget(const void *lk)
{
	(void)lk;
}
#endif

static inline int rp_mutex_lock_at(pthread_mutex_t *m, enum rp_lock_rank r, const char *name,
				   const char *file, int line)
{
	rp_lock_check(m, r, name, file, line);
	int rc = pthread_mutex_lock(m);
	rp_lock_note(m, r, name, file, line);
	return rc;
}

static inline int rp_mutex_trylock_at(pthread_mutex_t *m, enum rp_lock_rank r, const char *name,
				      const char *file, int line)
{
	int rc = pthread_mutex_trylock(m);
	if (rc == 0)
		rp_lock_note(m, r, name, file, line);
	return rc;
}

static inline int rp_rwlock_lock_at(pthread_rwlock_t *l, int write, enum rp_lock_rank r,
				    const char *name, const char *file, int line)
{
	rp_lock_check(l, r, name, file, line);
	int rc = write ? pthread_rwlock_wrlock(l) : pthread_rwlock_rdlock(l);
	rp_lock_note(l, r, name, file, line);
	return rc;
}

static inline int rp_mutex_unlock(pthread_mutex_t *m)
{
	rp_lock_forget(m);
	return pthread_mutex_unlock(m);
}

static inline int rp_rwlock_unlock(pthread_rwlock_t *l)
{
	rp_lock_forget(l);
	return pthread_rwlock_unlock(l);
}

#define rp_mutex_lock(m, r) rp_mutex_lock_at((m), (r), #m, __FILE__, __LINE__)
#define rp_mutex_trylock(m, r) rp_mutex_trylock_at((m), (r), #m, __FILE__, __LINE__)
#define rp_rwlock_rdlock(l, r) rp_rwlock_lock_at((l), 0, (r), #l, __FILE__, __LINE__)
#define rp_rwlock_wrlock(l, r) rp_rwlock_lock_at((l), 1, (r), #l, __FILE__, __LINE__)

#endif
