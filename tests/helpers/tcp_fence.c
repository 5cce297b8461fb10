/* The tcp server fences a client's older connection when a newer one of
 * the same session is accepted (wire.h): nothing sent on the old one lands
 * after the new one's welcome. Deterministic: connection A (generation 1)
 * sends a write of 4 KiB of 'A' at OFFSET but only its first 100 bytes, so
 * the server is in the middle of it (another client reading the range then
 * must see none of them); connection B (generation 2, same
 * session) is accepted, writes 4 KiB of 'B' there, then A sends the rest
 * and one more whole write. B reads the range back after A is done. Then a
 * connect of generation 1 again must be refused. Prints what it saw.
 *   tcp_fence CLUSTER PEER_ID OFFSET */
#include "config.h"
#include "helper.h"
#include "transport_impl.h"

#include <rdmapool/crypto.h>
#include <rdmapool/transport.h>
#include <rdmapool/util.h>
#include <rdmapool/wire.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <netdb.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LEN 4096

struct ctx {
	const struct rp_peer *p;
	const uint8_t *secret;
	size_t slen;
	const char *cluster;
	uint64_t session;
	uint32_t rkey;
};

/* A connection of generation gen: its fd, or -1 with *status the refusal. */
static int connect_gen(struct ctx *c, uint64_t gen, int32_t *status)
{
	uint8_t hello[RP_HELLO_LEN], auth[RP_AUTH_LEN] = { 0 }, welcome[RP_WELCOME_LEN];
	int fd = helper_tcp_dial(c->p, 5);
	*status = 1;
	if (fd < 0 || rp_read_full(fd, hello, sizeof(hello)) < 0)
		goto fail;
	rp_put_le32(auth, RP_AUTH_MAGIC);
	rp_put_le16(auth + 4, RP_WIRE_VERSION);
	rp_random_bytes(auth + 8, RP_NONCE_LEN);
	rp_put_le32(auth + 24, c->p->id);
	rp_put_le64(auth + RP_AUTH_SESSION_OFF, c->session);
	rp_put_le64(auth + RP_AUTH_GEN_OFF, gen);
	rp_auth_mac(c->secret, c->slen, RP_AUTH_LABEL_CLIENT, hello + 8, auth + 8, c->cluster,
		    auth + RP_AUTH_BIND_OFF, RP_AUTH_BIND_LEN, auth + RP_AUTH_MAC_OFF);
	if (rp_write_full(fd, auth, RP_AUTH_LEN) < 0 ||
	    rp_read_full(fd, welcome, sizeof(welcome)) < 0)
		goto fail;
	*status = (int32_t)rp_get_le32(welcome + 4);
	if (*status != 0)
		goto fail;
	c->rkey = rp_get_le32(welcome + 16);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static void request(uint8_t *req, const struct ctx *c, uint8_t op, uint64_t id, uint64_t off,
		    uint32_t len)
{
	memset(req, 0, RP_REQ_LEN);
	req[0] = op;
	rp_put_le32(req + 4, c->rkey);
	rp_put_le64(req + 8, id);
	rp_put_le64(req + 16, off);
	rp_put_le32(req + 24, len);
}

/* One whole write on fd, answered: its status. */
static int32_t write_range(int fd, const struct ctx *c, uint64_t off, const uint8_t *data)
{
	uint8_t req[RP_REQ_LEN], resp[RP_RESP_LEN];
	request(req, c, RP_OP_WRITE, 7, off, LEN);
	if (rp_write_full(fd, req, sizeof(req)) < 0 || rp_write_full(fd, data, LEN) < 0 ||
	    rp_read_full(fd, resp, sizeof(resp)) < 0)
		return -EIO;
	return (int32_t)rp_get_le32(resp + 8);
}

static int read_range(int fd, const struct ctx *c, uint64_t off, uint8_t *data)
{
	uint8_t req[RP_REQ_LEN], resp[RP_RESP_LEN];
	request(req, c, RP_OP_READ, 8, off, LEN);
	if (rp_write_full(fd, req, sizeof(req)) < 0 || rp_read_full(fd, resp, sizeof(resp)) < 0 ||
	    rp_get_le32(resp + 8) != 0 || rp_read_full(fd, data, LEN) < 0)
		return -EIO;
	return 0;
}

int main(int argc, char **argv)
{
	struct rp_cluster *cl;
	uint8_t secret[RP_SECRET_MAX], a[LEN], b[LEN], got[LEN], req[RP_REQ_LEN];
	char err[1024];
	if (argc != 4) {
		fprintf(stderr, "usage: tcp_fence CLUSTER PEER_ID OFFSET\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	struct ctx c = { 0 };
	if (rp_cluster_load(argv[1], &cl, err, sizeof(err)) < 0 ||
	    rp_cluster_load_secret(cl, secret, &c.slen, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcp_fence: %s\n", err);
		return 1;
	}
	c.p = rp_cluster_peer(cl, (uint32_t)atoi(argv[2]));
	c.secret = secret;
	c.cluster = cl->name;
	rp_random_bytes(&c.session, sizeof(c.session));
	uint64_t off = strtoull(argv[3], NULL, 0);
	memset(a, 'A', LEN);
	memset(b, 'B', LEN);
	int32_t st;

	int fa = connect_gen(&c, 1, &st);
	if (!c.p || fa < 0) {
		fprintf(stderr, "tcp_fence: connection A: status %d\n", st);
		return 1;
	}
	request(req, &c, RP_OP_WRITE, 1, off, LEN);
	rp_write_full(fa, req, sizeof(req));
	rp_write_full(fa, a, 100); /* the server now waits for the rest */
	usleep(200000);
	/* another client meanwhile: a write cut in the middle (its sender
	 * stopped, or its connection reset) shows none of its bytes (before:
	 * the first 100, a sector half new, half old) */
	struct ctx other = c;
	rp_random_bytes(&other.session, sizeof(other.session));
	int fx = connect_gen(&other, 1, &st);
	size_t cut = 0;
	if (fx >= 0 && read_range(fx, &other, off, got) == 0)
		for (size_t i = 0; i < LEN; i++)
			cut += got[i] == 'A';
	printf("while a write is cut in the middle: %s%zu of its bytes show\n",
	       fx < 0 ? "(no other connection) " : "", cut);
	if (fx >= 0)
		close(fx);

	int fb = connect_gen(&c, 2, &st);
	printf("newer connection: status %d\n", fb < 0 ? st : 0);
	if (fb < 0)
		return 1;
	printf("write on the newer connection: status %d\n", write_range(fb, &c, off, b));
	/* the old connection goes on: the rest of its write, then another */
	int ra = rp_write_full(fa, a + 100, LEN - 100);
	if (ra == 0)
		ra = rp_write_full(fa, req, sizeof(req));
	if (ra == 0)
		ra = rp_write_full(fa, a, LEN);
	usleep(300000);
	if (read_range(fb, &c, off, got) < 0) {
		printf("read back failed\n");
		return 1;
	}
	size_t ours = 0;
	for (size_t i = 0; i < LEN; i++)
		ours += got[i] == 'B';
	printf("after the old connection's late bytes: %zu of %d bytes are the newer write's\n",
	       ours, LEN);
	int fo = connect_gen(&c, 1, &st);
	printf("a connect older than the newest: status %d\n", fo < 0 ? st : 0);
	if (fo >= 0)
		close(fo);
	close(fa);
	close(fb);
	rp_cluster_free(cl);
	return ours == LEN && st == -ESTALE ? 0 : 1;
}
