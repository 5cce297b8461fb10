/* Find where a value sits in JSON text, so that semantic errors found after
 * jansson has parsed the file can still name line and column. */
#ifndef RDMAPOOL_JSON_LOCATE_H
#define RDMAPOOL_JSON_LOCATE_H

#include <stddef.h>

struct rp_json_path {
	const char *key; /* object member, or NULL for an array element */
	size_t index;    /* array index when key is NULL */
};

/* Locate the value at path (or, when want_key, the member's key) in text.
 * Returns 0 and 1-based line/column, or -1 when not found. */
int rp_json_locate(const char *text, const struct rp_json_path *path, size_t depth, int want_key,
		   int *line, int *col);

#endif
