/* On-the-wire formats between clients and rdmapoold: the tcp transport's
 * handshake and request/response frames, and the rdma connect private data.
 * All integers little-endian; every message starts with a magic and carries
 * the protocol version so a mismatch is reported, not misread. */
#ifndef RDMAPOOL_WIRE_H
#define RDMAPOOL_WIRE_H

#include <stdint.h>

#define RP_WIRE_VERSION 3

/* Authentication (rdmapool(7), "Authentication"): each side proves the
 * cluster secret with an HMAC-SHA-256 over a nonce the other side chose
 * fresh (so nothing can be replayed, across restarts too, with no clocks
 * involved) and over the target: the peer id the client means, and, in the
 * server's answer, its status, the pool uuid and what the client will use
 * (size, rkey, address). */

/* tcp handshake */
#define RP_HELLO_MAGIC 0x53485052u   /* "RPHS" server -> client */
#define RP_AUTH_MAGIC 0x55415052u    /* "RPAU" client -> server */
#define RP_WELCOME_MAGIC 0x4c575052u /* "RPWL" server -> client */
#define RP_HELLO_LEN 32   /* magic4 ver2 flags2 snonce16 rsvd8 */
#define RP_AUTH_LEN 80    /* magic4 ver2 rsvd2 cnonce16 peer4 rsvd4 session8 gen8 mac32 */
/* What the client's MAC binds besides the nonces: peer id, and its session
 * (one per client connection object, random) with the generation of this
 * connect, which grows with every reconnect. The server fences a session's
 * older connections when a newer one is accepted: none of their requests
 * executes after the newer connection's welcome (rdmapool(7), "Fencing").
 * A volume's lease holder uses the volume's fence session instead, with its
 * writer epoch in the generation's top 32 bits: a newer holder fences the
 * older ones the same way, and the server remembers it past their
 * connections (src/transport/fence_memo.h). */
#define RP_AUTH_BIND_OFF 24
#define RP_AUTH_BIND_LEN 24
#define RP_AUTH_SESSION_OFF 32
#define RP_AUTH_GEN_OFF 40
#define RP_AUTH_MAC_OFF 48
#define RP_WELCOME_LEN 72 /* magic4 status4 size8 rkey4 rsvd4 uuid16 mac32 */

/* tcp frames */
#define RP_REQ_LEN 48  /* op1 rsvd3 rkey4 id8 offset8 len4 rsvd4 compare8 value8 */
#define RP_RESP_LEN 32 /* id8 status4 len4 result8 rsvd8 */

/* rdma connect private data: a REQ carries at most 56 bytes, a REJ 148, a
 * REP 196. Two connects: the first (HELLO) is rejected with a challenge,
 * the second (AUTH) answers it and is accepted with the pool's description. */
#define RP_RDMA_REQ_MAGIC 0x51525052u /* "RPRQ" */
#define RP_RDMA_REP_MAGIC 0x50525052u /* "RPRP" */
#define RP_RDMA_HELLO 1
#define RP_RDMA_AUTH 2
#define RP_RDMA_REQ_LEN 56 /* magic4 ver2 kind2 peer4 rsvd4, then
			    * HELLO: cnonce16 session8 gen8 rsvd8; AUTH: challenge16 mac24 */
/* The HELLO names the client's session and this connect's generation, as
 * the tcp AUTH does (fencing older connections of the session); the AUTH's
 * MAC binds them, with the peer id: peer4 session8 gen8. Session 0: none
 * (test tools), not fenced. */
#define RP_RDMA_HELLO_SESSION_OFF 32
#define RP_RDMA_HELLO_GEN_OFF 40
#define RP_RDMA_BIND_LEN 20
#define RP_RDMA_REQ_MAC_LEN 24
#define RP_RDMA_REJ_LEN 28 /* magic4 ver2 rsvd2 status4 challenge16 */
#define RP_RDMA_REP_LEN 88 /* magic4 ver2 rsvd2 status4 rkey4 addr8 size8 uuid16 rsvd4 mac32 rsvd4 */
/* the status of a REJ that carries a challenge */
#define RP_RDMA_CHALLENGE 1
/* how long a challenge may be answered */
#define RP_RDMA_CHALLENGE_MS 30000

#define RP_AUTH_LABEL_CLIENT "rdmapool-v2 client"
#define RP_AUTH_LABEL_SERVER "rdmapool-v2 server"

#endif
