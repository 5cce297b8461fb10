/* Directories: a hash of names for lookup, and entries kept in the order of
 * their cookies so that readdir offsets stay valid while entries come and go
 * (telldir/seekdir stability). */
#include "config.h"
#include "../fs_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_COOKIE 3 /* 1 and 2 are "." and ".." */

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

struct rp_dir *dir_new(void)
{
	struct rp_dir *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->nbuckets = 16;
	d->buckets = malloc(d->nbuckets * sizeof(*d->buckets));
	if (!d->buckets) {
		free(d);
		return NULL;
	}
	memset(d->buckets, 0xff, d->nbuckets * sizeof(*d->buckets));
	d->next_cookie = FIRST_COOKIE;
	return d;
}

void dir_free(struct rp_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->ents[i].name);
	free(d->ents);
	free(d->buckets);
	free(d);
}

/* Rebuild: drop tombstones (cookies kept) and size the hash to the entries. */
static int rebuild(struct rp_dir *d, size_t nbuckets)
{
	int32_t *b = malloc(nbuckets * sizeof(*b));
	if (!b)
		return -ENOMEM;
	memset(b, 0xff, nbuckets * sizeof(*b));
	size_t w = 0;
	for (size_t i = 0; i < d->n; i++) {
		if (!d->ents[i].name)
			continue;
		d->ents[w] = d->ents[i];
		size_t h = d->ents[w].hash & (nbuckets - 1);
		d->ents[w].next = b[h];
		b[h] = (int32_t)w;
		w++;
	}
	d->n = w;
	free(d->buckets);
	d->buckets = b;
	d->nbuckets = nbuckets;
	return 0;
}

struct rp_dirent *dir_find(struct rp_dir *d, const char *name)
{
	uint32_t h = hash_name(name);
	for (int32_t i = d->buckets[h & (d->nbuckets - 1)]; i >= 0; i = d->ents[i].next)
		if (d->ents[i].hash == h && d->ents[i].name && strcmp(d->ents[i].name, name) == 0)
			return &d->ents[i];
	return NULL;
}

int dir_add(struct rp_dir *d, const char *name, uint64_t ino)
{
	if (dir_find(d, name))
		return -EEXIST;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct rp_dirent *e = realloc(d->ents, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		d->ents = e;
		d->cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	struct rp_dirent *e = &d->ents[d->n];
	e->name = copy;
	e->ino = ino;
	e->cookie = d->next_cookie++;
	e->hash = hash_name(name);
	size_t h = e->hash & (d->nbuckets - 1);
	e->next = d->buckets[h];
	d->buckets[h] = (int32_t)d->n;
	d->n++;
	d->live++;
	if (d->live > d->nbuckets)
		return rebuild(d, d->nbuckets * 4);
	return 0;
}

int dir_del(struct rp_dir *d, const char *name)
{
	struct rp_dirent *e = dir_find(d, name);
	if (!e)
		return -ENOENT;
	free(e->name);
	e->name = NULL; /* a tombstone keeps positions stable until a rebuild */
	d->live--;
	if (d->n > 64 && d->live < d->n / 2)
		return rebuild(d, d->nbuckets);
	return 0;
}

size_t dir_seek(const struct rp_dir *d, uint64_t cookie)
{
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->ents[mid].cookie <= cookie)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo < d->n && !d->ents[lo].name)
		lo++;
	return lo;
}
