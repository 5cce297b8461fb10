/* Random reads and writes through the transport, checked against a local
 * mirror: many offsets and sizes (unaligned, multi-block, 1 byte to 3 MiB),
 * single ops and batches over all pools with one wait. Prints TAP-free
 * diagnostics; exit 0 when every byte matched.
 *   io_check CLUSTER ROUNDS SEED [WINDOW_MB [WINDOW_START_MB]] */
#include "config.h"
#include "helper.h"

#include <string.h>

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int main(int argc, char **argv)
{
	struct rp_cluster *cl;
	if (argc < 4) {
		fprintf(stderr, "usage: io_check CLUSTER ROUNDS SEED [WINDOW_MB]\n");
		return 2;
	}
	struct rp_poolset *ps = helper_open(argv[1], &cl);
	long rounds = atol(argv[2]);
	uint64_t seed = strtoull(argv[3], NULL, 0) | 1;
	uint64_t window = (argc > 4 ? strtoull(argv[4], NULL, 0) : 8) << 20;
	uint64_t start = (argc > 5 ? strtoull(argv[5], NULL, 0) : 0) << 20;
	size_t np = ps->n;
	uint8_t **mirror = calloc(np, sizeof(*mirror));
	uint64_t *base = calloc(np, sizeof(*base));
	struct rp_buf *buf = NULL;
	int failures = 0, rc;

	if (!mirror || !base || rp_buf_alloc(ps, 4u << 20, &buf) < 0)
		goto fail;
	uint8_t *b = rp_buf_data(buf);
	for (size_t p = 0; p < np; p++) {
		base[p] = ps->pools[p].sb.data_off + start;
		if (base[p] + window > ps->pools[p].sb.region_size) {
			fprintf(stderr, "io_check: pool %zu smaller than the window\n", p);
			goto fail;
		}
		mirror[p] = malloc(window);
		/* start from known contents */
		for (uint64_t i = 0; i < window; i++)
			mirror[p][i] = (uint8_t)rnd(&seed);
		if ((rc = rp_pool_write(ps, (uint32_t)p, base[p], mirror[p], window)) < 0) {
			fprintf(stderr, "io_check: initial write: %s\n", strerror(-rc));
			goto fail;
		}
	}
	for (long r = 0; r < rounds; r++) {
		uint32_t p = (uint32_t)(rnd(&seed) % np);
		uint64_t kind = rnd(&seed) % 4;
		uint32_t len = kind == 0 ? 1 + (uint32_t)(rnd(&seed) % 16)          /* tiny */
			     : kind == 1 ? 1 + (uint32_t)(rnd(&seed) % 8192)        /* around a block */
			     : kind == 2 ? 4096 * (1 + (uint32_t)(rnd(&seed) % 64)) /* whole blocks */
					 : 1 + (uint32_t)(rnd(&seed) % (3u << 20));  /* large, unaligned */
		uint64_t off = rnd(&seed) % (window - len + 1);
		if (kind == 2)
			off &= ~4095ull;
		if (rnd(&seed) % 2) {
			for (uint32_t i = 0; i < len; i++)
				b[i] = (uint8_t)rnd(&seed);
			struct rp_io io = { .pool = p, .off = base[p] + off, .buf = buf, .len = len };
			if ((rc = rp_poolset_rw(ps, RP_OP_WRITE, &io, 1)) < 0) {
				fprintf(stderr, "io_check: write %u@%llu: %s\n", len, (unsigned long long)off, strerror(-rc));
				goto fail;
			}
			memcpy(mirror[p] + off, b, len);
		} else {
			struct rp_io io = { .pool = p, .off = base[p] + off, .buf = buf, .len = len };
			if ((rc = rp_poolset_rw(ps, RP_OP_READ, &io, 1)) < 0) {
				fprintf(stderr, "io_check: read: %s\n", strerror(-rc));
				goto fail;
			}
			if (memcmp(b, mirror[p] + off, len) != 0) {
				fprintf(stderr, "io_check: MISMATCH pool %u off %llu len %u\n", p,
					(unsigned long long)off, len);
				failures++;
			}
		}
	}
	/* A batch: 256 scattered 1 KiB..16 KiB pieces over all pools, one wait. */
	enum { NB = 256 };
	struct rp_io ios[NB];
	size_t used = 0;
	for (int i = 0; i < NB; i++) {
		uint32_t len = 1024 + (uint32_t)(rnd(&seed) % 15360);
		uint32_t p = (uint32_t)(i % np);
		/* disjoint slots so batch order does not matter */
		uint64_t off = (uint64_t)i * 16384;
		if (off + len > window)
			break;
		ios[i] = (struct rp_io){ .pool = p, .off = base[p] + off, .buf = buf, .buf_off = used, .len = len };
		for (uint32_t k = 0; k < len; k++)
			b[used + k] = (uint8_t)rnd(&seed);
		memcpy(mirror[p] + off, b + used, len);
		used += len;
	}
	if ((rc = rp_poolset_rw(ps, RP_OP_WRITE, ios, NB)) < 0) {
		fprintf(stderr, "io_check: batch write: %s\n", strerror(-rc));
		goto fail;
	}
	memset(b, 0, used);
	if ((rc = rp_poolset_rw(ps, RP_OP_READ, ios, NB)) < 0) {
		fprintf(stderr, "io_check: batch read: %s\n", strerror(-rc));
		goto fail;
	}
	for (int i = 0; i < NB; i++)
		if (memcmp(b + ios[i].buf_off, mirror[ios[i].pool] + (ios[i].off - base[ios[i].pool]), ios[i].len)) {
			fprintf(stderr, "io_check: MISMATCH in batch piece %d\n", i);
			failures++;
		}
	/* Finally the whole window of every pool. */
	uint8_t *all = malloc(window);
	for (size_t p = 0; p < np; p++) {
		if ((rc = rp_pool_read(ps, (uint32_t)p, base[p], all, window)) < 0) {
			fprintf(stderr, "io_check: final read: %s\n", strerror(-rc));
			free(all);
			goto fail;
		}
		if (memcmp(all, mirror[p], window) != 0) {
			fprintf(stderr, "io_check: MISMATCH in final compare of pool %zu\n", p);
			failures++;
		}
	}
	free(all);
	printf("io_check: %ld rounds, %d mismatches\n", rounds, failures);
out:
	for (size_t p = 0; mirror && p < np; p++)
		free(mirror[p]);
	free(mirror);
	free(base);
	if (buf)
		rp_buf_free(buf);
	rp_poolset_close(ps);
	rp_cluster_free(cl);
	return failures ? 1 : 0;
fail:
	failures = 1;
	goto out;
}
