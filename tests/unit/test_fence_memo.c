/* The pool server's memory of lease holders' fences: a holder's connect
 * with an older epoch is refused even after the newer holder has gone;
 * reconnects of one holder (same epoch, growing generation) pass; clients
 * without an epoch are never remembered; a full table forgets the oldest. */
#include "config.h"
#include "fence_memo.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t gen(uint64_t epoch, uint32_t n)
{
	return epoch << 32 | n;
}

int main(void)
{
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
