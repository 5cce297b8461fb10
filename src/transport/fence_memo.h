/* What a pool server remembers of lease holders after their connections
 * have closed: the newest connect generation accepted for each holder
 * session (wire.h; a holder's generation carries its writer epoch in the
 * top 32 bits, so older epochs compare lower). A holder fenced by a newer
 * epoch cannot come back once the newer holder has disconnected, as it
 * could if only live connections were compared. It lives in the pool's
 * region (RP_FENCES_OFFSET), so a server restarted on its backing file
 * still refuses a holder fenced before (rdmapool(7), "Fencing"); a
 * listener without one keeps its own. Not locked: its server serialises
 * the calls. */
#ifndef RDMAPOOL_FENCE_MEMO_H
#define RDMAPOOL_FENCE_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_FENCE_MEMO_MAX 254
#define RP_FENCE_MEMO_MAGIC 0x315345434e454652ull /* "RFENCES1" */

/* As it lies in the region: host byte order, server-only. */
struct rp_fence_memo {
	uint64_t magic; /* RP_FENCE_MEMO_MAGIC: the entries below are a memo */
	uint64_t n;
	struct {
		uint64_t session, gen;
	} e[RP_FENCE_MEMO_MAX];
};
_Static_assert(sizeof(struct rp_fence_memo) <= 4096, "the memo fits RP_FENCES_SIZE");

/* A holder's connect: only generations with an epoch are remembered. */
static inline bool rp_fence_is_holder(uint64_t gen)
{
	return gen >> 32 != 0;
}

/* Admit a connect of (session, gen): -ESTALE when a newer generation of the
 * session was accepted before, else 0 (and gen is remembered when it is a
 * holder's). A full table forgets its lowest-epoch entry. */
int rp_fence_memo_admit(struct rp_fence_memo *m, uint64_t session, uint64_t gen);

#endif
