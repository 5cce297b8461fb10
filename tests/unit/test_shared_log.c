/* The shared log's slot headers and hole timing, as pure logic (fstest 083
 * races the whole protocol): a claim reads back as the claim it was made,
 * and nothing else does (another position, a payload byte changed, a torn
 * header word, empty, junk); directory words keep every peer id; a run of
 * holes costs one wait. The file is compiled in whole, for its static
 * functions. Seeded (RP_TEST_SEED), the seed printed. */
#include "journal/shared_log.c"
#include "tap.h"

#include <time.h>

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void headers(void)
{
	uint8_t payload[PAYLOAD];
	int claims = 0, others = 0, flips = 0, torn = 0;
	for (int i = 0; i < 2000; i++) {
		for (size_t k = 0; k < sizeof(payload); k++)
			payload[k] = (uint8_t)rnd();
		uint64_t pos = rnd() >> (rnd() % 64);
		unsigned n = 1 + (unsigned)(rnd() % SLOG_MAX_PARTS);
		struct hdr h = { .part = (unsigned)(rnd() % n), .nparts = n,
				 .member = 1 + (uint32_t)(rnd() % 255) }, got;
		h.crc = hdr_crc(pos, &h, payload);
		uint64_t w = hdr_word(&h);
		claims += hdr_claim(w, pos, payload, &got) && got.part == h.part &&
			  got.nparts == h.nparts && got.member == h.member;
		others += !hdr_claim(w, pos + 1 + rnd() % 1000, payload, &got);
		size_t at = (size_t)(rnd() % sizeof(payload));
		payload[at] ^= (uint8_t)(1u << (rnd() % 8));
		flips += !hdr_claim(w, pos, payload, &got);
		torn += !hdr_claim(rnd() % 2 ? w & 0xffffffffull : w & ~0xffffffffull, pos, payload,
				   &got);
	}
	ok(claims == 2000, "a claim reads back as made (%d of 2000)", claims);
	ok(others == 2000, "not at another position (%d of 2000)", others);
	ok(flips == 2000, "not with a payload bit changed (%d of 2000)", flips);
	ok(torn == 2000, "not from half a header word (%d of 2000)", torn);
	ok(!hdr_claim(0, 5, payload, &(struct hdr){ 0 }) &&
	   !hdr_claim(HDR_JUNK, 5, payload, &(struct hdr){ 0 }),
	   "empty and junk claim nothing");
}

static void directory_words(void)
{
	uint32_t pools[] = { 0, 1, 255, 256, 65534, 65535 };
	uint64_t blocks[] = { 0, 1, 12345, (1ull << 47) - 1 };
	int good = 0;
	for (size_t i = 0; i < sizeof(pools) / sizeof(*pools); i++)
		for (size_t j = 0; j < sizeof(blocks) / sizeof(*blocks); j++) {
			uint64_t w = DIR_WORD(pools[i], blocks[j]);
			good += w != 0 && DIR_POOL(w) == pools[i] && DIR_BLOCK(w) == blocks[j];
		}
	ok(good == 24, "directory words keep every pool id and block (%d of 24)", good);
	ok(parts_of(1) == 1 && parts_of(SLOG_PART_DATA) == 1 && parts_of(SLOG_PART_DATA + 1) == 2 &&
		   parts_of(SLOG_MAX_RECORD) == SLOG_MAX_PARTS,
	   "records take the slots their length needs");
}

static void holes(void)
{
	struct slog l = { .hole_ms = 150, .tail = 100 };
	uint64_t t0 = rp_now_ms();
	bool first = hole_due(&l, 40);
	rp_sleep_ms(60);
	/* (a sleep that overran the bound on a loaded machine: due by then) */
	bool early = hole_due(&l, 40) && rp_now_ms() - t0 < l.hole_ms;
	rp_sleep_ms(120);
	bool due = hole_due(&l, 40);
	bool run = hole_due(&l, 41) && hole_due(&l, 99);
	l.tail = 200; /* (reserved after the tail read that made them due) */
	bool later = hole_due(&l, 150);
	ok(!first && !early && due, "an empty position is due once the hole bound passed");
	ok(run, "every position below that tail read is due at once (a run of holes, one wait)");
	ok(!later, "a position reserved after it waits its own bound");
}

int main(void)
{
	const char *env = getenv("RP_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	printf("# RP_TEST_SEED=%llu\n", (unsigned long long)seed);
	rnd_state = seed | 1;
	headers();
	directory_words();
	holes();
	return tap_done();
}
