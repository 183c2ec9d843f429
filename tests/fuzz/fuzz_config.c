/* libFuzzer: the config parser never crashes and always says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *text = malloc(n + 1), err[ERRLEN] = "";
	struct config *cf;

	memcpy(text, data, n);
	text[n] = '\0';
	cf = config_parse(text, "fuzz.json", err, sizeof(err));
	if (cf == NULL && err[0] == '\0')
		abort();	/* a refusal must carry a message */
	config_free(cf);
	free(text);
	return 0;
}
