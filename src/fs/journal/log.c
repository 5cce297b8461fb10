/* The metadata log: records appended to a chain of pool segments.
 *
 * Appends go to a pending buffer; a flush writes it with one batch of
 * one-sided writes and only then frees the blocks the flushed records
 * released. A segment is zeroed when allocated, so whatever it held before
 * can never parse as a record, and replay stops at the first record that is
 * not the next one of this epoch. Every segment ends with room for the LINK
 * record that names its successor; a spare successor is kept allocated so
 * that deleting files still works when the pools are full. A SPARE record
 * names each spare in the log as it is taken, and the spare is the log's
 * from then on: freed (or held for the readers) with its segments when the
 * log is retired, never alone, so a crash leaks it no more than them (the
 * next mount finds it in the log) and no replay frees a spare twice. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/log.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LINK_RESERVE 64

int fs_alloc_segment(struct rp_fs *fs, struct rp_extent *out)
{
	int rc = rp_poolset_alloc(fs->ps, rp_poolset_pick(fs->ps, fs->alloc_counter++), SEG_BLOCKS, out);
	if (rc < 0)
		return rc;
	space_taken(fs, out->count);
	const struct rp_pool_sb *sb = &fs->ps->pools[out->pool].sb;
	rc = fs_zero_range(fs, out->pool, rp_block_offset(sb, out->block),
			   (uint64_t)out->count * fs->block_size);
	if (rc < 0)
		rp_pool_free(fs->ps, out);
	return rc;
}

static int pend_add(struct rp_logw *w, const uint8_t *b, size_t len);

/* A SPARE record naming w->spare, in the transaction under way (no end
 * flag: it stands with the records around it). */
static int name_spare(struct rp_logw *w)
{
	uint8_t rec[LINK_RESERVE];
	struct rp_rec sr = { .type = REC_SPARE, .seq = w->seq, .ext = w->spare };
	ssize_t len = rec_encode(&sr, w->epoch, w->uuid, rec, sizeof(rec));
	int rc = len < 0 ? (int)len : pend_add(w, rec, (size_t)len);
	if (rc == 0) {
		w->seq++;
		w->spare_named = true;
	}
	return rc;
}

int log_init(struct rp_fs *fs, struct rp_logw *w, uint64_t epoch)
{
	memset(w, 0, sizeof(*w));
	w->epoch = epoch;
	memcpy(w->uuid, fs->vol.uuid, 16);
	w->scratch = malloc(REC_MAX);
	if (!w->scratch)
		return -ENOMEM;
	int rc = fs_alloc_segment(fs, &w->cur);
	if (rc < 0) {
		free(w->scratch);
		w->scratch = NULL;
		return rc;
	}
	w->cur_size = w->cur.count * fs->block_size;
	rc = extvec_push(&w->segs, &w->cur);
	if (rc < 0)
		return rc;
	w->have_spare = fs_alloc_segment(fs, &w->spare) == 0;
	if (w->have_spare && (rc = name_spare(w)) < 0)
		log_discard(fs, w, true); /* (never the volume's: all of it goes) */
	return rc;
}

int log_release_spare(struct rp_fs *fs, struct rp_logw *w)
{
	if (!w->have_spare || !w->spare_named)
		return 0; /* (none, or none the log names: log_discard frees it) */
	/* a transaction of its own: replay must see it whole to forget the
	 * spare */
	struct rp_rec r = { .type = REC_SPARE, .flags = REC_F_END };
	int rc = log_append(fs, w, &r);
	if (rc == 0)
		rc = log_flush(fs, w);
	if (rc < 0)
		return rc; /* (it stays the log's) */
	if (!w->have_spare)
		return 0; /* (the append linked it and found no new one) */
	rp_pool_free(fs->ps, &w->spare);
	w->have_spare = w->spare_named = false;
	return 0;
}

void log_discard(struct rp_fs *fs, struct rp_logw *w, bool free_segments)
{
	for (size_t i = 0; i < w->npend; i++)
		free(w->pend[i].buf);
	free(w->pend);
	w->pend = NULL;
	w->npend = w->pend_bytes = 0;
	/* (one no record names is no one's to free later) */
	if (w->have_spare && (free_segments || !w->spare_named))
		rp_pool_free(fs->ps, &w->spare);
	w->have_spare = w->spare_named = false;
	if (free_segments && w->segs.n)
		rp_pool_free_many(fs->ps, w->segs.v, w->segs.n);
	extvec_free(&w->segs);
	free(w->scratch);
	w->scratch = NULL;
}

static int pend_add(struct rp_logw *w, const uint8_t *b, size_t len)
{
	struct rp_pend *p = w->npend ? &w->pend[w->npend - 1] : NULL;
	if (!p || p->seg.pool != w->cur.pool || p->seg.block != w->cur.block) {
		struct rp_pend *np = realloc(w->pend, (w->npend + 1) * sizeof(*np));
		if (!np)
			return -ENOMEM;
		w->pend = np;
		p = &w->pend[w->npend++];
		memset(p, 0, sizeof(*p));
		p->seg = w->cur;
		p->pos = w->cur_pos;
	}
	if (p->len + len > p->cap) {
		size_t cap = p->cap ? p->cap : 4096;
		while (cap < p->len + len)
			cap *= 2;
		uint8_t *nb = realloc(p->buf, cap);
		if (!nb)
			return -ENOMEM;
		p->buf = nb;
		p->cap = cap;
	}
	memcpy(p->buf + p->len, b, len);
	p->len += len;
	w->cur_pos += (uint32_t)len;
	w->pend_bytes += len;
	return 0;
}

void log_mark(const struct rp_logw *w, struct rp_logmark *m)
{
	m->npend = w->npend;
	m->last_len = w->npend ? w->pend[w->npend - 1].len : 0;
	m->pend_bytes = w->pend_bytes;
	m->nsegs = w->segs.n;
	m->cur = w->cur;
	m->spare = w->spare;
	m->have_spare = w->have_spare;
	m->spare_named = w->spare_named;
	m->cur_pos = w->cur_pos;
	m->cur_size = w->cur_size;
	m->seq = w->seq;
}

static bool same_ext(const struct rp_extent *a, const struct rp_extent *b)
{
	return a->pool == b->pool && a->block == b->block && a->count == b->count;
}

void log_rollback(struct rp_fs *fs, struct rp_logw *w, const struct rp_logmark *m)
{
	/* Segments taken since the mark go back: the old spare stays spare,
	 * spares allocated since are freed. */
	for (size_t i = m->nsegs; i < w->segs.n; i++)
		if (!(m->have_spare && same_ext(&w->segs.v[i], &m->spare)))
			rp_pool_free(fs->ps, &w->segs.v[i]);
	if (w->have_spare && !(m->have_spare && same_ext(&w->spare, &m->spare)))
		rp_pool_free(fs->ps, &w->spare);
	w->segs.n = m->nsegs;
	w->spare = m->spare;
	w->have_spare = m->have_spare;
	w->spare_named = m->spare_named;
	for (size_t i = m->npend; i < w->npend; i++)
		free(w->pend[i].buf);
	w->npend = m->npend;
	if (w->npend)
		w->pend[w->npend - 1].len = m->last_len;
	w->pend_bytes = m->pend_bytes;
	w->cur = m->cur;
	w->cur_pos = m->cur_pos;
	w->cur_size = m->cur_size;
	w->seq = m->seq;
}

int log_append(struct rp_fs *fs, struct rp_logw *w, struct rp_rec *r)
{
	r->seq = w->seq;
	ssize_t len = rec_encode(r, w->epoch, w->uuid, w->scratch, REC_MAX);
	if (len < 0)
		return (int)len;
	if (w->cur_pos + (size_t)len + LINK_RESERVE > w->cur_size) {
		if (!w->have_spare && fs_alloc_segment(fs, &w->spare) == 0) {
			w->have_spare = true;
			w->spare_named = false; /* (linked at once below) */
		}
		if (!w->have_spare)
			return -ENOSPC;
		/* the record goes after the next spare's SPARE record, and
		 * leaves room for the LINK at the end */
		if ((size_t)len + 2 * LINK_RESERVE > (size_t)w->spare.count * fs->block_size)
			return -E2BIG;
		uint8_t link[LINK_RESERVE];
		struct rp_rec lr = { .type = REC_LINK, .seq = w->seq, .ext = w->spare };
		ssize_t ll = rec_encode(&lr, w->epoch, w->uuid, link, sizeof(link));
		int rc = ll < 0 ? (int)ll : pend_add(w, link, (size_t)ll);
		if (rc < 0)
			return rc;
		w->seq++;
		w->cur = w->spare;
		w->cur_pos = 0;
		w->cur_size = w->cur.count * fs->block_size;
		w->have_spare = w->spare_named = false;
		if ((rc = extvec_push(&w->segs, &w->cur)) < 0)
			return rc;
		/* the next spare; without one, appends go on until this segment fills */
		w->have_spare = fs_alloc_segment(fs, &w->spare) == 0;
		if (w->have_spare && (rc = name_spare(w)) < 0)
			return rc;
		r->seq = w->seq;
		len = rec_encode(r, w->epoch, w->uuid, w->scratch, REC_MAX);
		if (len < 0)
			return (int)len;
	}
	int rc = pend_add(w, w->scratch, (size_t)len);
	if (rc == 0) {
		w->seq++;
		rp_count(&fs->stats.log_records, 1);
		rp_count(&fs->stats.log_bytes, (uint64_t)len);
	}
	return rc;
}

int log_flush(struct rp_fs *fs, struct rp_logw *w)
{
	int rc = 0;
	if (w->npend) {
		struct rp_buf *b;
		/* a writer that was taken over must not write into a log the
		 * new holder may have freed and reused */
		if ((rc = lease_fence(fs)) < 0)
			return rc;
		if ((rc = bufpool_get(fs, &b, true)) < 0)
			return rc;
		size_t i = 0;
		while (i < w->npend && rc == 0) {
			struct rp_io ios[16];
			size_t n = 0, used = 0;
			while (i < w->npend && n < 16 && used + w->pend[i].len <= rp_buf_len(b)) {
				struct rp_pend *p = &w->pend[i];
				const struct rp_pool_sb *sb = &fs->ps->pools[p->seg.pool].sb;
				memcpy((uint8_t *)rp_buf_data(b) + used, p->buf, p->len);
				ios[n++] = (struct rp_io){ .pool = p->seg.pool,
							   .off = rp_block_offset(sb, p->seg.block) + p->pos,
							   .buf = b, .buf_off = used, .len = (uint32_t)p->len };
				used += p->len;
				i++;
			}
			if (n == 0) {
				rc = -E2BIG; /* a chunk larger than a buffer: cannot happen */
				break;
			}
			rc = rp_poolset_rw(fs->ps, RP_OP_WRITE, ios, n);
		}
		bufpool_put(fs, b);
		if (rc < 0) {
			rp_err("metadata log flush failed: %s", strerror(-rc));
			return rc;
		}
		rp_count(&fs->stats.log_flushes, 1); /* one write for every record pending */
		for (size_t k = 0; k < w->npend; k++)
			free(w->pend[k].buf);
		w->npend = 0;
		w->pend_bytes = 0;
	}
	/* The records releasing these blocks are durable now: they go back
	 * once no read-only mount can still see them (held.c). */
	if (fs->deferred.n && (rc = held_add_deferred(fs, w)) < 0)
		return rc;
	held_release(fs);
	return 0;
}

bool extent_in_pools(struct rp_poolset *ps, const struct rp_extent *e)
{
	return rp_poolset_has(ps, e->pool) && e->count > 0 && e->block + e->count > e->block &&
	       e->block + e->count <= rp_pool_nblocks(ps, e->pool);
}

void log_tail_init(struct rp_logtail *t, const struct rp_volrec *vol)
{
	memset(t, 0, sizeof(*t));
	t->epoch = vol->epoch;
	memcpy(t->uuid, vol->uuid, 16);
	t->block_size = vol->block_size;
	t->seg = vol->head;
}

/* Keep a raw record until its transaction is complete. */
static int txn_keep(uint8_t **txn, size_t *len, size_t *cap, const uint8_t *rec, size_t n)
{
	if (*len + n > *cap) {
		size_t c = *cap ? *cap * 2 : 65536;
		while (c < *len + n)
			c *= 2;
		uint8_t *nt = realloc(*txn, c);
		if (!nt)
			return -ENOMEM;
		*txn = nt;
		*cap = c;
	}
	memcpy(*txn + *len, rec, n);
	*len += n;
	return 0;
}

static int txn_apply(const struct rp_logtail *t, const uint8_t *txn, size_t len,
		     int (*apply)(void *, const struct rp_rec *), void *arg, uint64_t *records)
{
	for (size_t off = 0; off < len;) {
		struct rp_rec r;
		ssize_t n = rec_decode(txn + off, len - off, t->epoch, t->uuid, &r);
		if (n < 0)
			return -EUCLEAN;
		int rc = apply(arg, &r);
		if (rc < 0)
			return rc;
		(*records)++;
		off += (size_t)n;
	}
	return 0;
}

int log_tail_read(struct rp_poolset *ps, struct rp_logtail *t,
		  int (*apply)(void *, const struct rp_rec *), void *arg, struct rp_extvec *segs,
		  uint64_t *records)
{
	struct rp_extent seg = t->seg;
	size_t pos = t->pos;
	uint64_t expect = t->seq;
	uint8_t *buf = NULL, *txn = NULL;
	size_t txn_len = 0, txn_cap = 0;
	int rc = 0;

	*records = 0;
	if (segs && t->pos == 0 && t->seq == 0 && (rc = extvec_push(segs, &seg)) < 0)
		return rc;
	while (rc == 0) {
		if (!rp_poolset_has(ps, seg.pool)) {
			rp_err("metadata log: a segment is on peer %u, which the cluster file does "
			       "not list", seg.pool);
			rc = -ENODEV;
			break;
		}
		if (!extent_in_pools(ps, &seg)) {
			rp_err("metadata log: segment %u/%llu+%u is outside the pools", seg.pool,
			       (unsigned long long)seg.block, seg.count);
			rc = -EUCLEAN;
			break;
		}
		size_t size = (size_t)seg.count * t->block_size;
		uint8_t *nb = realloc(buf, size);
		if (!nb) {
			rc = -ENOMEM;
			break;
		}
		buf = nb;
		const struct rp_pool_sb *sb = &ps->pools[seg.pool].sb;
		if ((rc = rp_pool_read_data(ps, seg.pool, rp_block_offset(sb, seg.block), buf, size)) < 0)
			break;
		bool linked = false;
		while (pos + REC_HDR <= size) {
			struct rp_rec r;
			ssize_t n = rec_decode(buf + pos, size - pos, t->epoch, t->uuid, &r);
			if (n < 0 || r.seq != expect)
				break; /* the end of the log, for now */
			expect++;
			if (r.type == REC_LINK) {
				seg = r.ext;
				pos = 0;
				linked = true;
				if (segs)
					rc = extvec_push(segs, &seg);
				break;
			}
			if ((rc = txn_keep(&txn, &txn_len, &txn_cap, buf + pos, (size_t)n)) < 0)
				break;
			pos += (size_t)n;
			if (r.flags & REC_F_END) {
				if ((rc = txn_apply(t, txn, txn_len, apply, arg, records)) < 0)
					break;
				txn_len = 0;
				/* the cursor moves past complete transactions only */
				t->seg = seg;
				t->pos = pos;
				t->seq = expect;
			}
		}
		if (!linked)
			break;
		if (txn_len == 0) {
			/* a LINK between transactions: start the next read there */
			t->seg = seg;
			t->pos = 0;
			t->seq = expect;
		}
	}
	free(buf);
	free(txn);
	return rc;
}

int log_replay(struct rp_poolset *ps, const struct rp_volrec *vol,
	       int (*apply)(void *, const struct rp_rec *), void *arg, struct rp_extvec *segs,
	       uint64_t *records, struct rp_logtail *end)
{
	struct rp_logtail t;
	log_tail_init(&t, vol);
	int rc = log_tail_read(ps, &t, apply, arg, segs, records);
	if (end)
		*end = t;
	return rc;
}
