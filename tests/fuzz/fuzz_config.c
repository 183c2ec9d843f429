/* libFuzzer: the config parser never crashes and always says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[ERRLEN] = "";
	struct config *cf;

	cf = config_parse_buf("fuzz.json", (const char *)data, n, err,
	    sizeof(err));
	if (cf == NULL && err[0] == '\0')
		abort();	/* a refusal must carry a message */
	config_free(cf);
	return 0;
}
