/* The pool server's memory of lease holders' fences (fence_memo.h). */
#include "config.h"
#include "fence_memo.h"

#include <rdmapool/log.h>
#include <rdmapool/transport_server.h>

#include <errno.h>
#include <string.h>

static size_t find_or_make(struct rp_fence_memo *m, uint64_t session)
{
	size_t lowest = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (m->e[i].session == session)
			return i;
		if (m->e[i].gen < m->e[lowest].gen)
			lowest = i;
	}
	/* full: a volume table has far fewer slots; forget the oldest */
	size_t i = m->n < RP_FENCE_MEMO_MAX ? m->n++ : lowest;
	m->e[i].session = session;
	m->e[i].gen = 0;
	return i;
}

struct rp_fence_memo *rp_fence_memo_open(void *mem, size_t len)
{
	struct rp_fence_memo *m = mem;
	if (len < sizeof(*m))
		return NULL;
	/* bytes that are no memo (a new pool, or one from before the memo,
	 * where this was home area) start an empty one */
	if (m->magic != RP_FENCE_MEMO_MAGIC || m->n > RP_FENCE_MEMO_MAX) {
		bool was = m->magic == RP_FENCE_MEMO_MAGIC;
		memset(m, 0, sizeof(*m));
		m->magic = RP_FENCE_MEMO_MAGIC;
		if (was) /* (no magic: a new pool, or one from before the memo) */
			rp_warn("the pool's memory of lease holders' epochs was damaged; started "
				"empty: a superseded holder is refused only once a newer one connects");
	}
	return m;
}

int rp_fence_memo_admit(struct rp_fence_memo *m, uint64_t session, uint64_t gen)
{
	if (session == 0)
		return 0; /* test tools: not fenced */
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].session == session && m->e[i].gen > gen)
			return -ESTALE;
	if (rp_fence_is_holder(gen)) {
		size_t i = find_or_make(m, session);
		if (gen > m->e[i].gen)
			m->e[i].gen = gen;
	}
	return 0;
}
