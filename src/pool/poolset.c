/* Opening the pools of a cluster: connect to each peer, read and check its
 * superblock, and raw access to the regions. */
#include "config.h"
#include "pool_impl.h"
#include <rdmapool/lock_order.h>
#include <rdmapool/log.h>
#include <rdmapool/pool.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int check_sb_body(struct rp_pool *p, const struct rp_cluster *cl);

/* Whether the pool keeps a used-block count, and since which server start:
 * a count set again since (a restart counts the bitmap, which holds our
 * CASes already; a replacement pool has none of them) must not get the
 * changes held back for the one before. On a new connection, before
 * anyone else uses it. */
static int count_check(struct rp_pool *p)
{
	uint64_t w[2] = { 0, 0 }; /* the tag, the start */
	int rc = rp_conn_read(p->conn, RP_COUNT_TAG_OFFSET, w, sizeof(w));
	if (rc < 0)
		return rc;
	bool counted = w[0] == RP_COUNT_TAG;
	if (!counted || w[1] != p->count_start) {
		atomic_store(&p->count_pending, 0);
		atomic_store(&p->churn_pending, 0); /* (the start moved the stamp) */
	}
	p->count_start = w[1];
	atomic_store(&p->counted, counted);
	return 0;
}

static int check_sb(struct rp_pool *p, const struct rp_cluster *cl)
{
	int rc = check_sb_body(p, cl);
	if (rc < 0) {
		char why[sizeof(p->err)];
		snprintf(why, sizeof(why), "peer %u (%.64s:%u): %.200s", p->peer.id, p->peer.host,
			 p->peer.port, p->err);
		memcpy(p->err, why, sizeof(p->err));
	}
	return rc;
}

static int check_sb_body(struct rp_pool *p, const struct rp_cluster *cl)
{
	uint8_t buf[RP_SB_SIZE];
	struct rp_pool_sb sb;
	int rc = rp_conn_read(p->conn, 0, buf, sizeof(buf));
	if (rc < 0) {
		snprintf(p->err, sizeof(p->err), "reading the superblock: %s", strerror(-rc));
		return rc;
	}
	/* into p->sb only once it is this pool's: a foreign geometry there
	 * would be taken for the pool's own by every later adoption */
	rc = rp_sb_decode(buf, &sb);
	if (rc < 0) {
		snprintf(p->err, sizeof(p->err), "%s",
			 rc == -ENODATA ? "no pool superblock in the region"
			 : rc == -EPROTO ? "pool layout version not supported by this client"
					 : "pool superblock is damaged");
		return rc;
	}
	if (strcmp(sb.cluster_name, cl->name) != 0 || sb.peer_id != p->peer.id) {
		snprintf(p->err, sizeof(p->err), "region belongs to cluster \"%s\" peer %u, not \"%s\" peer %u",
			 sb.cluster_name, sb.peer_id, cl->name, p->peer.id);
		return -EINVAL;
	}
	if (memcmp(sb.pool_uuid, rp_conn_pool_uuid(p->conn), 16) != 0) {
		snprintf(p->err, sizeof(p->err), "the superblock's pool uuid is not the one the "
			 "server proved in the handshake");
		return -EINVAL;
	}
	if (sb.block_size != cl->block_size) {
		snprintf(p->err, sizeof(p->err), "pool has %u-byte blocks, the cluster file says %u",
			 sb.block_size, cl->block_size);
		return -EINVAL;
	}
	if (sb.region_size != rp_conn_region_size(p->conn)) {
		snprintf(p->err, sizeof(p->err), "superblock says %llu bytes, server exposes %llu",
			 (unsigned long long)sb.region_size,
			 (unsigned long long)rp_conn_region_size(p->conn));
		return -EINVAL;
	}
	p->sb = sb;
	atomic_store(&p->nblocks, sb.nblocks);
	if ((rc = count_check(p)) < 0) {
		snprintf(p->err, sizeof(p->err), "reading the used-block count: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The slots: one per peer id up to the highest listed, absent ones marked. */
static int poolset_slots(struct rp_poolset *ps, const struct rp_cluster *cl)
{
	uint32_t max = 0;
	for (size_t i = 0; i < cl->npeers; i++)
		max = RP_MAX(max, cl->peers[i].id);
	ps->n = (size_t)max + 1;
	ps->npeers = cl->npeers;
	ps->pools = calloc(ps->n, sizeof(*ps->pools));
	ps->ids = calloc(cl->npeers ? cl->npeers : 1, sizeof(*ps->ids));
	if (!ps->pools || !ps->ids)
		return -ENOMEM;
	for (size_t id = 0; id < ps->n; id++) {
		struct rp_pool *p = &ps->pools[id];
		pthread_mutex_init(&p->mu, NULL);
		p->peer.id = (uint32_t)id;
		p->error = -ENODEV;
		snprintf(p->err, sizeof(p->err), "peer %zu is not in the cluster file", id);
	}
	for (size_t i = 0; i < cl->npeers; i++)
		ps->ids[i] = cl->peers[i].id;
	qsort(ps->ids, ps->npeers, sizeof(*ps->ids), cmp_u32);
	return 0;
}

int rp_poolset_open(const struct rp_cluster *cl, const uint8_t *secret, size_t secret_len,
		    int flags, struct rp_poolset **out, char *err, size_t errlen)
{
	struct rp_poolset *ps = calloc(1, sizeof(*ps));
	int first_err = 0;

	*out = NULL;
	if (!ps)
		return -ENOMEM;
	if (cl->npeers == 0 || poolset_slots(ps, cl) < 0) {
		rp_poolset_close(ps);
		return cl->npeers == 0 ? -EINVAL : -ENOMEM;
	}
	snprintf(ps->cluster_name, sizeof(ps->cluster_name), "%s", cl->name);
	pthread_mutex_init(&ps->bufs_mu, NULL);
	if (missed_init(ps) < 0) {
		rp_poolset_close(ps);
		return -ENOMEM;
	}
	ps->secret_len = RP_MIN(secret_len, sizeof(ps->secret));
	memcpy(ps->secret, secret, ps->secret_len);
	ps->connect_timeout_ms = cl->connect_timeout_ms;
	ps->block_size = cl->block_size;
	ps->home_pool = -1;
	ps->home_rauth_out = -1;
	ps->op_timeout_ms = cl->op_timeout_ms;
	for (size_t i = 0; i < cl->npeers; i++) {
		struct rp_pool *p = &ps->pools[cl->peers[i].id];
		struct rp_conn_params cp = {
			.peer = &cl->peers[i], .kind = cl->peers[i].transport,
			.cluster_name = cl->name, .secret = secret, .secret_len = secret_len,
			.connect_timeout_ms = cl->connect_timeout_ms, .op_timeout_ms = cl->op_timeout_ms,
			.latency = &ps->pools[cl->peers[i].id].stats.latency,
		};
		p->present = true;
		p->peer = cl->peers[i];
		p->err[0] = 0;
		struct rp_conn *c = NULL;
		p->error = rp_conn_open(&cp, &c, p->err, sizeof(p->err));
		p->conn = c;
		if (p->error == 0)
			p->error = check_sb(p, cl);
		if (p->error < 0) {
			if (!first_err) {
				first_err = p->error;
				snprintf(err, errlen, "%s", p->err);
			}
			continue;
		}
		p->opened = true;
		uint64_t r;
		rp_random_bytes(&r, sizeof(r));
		/* Clients start at different places so they rarely collide. */
		p->cursor = r % p->sb.bitmap_words;
	}
	if (first_err && !(flags & RP_POOLSET_ALLOW_DOWN)) {
		rp_poolset_close(ps);
		return first_err;
	}
	*out = ps;
	return 0;
}

void rp_poolset_close(struct rp_poolset *ps)
{
	if (!ps)
		return;
	rp_metrics_drop(ps); /* before what they point at goes */
	rp_poolset_count_flush(ps); /* our last changes to the pools' used counts */
	for (size_t i = 0; ps->pools && i < ps->n; i++) {
		rp_conn_close(ps->pools[i].conn);
		pthread_mutex_destroy(&ps->pools[i].mu);
	}
	if (ps->missed)
		missed_fini(ps);
	free(ps->pools);
	free(ps->ids);
	pthread_mutex_destroy(&ps->bufs_mu);
	explicit_bzero(ps->secret, sizeof(ps->secret));
	free(ps);
}

/* after a reconnect that failed, not again so soon: a stopped or cut-off
 * peer would otherwise cost every operation a connect timeout, and one that
 * refuses our handshake a handshake. One refused because nothing listens
 * (ECONNREFUSED from the transport, which says so for nothing else: the
 * host is up, its server is not) costs a round trip to try again, and a
 * backoff after it would fail the I/O of the first half second after the
 * server is back (069). After one that
 * succeeded, a short pause only, which the next reconnect waits out (a
 * peer that dies after each handshake must not be reconnected in a loop,
 * one that restarted twice must not fail I/O). */
#define REVIVE_BACKOFF_MS 500
#define REVIVE_AFTER_OK_MS 50
/* a peer refusing every operation's reconnect is said so once a second */
#define REVIVE_WARN_MS 1000

int rp_pool_ensure(struct rp_poolset *ps, uint32_t pool)
{
	bool waited;
	return pool_ensure(ps, pool, &waited);
}

int pool_ensure(struct rp_poolset *ps, uint32_t pool, bool *waited)
{
	*waited = false;
	if (pool >= ps->n)
		return -ENODEV; /* a peer id the cluster file does not list */
	struct rp_pool *p = &ps->pools[pool];
	if (!p->conn)
		return p->error ? p->error : -ENOTCONN;
	if (p->error)
		return p->error;
	if (rp_conn_is_up(p->conn) && !atomic_load(&p->validating))
		return 0;
	*waited = true; /* for a reconnect, ours or another thread's */
	int rc = 0;
	rp_mutex_lock(&p->mu, RP_LK_POOL); /* a reconnect under way ends first */
	if (p->error || rp_conn_is_up(p->conn))
		goto out;
	uint64_t now = rp_now_ms();
	if (p->revive_ok && now - p->last_revive_ms < REVIVE_AFTER_OK_MS) {
		/* the short pause after a success is waited out, not failed: a
		 * server restarted twice within it (a fast restart takes tens of
		 * ms) is back, and the I/O that found it gone must not fail */
		struct timespec ts = { 0, (long)(REVIVE_AFTER_OK_MS - (now - p->last_revive_ms)) * 1000000L };
		nanosleep(&ts, NULL);
		now = rp_now_ms();
	} else if (!p->revive_ok && !p->revive_cheap && now - p->last_revive_ms < REVIVE_BACKOFF_MS) {
		rc = -ENOTCONN;
		goto out;
	}
	p->last_revive_ms = now;
	p->revive_ok = false;
	p->revive_cheap = false;
	char err[320];
	/* up to the transport as soon as it reconnects, but not to other
	 * threads (rp_pool_connected, the fast path above) until the pool is
	 * known to be the same: an empty replacement must never be read as a
	 * current copy */
	atomic_store(&p->validating, true);
	rc = rp_conn_reconnect(p->conn, err, sizeof(err));
	if (rc == -ESTALE && atomic_load(&ps->fence_session)) {
		/* a holder with a newer epoch has connected there: we are fenced
		 * (nothing was sent, so no copy missed anything) */
		if (!atomic_exchange(&ps->fenced, true))
			rp_err("peer %u (%s:%u): refuses this writer (epoch %llu): a newer holder of "
			       "the volume's lease has connected to it; fenced", p->peer.id,
			       p->peer.host, p->peer.port,
			       (unsigned long long)atomic_load(&ps->fence_epoch));
		rc = -ENOLCK;
		goto out;
	}
	if (rc < 0) {
		uint64_t done = rp_now_ms();
		p->revive_cheap = rc == -ECONNREFUSED;
		if (done - p->last_revive_warn_ms >= REVIVE_WARN_MS) {
			p->last_revive_warn_ms = done;
			rp_warn("reconnect: %s", err);
		}
		goto out;
	}
	uint8_t buf[RP_SB_SIZE];
	struct rp_pool_sb sb;
	rc = rp_conn_read(p->conn, 0, buf, sizeof(buf));
	if (rc == 0 && (rp_sb_decode(buf, &sb) < 0 ||
			memcmp(sb.pool_uuid, p->sb.pool_uuid, sizeof(sb.pool_uuid)) != 0 ||
			memcmp(sb.pool_uuid, rp_conn_pool_uuid(p->conn), 16) != 0 ||
			sb.nblocks != p->sb.nblocks)) {
		/* The server came back with another pool (restarted without its
		 * backing file): what this client knew of it is gone. */
		snprintf(p->err, sizeof(p->err),
			 "peer %u (%.64s:%u): server restarted with a different pool; its data is lost",
			 p->peer.id, p->peer.host, p->peer.port);
		rp_err("%s", p->err);
		p->error = rc = -ESTALE;
		goto out;
	}
	if (rc == 0)
		rc = count_check(p);
	if (rc == 0) {
		p->span_n = 0; /* read the bitmap afresh */
		p->revive_ok = true;
	}
	if (rc == 0)
		rp_info("peer %u (%s:%u): reconnected over %s", p->peer.id, p->peer.host,
			p->peer.port, rp_transport_name(rp_conn_kind(p->conn)));
out:
	atomic_store(&p->validating, false);
	rp_mutex_unlock(&p->mu);
	return rc;
}

int rp_poolset_fence(struct rp_poolset *ps, uint64_t session, uint64_t epoch)
{
	int rc = 0;
	atomic_store(&ps->fenced, false); /* a new lease: refused afresh or not */
	atomic_store(&ps->fence_epoch, epoch);
	atomic_store(&ps->fence_session, session);
	for (size_t k = 0; k < ps->npeers; k++) {
		uint32_t id = ps->ids[k];
		struct rp_pool *p = &ps->pools[id];
		if (!p->conn)
			continue; /* rp_pool_adopt connects it with the fence */
		rp_mutex_lock(&p->mu, RP_LK_POOL);
		rp_conn_set_fence(p->conn, session, epoch);
		/* every connection up, also of a pool in error (which an online
		 * rebuild may adopt as it is): none may stay untagged */
		bool up = rp_conn_is_up(p->conn);
		if (up)
			rp_conn_drop(p->conn);
		p->revive_ok = false;
		p->revive_cheap = false;
		p->last_revive_ms = 0; /* reconnect now, not after a backoff */
		bool failed = p->error != 0;
		rp_mutex_unlock(&p->mu);
		if (!up || failed)
			continue; /* fenced when it is reconnected */
		int prc = rp_pool_ensure(ps, id);
		if (prc == -ENOLCK)
			rc = prc;
		else if (prc < 0)
			rp_warn("peer %u: not reconnected with writer epoch %llu yet (%s); it will be "
				"before it is used", id, (unsigned long long)epoch, strerror(-prc));
	}
	return rc;
}

bool rp_poolset_fenced(const struct rp_poolset *ps)
{
	return atomic_load(&ps->fenced);
}

/* The geometry this client uses for a pool's offsets, against a new sb. */
static bool same_geometry(const struct rp_pool_sb *a, const struct rp_pool_sb *b)
{
	return a->block_size == b->block_size && a->nblocks == b->nblocks &&
	       a->data_off == b->data_off && a->bitmap_off == b->bitmap_off &&
	       a->bitmap_words == b->bitmap_words;
}

/* Another start of the pool, or another pool in its place: its geometry
 * is the one known (same_geometry), which other threads read unlocked and
 * so is not written again; the first adoption of a pool never read sets it. */
static void adopt_identity(struct rp_pool *p, const struct rp_pool_sb *sb)
{
	if (!p->opened || memcmp(p->sb.pool_uuid, sb->pool_uuid, 16) != 0)
		atomic_fetch_add(&p->identity_gen, 1); /* (missed.c) */
	atomic_store(&p->nblocks, sb->nblocks);
	if (!p->sb.block_size && !p->sb.nblocks) {
		p->sb = *sb;
		return;
	}
	p->sb.magic = sb->magic;
	p->sb.layout_version = sb->layout_version;
	memcpy(p->sb.pool_uuid, sb->pool_uuid, sizeof(p->sb.pool_uuid));
	memcpy(p->sb.cluster_name, sb->cluster_name, sizeof(p->sb.cluster_name));
	p->sb.peer_id = sb->peer_id;
	p->sb.region_size = sb->region_size;
	p->sb.created_ns = sb->created_ns;
}

static int adopt_connect(struct rp_poolset *ps, struct rp_pool *p, char *err, size_t errlen)
{
	if (p->conn)
		return rp_conn_is_up(p->conn) ? 0 : rp_conn_reconnect(p->conn, err, errlen);
	struct rp_conn_params cp = {
		.peer = &p->peer, .kind = p->peer.transport, .cluster_name = ps->cluster_name,
		.secret = ps->secret, .secret_len = ps->secret_len,
		.connect_timeout_ms = ps->connect_timeout_ms, .op_timeout_ms = ps->op_timeout_ms,
		.latency = &p->stats.latency,
		.fence_session = atomic_load(&ps->fence_session),
		.fence_epoch = atomic_load(&ps->fence_epoch),
	};
	struct rp_conn *c = NULL;
	int rc = rp_conn_open(&cp, &c, err, errlen);
	p->conn = c;
	return rc;
}

int rp_pool_holds(struct rp_poolset *ps, uint32_t pool, const uint8_t uuid[16])
{
	if (!rp_poolset_has(ps, pool))
		return -ENODEV;
	struct rp_pool *p = &ps->pools[pool];
	uint8_t buf[RP_SB_SIZE];
	struct rp_pool_sb sb;
	char err[320];
	rp_mutex_lock(&p->mu, RP_LK_POOL);
	atomic_store(&p->validating, true);
	int rc = adopt_connect(ps, p, err, sizeof(err));
	if (rc == 0 && (rc = rp_conn_read(p->conn, 0, buf, sizeof(buf))) == 0 &&
	    (rp_sb_decode(buf, &sb) < 0 || memcmp(sb.pool_uuid, uuid, 16) != 0 ||
	     memcmp(sb.pool_uuid, rp_conn_pool_uuid(p->conn), 16) != 0))
		rc = -ESTALE;
	/* (as in rp_pool_adopt: a connection to another pool than the one
	 * p->sb describes is not kept where others would use it: a pool in
	 * error they do not use, and the adopt that follows wants it) */
	if (p->conn && (rc < 0 || !p->error) &&
	    (!p->sb.magic || memcmp(rp_conn_pool_uuid(p->conn), p->sb.pool_uuid, 16)))
		rp_conn_drop(p->conn);
	atomic_store(&p->validating, false);
	rp_mutex_unlock(&p->mu);
	return rc;
}

int rp_pool_adopt(struct rp_poolset *ps, uint32_t pool, const uint8_t *expect_uuid, char *err,
		  size_t errlen)
{
	if (!rp_poolset_has(ps, pool)) {
		snprintf(err, errlen, "peer %u is not in the cluster file", pool);
		return -ENODEV;
	}
	struct rp_pool *p = &ps->pools[pool];
	uint8_t buf[RP_SB_SIZE];
	struct rp_pool_sb sb;
	rp_mutex_lock(&p->mu, RP_LK_POOL);
	/* not up for other threads (a settle of the used-block count) until
	 * count_check has seen which server start it talks to */
	atomic_store(&p->validating, true);
	int rc = adopt_connect(ps, p, err, errlen);
	if (rc == 0 && (rc = rp_conn_read(p->conn, 0, buf, sizeof(buf))) < 0)
		snprintf(err, errlen, "peer %u: reading the superblock: %s", pool, strerror(-rc));
	if (rc == 0 && (rp_sb_decode(buf, &sb) < 0 || strcmp(sb.cluster_name, ps->cluster_name) ||
			sb.peer_id != pool || memcmp(sb.pool_uuid, rp_conn_pool_uuid(p->conn), 16))) {
		snprintf(err, errlen, "peer %u: not a pool of this cluster under this peer id", pool);
		rc = -EINVAL;
	}
	/* (the checks of the open, for a pool it never reached) */
	if (rc == 0 && (sb.block_size != ps->block_size ||
			sb.region_size != rp_conn_region_size(p->conn))) {
		snprintf(err, errlen, "peer %u: the pool has %u-byte blocks and %llu bytes, the "
			 "cluster file says %u-byte blocks and the server exposes %llu", pool,
			 sb.block_size, (unsigned long long)sb.region_size, ps->block_size,
			 (unsigned long long)rp_conn_region_size(p->conn));
		rc = -EINVAL;
	}
	if (rc == 0 && expect_uuid && memcmp(sb.pool_uuid, expect_uuid, 16) != 0) {
		snprintf(err, errlen, "peer %u holds another pool than the one the volume's records "
			 "name", pool);
		rc = -ESTALE;
	}
	/* offsets into it are computed with the geometry known so far */
	if (rc == 0 && (p->sb.block_size || p->sb.nblocks) && !same_geometry(&p->sb, &sb)) {
		snprintf(err, errlen, "peer %u: the pool has another size than the one it replaces "
			 "(start it with the same --size, or rebuild with the volume unmounted)", pool);
		rc = -EINVAL;
	}
	if (rc == 0 && (rc = count_check(p)) < 0)
		snprintf(err, errlen, "peer %u: reading the used-block count: %s", pool, strerror(-rc));
	if (rc == 0) {
		if (!p->opened && !atomic_load(&p->identity_gen) && sb.bitmap_words) {
			uint64_t r; /* (a first reach: start apart, as the open does) */
			rp_random_bytes(&r, sizeof(r));
			p->cursor = r % sb.bitmap_words;
		}
		adopt_identity(p, &sb);
		p->span_n = 0;
		p->error = 0;
		p->err[0] = 0;
	} else if (p->conn && (!p->sb.magic ||
				memcmp(rp_conn_pool_uuid(p->conn), p->sb.pool_uuid, 16) != 0)) {
		/* connected to another pool than the one p->sb describes: not
		 * used as is, the next use reconnects and checks it (pool_ensure
		 * refuses it then); one to the pool p->sb describes stays */
		rp_conn_drop(p->conn);
	}
	atomic_store(&p->validating, false);
	rp_mutex_unlock(&p->mu);
	return rc < 0 ? rc : bufs_register(ps, pool);
}

/* how often rp_pool_reach tries a pool down since the open */
#define REACH_EVERY_MS 1000

int rp_pool_reach(struct rp_poolset *ps, uint32_t pool)
{
	if (!atomic_load(&ps->reach_down) || pool >= ps->n || ps->pools[pool].opened ||
	    atomic_load(&ps->pools[pool].identity_gen))
		return rp_pool_ensure(ps, pool);
	uint64_t now = rp_now_ms(), last = atomic_load(&ps->pools[pool].reach_ms);
	if (now - last < REACH_EVERY_MS ||
	    !atomic_compare_exchange_strong(&ps->pools[pool].reach_ms, &last, now))
		return -ENOTCONN;
	char err[320];
	int rc = rp_pool_adopt(ps, pool, NULL, err, sizeof(err));
	if (rc == 0) {
		atomic_store(&ps->pools[pool].reached_late, true);
		rp_info("peer %u (%s:%u): reached, down when the pools were opened", pool,
			ps->pools[pool].peer.host, ps->pools[pool].peer.port);
	}
	return rc;
}

bool rp_pool_connected(const struct rp_poolset *ps, uint32_t pool)
{
	const struct rp_pool *p = pool < ps->n ? &ps->pools[pool] : NULL;
	return p && p->present && p->conn && p->error == 0 && !atomic_load(&p->validating) &&
	       rp_conn_is_up(p->conn);
}

uint64_t rp_pool_nblocks(const struct rp_poolset *ps, uint32_t pool)
{
	return pool < ps->n ? atomic_load(&ps->pools[pool].nblocks) : 0;
}

static struct rp_pool *usable(struct rp_poolset *ps, uint32_t pool, int *rc)
{
	*rc = rp_pool_ensure(ps, pool);
	return *rc ? NULL : &ps->pools[pool];
}

/* A read whose connection broke gets one more try on a new one. */
int rp_pool_read(struct rp_poolset *ps, uint32_t pool, uint64_t off, void *buf, size_t len)
{
	int rc = 0;
	for (int tries = 0; tries < 2 && (tries == 0 || pool_connection_lost(rc)); tries++) {
		struct rp_pool *p = usable(ps, pool, &rc);
		if (p && tries)
			rp_count(&p->stats.retries, 1);
		rc = p ? rp_conn_read(p->conn, off, buf, len) : rc;
	}
	return rc;
}

/* Raw writes are not tried again: their callers (the volume table's
 * mirror, rebuilds) check what they write against (an epoch, a lease)
 * just before, and a second try could land long after that. */
int rp_pool_write(struct rp_poolset *ps, uint32_t pool, uint64_t off, const void *buf, size_t len)
{
	int rc;
	struct rp_pool *p = usable(ps, pool, &rc);
	return p ? rp_conn_write(p->conn, off, buf, len) : rc;
}

int rp_pool_cas(struct rp_poolset *ps, uint32_t pool, uint64_t off, uint64_t expect,
		uint64_t desired, uint64_t *old)
{
	int rc;
	struct rp_pool *p = usable(ps, pool, &rc);
	return p ? pool_cas(p, off, expect, desired, old) : rc;
}

/* A fetch-and-add of 0 is a read (of a word others change atomically) and
 * is tried again like one; any other is not: it may have been applied. */
int rp_pool_faa(struct rp_poolset *ps, uint32_t pool, uint64_t off, uint64_t add, uint64_t *old)
{
	int rc = 0;
	for (int tries = 0; tries < 2 && (tries == 0 || (add == 0 && pool_connection_lost(rc)));
	     tries++) {
		struct rp_pool *p = usable(ps, pool, &rc);
		if (p && tries)
			rp_count(&p->stats.retries, 1);
		rc = p ? rp_conn_faa(p->conn, off, add, old) : rc;
	}
	return rc;
}

enum rp_transport_kind rp_pool_transport(const struct rp_pool *p)
{
	return p->conn ? rp_conn_kind(p->conn) : RP_TRANSPORT_AUTO;
}

void rp_pool_debug_set_rkey(struct rp_poolset *ps, uint32_t pool, uint32_t rkey)
{
	if (pool < ps->n && ps->pools[pool].conn)
		rp_conn_debug_set_rkey(ps->pools[pool].conn, rkey);
}
