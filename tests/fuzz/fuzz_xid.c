/*
 * libFuzzer: what a node's kernel log command and nvidia-smi's ECC query
 * print (lib/parse/xid.c), and the hardware verdict over both (lib/policy/hwfault.c).
 * The exact bytes, without a terminating NUL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hwfault.h"
#include "xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static struct xid_seen seen;
	static struct xid_scan sc;
	static struct gpu_ecc_list l;
	static struct hw_report r;
	char *text = malloc(n ? n : 1), err[256];
	size_t i;

	memcpy(text, data, n);
	xid_scan(text, n, 0, &sc);
	if (sc.n > XID_EVENTS_MAX)
		abort();
	for (i = 0; i < sc.n; i++)
		if (strlen(sc.ev[i].line) >= XID_LINE_MAX)
			abort();
	if (gpu_ecc_parse(text, n, &l, err, sizeof(err)) == 0 &&
	    l.n > GPU_ECC_MAX)
		abort();
	hw_judge_nvidia("node", &sc, &seen, &l, &r);
	free(text);
	return 0;
}
