/* The pool layer's metrics, per pool: bytes moved, round trips, CASes, and
 * whether the pool is connected and current. */
#include "config.h"
#include "pool_impl.h"

#include <rdmapool/metrics.h>

#include <errno.h>
#include <stdio.h>

static double connected(void *arg)
{
	const struct rp_pool *p = arg;
	return p->conn && rp_conn_is_up(p->conn) ? 1 : 0;
}

static double stale(void *arg)
{
	const struct rp_pool *p = arg;
	return atomic_load(&p->stale) ? 1 : 0;
}

static int one_pool(struct rp_poolset *ps, struct rp_pool *p)
{
	char l[32];
	int rc = 0;
	snprintf(l, sizeof(l), "pool=\"%u\"", p->peer.id);
	rc |= rp_metric_counter(ps, "rdmapool_pool_read_bytes_total", l,
				"Bytes read from the pool (file data, log, metadata).",
				&p->stats.read_bytes);
	rc |= rp_metric_counter(ps, "rdmapool_pool_written_bytes_total", l,
				"Bytes written to the pool, every copy counted where it went.",
				&p->stats.written_bytes);
	rc |= rp_metric_counter(ps, "rdmapool_pool_bitmap_read_bytes_total", l,
				"Bytes of the allocation bitmap read (allocation spans, whole "
				"bitmaps where the pool keeps no used-block count).",
				&p->stats.bitmap_read_bytes);
	rc |= rp_metric_hist(ps, "rdmapool_pool_op_seconds", l,
			     "Transport round trips to the pool: from posting a batch of one-sided "
			     "operations to its last completion.",
			     &p->stats.latency);
	rc |= rp_metric_counter(ps, "rdmapool_pool_cas_total", l,
				"Compare-and-swap operations (allocation, freeing, leases).",
				&p->stats.cas);
	rc |= rp_metric_counter(ps, "rdmapool_pool_cas_failed_total", l,
				"Compare-and-swap operations that failed or found the word changed "
				"(a race lost to another client).",
				&p->stats.cas_failed);
	rc |= rp_metric_counter(ps, "rdmapool_pool_retries_total", l,
				"Reads and writes tried once more on a new connection after theirs "
				"broke (a timeout, a reset).",
				&p->stats.retries);
	rc |= rp_metric_gauge(ps, "rdmapool_pool_connected", l,
			      "1 while the pool is connected.", connected, p);
	rc |= rp_metric_gauge(ps, "rdmapool_pool_stale", l,
			      "1 while the pool holds out-of-date copies (replicas) until rebuilt.",
			      stale, p);
	return rc ? -ENOMEM : 0;
}

int rp_poolset_metrics(struct rp_poolset *ps)
{
	for (size_t k = 0; k < ps->npeers; k++) {
		int rc = one_pool(ps, &ps->pools[ps->ids[k]]);
		if (rc < 0) {
			rp_metrics_drop(ps);
			return rc;
		}
	}
	return 0;
}
