/* SHA-256, HMAC-SHA-256 (peer authentication) and CRC32C (checksums). */
#ifndef RDMAPOOL_CRYPTO_H
#define RDMAPOOL_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define RP_SHA256_LEN 32

struct rp_sha256 {
	uint32_t h[8];
	uint64_t total;
	uint8_t buf[64];
	size_t used;
};

void rp_sha256_init(struct rp_sha256 *s);
void rp_sha256_update(struct rp_sha256 *s, const void *data, size_t len);
void rp_sha256_final(struct rp_sha256 *s, uint8_t out[RP_SHA256_LEN]);

/* HMAC over the concatenation of up to n parts. */
void rp_hmac_sha256(const void *key, size_t keylen, const void *const parts[],
		    const size_t lens[], size_t n, uint8_t out[RP_SHA256_LEN]);

/* Constant-time comparison: 0 when equal. */
int rp_ct_memcmp(const void *a, const void *b, size_t len);

uint32_t rp_crc32c(uint32_t crc, const void *data, size_t len);

#endif
