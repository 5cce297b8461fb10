/* SHA-256, HMAC-SHA-256 and CRC32C against published test vectors. */
#include "config.h"
#include "tap.h"

#include <rdmapool/crypto.h>

#include <stdio.h>
#include <string.h>

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

int main(void)
{
	uint8_t d[32];
	char h[65];
	struct rp_sha256 s;

	rp_sha256_init(&s);
	rp_sha256_update(&s, "abc", 3);
	rp_sha256_final(&s, d);
	hex(d, 32, h);
	ok(strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
	   "sha256(abc)");

	rp_sha256_init(&s);
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	for (size_t i = 0; i < strlen(m); i++)
		rp_sha256_update(&s, m + i, 1); /* byte at a time crosses block edges */
	rp_sha256_final(&s, d);
	hex(d, 32, h);
	ok(strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0,
	   "sha256 of the 448-bit vector");

	/* RFC 4231 test case 2 */
	const void *parts[] = { "what do ya want ", "for nothing?" };
	const size_t lens[] = { 16, 12 };
	rp_hmac_sha256("Jefe", 4, parts, lens, 2, d);
	hex(d, 32, h);
	ok(strcmp(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0,
	   "hmac-sha256 RFC 4231 case 2");

	/* RFC 4231 test case 6: key longer than the block */
	uint8_t key[131];
	memset(key, 0xaa, sizeof(key));
	const void *p6[] = { "Test Using Larger Than Block-Size Key - Hash Key First" };
	const size_t l6[] = { 54 };
	rp_hmac_sha256(key, sizeof(key), p6, l6, 1, d);
	hex(d, 32, h);
	ok(strcmp(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54") == 0,
	   "hmac-sha256 RFC 4231 case 6");

	ok(rp_crc32c(0, "123456789", 9) == 0xe3069283, "crc32c check value");
	ok(rp_crc32c(rp_crc32c(0, "1234", 4), "56789", 5) == 0xe3069283, "crc32c is incremental");
	ok(rp_ct_memcmp("abc", "abc", 3) == 0 && rp_ct_memcmp("abc", "abd", 3) != 0, "ct compare");
	return tap_done();
}
