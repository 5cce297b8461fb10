/* Time, randomness, size parsing and full-length socket I/O. */
#include "config.h"
#include <rdmapool/util.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

uint64_t rp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rp_now_ms(void)
{
	return rp_now_ns() / 1000000ull;
}

void rp_sleep_ms(uint32_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

uint64_t rp_boot_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

uint64_t rp_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rp_random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rp_parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t mult = 1;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mult = 1ull << 10; end++; break;
	case 'm': case 'M': mult = 1ull << 20; end++; break;
	case 'g': case 'G': mult = 1ull << 30; end++; break;
	case 't': case 'T': mult = 1ull << 40; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	if (*end == 'i' && mult > 1)
		end++;
	if ((*end == 'B' || *end == 'b') && mult > 1)
		end++;
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

void rp_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;
	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

int rp_read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rp_write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		/* MSG_NOSIGNAL: a dead peer is an error to report, not SIGPIPE. */
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rp_writev_full(int fd, struct iovec *iov, size_t n)
{
	while (n > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = RP_MIN(n, (size_t)IOV_MAX) };
		/* MSG_NOSIGNAL: a dead peer is an error to report, not SIGPIPE. */
		ssize_t sent = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n > 0 && (size_t)sent >= iov->iov_len) {
			sent -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + sent;
			iov->iov_len -= (size_t)sent;
		}
	}
	return 0;
}

int rp_discard_full(int fd, uint64_t len)
{
	uint8_t sink[4096];
	while (len > 0) {
		size_t n = len < sizeof(sink) ? (size_t)len : sizeof(sink);
		int rc = rp_read_full(fd, sink, n);
		if (rc < 0)
			return rc;
		len -= n;
	}
	return 0;
}
