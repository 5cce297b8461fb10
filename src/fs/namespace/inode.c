/* The inode table and conversions of inode attributes. */
#include "config.h"
#include "../fs_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct rp_itable *t, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (t->nb - 1);
}

struct rp_inode *itable_get(struct rp_itable *t, uint64_t ino)
{
	if (!t->nb)
		return NULL;
	for (struct rp_inode *in = t->b[slot_of(t, ino)]; in; in = in->hnext)
		if (in->ino == ino)
			return in;
	return NULL;
}

int itable_put(struct rp_itable *t, struct rp_inode *in)
{
	if (t->n + 1 > t->nb) {
		size_t nb = t->nb ? t->nb * 2 : 1024;
		struct rp_inode **b = calloc(nb, sizeof(*b));
		if (!b)
			return -ENOMEM;
		struct rp_itable nt = { b, nb, t->n };
		for (size_t i = 0; i < t->nb; i++) {
			struct rp_inode *x = t->b[i], *next;
			for (; x; x = next) {
				next = x->hnext;
				size_t s = slot_of(&nt, x->ino);
				x->hnext = b[s];
				b[s] = x;
			}
		}
		free(t->b);
		*t = nt;
	}
	size_t s = slot_of(t, in->ino);
	in->hnext = t->b[s];
	t->b[s] = in;
	t->n++;
	return 0;
}

void itable_remove(struct rp_itable *t, uint64_t ino)
{
	if (!t->nb)
		return;
	for (struct rp_inode **pp = &t->b[slot_of(t, ino)]; *pp; pp = &(*pp)->hnext) {
		if ((*pp)->ino == ino) {
			*pp = (*pp)->hnext;
			t->n--;
			return;
		}
	}
}

struct rp_inode *inode_new(uint64_t ino, uint32_t mode)
{
	struct rp_inode *in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	in->ino = ino;
	in->mode = mode;
	in->tail_stale = true; /* not known after a replay: zeroed before the file grows */
	if (S_ISDIR(mode)) {
		in->dir = dir_new();
		if (!in->dir) {
			free(in);
			return NULL;
		}
	}
	pthread_rwlock_init(&in->io, NULL);
	return in;
}

void inode_destroy(struct rp_inode *in)
{
	if (!in)
		return;
	dir_free(in->dir);
	free(in->target);
	emap_free(&in->map);
	for (size_t i = 0; i < in->nxattrs; i++) {
		free(in->xattrs[i].name);
		free(in->xattrs[i].value);
	}
	free(in->xattrs);
	pthread_rwlock_destroy(&in->io);
	free(in);
}

void inode_to_attr(const struct rp_inode *in, uint32_t block_size, struct rp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = in->ino;
	a->mode = in->mode;
	a->nlink = in->nlink;
	a->uid = in->uid;
	a->gid = in->gid;
	a->size = S_ISLNK(in->mode) && in->target ? strlen(in->target) : in->size;
	/* a directory's size as tmpfs counts it: 20 bytes an entry, . and ..
	 * included (programs compare with it; POSIX says nothing) */
	if (S_ISDIR(in->mode))
		a->size = 20 * ((in->dir ? in->dir->live : 0) + 2);
	a->rdev = in->rdev;
	a->atime = in->atime;
	a->mtime = in->mtime;
	a->ctime = in->ctime;
	a->generation = in->gen;
	/* st_blocks counts 512-byte units of blocks actually held */
	a->blocks = S_ISREG(in->mode) ? emap_blocks(&in->map) * (block_size / 512) : 0;
}

void rp_attr_to_stat(const struct rp_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_blksize = 4096;
	st->st_rdev = a->rdev;
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}
