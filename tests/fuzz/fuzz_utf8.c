/*
 * libFuzzer: utf8_copy on arbitrary bytes and buffer sizes. What comes out
 * is valid UTF-8 that jansson accepts, fits the buffer, and is a prefix of
 * the copy into a buffer large enough for all of it (issue 15).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	size_t dstlen, full, got;
	char *src, *all, *out;
	json_t *j;

	if (n < 1)
		return 0;
	dstlen = data[0];
	src = malloc(n);
	memcpy(src, data + 1, n - 1);
	src[n - 1] = '\0';
	all = malloc(3 * n + 1);
	out = malloc(dstlen + 1);
	full = utf8_copy(all, 3 * n + 1, src);
	got = utf8_copy(out, dstlen, src);
	if (full != strlen(all) || !utf8_valid(all))
		abort();
	if (dstlen && (got >= dstlen || got != strlen(out) ||
	    memcmp(out, all, got) != 0))
		abort();
	if ((j = json_string(all)) == NULL)
		abort();
	json_decref(j);
	free(src);
	free(all);
	free(out);
	return 0;
}
