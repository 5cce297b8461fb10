/* Protection-domain cache, CM event waiting with a timeout, and completion
 * status mapping, shared by both ends of the rdma transport. */
#include "config.h"
#include "rdma_common.h"

#include <rdmapool/lock_order.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#define MAX_DEVICES 16

static pthread_mutex_t pd_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
} pds[MAX_DEVICES];

struct ibv_pd *rp_rdma_pd_for(struct ibv_context *ctx)
{
	struct ibv_pd *pd = NULL;
	rp_mutex_lock(&pd_mu, RP_LK_RDMA_PD);
	for (int i = 0; i < MAX_DEVICES; i++) {
		if (pds[i].ctx == ctx) {
			pd = pds[i].pd;
			break;
		}
		if (!pds[i].ctx) {
			pd = ibv_alloc_pd(ctx);
			if (pd) {
				pds[i].ctx = ctx;
				pds[i].pd = pd;
			}
			break;
		}
	}
	rp_mutex_unlock(&pd_mu);
	return pd;
}

int rp_rdma_next_event(struct rdma_event_channel *ch, int timeout_ms, struct rp_cm_event *out)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int rc = poll(&pfd, 1, timeout_ms);
	if (rc == 0)
		return -ETIMEDOUT;
	if (rc < 0)
		return -errno;
	if (rdma_get_cm_event(ch, &ev))
		return -errno;
	out->type = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	out->private_len = 0;
	out->responder_resources = ev->param.conn.responder_resources;
	out->initiator_depth = ev->param.conn.initiator_depth;
	if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
		out->private_len = ev->param.conn.private_data_len;
		memcpy(out->private_data, ev->param.conn.private_data, out->private_len);
	}
	rdma_ack_cm_event(ev);
	return 0;
}

int rp_rdma_wc_errno(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return 0;
	case IBV_WC_REM_ACCESS_ERR: return -EACCES;     /* bad rkey or outside the region */
	case IBV_WC_REM_INV_REQ_ERR: return -EINVAL;
	case IBV_WC_RETRY_EXC_ERR: return -ETIMEDOUT;   /* peer stopped answering */
	case IBV_WC_RNR_RETRY_EXC_ERR: return -ETIMEDOUT;
	case IBV_WC_WR_FLUSH_ERR: return -ECANCELED;
	case IBV_WC_LOC_PROT_ERR: return -EFAULT;
	case IBV_WC_LOC_LEN_ERR: return -EMSGSIZE;
	case IBV_WC_REM_OP_ERR: return -EREMOTEIO;
	default: return -EIO;
	}
}
