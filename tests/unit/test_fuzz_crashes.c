/*
 * Every input a fuzzer crashed on (make fuzz; make check runs each target
 * a few seconds) is kept in tests/unit/data/fuzz-crashes/TARGET/ and fed
 * here to the same harness, so the fix stays: the harness's own checks
 * abort, and under SAN=1 ASan and UBSan see a read past the input or an
 * overflow as libFuzzer did. A crash input of a new target needs its
 * harness named below. fuzz_http is not here: it runs the daemon's server,
 * which the unit tests do not link.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"

/* Each harness under its own name (they all define libFuzzer's entry). */
#define LLVMFuzzerTestOneInput fuzz_accel
#include "../fuzz/fuzz_accel.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_config
#include "../fuzz/fuzz_config.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_diagnose
#include "../fuzz/fuzz_diagnose.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_dockerout
#include "../fuzz/fuzz_dockerout.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_netinfo
#include "../fuzz/fuzz_netinfo.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_raysec
#include "../fuzz/fuzz_raysec.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_raystatus
#include "../fuzz/fuzz_raystatus.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_utf8
#include "../fuzz/fuzz_utf8.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_vllmmetrics
#include "../fuzz/fuzz_vllmmetrics.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_workload
#include "../fuzz/fuzz_workload.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_xid
#include "../fuzz/fuzz_xid.c"
#undef LLVMFuzzerTestOneInput

struct target {
	const char	*name;
	int		(*one)(const uint8_t *, size_t);
};

static const struct target targets[] = {
	{ "accel", fuzz_accel }, { "config", fuzz_config },
	{ "diagnose", fuzz_diagnose }, { "dockerout", fuzz_dockerout },
	{ "netinfo", fuzz_netinfo }, { "raysec", fuzz_raysec },
	{ "raystatus", fuzz_raystatus }, { "utf8", fuzz_utf8 },
	{ "vllmmetrics", fuzz_vllmmetrics }, { "workload", fuzz_workload },
	{ "xid", fuzz_xid },
};

/* The file's bytes in a buffer of exactly their size, as libFuzzer's. */
static uint8_t *
read_input(const char *path, size_t *len)
{
	struct sbuf b;
	char buf[4096];
	size_t n;
	uint8_t *data;
	FILE *fp = fopen(path, "rb");

	assert_non_null(fp);
	sbuf_init(&b);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		sbuf_addn(&b, buf, n);
	fclose(fp);
	*len = b.len;
	data = xmalloc(b.len ? b.len : 1);
	if (b.len)
		memcpy(data, b.s, b.len);
	sbuf_free(&b);
	return data;
}

static void
test_kept_crashes(void **state)
{
	size_t i, total = 0;

	(void)state;
	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		char dir[128], path[512];
		struct dirent *e;
		DIR *d;

		snprintf(dir, sizeof(dir), "tests/unit/data/fuzz-crashes/%s",
		    targets[i].name);
		if ((d = opendir(dir)) == NULL)
			continue;
		while ((e = readdir(d)) != NULL) {
			uint8_t *data;
			size_t len;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			data = read_input(path, &len);
			print_message("fuzz_%s %s\n", targets[i].name,
			    e->d_name);
			assert_int_equal(targets[i].one(data, len), 0);
			free(data);
			total++;
		}
		closedir(d);
	}
	/* issue 43's two: fuzz_netinfo's and fuzz_raystatus's */
	assert_true(total >= 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_crashes),
	};

	return cmocka_run_group_tests_name("fuzz_crashes", tests, NULL, NULL);
}
