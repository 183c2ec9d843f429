/*
 * One node's hardware verdict: recorded Xid lines and ECC counts
 * (tests/unit/data/nvidia-xid/), and npu-smi's health column
 * (tests/unit/data/npu-smi/, read by h2's lib/config/accel.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hwfault.h"
#include "util.h"

#include "slurp.h"

static void
scan(const char *name, struct xid_scan *sc)
{
	char path[256], *t;

	snprintf(path, sizeof(path), "tests/unit/data/nvidia-xid/%s", name);
	t = slurp(path);
	xid_scan(t, strlen(t), 0, sc);
	free(t);
}

static void
ecc(const char *text, struct gpu_ecc_list *l)
{
	char err[ERRLEN];

	assert_int_equal(gpu_ecc_parse(text, strlen(text), l, err,
	    sizeof(err)), 0);
}

static void
test_fatal_xid_named(void **state)
{
	struct xid_scan sc;
	struct gpu_ecc_list l;
	struct hw_report r;
	struct xid_seen seen;
	const struct hw_finding *f;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	scan("tandem-journalctl.txt", &sc);
	ecc("0, 0000000F:01:00.0, [N/A]\n", &l);
	hw_judge_nvidia("spark-2", &sc, &seen, &l, &r);
	assert_int_equal(r.worst, HW_FATAL);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.f[0].cls, HW_NOTE);		/* 13: application */
	f = hw_fatal(&r);
	assert_non_null(f);
	assert_int_equal(f->code, 79);
	assert_int_equal(f->gpu, 0);
	assert_string_equal(f->msg, "spark-2 GPU 0 (PCI 000f:01:00): Xid 79, GPU "
	    "has fallen off the bus: NVRM: Xid (PCI:000f:01:00): 79, pid=4388, "
	    "name=python3, GPU has fallen off the bus. (fatal)");
	/* the same lines read again: nothing new, nothing fatal */
	hw_judge_nvidia("spark-2", &sc, &seen, &l, &r);
	assert_int_equal(r.worst, HW_OK);
	assert_null(hw_fatal(&r));
}

static void
test_ecc_warning_and_unread(void **state)
{
	struct xid_scan sc;
	struct gpu_ecc_list l;
	struct hw_report r;

	(void)state;
	scan("tandem-journal-refused.txt", &sc);
	ecc("0, 00000000:1B:00.0, 0\n1, 00000000:43:00.0, 2\n", &l);
	hw_judge_nvidia("node2", &sc, NULL, &l, &r);
	assert_int_equal(r.worst, HW_WARN);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.f[0].cls, HW_UNREAD);
	assert_string_equal(r.f[0].msg, "node2: the kernel log could not be "
	    "read for GPU faults (Hint: You are currently not seeing messages "
	    "from other users and the system.): could not tell");
	assert_string_equal(r.f[1].warning, "gpu-ecc");
	assert_string_equal(r.f[1].msg, "node2 GPU 1 (PCI 0000:43:00): 2 "
	    "uncorrectable ECC errors since the driver loaded; reset the GPU "
	    "when convenient (nvidia-smi -r -i 1)");
	/* not read at all: nothing said, nothing passed */
	hw_judge_nvidia("node2", NULL, NULL, NULL, &r);
	assert_int_equal(r.worst, HW_OK);
	assert_int_equal(r.n, 0);
}

static void
npu(const char *name, struct accel_info *ai)
{
	char path[256], *out, *err, *rc;

	snprintf(path, sizeof(path), "tests/unit/data/npu-smi/%s.out", name);
	out = slurp(path);
	snprintf(path, sizeof(path), "tests/unit/data/npu-smi/%s.err", name);
	err = slurp(path);
	snprintf(path, sizeof(path), "tests/unit/data/npu-smi/%s.rc", name);
	rc = slurp(path);
	accel_parse(ACCEL_ASCEND, AQ_MEMORY, atoi(rc), out, strlen(out), err,
	    ai);
	free(out);
	free(err);
	free(rc);
}

static void
test_ascend_health(void **state)
{
	struct accel_info *ai = xcalloc(1, sizeof(*ai));
	struct hw_report r;

	(void)state;
	npu("info-910b4-unhealthy-derived", ai);
	hw_judge_ascend("ascend-2", ai, &r);
	assert_int_equal(r.worst, HW_FATAL);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.f[0].gpu, 5);
	assert_string_equal(r.f[0].msg, "ascend-2 NPU 5 910B4: npu-smi says "
	    "health Critical: drain the node and reset the NPU or reboot the "
	    "node");
	assert_int_equal(r.f[1].cls, HW_WARN);
	assert_string_equal(r.f[1].warning, "npu-health");
	npu("info-910b4-idle-25.0.rc1.1", ai);
	hw_judge_ascend("ascend-2", ai, &r);
	assert_int_equal(r.worst, HW_OK);
	npu("missing", ai);
	hw_judge_ascend("ascend-2", ai, &r);
	assert_int_equal(r.worst, HW_UNREAD);
	assert_non_null(strstr(r.f[0].msg, "could not tell"));
	free(ai);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fatal_xid_named),
		cmocka_unit_test(test_ecc_warning_and_unread),
		cmocka_unit_test(test_ascend_health),
	};

	return cmocka_run_group_tests_name("hwfault", tests, NULL, NULL);
}
