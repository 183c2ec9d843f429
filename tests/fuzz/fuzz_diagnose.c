/*
 * libFuzzer: the log matcher on arbitrary vLLM/Ray/docker output. The
 * excerpt goes to /status as JSON, so it must be valid UTF-8 (issue 15).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *text = malloc(n + 1), ex[300];
	const struct diag *d;

	memcpy(text, data, n);
	text[n] = '\0';
	d = diag_match(text, ex, sizeof(ex));
	if (d && (strlen(ex) >= sizeof(ex) || !utf8_valid(ex)))
		abort();
	free(text);
	return 0;
}
