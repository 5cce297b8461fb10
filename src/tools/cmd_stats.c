/* rdmapool stats: a mount's (or a pool server's) metrics, scraped from its
 * socket and summed up for people, or printed raw for scripts. */
#include "config.h"
#include "tool.h"

#include <rdmapool/metrics_server.h>
#include <rdmapool/util.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

struct sample {
	char *name, *labels; /* labels: the inside of {}, or "" */
	double v;
};

struct scrape {
	char *text;
	struct sample *s;
	size_t n;
};

/* ---- fetching ---- */

static int fetch(const char *path, struct scrape *sc)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	int rc = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1)
		rc = -errno;
	size_t len = 0, cap = 65536;
	char *buf = rc ? NULL : malloc(cap);
	while (rc == 0 && buf) {
		if (len + 1 == cap) {
			char *b = realloc(buf, cap *= 2);
			if (!b)
				break;
			buf = b;
		}
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0)
			rc = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (rc == 0 && !buf)
		rc = -ENOMEM;
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	char *body = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.0 200", 12) != 0 || !body) {
		free(buf);
		return -EPROTO;
	}
	memmove(buf, body + 4, strlen(body + 4) + 1);
	sc->text = buf;
	return 0;
}

/* Split "name{labels} value" lines in place. */
static int parse(struct scrape *sc)
{
	size_t cap = 0;
	for (char *line = strtok(sc->text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#')
			continue;
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		struct sample x = { .name = line, .labels = "", .v = strtod(sp + 1, NULL) };
		char *br = strchr(line, '{');
		if (br) {
			*br = '\0';
			x.labels = br + 1;
			char *end = strrchr(x.labels, '}');
			if (end)
				*end = '\0';
		}
		if (sc->n == cap) {
			struct sample *s = realloc(sc->s, (cap = cap * 2 + 64) * sizeof(*s));
			if (!s)
				return -ENOMEM;
			sc->s = s;
		}
		sc->s[sc->n++] = x;
	}
	return 0;
}

/* ---- reading it ---- */

static bool has_label(const struct sample *s, const char *label)
{
	return !label || strstr(s->labels, label) != NULL;
}

static double value(const struct scrape *sc, const char *name, const char *label)
{
	for (size_t i = 0; i < sc->n; i++)
		if (strcmp(sc->s[i].name, name) == 0 && has_label(&sc->s[i], label))
			return sc->s[i].v;
	return 0;
}

/* A quantile of histogram name{label}: the bound of the first bucket that
 * reaches it, as histogram_quantile() would find (without interpolation). */
static double quantile(const struct scrape *sc, const char *name, const char *label, double q)
{
	char b[128];
	snprintf(b, sizeof(b), "%s_bucket", name);
	double total = 0;
	for (size_t i = 0; i < sc->n; i++)
		if (strcmp(sc->s[i].name, b) == 0 && has_label(&sc->s[i], label) &&
		    strstr(sc->s[i].labels, "le=\"+Inf\""))
			total = sc->s[i].v;
	if (total == 0)
		return 0;
	for (size_t i = 0; i < sc->n; i++) {
		const char *le = strstr(sc->s[i].labels, "le=\"");
		if (strcmp(sc->s[i].name, b) == 0 && has_label(&sc->s[i], label) && le &&
		    sc->s[i].v >= q * total)
			return strtod(le + 4, NULL);
	}
	return 0;
}

static void fmt_time(double s, char *out, size_t len)
{
	if (s <= 0)
		snprintf(out, len, "-");
	else if (s < 1e-3)
		snprintf(out, len, "%.0fus", s * 1e6);
	else if (s < 1)
		snprintf(out, len, "%.1fms", s * 1e3);
	else
		snprintf(out, len, "%.2fs", s);
}

/* The value of label key in a sample's labels, into out. */
static void label_of(const struct sample *s, const char *key, char *out, size_t len)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "%s=\"", key);
	const char *p = strstr(s->labels, pat);
	out[0] = '\0';
	if (!p)
		return;
	p += strlen(pat);
	size_t n = strcspn(p, "\"");
	snprintf(out, len, "%.*s", (int)RP_MIN(n, len - 1), p);
}

/* ---- printing ---- */

static void print_ops(const struct scrape *sc)
{
	printf("%-14s %10s %9s %9s\n", "FUSE OP", "COUNT", "P50", "P99");
	for (size_t i = 0; i < sc->n; i++) {
		if (strcmp(sc->s[i].name, "rdmapoolfs_fuse_op_seconds_count") != 0 || sc->s[i].v == 0)
			continue;
		char op[32], l[64], p50[16], p99[16];
		label_of(&sc->s[i], "op", op, sizeof(op));
		snprintf(l, sizeof(l), "op=\"%s\"", op);
		fmt_time(quantile(sc, "rdmapoolfs_fuse_op_seconds", l, 0.5), p50, sizeof(p50));
		fmt_time(quantile(sc, "rdmapoolfs_fuse_op_seconds", l, 0.99), p99, sizeof(p99));
		printf("%-14s %10.0f %9s %9s\n", op, sc->s[i].v, p50, p99);
	}
}

static void print_pools(const struct scrape *sc)
{
	printf("%-5s %11s %11s %9s %9s %9s %10s %7s %s\n", "POOL", "READ", "WRITTEN", "TRIPS",
	       "P50", "P99", "CAS", "LOST", "STATE");
	for (size_t i = 0; i < sc->n; i++) {
		if (strcmp(sc->s[i].name, "rdmapool_pool_connected") != 0)
			continue;
		char id[16], l[32], rd[32], wr[32], p50[16], p99[16];
		label_of(&sc->s[i], "pool", id, sizeof(id));
		snprintf(l, sizeof(l), "pool=\"%s\"", id);
		rp_format_size((uint64_t)value(sc, "rdmapool_pool_read_bytes_total", l), rd, sizeof(rd));
		rp_format_size((uint64_t)value(sc, "rdmapool_pool_written_bytes_total", l), wr,
			       sizeof(wr));
		fmt_time(quantile(sc, "rdmapool_pool_op_seconds", l, 0.5), p50, sizeof(p50));
		fmt_time(quantile(sc, "rdmapool_pool_op_seconds", l, 0.99), p99, sizeof(p99));
		printf("%-5s %11s %11s %9.0f %9s %9s %10.0f %7.0f %s\n", id, rd, wr,
		       value(sc, "rdmapool_pool_op_seconds_count", l), p50, p99,
		       value(sc, "rdmapool_pool_cas_total", l),
		       value(sc, "rdmapool_pool_cas_failed_total", l),
		       sc->s[i].v == 0 ? "down" : value(sc, "rdmapool_pool_stale", l) ? "stale" : "up");
	}
}

static void print_mount(const struct scrape *sc)
{
	char vol[64] = "?", mnt[PATH_MAX] = "?", mode[8] = "?", lb[32], p99[16];
	for (size_t i = 0; i < sc->n; i++)
		if (strcmp(sc->s[i].name, "rdmapoolfs_info") == 0) {
			label_of(&sc->s[i], "volume", vol, sizeof(vol));
			label_of(&sc->s[i], "mountpoint", mnt, sizeof(mnt));
			label_of(&sc->s[i], "mode", mode, sizeof(mode));
		}
	printf("volume \"%s\" at %s (%s), lease epoch %.0f", vol, mnt, mode,
	       value(sc, "rdmapoolfs_lease_epoch", NULL));
	fmt_time(quantile(sc, "rdmapoolfs_lease_renew_seconds", NULL, 0.99), p99, sizeof(p99));
	printf(", lease renewals %.0f (p99 %s)\n", value(sc, "rdmapoolfs_lease_renew_seconds_count", NULL),
	       p99);
	double tot = value(sc, "rdmapoolfs_total_blocks", NULL), fr = value(sc, "rdmapoolfs_free_blocks", NULL);
	printf("space: %.0f of %.0f blocks free; stale pools: %.0f\n", fr, tot,
	       value(sc, "rdmapoolfs_stale_pools", NULL));
	rp_format_size((uint64_t)value(sc, "rdmapoolfs_log_bytes_total", NULL), lb, sizeof(lb));
	printf("log: %.0f records (%s) in %.0f group commits, %.0f segments, %.0f checkpoints\n",
	       value(sc, "rdmapoolfs_log_records_total", NULL), lb,
	       value(sc, "rdmapoolfs_log_flushes_total", NULL),
	       value(sc, "rdmapoolfs_log_segments", NULL),
	       value(sc, "rdmapoolfs_checkpoints_total", NULL));
	printf("allocation cache: %.0f hits, %.0f misses\n\n",
	       value(sc, "rdmapoolfs_alloc_cache_hits_total", NULL),
	       value(sc, "rdmapoolfs_alloc_cache_misses_total", NULL));
	print_ops(sc);
	printf("\n");
	print_pools(sc);
}

static void print_server(const struct scrape *sc)
{
	for (size_t i = 0; i < sc->n; i++)
		if (strncmp(sc->s[i].name, "rdmapoold_", 10) == 0 &&
		    strcmp(sc->s[i].name, "rdmapoold_info") != 0)
			printf("%-34s %-12s %.0f\n", sc->s[i].name + 10, sc->s[i].labels, sc->s[i].v);
}

/* ---- the command ---- */

static int socket_of(const char *target, char *out, size_t len)
{
	struct stat st;
	char real[PATH_MAX];
	if (stat(target, &st) < 0) {
		fprintf(stderr, "rdmapool stats: %s: %s\n", target, strerror(errno));
		return -1;
	}
	if (S_ISSOCK(st.st_mode)) {
		snprintf(out, len, "%s", target);
		return 0;
	}
	if (!realpath(target, real)) {
		fprintf(stderr, "rdmapool stats: %s: %s\n", target, strerror(errno));
		return -1;
	}
	rp_mount_socket("fs", real, out, len);
	return 0;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = { { "raw", no_argument, NULL, 'r' },
					       { "help", no_argument, NULL, 'h' }, { 0 } };
	int ch, raw = 0;
	while ((ch = getopt_long(argc, argv, "rh", opts, NULL)) != -1) {
		if (ch == 'r') {
			raw = 1;
		} else {
			printf("Usage: rdmapool stats [--raw] MOUNTPOINT|SOCKET\n"
			       "A mount's metrics (or a pool server's, by its socket under "
			       RP_METRICS_DIR "); --raw: the Prometheus text.\n");
			return ch == 'h' ? 0 : 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "rdmapool stats: give one MOUNTPOINT or SOCKET (see --help)\n");
		return 2;
	}
	char path[PATH_MAX];
	struct scrape sc = { 0 };
	if (socket_of(argv[optind], path, sizeof(path)) < 0)
		return 1;
	int rc = fetch(path, &sc);
	if (rc < 0) {
		fprintf(stderr, "rdmapool stats: %s: %s%s\n", path, strerror(-rc),
			rc == -ENOENT ? " (not an rdmapoolfs mount, or mounted with metrics=off)"
				      : "");
		return 1;
	}
	if (raw)
		fputs(sc.text, stdout);
	else if ((rc = parse(&sc)) < 0)
		fprintf(stderr, "rdmapool stats: %s\n", strerror(-rc));
	else if (value(&sc, "rdmapoolfs_info", NULL))
		print_mount(&sc);
	else
		print_server(&sc);
	free(sc.s);
	free(sc.text);
	return rc < 0 ? 1 : 0;
}
