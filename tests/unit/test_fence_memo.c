/* The pool server's memory of lease holders' fences: a holder's connect
 * with an older epoch is refused even after the newer holder has gone;
 * reconnects of one holder (same epoch, growing generation) pass; clients
 * without an epoch are never remembered; a full table forgets the oldest. */
#include "config.h"
#include "fence_memo.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmapool/transport_server.h>

static uint64_t gen(uint64_t epoch, uint32_t n)
{
	return epoch << 32 | n;
}

/* The memo as rdmapoold keeps it, in the region: reopened after a
 * restart it still refuses the fenced holder; bytes that are no memo
 * (a pool from before it, or garbage) start an empty one. */
static void reopen(void)
{
	uint8_t *region = calloc(1, 4096);
	struct rp_fence_memo *m = rp_fence_memo_open(region, 4096);
	ok(m && m->n == 0, "zeroed bytes open as an empty memo");
	rp_fence_memo_admit(m, 77, gen(3, 1));
	rp_fence_memo_admit(m, 77, gen(4, 1));
	m = rp_fence_memo_open(region, 4096); /* the server restarted on its backing file */
	ok(m && m->n == 1 && rp_fence_memo_admit(m, 77, gen(3, 2)) == -ESTALE,
	   "reopened, it still refuses the holder fenced before the restart");
	memset(region, 0xa5, 4096);
	m = rp_fence_memo_open(region, 4096);
	ok(m && m->n == 0 && rp_fence_memo_admit(m, 77, gen(3, 2)) == 0, "garbage opens empty");
	ok(rp_fence_memo_open(region, 16) == NULL, "too little room: no memo");
	free(region);
}

int main(void)
{
	reopen();
	struct rp_fence_memo *m = calloc(1, sizeof(*m));
	const uint64_t vol = 0x52505646454e0003ull, other = 0x52505646454e0004ull;

	ok(rp_fence_memo_admit(m, vol, gen(5, 1)) == 0, "first holder admitted");
	ok(rp_fence_memo_admit(m, vol, gen(5, 7)) == 0, "its reconnect admitted");
	ok(rp_fence_memo_admit(m, vol, gen(6, 2)) == 0, "a newer holder admitted");
	ok(rp_fence_memo_admit(m, vol, gen(5, 9)) == -ESTALE, "the older holder refused");
	ok(rp_fence_memo_admit(m, vol, gen(6, 1)) == -ESTALE,
	   "an older connect of the newer holder refused");
	ok(rp_fence_memo_admit(m, other, gen(1, 1)) == 0, "another volume is another session");
	ok(rp_fence_memo_admit(m, 0x1234, 7) == 0 && rp_fence_memo_admit(m, 0x1234, 3) == 0,
	   "connects without an epoch are not remembered (live sessions fence them)");
	ok(rp_fence_memo_admit(m, 0, gen(1, 1)) == 0 && rp_fence_memo_admit(m, 0, 1) == 0,
	   "session 0 (test tools) is never fenced");
	ok(m->n == 2, "two holder sessions remembered (%zu)", m->n);

	/* fill the table: the oldest epoch goes, the newest stay */
	for (uint64_t s = 1; s <= RP_FENCE_MEMO_MAX; s++)
		rp_fence_memo_admit(m, 0x9000 + s, gen(100 + s, 1));
	ok(m->n == RP_FENCE_MEMO_MAX, "table full, not grown past its size");
	ok(rp_fence_memo_admit(m, 0x9000 + RP_FENCE_MEMO_MAX, gen(99, 1)) == -ESTALE,
	   "a newest entry survives a full table");
	ok(rp_fence_memo_admit(m, vol, gen(5, 10)) == 0,
	   "the lowest epochs were the ones forgotten (documented limit)");
	free(m);
	return tap_done();
}
