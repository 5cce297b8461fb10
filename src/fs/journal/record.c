/* Metadata log records: a 32-byte header (magic, type, flags, payload
 * length, epoch, sequence number, CRC32C over volume uuid, header and
 * payload) and a type-specific little-endian payload, padded to 8 bytes. */
#include "config.h"
#include "../fs_impl.h"

#include <rdmapool/crypto.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <string.h>

struct cur {
	uint8_t *p;
	const uint8_t *rp;
	size_t left;
	int err;
};

static void w64(struct cur *c, uint64_t v)
{
	if (c->left < 8) { c->err = -E2BIG; return; }
	rp_put_le64(c->p, v); c->p += 8; c->left -= 8;
}
static void w32(struct cur *c, uint32_t v)
{
	if (c->left < 4) { c->err = -E2BIG; return; }
	rp_put_le32(c->p, v); c->p += 4; c->left -= 4;
}
static void w16(struct cur *c, uint16_t v)
{
	if (c->left < 2) { c->err = -E2BIG; return; }
	rp_put_le16(c->p, v); c->p += 2; c->left -= 2;
}
static void wbytes(struct cur *c, const void *b, size_t n)
{
	if (c->left < n) { c->err = -E2BIG; return; }
	if (n)
		memcpy(c->p, b, n);
	c->p += n; c->left -= n;
}
static void wtime(struct cur *c, struct timespec t)
{
	w64(c, (uint64_t)t.tv_sec);
	w32(c, (uint32_t)t.tv_nsec);
}

static uint64_t r64(struct cur *c)
{
	if (c->left < 8) { c->err = -EBADMSG; return 0; }
	uint64_t v = rp_get_le64(c->rp); c->rp += 8; c->left -= 8; return v;
}
static uint32_t r32(struct cur *c)
{
	if (c->left < 4) { c->err = -EBADMSG; return 0; }
	uint32_t v = rp_get_le32(c->rp); c->rp += 4; c->left -= 4; return v;
}
static uint16_t r16(struct cur *c)
{
	if (c->left < 2) { c->err = -EBADMSG; return 0; }
	uint16_t v = rp_get_le16(c->rp); c->rp += 2; c->left -= 2; return v;
}
static const void *rbytes(struct cur *c, size_t n)
{
	if (c->left < n) { c->err = -EBADMSG; return NULL; }
	const void *p = c->rp; c->rp += n; c->left -= n; return p;
}
static struct timespec rtime(struct cur *c)
{
	struct timespec t;
	t.tv_sec = (time_t)r64(c);
	t.tv_nsec = (long)r32(c);
	if (t.tv_nsec >= 1000000000L)
		c->err = -EBADMSG;
	return t;
}

static uint32_t crc_of(const uint8_t uuid[16], const uint8_t *hdr, const uint8_t *payload,
		       size_t plen)
{
	uint8_t h[REC_HDR];
	memcpy(h, hdr, REC_HDR);
	memset(h + 24, 0, 4);
	uint32_t crc = rp_crc32c(0, uuid, 16);
	crc = rp_crc32c(crc, h, REC_HDR);
	return rp_crc32c(crc, payload, plen);
}

ssize_t rec_encode(const struct rp_rec *r, uint64_t epoch, const uint8_t uuid[16], uint8_t *buf,
		   size_t cap)
{
	if (cap < REC_HDR)
		return -E2BIG;
	struct cur c = { .p = buf + REC_HDR, .left = cap - REC_HDR };
	if (r->name_len > RP_XATTR_NAME_MAX && r->type != REC_SYMLINK)
		return -ENAMETOOLONG;
	if (r->type == REC_SYMLINK && r->name_len > RP_SYMLINK_MAX)
		return -ENAMETOOLONG;
	switch (r->type) {
	case REC_ATTR:
		w64(&c, r->ino); w32(&c, r->mode); w32(&c, r->uid); w32(&c, r->gid);
		w32(&c, r->nlink); w64(&c, r->size); w64(&c, r->rdev); w64(&c, r->gen);
		wtime(&c, r->atime); wtime(&c, r->mtime); wtime(&c, r->ctime);
		break;
	case REC_DIRENT_ADD:
		w64(&c, r->ino); w64(&c, r->ino2); w16(&c, (uint16_t)r->name_len);
		wbytes(&c, r->name, r->name_len);
		break;
	case REC_DIRENT_DEL:
	case REC_XATTR_DEL:
	case REC_SYMLINK:
		w64(&c, r->ino); w16(&c, (uint16_t)r->name_len); wbytes(&c, r->name, r->name_len);
		break;
	case REC_EXT_SET:
		w64(&c, r->ino); w64(&c, r->fblock); w32(&c, r->ext.pool); w32(&c, r->ext.count);
		w64(&c, r->ext.block);
		break;
	case REC_EXT_CLEAR:
		w64(&c, r->ino); w64(&c, r->fblock); w64(&c, r->count);
		break;
	case REC_XATTR_SET:
		if (r->value_len > RP_XATTR_VALUE_MAX)
			return -E2BIG;
		w64(&c, r->ino); w16(&c, (uint16_t)r->name_len); w32(&c, r->value_len);
		wbytes(&c, r->name, r->name_len); wbytes(&c, r->value, r->value_len);
		break;
	case REC_INODE_DEL:
	case REC_NEXT_INO:
		w64(&c, r->ino);
		break;
	case REC_LINK:
	case REC_SPARE:
		w32(&c, r->ext.pool); w32(&c, r->ext.count); w64(&c, r->ext.block);
		break;
	case REC_REQ:
		w64(&c, r->ino); w64(&c, r->ino2);
		break;
	case REC_INTENT:
		w32(&c, (uint32_t)r->fblock); w64(&c, r->count);
		break;
	case REC_POOL:
		if (r->value_len != 16)
			return -EINVAL;
		w32(&c, r->ext.pool); wbytes(&c, r->value, 16);
		break;
	default:
		return -EINVAL;
	}
	if (c.err)
		return c.err;
	size_t plen = (size_t)(c.p - (buf + REC_HDR));
	size_t total = RP_ALIGN_UP(REC_HDR + plen, 8);
	if (total > cap)
		return -E2BIG;
	memset(buf + REC_HDR + plen, 0, total - REC_HDR - plen);
	rp_put_le16(buf, REC_MAGIC);
	buf[2] = r->type;
	buf[3] = r->flags;
	rp_put_le32(buf + 4, (uint32_t)plen);
	rp_put_le64(buf + 8, epoch);
	rp_put_le64(buf + 16, r->seq);
	rp_put_le32(buf + 28, 0);
	rp_put_le32(buf + 24, crc_of(uuid, buf, buf + REC_HDR, plen));
	return (ssize_t)total;
}

ssize_t rec_decode(const uint8_t *buf, size_t len, uint64_t epoch, const uint8_t uuid[16],
		   struct rp_rec *r)
{
	if (len < REC_HDR || rp_get_le16(buf) != REC_MAGIC || rp_get_le64(buf + 8) != epoch)
		return -ENODATA;
	size_t plen = rp_get_le32(buf + 4);
	if (plen > len - REC_HDR || plen > REC_MAX)
		return -ENODATA;
	if (rp_get_le32(buf + 24) != crc_of(uuid, buf, buf + REC_HDR, plen))
		return -ENODATA;
	memset(r, 0, sizeof(*r));
	r->type = buf[2];
	r->flags = buf[3];
	r->seq = rp_get_le64(buf + 16);
	struct cur c = { .rp = buf + REC_HDR, .left = plen };
	switch (r->type) {
	case REC_ATTR:
		r->ino = r64(&c); r->mode = r32(&c); r->uid = r32(&c); r->gid = r32(&c);
		r->nlink = r32(&c); r->size = r64(&c); r->rdev = r64(&c); r->gen = r64(&c);
		r->atime = rtime(&c); r->mtime = rtime(&c); r->ctime = rtime(&c);
		break;
	case REC_DIRENT_ADD:
		r->ino = r64(&c); r->ino2 = r64(&c); r->name_len = r16(&c);
		r->name = rbytes(&c, r->name_len);
		break;
	case REC_DIRENT_DEL:
	case REC_XATTR_DEL:
	case REC_SYMLINK:
		r->ino = r64(&c); r->name_len = r16(&c); r->name = rbytes(&c, r->name_len);
		break;
	case REC_EXT_SET:
		r->ino = r64(&c); r->fblock = r64(&c); r->ext.pool = r32(&c); r->ext.count = r32(&c);
		r->ext.block = r64(&c);
		break;
	case REC_EXT_CLEAR:
		r->ino = r64(&c); r->fblock = r64(&c); r->count = r64(&c);
		break;
	case REC_XATTR_SET:
		r->ino = r64(&c); r->name_len = r16(&c); r->value_len = r32(&c);
		r->name = rbytes(&c, r->name_len); r->value = rbytes(&c, r->value_len);
		break;
	case REC_INODE_DEL:
	case REC_NEXT_INO:
		r->ino = r64(&c);
		break;
	case REC_LINK:
	case REC_SPARE:
		r->ext.pool = r32(&c); r->ext.count = r32(&c); r->ext.block = r64(&c);
		break;
	case REC_REQ:
		r->ino = r64(&c); r->ino2 = r64(&c);
		break;
	case REC_INTENT:
		r->fblock = r32(&c); r->count = r64(&c);
		break;
	case REC_POOL:
		r->ext.pool = r32(&c); r->value = rbytes(&c, 16); r->value_len = 16;
		break;
	default:
		return -EBADMSG;
	}
	if (c.err || c.left != 0)
		return -EBADMSG;
	return (ssize_t)RP_ALIGN_UP(REC_HDR + plen, 8);
}
