/*
 * libFuzzer: what nvidia-smi and npu-smi print, as accel_parse reads it
 * (lib/config/accel.c): the first byte picks the accelerator, the question and
 * the exit status; the rest is stdout, exactly that many bytes with no NUL
 * after them, so a read past the end is ASan's to see. Whatever the bytes,
 * the counts stay within their bounds, every name and every verdict's
 * message is valid UTF-8, and a verdict is one of the four.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
foreign_odd(long pid, void *arg)
{
	(void)arg;
	return pid % 2;
}

static void
verdict_ok(enum accel_verdict v, const char *msg)
{
	if (v != AV_PASS && v != AV_FAIL && v != AV_NOT_CHECKED &&
	    v != AV_UNKNOWN)
		abort();
	if (!utf8_valid(msg))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static struct accel_info ai;
	static const int codes[] = { 0, 0, 0, 1, 127, 255 };
	enum accel a;
	enum accel_query q;
	char msg[300];
	size_t i;
	int rc;

	if (n == 0)
		return 0;
	a = (data[0] & 3) == 0 ? ACCEL_NVIDIA : (data[0] & 3) == 3 ?
	    ACCEL_NONE : ACCEL_ASCEND;
	q = (enum accel_query)((data[0] >> 2) % 3);
	rc = codes[(data[0] >> 4) % 6];
	accel_parse(a, q, rc, (const char *)data + 1, n - 1,
	    "bash: line 1: npu-smi: command not found\n", &ai);
	if (ai.ndev > ACCEL_DEVS_MAX || ai.nproc > ACCEL_PROCS_MAX ||
	    !utf8_valid(ai.said))
		abort();
	for (i = 0; i < ai.ndev; i++)
		if (!utf8_valid(ai.dev[i].name) ||
		    !utf8_valid(ai.dev[i].health))
			abort();
	for (i = 0; i < ai.nproc; i++)
		if (!utf8_valid(ai.proc[i].name))
			abort();
	verdict_ok(accel_held(&ai, foreign_odd, NULL, msg, sizeof(msg)), msg);
	verdict_ok(accel_free(&ai, 0.6, msg, sizeof(msg)), msg);
	verdict_ok(accel_devices(&ai, msg, sizeof(msg)), msg);
	return 0;
}
