/* Log records: the request names and write-intent words round-trip, and a
 * record cut short, of another epoch or with a flipped bit is not taken
 * (replay stops there). */
#include "config.h"
#include "tap.h"
#include "fs_impl.h"

#include <errno.h>
#include <string.h>

static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

int main(void)
{
	uint8_t buf[REC_MAX];
	struct rp_rec in, out;

	memset(&in, 0, sizeof(in));
	in.type = REC_REQ;
	in.flags = REC_F_END;
	in.seq = 77;
	in.ino = 0x8badf00ddeadbeefull; /* the connection */
	in.ino2 = 0x123456789abcull;    /* the request number */
	ssize_t n = rec_encode(&in, 5, uuid, buf, sizeof(buf));
	ok(n > 0 && n % 8 == 0, "a REQ record encodes (%zd bytes)", n);
	ok(rec_decode(buf, (size_t)n, 5, uuid, &out) == n && out.type == REC_REQ &&
	   out.ino == in.ino && out.ino2 == in.ino2 && out.seq == 77 && out.flags == REC_F_END,
	   "and decodes to the same connection, number, sequence and flags");
	ok(rec_decode(buf, (size_t)n, 6, uuid, &out) == -ENODATA, "not as a record of another epoch");
	ok(rec_decode(buf, REC_HDR + 8, 5, uuid, &out) < 0, "nor cut short");

	memset(&in, 0, sizeof(in));
	in.type = REC_INTENT;
	in.seq = 78;
	in.fblock = INTENT_WORDS - 1;
	in.count = 0xf00000000000000full;
	n = rec_encode(&in, 5, uuid, buf, sizeof(buf));
	ok(n > 0, "an INTENT record encodes");
	ok(rec_decode(buf, (size_t)n, 5, uuid, &out) == n && out.type == REC_INTENT &&
	   out.fblock == INTENT_WORDS - 1 && out.count == in.count,
	   "and decodes to the same word and value");
	buf[REC_HDR] ^= 1;
	ok(rec_decode(buf, (size_t)n, 5, uuid, &out) == -ENODATA, "a flipped bit fails the CRC");

	return tap_done();
}
