/* A replay attack on the tcp handshake: answer one server greeting
 * correctly (with the cluster secret), then send the very same answer to a
 * second connection. Prints the status each got; the second must be
 * refused, since the server's nonce differs.
 *   tcp_replay CLUSTER PEER_ID */
#include "config.h"
#include "helper.h"
#include "transport_impl.h"

#include <rdmapool/util.h>
#include <rdmapool/wire.h>

#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Send auth (made for this greeting when fresh) and return the status. */
static int32_t attempt(const struct rp_peer *p, uint8_t *auth, bool fresh, const uint8_t *secret,
		       size_t slen, const char *cluster)
{
	uint8_t hello[RP_HELLO_LEN], welcome[RP_WELCOME_LEN];
	int fd = helper_tcp_dial(p, 0);
	if (fd < 0 || rp_read_full(fd, hello, sizeof(hello)) < 0)
		return 1;
	if (fresh) {
		memset(auth, 0, RP_AUTH_LEN);
		rp_put_le32(auth, RP_AUTH_MAGIC);
		rp_put_le16(auth + 4, RP_WIRE_VERSION);
		rp_random_bytes(auth + 8, RP_NONCE_LEN);
		rp_put_le32(auth + 24, p->id);
		rp_random_bytes(auth + RP_AUTH_SESSION_OFF, 8);
		rp_put_le64(auth + RP_AUTH_GEN_OFF, 1);
		rp_auth_mac(secret, slen, RP_AUTH_LABEL_CLIENT, hello + 8, auth + 8, cluster,
			    auth + RP_AUTH_BIND_OFF, RP_AUTH_BIND_LEN, auth + RP_AUTH_MAC_OFF);
	}
	int32_t status = 1;
	if (rp_write_full(fd, auth, RP_AUTH_LEN) == 0 &&
	    rp_read_full(fd, welcome, sizeof(welcome)) == 0)
		status = (int32_t)rp_get_le32(welcome + 4);
	close(fd);
	return status;
}

int main(int argc, char **argv)
{
	struct rp_cluster *cl;
	uint8_t secret[RP_SECRET_MAX], auth[RP_AUTH_LEN];
	size_t slen;
	char err[1024];
	if (argc != 3) {
		fprintf(stderr, "usage: tcp_replay CLUSTER PEER_ID\n");
		return 2;
	}
	if (rp_cluster_load(argv[1], &cl, err, sizeof(err)) < 0 ||
	    rp_cluster_load_secret(cl, secret, &slen, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcp_replay: %s\n", err);
		return 1;
	}
	const struct rp_peer *p = rp_cluster_peer(cl, (uint32_t)atoi(argv[2]));
	if (!p) {
		fprintf(stderr, "tcp_replay: no such peer\n");
		return 1;
	}
	printf("fresh answer: status %d\n", attempt(p, auth, true, secret, slen, cl->name));
	printf("replayed answer: status %d\n", attempt(p, auth, false, secret, slen, cl->name));
	rp_cluster_free(cl);
	return 0;
}
