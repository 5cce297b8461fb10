/* Cluster membership file: parse with jansson, validate every field, and
 * report each problem as FILE:LINE:COL so the user can go straight to it. */
#include "config.h"
#include <rdmapool/cluster.h>
#include <rdmapool/json_locate.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE_BYTES (1u << 20)

struct ctx {
	const char *name;
	const char *text;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 6, 7)))
static int fail(struct ctx *c, const struct rp_json_path *path, size_t depth, int want_key, int rc,
		const char *fmt, ...)
{
	int line = 1, col = 1;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rp_json_locate(c->text, path, depth, want_key, &line, &col) != 0) {
		line = 1;
		col = 1;
	}
	snprintf(c->err, c->errlen, "%s:%d:%d: %s", c->name, line, col, msg);
	return rc;
}

const char *rp_transport_name(enum rp_transport_kind k)
{
	switch (k) {
	case RP_TRANSPORT_TCP: return "tcp";
	case RP_TRANSPORT_RDMA: return "rdma";
	default: return "auto";
	}
}

static int check_keys(struct ctx *c, json_t *obj, const char *const allowed[],
		      struct rp_json_path *path, size_t depth)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		int ok = 0;
		for (const char *const *a = allowed; *a; a++)
			ok |= strcmp(*a, key) == 0;
		if (!ok) {
			path[depth].key = key;
			return fail(c, path, depth + 1, 1, -EINVAL, "unknown key \"%s\"", key);
		}
	}
	return 0;
}

/* Fetch an optional integer member within [lo, hi]. */
static int get_int(struct ctx *c, json_t *obj, const char *key, long long lo, long long hi,
		   long long *out, int required, struct rp_json_path *path, size_t depth)
{
	json_t *v = json_object_get(obj, key);
	path[depth].key = key;
	if (!v) {
		if (required)
			return fail(c, path, depth, 0, -EINVAL, "missing key \"%s\" (an integer)", key);
		return 1;
	}
	if (!json_is_integer(v))
		return fail(c, path, depth + 1, 0, -EINVAL, "\"%s\" must be an integer", key);
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return fail(c, path, depth + 1, 0, -ERANGE, "\"%s\" is %lld, expected %lld..%lld", key,
			    x, lo, hi);
	*out = x;
	return 0;
}

static int get_str(struct ctx *c, json_t *obj, const char *key, char *out, size_t outlen,
		   int required, struct rp_json_path *path, size_t depth)
{
	json_t *v = json_object_get(obj, key);
	path[depth].key = key;
	if (!v) {
		if (required)
			return fail(c, path, depth, 0, -EINVAL, "missing key \"%s\" (a string)", key);
		return 1;
	}
	if (!json_is_string(v))
		return fail(c, path, depth + 1, 0, -EINVAL, "\"%s\" must be a string", key);
	const char *s = json_string_value(v);
	if (s[0] == '\0' || strlen(s) >= outlen)
		return fail(c, path, depth + 1, 0, -EINVAL,
			    "\"%s\" must be a non-empty string of at most %zu bytes", key, outlen - 1);
	strcpy(out, s);
	return 0;
}

static int get_transport(struct ctx *c, json_t *obj, enum rp_transport_kind *out,
			 struct rp_json_path *path, size_t depth)
{
	char s[16];
	int rc = get_str(c, obj, "transport", s, sizeof(s), 0, path, depth);
	if (rc)
		return rc < 0 ? rc : 0;
	if (strcmp(s, "auto") == 0)
		*out = RP_TRANSPORT_AUTO;
	else if (strcmp(s, "tcp") == 0)
		*out = RP_TRANSPORT_TCP;
	else if (strcmp(s, "rdma") == 0)
		*out = RP_TRANSPORT_RDMA;
	else
		return fail(c, path, depth + 1, 0, -EINVAL,
			    "\"transport\" is \"%s\", expected \"rdma\", \"tcp\" or \"auto\"", s);
	return 0;
}

static int parse_peer(struct ctx *c, json_t *p, struct rp_peer *peer, const struct rp_cluster *cl,
		      struct rp_json_path *path)
{
	static const char *const keys[] = { "id", "host", "port", "transport", "device", "ib_port", "zone",
					    NULL };
	long long v;
	int rc;

	if (!json_is_object(p))
		return fail(c, path, 2, 0, -EINVAL, "a peer must be an object with id, host and port");
	if ((rc = check_keys(c, p, keys, path, 2)))
		return rc;
	if ((rc = get_int(c, p, "id", 0, 65535, &v, 1, path, 2)) < 0)
		return rc;
	peer->id = (uint32_t)v;
	if ((rc = get_str(c, p, "host", peer->host, sizeof(peer->host), 1, path, 2)) < 0)
		return rc;
	if ((rc = get_int(c, p, "port", 1, 65535, &v, 1, path, 2)) < 0)
		return rc;
	peer->port = (uint16_t)v;
	peer->transport = cl->transport;
	if ((rc = get_transport(c, p, &peer->transport, path, 2)) < 0)
		return rc;
	if ((rc = get_str(c, p, "device", peer->device, sizeof(peer->device), 0, path, 2)) < 0)
		return rc;
	peer->ib_port = 0;
	if ((rc = get_int(c, p, "ib_port", 1, 255, &v, 0, path, 2)) < 0)
		return rc;
	if (rc == 0)
		peer->ib_port = (int)v;
	/* a failure domain: replicas of a block go to different zones */
	rc = get_str(c, p, "zone", peer->zone, sizeof(peer->zone), 0, path, 2);
	return rc < 0 ? rc : 0;
}

static int parse_root(struct ctx *c, json_t *root, struct rp_cluster *cl)
{
	static const char *const keys[] = { "version", "name", "transport", "secret_file",
					    "block_size", "device", "ib_port", "op_timeout_ms",
					    "connect_timeout_ms", "peers", NULL };
	struct rp_json_path path[4] = { { 0 } };
	char device[64] = "";
	int ib_port = 0;
	long long v;
	int rc;

	if (!json_is_object(root))
		return fail(c, path, 0, 0, -EINVAL, "the cluster file must hold a JSON object");
	if ((rc = check_keys(c, root, keys, path, 0)))
		return rc;
	if ((rc = get_int(c, root, "version", 1, 1, &v, 1, path, 0)) < 0)
		return rc;
	if ((rc = get_str(c, root, "name", cl->name, sizeof(cl->name), 1, path, 0)) < 0)
		return rc;
	if ((rc = get_transport(c, root, &cl->transport, path, 0)) < 0)
		return rc;
	if ((rc = get_str(c, root, "secret_file", cl->secret_file, sizeof(cl->secret_file), 1, path, 0)) < 0)
		return rc;
	cl->block_size = 4096;
	if ((rc = get_int(c, root, "block_size", 512, 1 << 20, &v, 0, path, 0)) < 0)
		return rc;
	if (rc == 0) {
		if (v & (v - 1))
			return fail(c, path, 1, 0, -EINVAL, "\"block_size\" is %lld, expected a power of two", v);
		cl->block_size = (uint32_t)v;
	}
	cl->op_timeout_ms = 5000;
	if ((rc = get_int(c, root, "op_timeout_ms", 10, 600000, &v, 0, path, 0)) < 0)
		return rc;
	if (rc == 0)
		cl->op_timeout_ms = (uint32_t)v;
	cl->connect_timeout_ms = 3000;
	if ((rc = get_int(c, root, "connect_timeout_ms", 10, 600000, &v, 0, path, 0)) < 0)
		return rc;
	if (rc == 0)
		cl->connect_timeout_ms = (uint32_t)v;
	if ((rc = get_str(c, root, "device", device, sizeof(device), 0, path, 0)) < 0)
		return rc;
	if ((rc = get_int(c, root, "ib_port", 1, 255, &v, 0, path, 0)) < 0)
		return rc;
	if (rc == 0)
		ib_port = (int)v;

	json_t *peers = json_object_get(root, "peers");
	path[0].key = "peers";
	if (!peers)
		return fail(c, path, 0, 0, -EINVAL, "missing key \"peers\" (an array of peers)");
	if (!json_is_array(peers) || json_array_size(peers) == 0)
		return fail(c, path, 1, 0, -EINVAL, "\"peers\" must be a non-empty array");
	if (json_array_size(peers) > RP_MAX_PEERS)
		return fail(c, path, 1, 0, -E2BIG, "\"peers\" has %zu entries, at most %d are allowed",
			    json_array_size(peers), RP_MAX_PEERS);
	cl->npeers = json_array_size(peers);
	cl->peers = calloc(cl->npeers, sizeof(*cl->peers));
	if (!cl->peers)
		return -ENOMEM;
	for (size_t i = 0; i < cl->npeers; i++) {
		struct rp_peer *peer = &cl->peers[i];
		path[1].key = NULL;
		path[1].index = i;
		if ((rc = parse_peer(c, json_array_get(peers, i), peer, cl, path)) < 0)
			return rc;
		if (!peer->device[0])
			strcpy(peer->device, device);
		if (!peer->ib_port)
			peer->ib_port = ib_port;
		for (size_t j = 0; j < i; j++) {
			path[2].key = "id";
			if (cl->peers[j].id == peer->id)
				return fail(c, path, 3, 0, -EEXIST,
					    "duplicate peer id %u (also peers[%zu])", peer->id, j);
			path[2].key = "port";
			if (cl->peers[j].port == peer->port && strcmp(cl->peers[j].host, peer->host) == 0)
				return fail(c, path, 3, 0, -EEXIST,
					    "duplicate address %s:%u (also peers[%zu])", peer->host,
					    peer->port, j);
		}
	}
	return 0;
}

int rp_cluster_parse(const char *name, const char *text, struct rp_cluster **out, char *err,
		     size_t errlen)
{
	struct ctx c = { name, text, err, errlen };
	json_error_t jerr;
	struct rp_cluster *cl;
	int rc;

	*out = NULL;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, errlen, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		json_decref(root);
		return -ENOMEM;
	}
	snprintf(cl->path, sizeof(cl->path), "%s", name);
	rc = parse_root(&c, root, cl);
	json_decref(root);
	if (rc < 0) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "%s: out of memory", name);
		rp_cluster_free(cl);
		return rc;
	}
	/* A relative secret_file is relative to the cluster file's folder. */
	if (cl->secret_file[0] != '/') {
		char dir[4096], joined[8192];
		snprintf(dir, sizeof(dir), "%s", name);
		snprintf(joined, sizeof(joined), "%s/%s", dirname(dir), cl->secret_file);
		if (strlen(joined) >= sizeof(cl->secret_file)) {
			snprintf(err, errlen, "%s: secret_file path too long", name);
			rp_cluster_free(cl);
			return -ENAMETOOLONG;
		}
		strcpy(cl->secret_file, joined);
	}
	*out = cl;
	return 0;
}

int rp_cluster_load(const char *path, struct rp_cluster **out, char *err, size_t errlen)
{
	struct stat st;
	char *text;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s:0:0: cannot open cluster file: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE_BYTES) {
		snprintf(err, errlen, "%s:0:0: not a regular file of at most %u bytes", path,
			 MAX_FILE_BYTES);
		close(fd);
		return -EINVAL;
	}
	text = calloc(1, (size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return -ENOMEM;
	}
	ssize_t n = read(fd, text, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		snprintf(err, errlen, "%s:0:0: short read", path);
		free(text);
		return -EIO;
	}
	rc = rp_cluster_parse(path, text, out, err, errlen);
	free(text);
	return rc;
}

void rp_cluster_free(struct rp_cluster *c)
{
	if (!c)
		return;
	free(c->peers);
	free(c);
}

int rp_cluster_peer_index(const struct rp_cluster *c, uint32_t id)
{
	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].id == id)
			return (int)i;
	return -1;
}

const struct rp_peer *rp_cluster_peer(const struct rp_cluster *c, uint32_t id)
{
	int i = rp_cluster_peer_index(c, id);
	return i < 0 ? NULL : &c->peers[i];
}

/* The secret file: a regular file no other user can read or change (the
 * secret is all that stands between the network and the pools), of at
 * most RP_SECRET_MAX bytes after its trailing newline: a longer one is
 * refused, not cut (two files differing past the cut would agree). */
static int secret_file_ok(const struct rp_cluster *c, int fd, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;
		snprintf(err, errlen, "%s: stat: %s", c->secret_file, strerror(-rc));
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: secret_file named in %s is not a regular file",
			 c->secret_file, c->path);
		return -EINVAL;
	}
	if (st.st_mode & 007) {
		snprintf(err, errlen, "%s: secret_file is %s by other users (mode %04o): chmod 600 it",
			 c->secret_file, st.st_mode & 002 ? "writable" : "readable",
			 (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int rp_cluster_load_secret(const struct rp_cluster *c, uint8_t *secret, size_t *len, char *err,
			   size_t errlen)
{
	uint8_t buf[RP_SECRET_MAX + 3]; /* room to see a secret that is too long */
	int fd = open(c->secret_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;
		snprintf(err, errlen, "%s: cannot open secret_file named in %s: %s", c->secret_file,
			 c->path, strerror(-rc));
		return rc;
	}
	int rc = secret_file_ok(c, fd, err, errlen);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	ssize_t n = 0, r = 1;
	while (rc == 0 && r > 0 && (size_t)n < sizeof(buf)) {
		r = read(fd, buf + n, sizeof(buf) - (size_t)n);
		if (r > 0)
			n += r;
		else if (r < 0 && errno != EINTR)
			rc = -errno;
		else if (r < 0)
			r = 1;
	}
	close(fd);
	if (rc < 0) {
		snprintf(err, errlen, "%s: read: %s", c->secret_file, strerror(-rc));
		return rc;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n > RP_SECRET_MAX) {
		snprintf(err, errlen, "%s: secret is over %d bytes, the most there may be",
			 c->secret_file, RP_SECRET_MAX);
		memset(buf, 0, sizeof(buf));
		return -EINVAL;
	}
	if (n < RP_SECRET_MIN) {
		snprintf(err, errlen, "%s: secret is %zd bytes, at least %d are required",
			 c->secret_file, n, RP_SECRET_MIN);
		return -EINVAL;
	}
	memcpy(secret, buf, (size_t)n);
	memset(buf, 0, sizeof(buf));
	*len = (size_t)n;
	return 0;
}
