/* A small JSON scanner that tracks line and column; jansson reports positions
 * only for syntax errors, and users deserve them for every error. */
#include "config.h"
#include <rdmapool/json_locate.h>

#include <string.h>

struct scan {
	const char *p;
	int line, col;
};

static void adv(struct scan *s)
{
	if (*s->p == '\n') {
		s->line++;
		s->col = 1;
	} else if (((unsigned char)*s->p & 0xc0) != 0x80) {
		s->col++; /* count characters, not UTF-8 continuation bytes */
	}
	s->p++;
}

static void ws(struct scan *s)
{
	while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')
		adv(s);
}

/* Scan a string; when out != NULL copy its raw contents (escapes kept as-is
 * except \" and \\ which are enough for our key comparisons). */
static int scan_string(struct scan *s, char *out, size_t outlen)
{
	size_t n = 0;
	if (*s->p != '"')
		return -1;
	adv(s);
	while (*s->p && *s->p != '"') {
		char c = *s->p;
		if (c == '\\') {
			adv(s);
			if (!*s->p)
				return -1;
			c = *s->p;
		}
		if (out && n + 1 < outlen)
			out[n++] = c;
		adv(s);
	}
	if (*s->p != '"')
		return -1;
	adv(s);
	if (out)
		out[n] = '\0';
	return 0;
}

static int skip_value(struct scan *s);

static int skip_container(struct scan *s, char close)
{
	adv(s);
	ws(s);
	if (*s->p == close) {
		adv(s);
		return 0;
	}
	for (;;) {
		ws(s);
		if (close == '}') {
			if (scan_string(s, NULL, 0))
				return -1;
			ws(s);
			if (*s->p != ':')
				return -1;
			adv(s);
		}
		if (skip_value(s))
			return -1;
		ws(s);
		if (*s->p == ',') {
			adv(s);
			continue;
		}
		if (*s->p == close) {
			adv(s);
			return 0;
		}
		return -1;
	}
}

static int skip_value(struct scan *s)
{
	ws(s);
	switch (*s->p) {
	case '{': return skip_container(s, '}');
	case '[': return skip_container(s, ']');
	case '"': return scan_string(s, NULL, 0);
	case '\0': return -1;
	default:
		while (*s->p && !strchr(",}] \t\r\n", *s->p))
			adv(s);
		return 0;
	}
}

static int find(struct scan *s, const struct rp_json_path *path, size_t depth, int want_key,
		int *line, int *col)
{
	ws(s);
	if (depth == 0) {
		*line = s->line;
		*col = s->col;
		return 0;
	}
	if (path->key && *s->p == '{') {
		adv(s);
		for (;;) {
			char key[256];
			int kl, kc;
			ws(s);
			if (*s->p == '}')
				return -1;
			kl = s->line;
			kc = s->col;
			if (scan_string(s, key, sizeof(key)))
				return -1;
			ws(s);
			if (*s->p != ':')
				return -1;
			adv(s);
			if (strcmp(key, path->key) == 0) {
				if (depth == 1 && want_key) {
					*line = kl;
					*col = kc;
					return 0;
				}
				return find(s, path + 1, depth - 1, want_key, line, col);
			}
			if (skip_value(s))
				return -1;
			ws(s);
			if (*s->p != ',')
				return -1;
			adv(s);
		}
	}
	if (!path->key && *s->p == '[') {
		adv(s);
		for (size_t i = 0;; i++) {
			ws(s);
			if (*s->p == ']')
				return -1;
			if (i == path->index)
				return find(s, path + 1, depth - 1, want_key, line, col);
			if (skip_value(s))
				return -1;
			ws(s);
			if (*s->p != ',')
				return -1;
			adv(s);
		}
	}
	return -1;
}

int rp_json_locate(const char *text, const struct rp_json_path *path, size_t depth, int want_key,
		   int *line, int *col)
{
	struct scan s = { text, 1, 1 };
	return find(&s, path, depth, want_key, line, col);
}
