/* The tcp server's request loop over arbitrary frames from an
 * authenticated client: whatever arrives, it never touches memory outside
 * the region, and it does exactly what a reference model of the protocol
 * (written here, independently) says: the same answers, the same bytes
 * read, the same atomics' results, the same region at the end. Input: the
 * byte stream the client sends after the handshake. */
#include "config.h"
#include "fuzz.h"
#include "rdmapool/log.h"
#include "rdmapool/transport.h"
#include "rdmapool/transport_server.h"
#include "rdmapool/util.h"
#include "rdmapool/wire.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REGION 65536
#define RKEY 0x5250524bu /* the seeds carry it */

static uint8_t *region, *model;

struct feed {
	int fd;
	const uint8_t *data;
	size_t size;
};

/* The client's side: send everything, then end the stream. */
static void *feeder(void *arg)
{
	struct feed *f = arg;
	rp_write_full(f->fd, f->data, f->size); /* the server may close first: EPIPE */
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

static void *server(void *arg)
{
	struct feed *f = arg;
	static struct rp_serve_stats stats;
	struct rp_serve_params p = { .base = region, .size = REGION, .stats = &stats };
	int rc = rp_tcp_serve_stream(&p, RKEY, f->fd);
	FUZZ_ASSERT(rc == 0 || rc == -EPROTO || rc == -EPIPE || rc == -ECONNRESET);
	shutdown(f->fd, SHUT_RDWR);
	return NULL;
}

/* The reference: one frame of the input applied to the model; what the
 * server must answer. Returns the bytes of input it took (0: the stream
 * ends here, by its end or a malformed frame the server closes on). */
struct answer {
	int32_t status;
	uint32_t rlen;
	uint64_t id, result, off;
};

static int32_t model_check(uint8_t opc, uint32_t rkey, uint64_t off, uint32_t len)
{
	if (rkey != RKEY)
		return -EACCES;
	if (opc == RP_OP_READ || opc == RP_OP_WRITE)
		return off > REGION || len > REGION - off ? -ERANGE : 0;
	if (off % 8)
		return -EINVAL;
	return off > REGION - 8 ? -ERANGE : 0;
}

static size_t model_step(const uint8_t *in, size_t n, struct answer *a)
{
	if (n < RP_REQ_LEN)
		return 0;
	uint8_t opc = in[0];
	uint32_t len = rp_get_le32(in + 24);
	uint64_t off = rp_get_le64(in + 16), cmp = rp_get_le64(in + 32), val = rp_get_le64(in + 40);
	if (opc < RP_OP_READ || opc > RP_OP_FAA || len > RP_MAX_IO)
		return 0;
	size_t took = RP_REQ_LEN + (opc == RP_OP_WRITE ? len : 0);
	*a = (struct answer){ .id = rp_get_le64(in + 8), .off = off };
	a->status = model_check(opc, rp_get_le32(in + 4), off, len);
	if (took > n) {
		/* a write cut short is never answered, and what arrived of it
		 * has landed in whole pieces only (never a torn sector) */
		size_t whole = (n - RP_REQ_LEN) / RP_TCP_WRITE_PIECE * RP_TCP_WRITE_PIECE;
		if (opc == RP_OP_WRITE && a->status == 0)
			memcpy(model + off, in + RP_REQ_LEN, whole);
		return 0;
	}
	if (a->status == 0) {
		uint64_t old;
		switch (opc) {
		case RP_OP_READ:
			a->rlen = len;
			break;
		case RP_OP_WRITE:
			memcpy(model + off, in + RP_REQ_LEN, len);
			break;
		case RP_OP_CAS:
			memcpy(&old, model + off, 8);
			if (old == cmp)
				memcpy(model + off, &val, 8);
			a->result = old;
			break;
		case RP_OP_FAA:
			memcpy(&old, model + off, 8);
			old += val;
			memcpy(model + off, &old, 8);
			a->result = old - val;
			break;
		}
	}
	return took;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!region) {
		signal(SIGPIPE, SIG_IGN); /* the server may close before all is sent */
		rp_log_set_level(RP_LOG_ERR); /* each refusal is warned about */
		region = malloc(REGION); /* ASan: a byte outside is a report */
		model = malloc(REGION);
		FUZZ_ASSERT(region && model);
	}
	for (size_t i = 0; i < REGION; i++)
		region[i] = model[i] = (uint8_t)(i * 131 + 7);
	int sv[2];
	FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct feed in = { sv[0], data, size }, srv = { sv[1], NULL, 0 };
	pthread_t ft, st;
	FUZZ_ASSERT(pthread_create(&st, NULL, server, &srv) == 0);
	FUZZ_ASSERT(pthread_create(&ft, NULL, feeder, &in) == 0);

	/* every answer, in order, against the model's */
	static uint8_t got[RP_RESP_LEN + REGION];
	size_t pos = 0;
	for (;;) {
		struct answer a;
		size_t took = model_step(data + pos, size - pos, &a);
		if (!took)
			break;
		pos += took;
		/* the server's writes land before its answer: the model is ahead
		 * only by what the server has not answered yet */
		FUZZ_ASSERT(rp_read_full(sv[0], got, RP_RESP_LEN) == 0);
		FUZZ_ASSERT(rp_get_le64(got) == a.id);
		FUZZ_ASSERT((int32_t)rp_get_le32(got + 8) == a.status);
		FUZZ_ASSERT(rp_get_le32(got + 12) == a.rlen);
		FUZZ_ASSERT(rp_get_le64(got + 16) == a.result);
		if (a.rlen) {
			FUZZ_ASSERT(rp_read_full(sv[0], got + RP_RESP_LEN, a.rlen) == 0);
			FUZZ_ASSERT(memcmp(got + RP_RESP_LEN, model + a.off, a.rlen) == 0);
		}
	}
	/* then nothing more: the stream ends. libFuzzer's -timeout is a
	 * SIGALRM without SA_RESTART, so this wait can be interrupted: only
	 * an answer or an error other than EINTR is a failure. */
	ssize_t tail;
	do
		tail = read(sv[0], got, 1);
	while (tail < 0 && errno == EINTR);
	if (tail != 0)
		fprintf(stderr, "after the last answer: read gave %zd (%s), byte 0x%02x, %zu of %zu "
			"input bytes modelled\n", tail, tail < 0 ? strerror(errno) : "data",
			tail > 0 ? got[0] : 0, pos, size);
	FUZZ_ASSERT(tail == 0);
	pthread_join(ft, NULL);
	pthread_join(st, NULL);
	close(sv[0]);
	close(sv[1]);
	FUZZ_ASSERT(memcmp(region, model, REGION) == 0);
	return 0;
}
