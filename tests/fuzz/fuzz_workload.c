/*
 * libFuzzer: the unrelated-workload scan's answer (workloads_parse), given
 * as libFuzzer hands it over: exactly n bytes, no NUL after them, so a
 * read past the end is ASan's to see (issue 36: line_ctr's strcspn ran
 * past a last line with no space in it). Every name that comes out is
 * valid UTF-8, every count within its bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct workloads wl;
	char msg[300];
	size_t i;

	workloads_parse((const char *)data, n, "spark", &wl);
	if (wl.n > WORKLOADS_MAX)
		abort();
	for (i = 0; i < wl.n; i++) {
		const struct workload *w = &wl.w[i];

		if (!utf8_valid(w->name) ||
		    w->npids > sizeof(w->pids) / sizeof(w->pids[0]))
			abort();
		workload_message(&wl.w[i], "n1", msg, sizeof(msg));
		if (!utf8_valid(msg))
			abort();
	}
	return 0;
}
