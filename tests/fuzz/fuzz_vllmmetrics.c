/*
 * libFuzzer: vLLM's /metrics body (the Prometheus text reader and the
 * per-engine sums) and the stall detector fed with what it read. The
 * buffer is the input's exact bytes, without a terminating NUL, as an
 * HTTP body arrives: a read past its end is caught.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stall.h"
#include "vllmmetrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static struct stall_state st;
	static struct vllm_reading r;
	static double t;
	char *body = malloc(n ? n : 1), err[256];

	memcpy(body, data, n);
	if (vllm_metrics_parse(body, n, &r, err, sizeof(err)) == 0) {
		if (r.running < 0 || r.gen_tokens < 0 || r.nengines >
		    VLLM_ENGINES_MAX)
			abort();
		stall_feed(&st, &r, t += 1, 10, 3, NULL);
	}
	free(body);
	return 0;
}
