/* The metrics registry: a list of what each layer registered, rendered in
 * the Prometheus text format. The list lock is taken by registration, drop
 * and rendering only, never by an update. */
#include "config.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/metrics.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { COUNTER, GAUGE, HIST };

struct metric {
	struct metric *next;
	void *owner;
	enum kind kind;
	const char *name, *help;
	char *labels; /* NULL: none */
	_Atomic uint64_t *value;
	double (*read)(void *arg);
	void *arg;
	struct rp_hist *hist;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct metric *head, **tail = &head;

void rp_hist_observe(struct rp_hist *h, uint64_t ns)
{
	uint64_t us = (ns + 999) / 1000;
	unsigned i = 0;
	/* the first bucket whose bound 2^i us holds it */
	while (i < RP_HIST_BUCKETS && us > (1ull << i))
		i++;
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

static double bound_seconds(unsigned i)
{
	return (double)(1ull << i) / 1e6;
}

double rp_hist_quantile(const struct rp_hist *h, double q)
{
	uint64_t n[RP_HIST_BUCKETS + 1], total = 0;
	for (unsigned i = 0; i <= RP_HIST_BUCKETS; i++)
		total += n[i] = atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
	if (total == 0)
		return 0;
	uint64_t want = (uint64_t)(q * (double)total + 0.5), seen = 0;
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < RP_HIST_BUCKETS; i++)
		if ((seen += n[i]) >= want)
			return bound_seconds(i);
	return bound_seconds(RP_HIST_BUCKETS - 1) * 2; /* beyond the last bound */
}

static int add(struct metric *m, const char *labels)
{
	if (labels && *labels && !(m->labels = strdup(labels))) {
		free(m);
		return -ENOMEM;
	}
	rp_mutex_lock(&mu, RP_LK_METRICS);
	*tail = m;
	tail = &m->next;
	rp_mutex_unlock(&mu);
	return 0;
}

static struct metric *new_metric(void *owner, enum kind k, const char *name, const char *help)
{
	struct metric *m = calloc(1, sizeof(*m));
	if (m)
		*m = (struct metric){ .owner = owner, .kind = k, .name = name, .help = help };
	return m;
}

int rp_metric_counter(void *owner, const char *name, const char *labels, const char *help,
		      _Atomic uint64_t *value)
{
	struct metric *m = new_metric(owner, COUNTER, name, help);
	if (!m)
		return -ENOMEM;
	m->value = value;
	return add(m, labels);
}

int rp_metric_gauge(void *owner, const char *name, const char *labels, const char *help,
		    double (*read)(void *arg), void *arg)
{
	struct metric *m = new_metric(owner, GAUGE, name, help);
	if (!m)
		return -ENOMEM;
	m->read = read;
	m->arg = arg;
	return add(m, labels);
}

int rp_metric_hist(void *owner, const char *name, const char *labels, const char *help,
		   struct rp_hist *h)
{
	struct metric *m = new_metric(owner, HIST, name, help);
	if (!m)
		return -ENOMEM;
	m->hist = h;
	return add(m, labels);
}

void rp_metrics_drop(void *owner)
{
	rp_mutex_lock(&mu, RP_LK_METRICS);
	struct metric **pp = &head;
	while (*pp) {
		struct metric *m = *pp;
		if (m->owner == owner) {
			*pp = m->next;
			free(m->labels);
			free(m);
		} else {
			pp = &m->next;
		}
	}
	tail = pp;
	rp_mutex_unlock(&mu);
}

/* ---- rendering ---- */

struct out {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		if (o->failed)
			return;
		va_start(ap, fmt);
		int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap * 2 + (n > 0 ? (size_t)n : 0);
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->failed = true;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
}

/* name{labels,extra} with the commas right whatever is empty */
static void series(struct out *o, const char *name, const char *suffix, const char *labels,
		   const char *extra)
{
	bool l = labels && *labels, e = extra && *extra;
	put(o, "%s%s", name, suffix);
	if (l || e)
		put(o, "{%s%s%s}", l ? labels : "", l && e ? "," : "", e ? extra : "");
}

static void render_hist(struct out *o, const struct metric *m)
{
	uint64_t cum = 0;
	char le[32];
	for (unsigned i = 0; i <= RP_HIST_BUCKETS; i++) {
		cum += atomic_load_explicit(&m->hist->bucket[i], memory_order_relaxed);
		if (i < RP_HIST_BUCKETS)
			snprintf(le, sizeof(le), "le=\"%.9g\"", bound_seconds(i));
		else
			snprintf(le, sizeof(le), "le=\"+Inf\"");
		series(o, m->name, "_bucket", m->labels, le);
		put(o, " %llu\n", (unsigned long long)cum);
	}
	series(o, m->name, "_sum", m->labels, NULL);
	put(o, " %.9f\n", (double)atomic_load(&m->hist->sum_ns) / 1e9);
	series(o, m->name, "_count", m->labels, NULL);
	put(o, " %llu\n", (unsigned long long)cum);
}

static void render_one(struct out *o, const struct metric *m)
{
	switch (m->kind) {
	case COUNTER:
		series(o, m->name, "", m->labels, NULL);
		put(o, " %llu\n", (unsigned long long)atomic_load(m->value));
		break;
	case GAUGE:
		series(o, m->name, "", m->labels, NULL);
		put(o, " %.17g\n", m->read(m->arg));
		break;
	case HIST:
		render_hist(o, m);
		break;
	}
}

char *rp_metrics_render(size_t *len)
{
	static const char *type[] = { "counter", "gauge", "histogram" };
	struct out o = { .cap = 16384 };
	if (!(o.buf = malloc(o.cap)))
		return NULL;
	o.buf[0] = '\0';
	rp_mutex_lock(&mu, RP_LK_METRICS);
	/* one HELP/TYPE per name, then every series of that name together */
	for (struct metric *m = head; m; m = m->next) {
		bool first = true;
		for (struct metric *p = head; p != m && first; p = p->next)
			first = strcmp(p->name, m->name) != 0;
		if (!first)
			continue;
		put(&o, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, type[m->kind]);
		for (struct metric *s = m; s; s = s->next)
			if (strcmp(s->name, m->name) == 0)
				render_one(&o, s);
	}
	rp_mutex_unlock(&mu);
	if (o.failed) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}
