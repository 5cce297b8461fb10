/* Applying log records to the in-memory namespace. The same code runs when a
 * volume is replayed at mount and when a live operation commits, so what is
 * in memory is always what the log says. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/log.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *dup_name(const char *name, uint32_t len)
{
	char *s = malloc(len + 1);
	if (s) {
		memcpy(s, name, len);
		s[len] = '\0';
	}
	return s;
}

static int xattr_set(struct rp_inode *in, const char *name, uint32_t nlen, const void *val,
		     uint32_t vlen)
{
	void *v = malloc(vlen ? vlen : 1);
	if (!v)
		return -ENOMEM;
	memcpy(v, val, vlen);
	for (size_t i = 0; i < in->nxattrs; i++) {
		if (strlen(in->xattrs[i].name) == nlen && memcmp(in->xattrs[i].name, name, nlen) == 0) {
			free(in->xattrs[i].value);
			in->xattrs[i].value = v;
			in->xattrs[i].len = vlen;
			return 0;
		}
	}
	struct rp_xattr *nx = realloc(in->xattrs, (in->nxattrs + 1) * sizeof(*nx));
	char *n = dup_name(name, nlen);
	if (!nx || !n) {
		free(v);
		free(n);
		if (nx)
			in->xattrs = nx;
		return -ENOMEM;
	}
	in->xattrs = nx;
	in->xattrs[in->nxattrs++] = (struct rp_xattr){ .name = n, .value = v, .len = vlen };
	return 0;
}

static int xattr_del(struct rp_inode *in, const char *name, uint32_t nlen)
{
	for (size_t i = 0; i < in->nxattrs; i++) {
		if (strlen(in->xattrs[i].name) == nlen && memcmp(in->xattrs[i].name, name, nlen) == 0) {
			free(in->xattrs[i].name);
			free(in->xattrs[i].value);
			in->xattrs[i] = in->xattrs[--in->nxattrs];
			return 0;
		}
	}
	return -ENODATA;
}

/* A pool the volume's data is on: a listed peer that answers must still hold
 * that very pool (not one formatted since under the same peer id). With
 * replicas, a ring pool that holds another pool is a lost copy: stale (in
 * memory; a read-write mount records it), until a later record names the
 * pool it holds now (it was rebuilt). */
static int pool_identity(struct rp_fs *fs, uint32_t id, const uint8_t uuid[16])
{
	if (id >= fs->ps->n)
		return 0; /* not listed: the extents on it say so, if any */
	struct rp_pool *p = &fs->ps->pools[id];
	bool differs = fs_pool_holds_other(p, uuid);
	int ri = rp_poolset_replicated(fs->ps) ? place_ring_index(&fs->place.vol, id) : -1;
	if (differs && ri >= 0) {
		p->stale = true; /* said after replay, if no later record clears it */
		rp_pool_identity_moved(fs->ps, id); /* (not ours: no missed frees there) */
	} else if (differs) {
		rp_err("peer %u holds another pool than the one this volume's data is on (it "
		       "was formatted again, or restarted without its backing file)", id);
		fs->missing_peer = id;
		return -ESTALE;
	} else if (ri >= 0 && p->stale && !(fs->place.vol.stale & (1u << ri))) {
		p->stale = false;
	}
	if (fs->pool_ids) {
		fs->pool_ids[id].known = true;
		memcpy(fs->pool_ids[id].uuid, uuid, 16);
	}
	return 0;
}

int state_apply(struct rp_fs *fs, const struct rp_rec *r, struct rp_extvec *freed)
{
	struct rp_inode *in = NULL, *child;
	char *name;
	int rc = 0;

	switch (r->type) {
	case REC_ATTR:
		in = itable_get(&fs->it, r->ino);
		if (in && (in->mode & S_IFMT) != (r->mode & S_IFMT))
			return -EUCLEAN;
		if (!in) {
			in = inode_new(r->ino, r->mode);
			if (!in)
				return -ENOMEM;
			if ((rc = itable_put(&fs->it, in)) < 0) {
				inode_destroy(in);
				return rc;
			}
		}
		in->mode = r->mode;
		in->uid = r->uid;
		in->gid = r->gid;
		in->nlink = r->nlink;
		in->size = r->size;
		in->rdev = r->rdev;
		in->gen = r->gen;
		in->atime = r->atime;
		in->mtime = r->mtime;
		in->ctime = r->ctime;
		if (r->ino >= fs->next_ino)
			fs->next_ino = r->ino + 1;
		return 0;
	case REC_POOL:
		return pool_identity(fs, r->ext.pool, r->value);
	case REC_NEXT_INO:
		if (r->ino > fs->next_ino)
			fs->next_ino = r->ino;
		return 0;
	case REC_REQ:
		fs_request_note(fs, r->ino, r->ino2);
		return 0;
	case REC_INTENT:
		intent_apply(fs, r);
		return 0;
	case REC_SPARE:
		fs->log_spare_named = r->ext; /* (the last one stands) */
		return 0;
	case REC_DIRENT_ADD:
	case REC_DIRENT_DEL:
		in = itable_get(&fs->it, r->ino);
		if (!in || !in->dir)
			return -EUCLEAN;
		name = dup_name(r->name, r->name_len);
		if (!name)
			return -ENOMEM;
		if (r->type == REC_DIRENT_ADD) {
			child = itable_get(&fs->it, r->ino2);
			rc = child ? dir_add(in->dir, name, r->ino2) : -EUCLEAN;
			if (rc == 0 && child->dir)
				child->parent = r->ino;
		} else {
			rc = dir_del(in->dir, name);
		}
		free(name);
		return rc == -EEXIST || rc == -ENOENT ? -EUCLEAN : rc;
	case REC_EXT_SET:
		in = itable_get(&fs->it, r->ino);
		if (!in || !S_ISREG(in->mode))
			return -EUCLEAN;
		if (!rp_poolset_has(fs->ps, r->ext.pool)) {
			rp_err("metadata log: inode %llu has data on peer %u, which the cluster "
			       "file does not list", (unsigned long long)r->ino, r->ext.pool);
			fs->missing_peer = r->ext.pool;
			return -ENODEV;
		}
		if (!extent_in_pools(fs->ps, &r->ext) || r->fblock + r->ext.count < r->fblock) {
			/* never map (and later write or free) blocks outside a pool */
			rp_err("metadata log: inode %llu maps %u/%llu+%u, outside the pools",
			       (unsigned long long)r->ino, r->ext.pool,
			       (unsigned long long)r->ext.block, r->ext.count);
			return -EUCLEAN;
		}
		{
			struct rp_fext e = { .fblock = r->fblock, .pblock = r->ext.block,
					     .pool = r->ext.pool, .count = r->ext.count };
			rc = emap_insert(&in->map, &e);
		}
		return rc == -EEXIST ? -EUCLEAN : rc;
	case REC_EXT_CLEAR:
		in = itable_get(&fs->it, r->ino);
		if (!in || !S_ISREG(in->mode))
			return -EUCLEAN;
		return emap_remove(&in->map, r->fblock, r->count, freed);
	case REC_XATTR_SET:
	case REC_XATTR_DEL:
		in = itable_get(&fs->it, r->ino);
		if (!in)
			return -EUCLEAN;
		if (r->type == REC_XATTR_SET)
			return xattr_set(in, r->name, r->name_len, r->value, r->value_len);
		return xattr_del(in, r->name, r->name_len) < 0 ? -EUCLEAN : 0;
	case REC_SYMLINK:
		in = itable_get(&fs->it, r->ino);
		if (!in || !S_ISLNK(in->mode))
			return -EUCLEAN;
		name = dup_name(r->name, r->name_len);
		if (!name)
			return -ENOMEM;
		free(in->target);
		in->target = name;
		return 0;
	case REC_INODE_DEL:
		in = itable_get(&fs->it, r->ino);
		if (!in)
			return -EUCLEAN;
		if (freed)
			for (size_t i = 0; i < in->map.n; i++) {
				struct rp_extent e = { .pool = in->map.v[i].pool, .block = in->map.v[i].pblock,
						       .count = in->map.v[i].count };
				if ((rc = extvec_push(freed, &e)) < 0)
					return rc;
			}
		itable_remove(&fs->it, r->ino);
		inode_destroy(in);
		return 0;
	default:
		return -EUCLEAN;
	}
}

static int replay_cb(void *arg, const struct rp_rec *r)
{
	struct rp_fs *fs = arg;
	int rc = state_apply(fs, r, NULL);
	if (rc < 0)
		rp_err("metadata log: record %llu (type %u, inode %llu) does not apply: %s",
		       (unsigned long long)r->seq, r->type, (unsigned long long)r->ino, strerror(-rc));
	return rc;
}

/* The spare the log names is the log's (log.c): among its segments, for
 * whoever frees, copies or checks them, unless it was linked since (then
 * it is there already). */
static int add_named_spare(struct rp_fs *fs, struct rp_extvec *segs)
{
	const struct rp_extent *s = &fs->log_spare_named;
	if (s->count == 0)
		return 0;
	if (!rp_poolset_has(fs->ps, s->pool)) {
		fs->missing_peer = s->pool;
		return -ENODEV;
	}
	if (!extent_in_pools(fs->ps, s))
		return -EUCLEAN;
	for (size_t i = 0; i < segs->n; i++)
		if (segs->v[i].pool == s->pool && segs->v[i].block == s->block)
			return 0;
	return extvec_push(segs, s);
}

int state_load(struct rp_fs *fs, struct rp_extvec *segs, char *err, size_t errlen)
{
	uint64_t records;
	fs->next_ino = RP_ROOT_INO + 1;
	fs->missing_peer = -1;
	uint32_t tag = vol_head_tag(fs->ps, &fs->vol.head);
	bool head_copies = rp_poolset_replicated(fs->ps) &&
			   place_ring_index(&fs->place.vol, fs->vol.head.pool) >= 0;
	if (fs->vol.head_tag && tag && tag != fs->vol.head_tag && head_copies) {
		/* replaced: the log's head is read from another copy */
		fs->ps->pools[fs->vol.head.pool].stale = true;
		rp_pool_identity_moved(fs->ps, fs->vol.head.pool);
	} else if (fs->vol.head_tag && tag && tag != fs->vol.head_tag) {
		snprintf(err, errlen, "volume \"%s\": peer %u holds another pool than the one "
			 "its data is on (formatted again, or restarted without its backing file)",
			 fs->vol.name, fs->vol.head.pool);
		return -ESTALE;
	}
	/* a pool reached late (rp_pool_reach) is no copy to read until a
	 * record names it (pool_identity clears the mark then): an empty
	 * replacement read as the log's head would fail the mount */
	for (uint32_t i = 0; rp_poolset_replicated(fs->ps) && i < fs->place.vol.nring; i++)
		if (atomic_load(&fs->ps->pools[fs->place.vol.ring[i]].reached_late))
			fs->ps->pools[fs->place.vol.ring[i]].stale = true;
	free(fs->pool_ids);
	fs->pool_ids = calloc(fs->ps->n, sizeof(*fs->pool_ids));
	if (!fs->pool_ids)
		return -ENOMEM;
	fs->log_spare_named = (struct rp_extent){ 0 };
	int rc = log_replay(fs->ps, &fs->vol, replay_cb, fs, segs, &records, &fs->follow.tail);
	if (rc == 0)
		rc = add_named_spare(fs, segs);
	if (rc == -ENODEV) {
		/* a data extent names the peer, else the log segment it stopped at */
		snprintf(err, errlen, "volume \"%s\" has data on peer %lld, which the cluster "
			 "file no longer lists: put that peer back in the cluster file",
			 fs->vol.name, fs->missing_peer >= 0 ? (long long)fs->missing_peer
							     : (long long)fs->follow.tail.seg.pool);
		return rc;
	}
	if (rc == -ESTALE && fs->missing_peer >= 0) {
		snprintf(err, errlen, "volume \"%s\": peer %lld holds another pool than the one "
			 "its data is on (formatted again, or restarted without its backing file)",
			 fs->vol.name, (long long)fs->missing_peer);
		return rc;
	}
	if (rc < 0) {
		snprintf(err, errlen, "volume \"%s\": replaying the metadata log: %s", fs->vol.name,
			 strerror(-rc));
		return rc;
	}
	struct rp_inode *root = itable_get(&fs->it, RP_ROOT_INO);
	if (!root || !root->dir) {
		snprintf(err, errlen, "volume \"%s\": metadata log has no root directory", fs->vol.name);
		return -EUCLEAN;
	}
	root->parent = RP_ROOT_INO;
	for (uint32_t i = 0; i < fs->place.vol.nring && rp_poolset_replicated(fs->ps); i++)
		if (fs->ps->pools[fs->place.vol.ring[i]].stale && !(fs->place.vol.stale & (1u << i)))
			rp_warn("peer %u holds a new pool: its copies of volume \"%s\" are gone "
				"until 'rdmapool rebuild'", fs->place.vol.ring[i], fs->vol.name);
	char on[64] = "";
	size_t i = 0;
	for (size_t o = 0; i < segs->n && o + 12 < sizeof(on); i++)
		o += (size_t)snprintf(on + o, sizeof(on) - o, " %u", segs->v[i].pool);
	rp_info("volume \"%s\": %llu records replayed, %zu inodes, %zu log segments (on peers%s%s)",
		fs->vol.name, (unsigned long long)records, fs->it.n, segs->n, on,
		i < segs->n ? " ..." : "");
	return 0;
}

void state_free(struct rp_fs *fs)
{
	free(fs->pool_ids);
	fs->pool_ids = NULL;
	for (size_t i = 0; i < fs->it.nb; i++) {
		struct rp_inode *in = fs->it.b[i], *next;
		for (; in; in = next) {
			next = in->hnext;
			inode_destroy(in);
		}
	}
	free(fs->it.b);
	memset(&fs->it, 0, sizeof(fs->it));
}
