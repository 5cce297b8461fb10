/* A fuzz target: libFuzzer's entry point. Built with -fsanitize=fuzzer
 * (configure --enable-fuzzing, clang) it is fuzzed; otherwise it is linked
 * with run_corpus.c, which feeds it the files of its corpus (make check). */
#ifndef RDMAPOOL_FUZZ_H
#define RDMAPOOL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the input broke: a crash the fuzzer keeps. */
#define FUZZ_ASSERT(cond)                                                                  \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                            \
		}                                                                           \
	} while (0)

#endif
