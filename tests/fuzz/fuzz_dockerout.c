/* libFuzzer: docker inspect and events lines. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockerout.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *text = malloc(n + 1), a[32], id[80], name[160], plan[40];
	int running;

	memcpy(text, data, n);
	text[n] = '\0';
	if (docker_inspect_parse(text, &running, id, sizeof(id), plan,
	    sizeof(plan)) == 0 &&
	    running != 0 && running != 1)
		abort();
	(void)docker_event_parse(text, a, sizeof(a), id, sizeof(id), name,
	    sizeof(name));
	free(text);
	return 0;
}
