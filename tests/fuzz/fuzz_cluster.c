/* The cluster file parser on any text: it accepts a valid file or names
 * where the text is wrong ("NAME:LINE:COL: ..." for JSON errors, at least
 * "NAME" otherwise), and what it accepts is consistent. */
#include "fuzz.h"
#include "rdmapool/cluster.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	struct rp_cluster *c = NULL;
	char err[1024] = "";
	int rc = rp_cluster_parse("fuzz.json", text, &c, err, sizeof(err));
	if (rc < 0) {
		FUZZ_ASSERT(c == NULL);
		FUZZ_ASSERT(strncmp(err, "fuzz.json", 9) == 0 || rc == -ENOMEM);
	} else {
		FUZZ_ASSERT(c && c->npeers > 0 && c->npeers <= RP_MAX_PEERS);
		for (size_t i = 0; i < c->npeers; i++) {
			FUZZ_ASSERT(rp_cluster_peer(c, c->peers[i].id) == &c->peers[i]);
			FUZZ_ASSERT(rp_cluster_peer_index(c, c->peers[i].id) == (int)i);
			FUZZ_ASSERT(memchr(c->peers[i].host, 0, sizeof(c->peers[i].host)));
			FUZZ_ASSERT(c->peers[i].port != 0);
		}
		FUZZ_ASSERT(c->block_size >= 512 && (c->block_size & (c->block_size - 1)) == 0);
		rp_cluster_free(c);
	}
	free(text);
	return 0;
}
