/* Cluster file parsing: a valid file, and every error class with its
 * file:line:column. */
#include "config.h"
#include "tap.h"

#include <rdmapool/cluster.h>
#include <rdmapool/json_locate.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *GOOD =
	"{\n"
	"  \"version\": 1,\n"
	"  \"name\": \"demo\",\n"
	"  \"transport\": \"auto\",\n"
	"  \"secret_file\": \"secret\",\n"
	"  \"block_size\": 4096,\n"
	"  \"peers\": [\n"
	"    { \"id\": 0, \"host\": \"127.0.0.1\", \"port\": 7471 },\n"
	"    { \"id\": 1, \"host\": \"127.0.0.1\", \"port\": 7472, \"transport\": \"tcp\" }\n"
	"  ]\n"
	"}\n";

/* Parse text; expect failure with err starting with want_prefix and
 * containing want_text. */
static void expect_error(const char *label, const char *text, const char *want_prefix,
			 const char *want_text)
{
	struct rp_cluster *cl = NULL;
	char err[512] = "";
	int rc = rp_cluster_parse("c.json", text, &cl, err, sizeof(err));
	ok(rc < 0 && cl == NULL, "%s: refused (rc %d)", label, rc);
	ok(strncmp(err, want_prefix, strlen(want_prefix)) == 0 && strstr(err, want_text),
	   "%s: message \"%s\" starts with \"%s\" and says \"%s\"", label, err, want_prefix, want_text);
}

static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	if (!at)
		abort();
	char *out = malloc(strlen(text) + strlen(to) + 1);
	size_t head = (size_t)(at - text);
	memcpy(out, text, head);
	strcpy(out + head, to);
	strcat(out, at + strlen(from));
	return out;
}

static void expect_replaced(const char *label, const char *from, const char *to,
			    const char *prefix, const char *text)
{
	char *t = replace(GOOD, from, to);
	expect_error(label, t, prefix, text);
	free(t);
}

int main(void)
{
	struct rp_cluster *cl = NULL;
	char err[512] = "";

	int rc = rp_cluster_parse("/etc/x/c.json", GOOD, &cl, err, sizeof(err));
	ok(rc == 0 && cl, "valid file parses (%s)", err);
	if (cl) {
		ok(strcmp(cl->name, "demo") == 0, "name");
		ok(cl->npeers == 2, "two peers");
		ok(cl->peers[1].port == 7472 && cl->peers[1].id == 1, "peer 1 port and id");
		ok(cl->peers[0].transport == RP_TRANSPORT_AUTO, "peer 0 inherits transport auto");
		ok(cl->peers[1].transport == RP_TRANSPORT_TCP, "peer 1 overrides transport tcp");
		ok(cl->block_size == 4096, "block size");
		ok(strcmp(cl->secret_file, "/etc/x/secret") == 0,
		   "relative secret_file resolved against the file's folder (%s)", cl->secret_file);
		ok(rp_cluster_peer(cl, 1) == &cl->peers[1] && rp_cluster_peer(cl, 7) == NULL,
		   "peer lookup by id");
		rp_cluster_free(cl);
	}

	expect_error("syntax error", "{\n  \"version\": 1,\n  \"name\": \n}", "c.json:4:1:", "");
	expect_error("not an object", "[1]", "c.json:1:1:", "JSON object");
	expect_error("duplicate key", "{\"version\":1,\n \"version\":1}", "c.json:2:", "duplicate");
	expect_replaced("unknown key", "\"block_size\": 4096", "\"blocksize\": 4096", "c.json:6:3:",
			"unknown key \"blocksize\"");
	expect_replaced("unknown peer key", "\"port\": 7471 }", "\"port\": 7471, \"speed\": 1 }",
			"c.json:8:51:", "unknown key \"speed\"");
	expect_replaced("wrong type", "\"version\": 1", "\"version\": \"1\"", "c.json:2:14:",
			"must be an integer");
	expect_replaced("bad version", "\"version\": 1", "\"version\": 2", "c.json:2:14:",
			"expected 1..1");
	expect_replaced("port out of range", "7472", "70000", "c.json:9:45:",
			"\"port\" is 70000, expected 1..65535");
	expect_replaced("port zero", "7471", "0", "c.json:8:45:", "expected 1..65535");
	expect_replaced("duplicate id", "\"id\": 1", "\"id\": 0", "c.json:9:13:",
			"duplicate peer id 0");
	expect_replaced("duplicate address", "7472", "7471", "c.json:9:45:",
			"duplicate address 127.0.0.1:7471");
	expect_replaced("bad transport", "\"auto\"", "\"infiniband\"", "c.json:4:16:",
			"expected \"rdma\", \"tcp\" or \"auto\"");
	expect_replaced("block size not power of two", "4096", "4000", "c.json:6:17:",
			"power of two");
	expect_replaced("missing peers", ",\n  \"peers\": [\n    { \"id\": 0, \"host\": \"127.0.0.1\", \"port\": 7471 },\n    { \"id\": 1, \"host\": \"127.0.0.1\", \"port\": 7472, \"transport\": \"tcp\" }\n  ]",
			"", "c.json:1:1:", "missing key \"peers\"");
	expect_replaced("empty peers", "[\n    { \"id\": 0, \"host\": \"127.0.0.1\", \"port\": 7471 },\n    { \"id\": 1, \"host\": \"127.0.0.1\", \"port\": 7472, \"transport\": \"tcp\" }\n  ]",
			"[]", "c.json:7:12:", "non-empty array");
	expect_replaced("missing host", "\"host\": \"127.0.0.1\", \"port\": 7471", "\"port\": 7471",
			"c.json:8:5:", "missing key \"host\"");
	expect_replaced("empty name", "\"demo\"", "\"\"", "c.json:3:11:", "non-empty string");
	expect_replaced("zone not a string", "\"port\": 7471 }", "\"port\": 7471, \"zone\": 3 }",
			"c.json:8:", "\"zone\" must be a string");
	char longzone[100];
	memset(longzone, 'z', 70);
	snprintf(longzone + 70, sizeof(longzone) - 70, "\" }");
	char zkey[160];
	snprintf(zkey, sizeof(zkey), "\"port\": 7471, \"zone\": \"%s", longzone);
	expect_replaced("zone too long", "\"port\": 7471 }", zkey, "c.json:8:", "at most 63 bytes");
	char *zoned = replace(GOOD, "\"port\": 7471 }", "\"port\": 7471, \"zone\": \"rack-a\" }");
	cl = NULL;
	ok(rp_cluster_parse("c.json", zoned, &cl, err, sizeof(err)) == 0 && cl &&
	   strcmp(cl->peers[0].zone, "rack-a") == 0 && cl->peers[1].zone[0] == 0,
	   "a peer's zone is read; a peer without one has none");
	rp_cluster_free(cl);
	free(zoned);
	expect_replaced("missing secret", "\"secret_file\": \"secret\",", "", "c.json:1:1:",
			"missing key \"secret_file\"");

	rc = rp_cluster_load("/nonexistent/cluster.json", &cl, err, sizeof(err));
	ok(rc == -ENOENT && strstr(err, "/nonexistent/cluster.json:0:0:") &&
	   strstr(err, "No such file"), "missing file: %s", err);

	/* the secret file */
	char dir[] = "/tmp/rp-test-XXXXXX";
	ok(mkdtemp(dir) != NULL, "temp dir");
	char path[256], sec[256];
	snprintf(path, sizeof(path), "%s/c.json", dir);
	snprintf(sec, sizeof(sec), "%s/secret", dir);
	FILE *f = fopen(path, "w");
	fputs(GOOD, f);
	fclose(f);
	ok(rp_cluster_load(path, &cl, err, sizeof(err)) == 0, "load from file");
	uint8_t secret[RP_SECRET_MAX];
	size_t slen = 0;
	ok(rp_cluster_load_secret(cl, secret, &slen, err, sizeof(err)) == -ENOENT &&
	   strstr(err, "secret_file"), "missing secret file named: %s", err);
	f = fopen(sec, "w");
	fputs("0123456789abcdef0123\n", f);
	fclose(f);
	chmod(sec, 0644);
	ok(rp_cluster_load_secret(cl, secret, &slen, err, sizeof(err)) == -EPERM &&
	   strstr(err, "chmod 600"), "secret readable by others refused: %s", err);
	chmod(sec, 0600);
	f = fopen(sec, "w");
	fputs("short\n", f);
	fclose(f);
	ok(rp_cluster_load_secret(cl, secret, &slen, err, sizeof(err)) == -EINVAL &&
	   strstr(err, "at least 16"), "short secret refused: %s", err);
	f = fopen(sec, "w");
	fputs("0123456789abcdef0123\n", f);
	fclose(f);
	ok(rp_cluster_load_secret(cl, secret, &slen, err, sizeof(err)) == 0 && slen == 20,
	   "secret loaded without its newline (%zu bytes)", slen);
	rp_cluster_free(cl);
	unlink(path);
	unlink(sec);
	rmdir(dir);

	/* the locator on its own */
	int line, col;
	struct rp_json_path p[] = { { "a", 0 }, { NULL, 1 }, { "b", 0 } };
	ok(rp_json_locate("{\"a\": [1,\n {\"b\": \"x\\\"y\"}]}", p, 3, 0, &line, &col) == 0 &&
	   line == 2 && col == 8, "locate a[1].b at 2:8 (got %d:%d)", line, col);
	ok(rp_json_locate("{\"a\": [1]}", p, 3, 0, &line, &col) < 0, "absent path not found");
	return tap_done();
}
