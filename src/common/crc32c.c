/* CRC32C (Castagnoli), table driven; guards superblocks and metadata records. */
#include "config.h"
#include <rdmapool/crypto.h>

#include <pthread.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		table[i] = c;
	}
}

uint32_t rp_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	pthread_once(&table_once, build_table);
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
