/* On-the-wire formats between clients and rdmapoold: the tcp transport's
 * handshake and request/response frames, and the rdma connect private data.
 * All integers little-endian; every message starts with a magic and carries
 * the protocol version so a mismatch is reported, not misread. */
#ifndef RDMAPOOL_WIRE_H
#define RDMAPOOL_WIRE_H

#include <stdint.h>

#define RP_WIRE_VERSION 1

/* tcp handshake */
#define RP_HELLO_MAGIC 0x53485052u   /* "RPHS" server -> client */
#define RP_AUTH_MAGIC 0x55415052u    /* "RPAU" client -> server */
#define RP_WELCOME_MAGIC 0x4c575052u /* "RPWL" server -> client */
#define RP_HELLO_LEN 32   /* magic4 ver2 flags2 nonce16 rsvd8 */
#define RP_AUTH_LEN 56    /* magic4 ver2 rsvd2 nonce16 mac32 */
#define RP_WELCOME_LEN 56 /* magic4 status4 size8 rkey4 rsvd4 mac32 */

/* tcp frames */
#define RP_REQ_LEN 48  /* op1 rsvd3 rkey4 id8 offset8 len4 rsvd4 compare8 value8 */
#define RP_RESP_LEN 32 /* id8 status4 len4 result8 rsvd8 */

/* rdma connect private data (REQ carries at most 56 bytes) */
#define RP_RDMA_REQ_MAGIC 0x51525052u /* "RPRQ" */
#define RP_RDMA_REP_MAGIC 0x50525052u /* "RPRP" */
#define RP_RDMA_REQ_LEN 48 /* magic4 ver2 rsvd2 stamp8 nonce16 mac16 */
#define RP_RDMA_REP_LEN 48 /* magic4 ver2 rsvd2 status4 rkey4 addr8 size8 mac16 */
#define RP_RDMA_MAC_LEN 16
/* A connect request's timestamp must be this fresh (and its nonce unseen). */
#define RP_RDMA_STAMP_WINDOW_NS (120ull * 1000000000ull)

#define RP_AUTH_LABEL_CLIENT "rdmapool-v1 client"
#define RP_AUTH_LABEL_SERVER "rdmapool-v1 server"

#endif
