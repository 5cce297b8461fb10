/* A growing list of extents (struct rp_extent_list) that merges an extent
 * into the last one when it continues it: the kept and the unsent frees
 * are built block run by block run, mostly in order. */
#include "config.h"

#include "pool_impl.h"

#include <stdint.h>
#include <stdlib.h>

int extent_list_append(struct rp_extent_list *l, const struct rp_extent *e, size_t max)
{
	struct rp_extent *last = l->n ? &l->v[l->n - 1] : NULL;
	if (last && last->pool == e->pool && last->block + last->count == e->block &&
	    last->count <= UINT32_MAX - e->count) {
		last->count += e->count; /* (one extent, not one per word) */
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct rp_extent *nv = cap <= max ? realloc(l->v, cap * sizeof(*nv)) : NULL;
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = *e;
	return 0;
}
