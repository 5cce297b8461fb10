/* Helpers shared by the rdma client and the pool server's rdma listener. */
#ifndef RDMAPOOL_RDMA_COMMON_H
#define RDMAPOOL_RDMA_COMMON_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>

/* One protection domain per device context for the process lifetime, so
 * memory registrations survive a reconnect. */
struct ibv_pd *rp_rdma_pd_for(struct ibv_context *ctx);

/* Wait up to timeout_ms for the next CM event on ch; copies what callers need
 * and acks it. Returns 0, -ETIMEDOUT or a negative errno. */
struct rp_cm_event {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t private_data[256];
	uint8_t private_len;
	uint8_t responder_resources; /* from a connect request */
	uint8_t initiator_depth;
};
int rp_rdma_next_event(struct rdma_event_channel *ch, int timeout_ms, struct rp_cm_event *out);

/* Work completion status to a negative errno. */
int rp_rdma_wc_errno(enum ibv_wc_status s);

#endif
