/* A file's block map and lists of pool extents. */
#include "config.h"
#include "../fs_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int extvec_push(struct rp_extvec *ev, const struct rp_extent *e)
{
	if (ev->n == ev->cap) {
		size_t cap = ev->cap ? ev->cap * 2 : 16;
		struct rp_extent *v = realloc(ev->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ev->v = v;
		ev->cap = cap;
	}
	ev->v[ev->n++] = *e;
	return 0;
}

void extvec_free(struct rp_extvec *ev)
{
	free(ev->v);
	ev->v = NULL;
	ev->n = ev->cap = 0;
}

void emap_free(struct rp_emap *m)
{
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

size_t emap_find(const struct rp_emap *m, uint64_t fblock)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->v[mid].fblock + m->v[mid].count <= fblock)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int reserve(struct rp_emap *m, size_t extra)
{
	if (m->n + extra <= m->cap)
		return 0;
	size_t cap = m->cap ? m->cap * 2 : 4;
	while (cap < m->n + extra)
		cap *= 2;
	struct rp_fext *v = realloc(m->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->v = v;
	m->cap = cap;
	return 0;
}

static bool adjacent(const struct rp_fext *a, const struct rp_fext *b)
{
	return a->pool == b->pool && a->fblock + a->count == b->fblock &&
	       a->pblock + a->count == b->pblock && (uint64_t)a->count + b->count <= UINT32_MAX;
}

int emap_insert(struct rp_emap *m, const struct rp_fext *e)
{
	if (e->count == 0)
		return 0;
	size_t i = emap_find(m, e->fblock);
	if (i < m->n && m->v[i].fblock < e->fblock + e->count)
		return -EEXIST; /* overlaps a mapped run */
	if (i > 0 && adjacent(&m->v[i - 1], e)) {
		m->v[i - 1].count += e->count;
		if (i < m->n && adjacent(&m->v[i - 1], &m->v[i])) {
			m->v[i - 1].count += m->v[i].count;
			memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(m->v[0]));
			m->n--;
		}
		return 0;
	}
	if (i < m->n && adjacent(e, &m->v[i])) {
		m->v[i].fblock = e->fblock;
		m->v[i].pblock = e->pblock;
		m->v[i].count += e->count;
		return 0;
	}
	if (reserve(m, 1) < 0)
		return -ENOMEM;
	memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(m->v[0]));
	m->v[i] = *e;
	m->n++;
	return 0;
}

int emap_remove(struct rp_emap *m, uint64_t fstart, uint64_t count, struct rp_extvec *freed)
{
	uint64_t fend = fstart + count;
	if (count == 0)
		return 0;
	if (fend < fstart)
		fend = UINT64_MAX;
	size_t i = emap_find(m, fstart);
	while (i < m->n && m->v[i].fblock < fend) {
		struct rp_fext *x = &m->v[i];
		uint64_t xs = x->fblock, xe = x->fblock + x->count;
		uint64_t cs = xs > fstart ? xs : fstart, ce = xe < fend ? xe : fend;
		struct rp_extent gone = { .pool = x->pool, .block = x->pblock + (cs - xs),
					  .count = (uint32_t)(ce - cs) };
		if (freed && extvec_push(freed, &gone) < 0)
			return -ENOMEM;
		if (cs == xs && ce == xe) {
			memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(m->v[0]));
			m->n--;
		} else if (cs == xs) {
			x->fblock = ce;
			x->pblock += ce - xs;
			x->count = (uint32_t)(xe - ce);
			i++;
		} else if (ce == xe) {
			x->count = (uint32_t)(cs - xs);
			i++;
		} else {
			/* the hole splits the run in two */
			if (reserve(m, 1) < 0)
				return -ENOMEM;
			x = &m->v[i];
			struct rp_fext tail = { .fblock = ce, .pblock = x->pblock + (ce - xs),
						.pool = x->pool, .count = (uint32_t)(xe - ce) };
			x->count = (uint32_t)(cs - xs);
			memmove(&m->v[i + 2], &m->v[i + 1], (m->n - i - 1) * sizeof(m->v[0]));
			m->v[i + 1] = tail;
			m->n++;
			i += 2;
		}
	}
	return 0;
}

uint64_t emap_blocks(const struct rp_emap *m)
{
	uint64_t n = 0;
	for (size_t i = 0; i < m->n; i++)
		n += m->v[i].count;
	return n;
}
