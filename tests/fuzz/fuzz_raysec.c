/* libFuzzer: what cmd_ray_exposure prints on a node (lib/parse/raysec.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raysec.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *text = malloc(n ? n : 1), msg[512];
	struct ray_probe p;

	memcpy(text, data, n);
	ray_probe_parse(text, n, &p);
	(void)ray_exposure_judge(&p, &p, "10.0.0.1", 6379, 0, msg,
	    sizeof(msg));
	free(text);
	return 0;
}
