/* The JSON cluster membership file that every program takes with -c. */
#ifndef RDMAPOOL_CLUSTER_H
#define RDMAPOOL_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#define RP_DEFAULT_CLUSTER_FILE "/etc/rdmapool/cluster.json"
#define RP_MAX_PEERS 256
#define RP_NAME_MAX 63
#define RP_SECRET_MAX 256
#define RP_SECRET_MIN 16

enum rp_transport_kind {
	RP_TRANSPORT_AUTO = 0,
	RP_TRANSPORT_TCP,
	RP_TRANSPORT_RDMA,
};

struct rp_peer {
	uint32_t id;
	char host[256];
	uint16_t port;
	enum rp_transport_kind transport;
	char device[64]; /* RDMA device name, "" = any */
	int ib_port;     /* RDMA port number, 0 = default */
	char zone[64];   /* failure domain, "" = none given */
};

struct rp_cluster {
	char path[4096];
	char name[RP_NAME_MAX + 1];
	enum rp_transport_kind transport;
	char secret_file[4096]; /* resolved against the cluster file's folder */
	uint32_t block_size;
	uint32_t op_timeout_ms;
	uint32_t connect_timeout_ms;
	size_t npeers;
	struct rp_peer *peers;
};

/* Parse and validate a cluster file. On failure returns a negative errno and
 * writes "FILE:LINE:COL: message" to err. */
int rp_cluster_load(const char *path, struct rp_cluster **out, char *err, size_t errlen);
/* Same, from a string; name is used in messages. */
int rp_cluster_parse(const char *name, const char *text, struct rp_cluster **out, char *err,
		     size_t errlen);
void rp_cluster_free(struct rp_cluster *c);

const struct rp_peer *rp_cluster_peer(const struct rp_cluster *c, uint32_t id);
/* Index in c->peers, or -1. */
int rp_cluster_peer_index(const struct rp_cluster *c, uint32_t id);

/* Read the shared secret named by secret_file. */
int rp_cluster_load_secret(const struct rp_cluster *c, uint8_t *secret, size_t *len, char *err,
			   size_t errlen);

const char *rp_transport_name(enum rp_transport_kind k);

#endif
