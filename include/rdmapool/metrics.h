/* Counters, gauges and latency histograms, kept by every layer in its own
 * structures and listed in one process-wide registry that renders them in
 * the Prometheus text format (metrics_server.c serves that). Updates are
 * relaxed atomic adds: nothing on a data path takes a lock for them. */
#ifndef RDMAPOOL_METRICS_H
#define RDMAPOOL_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Latency buckets: upper bounds of 2^i microseconds, i = 0..RP_HIST_BUCKETS-1
 * (1 us .. 8.4 s), then +Inf. */
#define RP_HIST_BUCKETS 24

struct rp_hist {
	_Atomic uint64_t bucket[RP_HIST_BUCKETS + 1]; /* not cumulative */
	_Atomic uint64_t sum_ns;
};

static inline void rp_count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

void rp_hist_observe(struct rp_hist *h, uint64_t ns);
/* The q-quantile (0..1) of what h holds, as a bucket's upper bound in
 * seconds (0 when empty): what histogram_quantile() would say, roughly. */
double rp_hist_quantile(const struct rp_hist *h, double q);

/* Registering: name and help are string constants; labels is the inside of
 * the braces ("pool=\"0\"") or NULL, copied. owner groups the entries that
 * rp_metrics_drop(owner) removes, before what they point at is freed.
 * Return 0 or -ENOMEM. */
int rp_metric_counter(void *owner, const char *name, const char *labels, const char *help,
		      _Atomic uint64_t *value);
int rp_metric_gauge(void *owner, const char *name, const char *labels, const char *help,
		    double (*read)(void *arg), void *arg);
int rp_metric_hist(void *owner, const char *name, const char *labels, const char *help,
		   struct rp_hist *h);
void rp_metrics_drop(void *owner);

/* Render every registered metric (Prometheus text format 0.0.4) into a
 * malloc'ed string; *len gets its length. NULL when out of memory. */
char *rp_metrics_render(size_t *len);

#endif
