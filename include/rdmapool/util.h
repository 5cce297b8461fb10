/* Small helpers used by every layer: time, randomness, sizes, byte order. */
#ifndef RDMAPOOL_UTIL_H
#define RDMAPOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define RP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define RP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RP_ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

/* Monotonic clock in milliseconds / nanoseconds. */
uint64_t rp_now_ms(void);
/* CLOCK_BOOTTIME: counts a suspend too, unlike rp_now_ms. For lease ages:
 * a machine back from a suspend must see its lease as old as it is. */
uint64_t rp_boot_ms(void);
uint64_t rp_now_ns(void);
/* Wall clock in nanoseconds since the epoch. */
uint64_t rp_wall_ns(void);
/* Sleep ms milliseconds (a signal may cut it short). */
void rp_sleep_ms(uint32_t ms);

/* Fill buf with cryptographically random bytes (getrandom). */
int rp_random_bytes(void *buf, size_t len);

/* Parse "1G", "512M", "4096", "64K" into bytes. */
int rp_parse_size(const char *s, uint64_t *out);

/* Format a byte count as "1.5 GiB". */
void rp_format_size(uint64_t bytes, char *buf, size_t len);

/* Read/write exactly len bytes, retrying on EINTR and short transfers.
 * Return 0, -ECONNRESET on EOF, or a negative errno. */
int rp_read_full(int fd, void *buf, size_t len);
int rp_write_full(int fd, const void *buf, size_t len);
/* All of iov[0..n) in as few sends as the socket takes (one, usually);
 * iov is consumed. A socket only. */
struct iovec;
int rp_writev_full(int fd, struct iovec *iov, size_t n);
/* Read and drop len bytes (a refused payload), keeping a stream in step. */
int rp_discard_full(int fd, uint64_t len);

/* Little-endian encode/decode for on-pool and on-wire formats. */
static inline void rp_put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void rp_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void rp_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t rp_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t rp_get_le32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}
static inline uint64_t rp_get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* FNV-1a, 64 bits, over len bytes, from h (RP_FNV_INIT to start): for
 * signatures compared within one process, not for anything on a pool. */
#define RP_FNV_INIT 0xcbf29ce484222325ull
static inline uint64_t rp_fnv1a(uint64_t h, const void *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ ((const uint8_t *)buf)[i]) * 0x100000001b3ull;
	return h;
}

#endif
