/* libFuzzer: ray status parsing of arbitrary remote output. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raystatus.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *text = malloc(n + 1), err[256];
	struct raystatus rs;

	memcpy(text, data, n);
	text[n] = '\0';
	if (raystatus_parse(text, &rs, err, sizeof(err)) == 0 &&
	    rs.alive_nodes < 0)
		abort();
	free(text);
	return 0;
}
