/* How long admin work (fsck, repair, rebuild) tells how far it is, and how
 * it is asked to stop. The layer doing the work calls rp_progress_report()
 * and checks rp_progress_stopped() at points where stopping leaves nothing
 * half done; the tool that started it draws the progress (src/tools). */
#ifndef RDMAPOOL_PROGRESS_H
#define RDMAPOOL_PROGRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rp_progress {
	/* what: the step ("checking", "peer 2"); done of total units, each
	 * unit_bytes long (0: units are not bytes) */
	void (*report)(struct rp_progress *p, const char *what, uint64_t done, uint64_t total,
		       uint32_t unit_bytes);
	atomic_bool stop; /* set from a signal handler (Ctrl-C) */
};

static inline void rp_progress_report(struct rp_progress *p, const char *what, uint64_t done,
				      uint64_t total, uint32_t unit_bytes)
{
	if (p && p->report)
		p->report(p, what, done, total, unit_bytes);
}

static inline bool rp_progress_stopped(struct rp_progress *p)
{
	return p && atomic_load(&p->stop);
}

#endif
