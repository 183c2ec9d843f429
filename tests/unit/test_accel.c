/*
 * The accelerator layer (lib/config/accel.c, accel_read.c, accel_verdict.c) against what the tools really print:
 * every npu-smi text recorded under tests/unit/data/npu-smi/ (its README
 * says where each comes from), read into devices, health, HBM and
 * processes, and the verdicts the teardown, the preflight and tandemctl
 * check take from them; the nvidia-smi forms tandem already read; the
 * default of container.accelerator and the variables derived from it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "accel.h"
#include "config.h"
#include "util.h"
#include "workload.h"
#include "slurp.h"

#define DATA "tests/unit/data/npu-smi/"

struct result {
	char	*out;
	char	*err;
	int	 rc;
};

static void
load(const char *name, struct result *r)
{
	char path[256], *rc;

	snprintf(path, sizeof(path), DATA "%s.out", name);
	r->out = slurp(path);
	snprintf(path, sizeof(path), DATA "%s.err", name);
	r->err = slurp(path);
	snprintf(path, sizeof(path), DATA "%s.rc", name);
	rc = slurp(path);
	r->rc = atoi(rc);
	free(rc);
}

static void
parse(const char *name, enum accel_query q, struct accel_info *ai)
{
	struct result r;

	load(name, &r);
	accel_parse(ACCEL_ASCEND, q, r.rc, r.out, strlen(r.out), r.err, ai);
	free(r.out);
	free(r.err);
}

static struct accel_info *
info(void)
{
	return xcalloc(1, sizeof(struct accel_info));
}

/* The Atlas 800I A2 of the guide, idle: 8 NPUs, all OK, no process. */
static void
test_idle_910b4(void **state)
{
	struct accel_info *ai = info();
	char msg[300];
	size_t i;

	(void)state;
	parse("info-910b4-idle-25.0.rc1.1", AQ_MEMORY, ai);
	assert_int_equal(ai->answer, AA_READ);
	assert_int_equal(ai->ndev, 8);
	assert_int_equal(ai->nnpus, 8);
	assert_int_equal(ai->nproc, 0);
	assert_true(ai->procs_read);
	for (i = 0; i < 8; i++) {
		assert_int_equal(ai->dev[i].id, (int)i);
		assert_int_equal(ai->dev[i].chip, 0);
		assert_string_equal(ai->dev[i].name, "910B4");
		assert_string_equal(ai->dev[i].health, "OK");
		assert_int_equal(ai->dev[i].total_mib, 32768);
		assert_int_equal(ai->dev[i].used_mib, i == 7 ? 2653 : 2654);
	}
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_PASS);
	assert_string_equal(msg, "8 NPUs (910B4), all OK");
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_PASS);
	assert_string_equal(msg, "NPU memory released (read from npu-smi)");
	/* 2654 of 32768 MiB used: 0.9 fits (29491 <= 30114), 0.95 not */
	assert_int_equal(accel_free(ai, 0.90, msg, sizeof(msg)), AV_PASS);
	assert_string_equal(msg, "8 NPUs: 29.4 of 32.0 GiB free on the "
	    "fullest, --gpu-memory-utilization 0.9 asks 28.8 GiB");
	assert_int_equal(accel_free(ai, 0.95, msg, sizeof(msg)), AV_FAIL);
	assert_string_equal(msg, "NPU 0 chip 0 has 29.4 of 32.0 GiB free, "
	    "less than --gpu-memory-utilization 0.95 asks (30.4 GiB)");
	free(ai);
}

/* npu-smi info -l of the same machine: 8 NPUs of one chip each. */
static void
test_list_910b4(void **state)
{
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	parse("info-l-910b4-25.0.rc1.1", AQ_LIST, ai);
	assert_int_equal(ai->answer, AA_READ);
	assert_int_equal(ai->ndev, 8);
	assert_int_equal(ai->nnpus, 8);
	assert_int_equal(ai->dev[7].id, 7);
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_PASS);
	assert_string_equal(msg, "8 NPUs");
	free(ai);
}

/* A "Total Count" that the NPU IDs do not add up to: could not tell. */
static void
test_list_short(void **state)
{
	static const char out[] = "        Total Count                    : 8"
	    "\n\n        NPU ID                         : 0\n"
	    "        Chip Count                     : 1\n";
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	accel_parse(ACCEL_ASCEND, AQ_LIST, 0, out, strlen(out), "", ai);
	assert_int_equal(ai->answer, AA_UNREADABLE);
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_UNKNOWN);
	free(ai);
}

static int
is_foreign(long pid, void *arg)
{
	return pid == *(long *)arg;
}

/* 910B3 x 8, one process on NPU 2 with no name (seen from a container). */
static void
test_busy_910b3(void **state)
{
	struct accel_info *ai = info();
	char msg[300];
	long other = 1333928;

	(void)state;
	parse("info-910b3-busy-25.2.0", AQ_PROCS, ai);
	assert_int_equal(ai->answer, AA_READ);
	assert_int_equal(ai->ndev, 8);
	assert_int_equal(ai->dev[2].used_mib, 41052);	/* "41052/ 65536" */
	assert_int_equal(ai->dev[2].total_mib, 65536);
	assert_int_equal(ai->nproc, 1);
	assert_int_equal(ai->proc[0].dev, 2);
	assert_int_equal(ai->proc[0].chip, 0);
	assert_int_equal(ai->proc[0].pid, 1333928);
	assert_string_equal(ai->proc[0].name, "");
	assert_int_equal(ai->proc[0].mib, 37709);
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_FAIL);
	assert_string_equal(msg, "pid 1333928 (name not shown) holds 37709 "
	    "MiB on NPU 2 chip 0");
	/* an unrelated workload's memory is not ours to wait for */
	assert_int_equal(accel_held(ai, is_foreign, &other, msg, sizeof(msg)),
	    AV_PASS);
	/* NPU 2 has 24484 of 65536 MiB free: not 0.9 */
	assert_int_equal(accel_free(ai, 0.9, msg, sizeof(msg)), AV_FAIL);
	assert_string_equal(msg, "NPU 2 chip 0 has 23.9 of 64.0 GiB free, "
	    "less than --gpu-memory-utilization 0.9 asks (57.6 GiB); held by "
	    "pid 1333928 (name not shown) 37709 MiB");
	assert_int_equal(accel_free(ai, 0.3, msg, sizeof(msg)), AV_PASS);
	free(ai);
}

/* Health "Warning" on two NPUs; four named processes on every NPU. */
static void
test_warning_910(void **state)
{
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	parse("info-910-warning-24.1.RC2", AQ_MEMORY, ai);
	assert_int_equal(ai->answer, AA_READ);
	assert_int_equal(ai->ndev, 8);
	assert_string_equal(ai->dev[3].health, "Warning");
	assert_string_equal(ai->dev[7].health, "Warning");
	assert_string_equal(ai->dev[0].name, "xxx");
	/* HBM 0 / 32768 on this card */
	assert_int_equal(ai->dev[0].used_mib, 0);
	assert_int_equal(ai->dev[0].total_mib, 32768);
	assert_int_equal(ai->nproc, 32);
	assert_int_equal(ai->proc[0].pid, 37656);
	assert_string_equal(ai->proc[0].name, "hlt_host_devmm_");
	assert_int_equal(ai->proc[0].mib, 686);
	assert_int_equal(ai->proc[31].dev, 7);
	/*
	 * Warning is npu-smi's minor alarm: the NPUs run work (the table
	 * shows processes on both), so the devices are in service (issue 41
	 * item 5).
	 */
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_PASS);
	assert_string_equal(msg, "8 NPUs (xxx), in service with warnings: NPU "
	    "3 chip 0 Warning, NPU 7 chip 0 Warning (npu-smi's alarms; the "
	    "NPUs still run work)");
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_FAIL);
	assert_string_equal(msg, "pid 37656 (hlt_host_devmm_) holds 686 MiB "
	    "on NPU 0 chip 0");
	free(ai);
}

/* Critical and Alarm (derived from the idle table, Huawei's five values). */
static void
test_unhealthy_910b4(void **state)
{
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	parse("info-910b4-unhealthy-derived", AQ_MEMORY, ai);
	assert_int_equal(ai->answer, AA_READ);
	assert_string_equal(ai->dev[5].health, "Critical");
	assert_string_equal(ai->dev[6].health, "Alarm");
	/* Critical fails the NPU; Alarm, a major alarm, is a warning */
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_FAIL);
	assert_string_equal(msg, "8 NPUs (910B4), not healthy: NPU 5 chip 0 "
	    "Critical; warnings: NPU 6 chip 0 Alarm");
	free(ai);
}

/*
 * The 910B4-1 (the Atlas 800I A2's 64 GB part names itself so): the name
 * with its dash, Warning and Alarm in service (derived, README.md).
 */
static void
test_alarms_910b4_1(void **state)
{
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	parse("info-910b4-1-alarms-derived", AQ_MEMORY, ai);
	assert_int_equal(ai->answer, AA_READ);
	assert_int_equal(ai->ndev, 8);
	assert_int_equal(ai->nnpus, 8);
	assert_string_equal(ai->dev[0].name, "910B4-1");
	assert_string_equal(ai->dev[3].health, "Warning");
	assert_string_equal(ai->dev[4].health, "Alarm");
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_PASS);
	assert_string_equal(msg, "8 NPUs (910B4-1), in service with warnings: "
	    "NPU 3 chip 0 Warning, NPU 4 chip 0 Alarm (npu-smi's alarms; the "
	    "NPUs still run work)");
	/* UNKNOWN: the NPU absent or not started, as Critical */
	snprintf(ai->dev[2].health, sizeof(ai->dev[2].health), "UNKNOWN");
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_FAIL);
	assert_non_null(strstr(msg, "not healthy: NPU 2 chip 0 UNKNOWN; "));
	free(ai);
}

/* The A3 layout: two chips per NPU, a physical ID, "-" power. */
static void
test_a3_two_chips(void **state)
{
	struct accel_info *ai = info();
	struct workloads *wl = xcalloc(1, sizeof(*wl));
	struct result r;
	struct sbuf b;
	char msg[300];
	const char *p;

	(void)state;
	parse("info-910c-a3-busy-25.2.3", AQ_PROCS, ai);
	assert_int_equal(ai->answer, AA_READ);
	assert_int_equal(ai->ndev, 16);
	assert_int_equal(ai->nnpus, 8);
	assert_int_equal(ai->dev[1].id, 0);
	assert_int_equal(ai->dev[1].chip, 1);
	assert_int_equal(ai->dev[1].used_mib, 52948);
	assert_int_equal(ai->dev[15].id, 7);
	assert_int_equal(ai->dev[15].chip, 1);
	assert_int_equal(ai->nproc, 14);
	assert_int_equal(ai->proc[4].pid, 3328327);
	assert_int_equal(ai->proc[4].chip, 1);
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_PASS);
	assert_string_equal(msg, "8 NPUs (16 chips) (Ascend910), all OK");
	free(ai);

	/* As the workload scan sees it: one process, memory summed. */
	load("info-910c-a3-busy-25.2.3", &r);
	sbuf_init(&b);
	for (p = r.out; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] !=
	    '\0')) {
		sbuf_add(&b, "A ");
		sbuf_addn(&b, p, strcspn(p, "\n"));
		sbuf_addc(&b, '\n');
	}
	sbuf_add(&b, "C 4f2a9c1d7e3b [\"vllm-head\",\"tandem\"]\n"
	    "P 4f2a9c1d7e3b 3085960\n");
	workloads_parse(b.s, b.len, "tandem", wl);
	/* 3325989, 3330598, 3328327, 3333165, 3085961, 3085962, 3085964 */
	assert_int_equal(wl->n, 7);
	assert_int_equal(wl->w[2].pid, 3328327);
	assert_int_equal(wl->w[2].mib, 133 + 50119);
	workload_message(&wl->w[2], "atlas-2", msg, sizeof(msg));
	assert_string_equal(msg, "process \"?\" (pid 3328327) on atlas-2 "
	    "holds 49.1 GiB of NPU memory");
	sbuf_free(&b);
	free(r.out);
	free(r.err);
	free(wl);
}

/* No npu-smi: not checked, with the tool named; never a pass. */
static void
test_missing(void **state)
{
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	parse("missing", AQ_PROCS, ai);
	assert_int_equal(ai->answer, AA_NO_TOOL);
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_NOT_CHECKED);
	assert_string_equal(msg, "NPU memory not checked: npu-smi is not on "
	    "the node (exit 127: bash: line 1: npu-smi: command not found)");
	assert_int_equal(accel_free(ai, 0.9, msg, sizeof(msg)),
	    AV_NOT_CHECKED);
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_NOT_CHECKED);
	free(ai);
}

/* An answer that is not npu-smi's table: could not tell, its words kept. */
static void
test_unreadable(void **state)
{
	static const char garbage[] = "dcmi model initialized failed, because "
	    "the device is used. ret is -8020\n";
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	accel_parse(ACCEL_ASCEND, AQ_PROCS, 0, garbage, strlen(garbage), "",
	    ai);
	assert_int_equal(ai->answer, AA_UNREADABLE);
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_UNKNOWN);
	assert_string_equal(msg, "NPU memory: could not tell: npu-smi "
	    "answered \"dcmi model initialized failed, because the device is "
	    "used. ret is -8020\"");
	accel_parse(ACCEL_ASCEND, AQ_MEMORY, 255, "", 0, garbage, ai);
	assert_int_equal(ai->answer, AA_UNREADABLE);
	/* the chip table without its process table: not "released" */
	{
		struct result r;
		char *cut;

		load("info-910b4-idle-25.0.rc1.1", &r);
		cut = strstr(r.out, "| NPU     Chip");
		*cut = '\0';
		accel_parse(ACCEL_ASCEND, AQ_PROCS, 0, r.out, strlen(r.out),
		    "", ai);
		assert_int_equal(ai->answer, AA_UNREADABLE);
		assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
		    AV_UNKNOWN);
		free(r.out);
		free(r.err);
	}
	free(ai);
}

/* Accelerator none: nothing asked, every verdict "not checked". */
static void
test_none(void **state)
{
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	accel_parse(ACCEL_NONE, AQ_PROCS, 0, "", 0, "", ai);
	assert_int_equal(ai->answer, AA_NOT_ASKED);
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_NOT_CHECKED);
	assert_string_equal(msg, "GPU memory not checked "
	    "(container.accelerator is none)");
	assert_int_equal(accel_free(ai, 0.9, msg, sizeof(msg)),
	    AV_NOT_CHECKED);
	assert_string_equal(msg, "free memory not checked "
	    "(container.accelerator is none)");
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_NOT_CHECKED);
	free(ai);
}

/*
 * nvidia-smi's forms tandem reads: -L, the teardown's CSV (one line per
 * process, none when idle), and the memory query, "[N/A]" on GB10.
 */
static void
test_nvidia(void **state)
{
	static const char list[] = "GPU 0: NVIDIA GB10 (UUID: GPU-a1b2c3d4-"
	    "0000-1111-2222-333344445555)\n";
	static const char apps[] = "4242, 71234\n";
	static const char gb10[] = "0, NVIDIA GB10, [N/A], [N/A]\n";
	static const char gb10drv[] = "0, NVIDIA GB10, [N/A], [N/A], "
	    "580.95.05\n";
	static const char h100drv[] = "0, NVIDIA H100 80GB HBM3, 1, 81559, "
	    "535.104.05\n1, NVIDIA H100 80GB HBM3, 75000, 81559, 535.104.05\n";
	static const char h100[] = "0, NVIDIA H100 80GB HBM3, 1, 81559\n"
	    "1, NVIDIA H100 80GB HBM3, 75000, 81559\n";
	struct accel_info *ai = info();
	char msg[300];

	(void)state;
	accel_parse(ACCEL_NVIDIA, AQ_LIST, 0, list, strlen(list), "", ai);
	assert_int_equal(ai->ndev, 1);
	assert_int_equal(accel_devices(ai, msg, sizeof(msg)), AV_PASS);
	assert_string_equal(msg, "1 GPU (NVIDIA GB10)");
	accel_parse(ACCEL_NVIDIA, AQ_PROCS, 0, "", 0, "", ai);
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_PASS);
	assert_string_equal(msg, "GPU memory released (read from nvidia-smi)");
	accel_parse(ACCEL_NVIDIA, AQ_PROCS, 0, apps, strlen(apps), "", ai);
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_FAIL);
	assert_string_equal(msg, "pid 4242 (name not shown) holds 71234 MiB");
	accel_parse(ACCEL_NVIDIA, AQ_MEMORY, 0, gb10, strlen(gb10), "", ai);
	assert_int_equal(accel_free(ai, 0.6, msg, sizeof(msg)),
	    AV_NOT_CHECKED);
	assert_string_equal(msg, "free memory not checked: nvidia-smi reports "
	    "no memory total (unified memory)");
	assert_string_equal(ai->driver, "");
	accel_parse(ACCEL_NVIDIA, AQ_MEMORY, 0, h100, strlen(h100), "", ai);
	assert_int_equal(accel_free(ai, 0.9, msg, sizeof(msg)), AV_FAIL);
	/* the query's fifth column, driver_version, where it was asked */
	accel_parse(ACCEL_NVIDIA, AQ_MEMORY, 0, gb10drv, strlen(gb10drv), "",
	    ai);
	assert_int_equal(ai->ndev, 1);
	assert_string_equal(ai->driver, "580.95.05");
	accel_parse(ACCEL_NVIDIA, AQ_MEMORY, 0, h100drv, strlen(h100drv), "",
	    ai);
	assert_int_equal(ai->ndev, 2);
	assert_int_equal(ai->dev[1].total_mib, 81559);
	assert_string_equal(ai->driver, "535.104.05");
	assert_string_equal(msg, "GPU 1 has 6.4 of 79.6 GiB free, less than "
	    "--gpu-memory-utilization 0.9 asks (71.7 GiB)");
	accel_parse(ACCEL_NVIDIA, AQ_PROCS, 127, "", 0,
	    "bash: line 1: nvidia-smi: command not found\n", ai);
	assert_int_equal(accel_held(ai, NULL, NULL, msg, sizeof(msg)),
	    AV_NOT_CHECKED);
	free(ai);
}

static void
strv_of(struct strv *v, const char *const *a)
{
	strv_init(v);
	for (; *a; a++)
		strv_add(v, *a);
}

/* The default rule, and ASCEND_RT_VISIBLE_DEVICES's count. */
static void
test_default(void **state)
{
	static const char *const guide[] = { "--device", "/dev/davinci0",
	    "--device", "/dev/davinci1", "--device", "/dev/davinci_manager",
	    "--device", "/dev/devmm_svm", "--device", "/dev/hisi_hdc", NULL };
	static const char *const eq[] = { "--device=/dev/davinci3:/dev/"
	    "davinci3", "--device=/dev/davinci12", NULL };
	static const char *const nv[] = { "--gpus", "all", "--ipc=host", NULL };
	static const char *const path[] = { "-v", "/dev/davinci0:/x", NULL };
	struct strv v;
	int ids[8];

	(void)state;
	strv_of(&v, guide);
	assert_int_equal(accel_default(&v), ACCEL_ASCEND);
	assert_int_equal(accel_davinci(&v, ids, 8), 2);
	assert_int_equal(ids[1], 1);
	strv_free(&v);
	strv_of(&v, eq);
	assert_int_equal(accel_default(&v), ACCEL_ASCEND);
	assert_int_equal(accel_davinci(&v, ids, 8), 2);
	assert_int_equal(ids[0], 3);
	assert_int_equal(ids[1], 12);
	strv_free(&v);
	strv_of(&v, nv);
	assert_int_equal(accel_default(&v), ACCEL_NVIDIA);
	strv_free(&v);
	/* a volume is not a device */
	strv_of(&v, path);
	assert_int_equal(accel_default(&v), ACCEL_NVIDIA);
	strv_free(&v);
	strv_init(&v);
	assert_int_equal(accel_default(&v), ACCEL_NVIDIA);
	strv_free(&v);
	assert_string_equal(accel_name(ACCEL_ASCEND), "ascend");
	assert_string_equal(accel_word(ACCEL_ASCEND, 1), "NPUs");
	assert_null(accel_tool(ACCEL_NONE));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_910b4),
		cmocka_unit_test(test_list_910b4),
		cmocka_unit_test(test_list_short),
		cmocka_unit_test(test_busy_910b3),
		cmocka_unit_test(test_warning_910),
		cmocka_unit_test(test_unhealthy_910b4),
		cmocka_unit_test(test_alarms_910b4_1),
		cmocka_unit_test(test_a3_two_chips),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_nvidia),
		cmocka_unit_test(test_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
