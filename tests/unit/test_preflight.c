/*
 * The preflight (lib/preflight/preflight_steps.c) with every node's answers
 * given as the nodes give them: the devices and free-memory checks read from npu-smi
 * and nvidia-smi (tests/unit/data/npu-smi/, recorded), and what the daemon
 * and tandemctl check take from them: a pass only when the check was
 * made, "not checked" that stops nothing, "could not tell" that is retried,
 * a refusal that names what holds the memory.
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
#include "conffile.h"
#include "preflight.h"
#include "util.h"
#include "slurp.h"

#define DATA	"tests/unit/data/"

/* What a node answers; NULL: the text of a healthy node. */
struct node_answers {
	const char	*npu;		/* npu-smi info: a recorded file */
	const char	*npu_text;	/* or this text */
	int		 npu_rc;
	const char	*npu_err;
	const char	*nv_list;	/* nvidia-smi -L */
	const char	*nv_mem;	/* nvidia-smi --query-gpu=... */
	const char	*owner;		/* docker ps -a --filter name=... */
	const char	*workloads;	/* the unrelated-workload scan */
};

static struct config *
load(const char *path)
{
	char err[ERRLEN];
	struct config *cf = conffile_load(path, err, sizeof(err));

	if (cf == NULL)
		fail_msg("%s: %s", path, err);
	return cf;
}

static char *
data(const char *name)
{
	char path[200];

	snprintf(path, sizeof(path), DATA "%s", name);
	return slurp(path);
}

static void
answer(struct preflight *pf, size_t node, int tag, int rc, const char *out,
    const char *err)
{
	struct cmd_result r = { .exit_code = rc, .out = out,
	    .outlen = strlen(out), .err = err, .errlen = strlen(err) };

	preflight_answer(pf, node, tag, &r);
}

/* s with every from replaced by to (a new string). */
static char *
replace(const char *s, const char *from, const char *to)
{
	size_t n = 0, lf = strlen(from), lt = strlen(to);
	const char *p;
	char *out, *o;

	for (p = s; (p = strstr(p, from)) != NULL; p += lf)
		n++;
	out = o = xcalloc(1, strlen(s) + n * lt + 1);
	for (p = s; *p;)
		if (strncmp(p, from, lf) == 0) {
			memcpy(o, to, lt);
			o += lt;
			p += lf;
		} else
			*o++ = *p++;
	return out;
}

/*
 * The fast link as healthy nodes answer it (net-debian-12, recorded with
 * enp1s0f0np0 and 10.10.10.1: the node's own in their place).
 */
static char *
link_state(const struct config *cf, size_t node)
{
	char *rec = data("net-debian-12/state-up.out");
	char *a = replace(rec, "10.10.10.1", cf->nodes[node].ip);
	char *b = replace(a, "enp1s0f0np0", cf->nodes[node].ifname);

	free(rec);
	free(a);
	return b;
}

static void
pings_ok(struct preflight *pf)
{
	char *ok = data("net-debian-12/ping-big-ok.out");
	struct pf_cmd *cmds;
	size_t j, k;

	while ((k = preflight_more(pf, &cmds)) > 0) {
		for (j = 0; j < k; j++)
			answer(pf, cmds[j].node, cmds[j].tag, 0, ok, "");
		preflight_cmds_free(cmds, k);
	}
	free(ok);
}

/* Every command of every node answered; the accelerator's as a says. */
static struct preflight *
run(struct config *cf, const struct node_answers *a, double gmu)
{
	struct preflight *pf = preflight_new(cf);
	char *info = data("docker-28/info-version.out");
	char *image = data("docker-29/image-identity.out");
	char *npu = NULL;
	size_t i, j, k;

	if (gmu > 0)
		preflight_set_gmu(pf, gmu);
	if (a->npu)
		npu = data(a->npu);
	else if (a->npu_text)
		npu = xstrdup(a->npu_text);
	for (i = 0; i < cf->nnodes; i++) {
		struct pf_cmd *cmds;
		char iface[200];

		snprintf(iface, sizeof(iface), "2: %s    inet %s/24 scope "
		    "global\n", cf->nodes[i].ifname, cf->nodes[i].ip);
		k = preflight_commands(pf, i, &cmds);
		for (j = 0; j < k; j++) {
			const char *c = cmds[j].cmd, *out = "", *err = "";
			int rc = 0;

			if (strstr(c, "ServerVersion"))
				out = info;
			else if (strstr(c, "image inspect"))
				out = image;
			else if (strstr(c, "cksum"))
				out = "f 4096 config.json\nc 1 4096 "
				    "./config.json\n";
			else if (strstr(c, "ip -o"))
				out = iface;
			else if (strstr(c, "ip -j addr show dev")) {
				char *st = link_state(cf, i);

				answer(pf, i, cmds[j].tag, 0, st, "");
				free(st);
				continue;
			} else if (strcmp(c, "npu-smi info") == 0) {
				out = npu ? npu : "";
				rc = a->npu_rc;
				err = a->npu_err ? a->npu_err : "";
			} else if (strcmp(c, "nvidia-smi -L") == 0)
				out = a->nv_list;
			else if (strstr(c, "nvidia-smi --query-gpu"))
				out = a->nv_mem;
			else if (strncmp(c, "g=", 2) == 0)
				out = a->workloads ? a->workloads : "";
			else if (strstr(c, "ps -a --filter"))
				out = a->owner ? a->owner : "";
			else if (strstr(c, "Runtimes"))
				out = "io.containerd.runc.v2\nnvidia\nrunc\n";
			else if (strstr(c, "test -r"))
				rc = 1;		/* no archive; ss: port free */
			answer(pf, i, cmds[j].tag, rc, out, err);
		}
		preflight_cmds_free(cmds, k);
	}
	pings_ok(pf);
	assert_true(preflight_complete(pf));
	free(info);
	free(image);
	free(npu);
	return pf;
}

static const struct pf_result *
res(const struct preflight *pf, size_t node, int check)
{
	return preflight_result(pf, node, check);
}

/* The commands the preflight sends on an Ascend node: npu-smi info once. */
static void
test_ascend_commands(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct preflight *pf = preflight_new(cf);
	struct pf_cmd *cmds;
	size_t j, k, npu = 0;

	(void)state;
	k = preflight_commands(pf, 0, &cmds);
	for (j = 0; j < k; j++) {
		assert_null(strstr(cmds[j].cmd, "nvidia-smi"));
		if (strcmp(cmds[j].cmd, "npu-smi info") == 0) {
			npu++;
			assert_int_equal(cmds[j].tag, PF_GPUS);
		}
	}
	/* devices and memory from one answer */
	assert_int_equal(npu, 1);
	assert_int_equal(res(pf, 0, PF_NVIDIA)->status, PFS_NOT_CHECKED);
	assert_string_equal(res(pf, 0, PF_NVIDIA)->detail, "not used "
	    "(container.accelerator is ascend)");
	preflight_cmds_free(cmds, k);
	preflight_free(pf);
	config_free(cf);
}

/* Eight idle 910B4: both checks made and passed, at the config's 0.90. */
static void
test_ascend_idle(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct node_answers a = { .npu = "npu-smi/info-910b4-idle-25.0.rc1.1.out" };
	struct preflight *pf = run(cf, &a, 0);
	size_t node;
	enum diag_code code;
	char ex[460];

	(void)state;
	assert_int_equal(res(pf, 1, PF_GPUS)->status, PFS_PASSED);
	assert_string_equal(res(pf, 1, PF_GPUS)->detail,
	    "8 NPUs (910B4), all OK");
	assert_int_equal(res(pf, 1, PF_MEMORY)->status, PFS_PASSED);
	assert_string_equal(res(pf, 1, PF_MEMORY)->detail, "8 NPUs: 29.4 of "
	    "32.0 GiB free on the fullest, --gpu-memory-utilization 0.9 asks "
	    "28.8 GiB");
	assert_true(preflight_ok(pf, NULL));
	assert_false(preflight_failure(pf, &node, &code, ex, sizeof(ex)));
	preflight_free(pf);
	config_free(cf);
}

/*
 * NPU 2 of the busy 910B3 has 23.9 GiB free: 0.90 of 64 GiB does not fit,
 * and the refusal names the process npu-smi lists there; the remedy
 * ladder's lower step (0.3) fits.
 */
static void
test_ascend_memory_held(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct node_answers a = { .npu = "npu-smi/info-910b3-busy-25.2.0.out" };
	struct preflight *pf = run(cf, &a, 0);
	size_t node;
	enum diag_code code;
	char ex[460];

	(void)state;
	assert_int_equal(res(pf, 0, PF_GPUS)->status, PFS_PASSED);
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_FAILED);
	assert_string_equal(res(pf, 0, PF_MEMORY)->detail, "NPU 2 chip 0 has "
	    "23.9 of 64.0 GiB free, less than --gpu-memory-utilization 0.9 asks "
	    "(57.6 GiB); held by pid 1333928 (name not shown) 37709 MiB");
	assert_false(preflight_ok(pf, NULL));
	assert_true(preflight_failure(pf, &node, &code, ex, sizeof(ex)));
	assert_int_equal(node, 0);
	assert_int_equal(code, DIAG_GPU_MEMORY_LOW);
	assert_non_null(strstr(ex, "preflight memory: NPU 2 chip 0 has 23.9"));
	assert_non_null(strstr(ex, "; fix: stop what holds the memory "
	    "(npu-smi lists it)"));
	preflight_free(pf);

	pf = run(cf, &a, 0.3);
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_PASSED);
	assert_string_equal(res(pf, 0, PF_MEMORY)->detail, "8 NPUs: 23.9 of "
	    "64.0 GiB free on the fullest, --gpu-memory-utilization 0.3 asks "
	    "19.2 GiB");
	assert_true(preflight_ok(pf, NULL));
	preflight_free(pf);
	config_free(cf);
}

/* Our own container still runs there: its memory says nothing yet. */
static void
test_ascend_memory_ours(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	char *ours = data("docker-28/ps-owner-ours.out");
	struct node_answers a = { .npu = "npu-smi/info-910b3-busy-25.2.0.out",
	    .owner = ours };
	struct preflight *pf;
	size_t node;
	enum diag_code code;
	char ex[460];

	(void)state;
	free(cf->name);
	cf->name = xstrdup("tandem");	/* the recorded label's cluster */
	pf = run(cf, &a, 0);
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_NOT_CHECKED);
	assert_true(res(pf, 0, PF_MEMORY)->ok);
	assert_non_null(strstr(res(pf, 0, PF_MEMORY)->detail, "not checked: "
	    "our container runs here, its memory is freed by the teardown "
	    "(read: NPU 2 chip 0 has 23.9"));
	assert_true(preflight_ok(pf, NULL));
	assert_false(preflight_failure(pf, &node, &code, ex, sizeof(ex)));
	preflight_free(pf);
	config_free(cf);
	free(ours);
}

/*
 * The memory on NPU 2 is an unrelated container's (the scan's "C" and "P"
 * lines, by container ID; npu-smi's table as "A" lines): a refusal, unless
 * container.stop_foreign stops it before the start.
 */
static void
test_ascend_memory_stop_foreign(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	char *npu = data("npu-smi/info-910b3-busy-25.2.0.out");
	struct node_answers a = { .npu = "npu-smi/info-910b3-busy-25.2.0.out" };
	struct preflight *pf;
	struct sbuf scan;
	const char *p, *nl;

	(void)state;
	sbuf_init(&scan);
	for (p = npu; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		sbuf_addf(&scan, "A %.*s\n", (int)(nl - p), p);
	}
	sbuf_add(&scan, "C 3f4e5a6b7c8d [\"jupyter\",\"\"]\n"
	    "P 3f4e5a6b7c8d 1333928\n");
	a.workloads = scan.s;
	pf = run(cf, &a, 0);
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_FAILED);
	assert_int_equal(preflight_workloads(pf, 0)->n, 1);
	preflight_free(pf);
	strv_add(&cf->container.stop_foreign, "jupyter.*");
	pf = run(cf, &a, 0);
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_NOT_CHECKED);
	assert_non_null(strstr(res(pf, 0, PF_MEMORY)->detail, "not checked: "
	    "container.stop_foreign stops jupyter first (read: NPU 2 chip 0"));
	assert_true(preflight_ok(pf, NULL));
	preflight_free(pf);
	config_free(cf);
	sbuf_free(&scan);
	free(npu);
}

/* Two NPUs in Critical and Alarm health: the devices check fails. */
static void
test_ascend_unhealthy(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct node_answers a = {
	    .npu = "npu-smi/info-910b4-unhealthy-derived.out" };
	struct preflight *pf = run(cf, &a, 0);
	size_t node;
	enum diag_code code;
	char ex[460];

	(void)state;
	assert_int_equal(res(pf, 0, PF_GPUS)->status, PFS_FAILED);
	assert_string_equal(res(pf, 0, PF_GPUS)->fix, "check the driver and "
	    "the NPUs: npu-smi info (its Health column)");
	assert_true(preflight_failure(pf, &node, &code, ex, sizeof(ex)));
	assert_int_equal(code, DIAG_GPUS_MISSING);
	assert_non_null(strstr(ex, "preflight devices: 8 NPUs (910B4), not "
	    "healthy: NPU 5 chip 0 Critical; warnings: NPU 6 chip 0 Alarm"));
	/* what npu-smi said stays for /status's warnings (hwcheck.c) */
	assert_non_null(preflight_npu(pf, 0));
	assert_string_equal(preflight_npu(pf, 0)->dev[6].health, "Alarm");
	preflight_free(pf);
	config_free(cf);
}

/* Warning and Alarm (issue 41 item 5): in service, the check passes. */
static void
test_ascend_alarms_pass(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct node_answers a = {
	    .npu = "npu-smi/info-910b4-1-alarms-derived.out" };
	struct preflight *pf = run(cf, &a, 0);

	(void)state;
	assert_int_equal(res(pf, 0, PF_GPUS)->status, PFS_PASSED);
	assert_non_null(strstr(res(pf, 0, PF_GPUS)->detail, "in service with "
	    "warnings: NPU 3 chip 0 Warning, NPU 4 chip 0 Alarm"));
	assert_string_equal(preflight_npu(pf, 0)->dev[4].health, "Alarm");
	preflight_free(pf);
	config_free(cf);
}

/* No npu-smi on the node (exit 127): not checked, never passed. */
static void
test_ascend_no_tool(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	char *err = data("npu-smi/missing.err");
	struct node_answers a = { .npu = "npu-smi/missing.out", .npu_rc = 127,
	    .npu_err = err };
	struct preflight *pf = run(cf, &a, 0);
	size_t node;
	enum diag_code code;
	char ex[460];

	(void)state;
	assert_int_equal(res(pf, 0, PF_GPUS)->status, PFS_NOT_CHECKED);
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_NOT_CHECKED);
	assert_non_null(strstr(res(pf, 0, PF_GPUS)->detail, "NPUs not "
	    "checked: npu-smi is not on the node (exit 127"));
	assert_non_null(strstr(res(pf, 0, PF_GPUS)->fix, "install npu-smi"));
	assert_true(preflight_ok(pf, NULL));
	assert_false(preflight_failure(pf, &node, &code, ex, sizeof(ex)));
	assert_string_equal(preflight_status_name(res(pf, 0, PF_GPUS)->status),
	    "not checked");
	preflight_free(pf);
	config_free(cf);
	free(err);
}

/*
 * npu-smi's table cut short after its header (derived from the recorded
 * idle table: the answer of a tool that stopped mid-way): could not tell,
 * a retried diagnosis, never a pass or a terminal one.
 */
static void
test_ascend_unreadable(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	char *full = data("npu-smi/info-910b4-idle-25.0.rc1.1.out");
	struct node_answers a = { .npu_text = full };
	struct preflight *pf;
	size_t i, node;
	enum diag_code code;
	char ex[460], *p = full;

	(void)state;
	for (i = 0; i < 6 && (p = strchr(p, '\n')) != NULL; i++)
		p++;
	assert_non_null(p);
	*p = '\0';
	pf = run(cf, &a, 0);
	assert_int_equal(res(pf, 0, PF_GPUS)->status, PFS_UNKNOWN);
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_UNKNOWN);
	assert_false(res(pf, 0, PF_GPUS)->ok);
	assert_non_null(strstr(res(pf, 0, PF_GPUS)->detail, "NPUs: could not "
	    "tell: npu-smi answered"));
	assert_string_equal(res(pf, 0, PF_GPUS)->fix, "run npu-smi info on "
	    "the node and see what it says; tandem asks again");
	assert_false(preflight_ok(pf, NULL));
	assert_true(preflight_failure(pf, &node, &code, ex, sizeof(ex)));
	assert_int_equal(node, 0);
	assert_int_equal(code, ACCEL_COULD_NOT_TELL);
	assert_true(diag_get(code)->retryable);
	assert_non_null(strstr(ex, "preflight devices: NPUs: could not tell"));
	preflight_free(pf);
	config_free(cf);
	free(full);
}

/* container.accelerator none: nothing asked, nothing claimed. */
static void
test_none(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct preflight *pf;
	struct pf_cmd *cmds;
	size_t j, k;

	(void)state;
	cf->container.accelerator = ACCEL_NONE;
	pf = preflight_new(cf);
	k = preflight_commands(pf, 0, &cmds);
	for (j = 0; j < k; j++) {
		assert_null(strstr(cmds[j].cmd, "npu-smi"));
		assert_null(strstr(cmds[j].cmd, "nvidia-smi"));
	}
	assert_int_equal(res(pf, 0, PF_GPUS)->status, PFS_NOT_CHECKED);
	assert_string_equal(res(pf, 0, PF_GPUS)->detail, "devices not checked "
	    "(container.accelerator is none)");
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_NOT_CHECKED);
	assert_string_equal(res(pf, 0, PF_MEMORY)->detail, "free memory not "
	    "checked (container.accelerator is none)");
	preflight_cmds_free(cmds, k);
	preflight_free(pf);
	config_free(cf);
}

/*
 * NVIDIA: -L names the GPUs; GB10's unified memory has no total ("[N/A]"),
 * so free memory is not checked; an H100 with 6.4 of 79.6 GiB free is
 * refused at 0.9 (no process named: the memory query lists none).
 */
static void
test_nvidia(void **state)
{
	struct config *cf = load("etc/tandem.json");
	struct node_answers gb10 = {
	    .nv_list = "GPU 0: NVIDIA GB10 (UUID: GPU-a1b2c3d4-0000-1111-2222-"
	    "333344445555)\n", .nv_mem = "0, NVIDIA GB10, [N/A], [N/A]\n" };
	struct node_answers h100 = {
	    .nv_list = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n"
	    "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n",
	    .nv_mem = "0, NVIDIA H100 80GB HBM3, 1, 81559\n"
	    "1, NVIDIA H100 80GB HBM3, 75000, 81559\n" };
	struct preflight *pf;
	size_t node;
	enum diag_code code;
	char ex[460];

	(void)state;
	pf = run(cf, &gb10, 0);
	assert_int_equal(res(pf, 0, PF_GPUS)->status, PFS_PASSED);
	assert_string_equal(res(pf, 0, PF_GPUS)->detail, "1 GPU (NVIDIA GB10)");
	assert_int_equal(res(pf, 0, PF_MEMORY)->status, PFS_NOT_CHECKED);
	assert_string_equal(res(pf, 0, PF_MEMORY)->detail, "free memory not "
	    "checked: nvidia-smi reports no memory total (unified memory)");
	assert_true(preflight_ok(pf, NULL));
	preflight_free(pf);

	pf = run(cf, &h100, 0.9);
	assert_int_equal(res(pf, 1, PF_MEMORY)->status, PFS_FAILED);
	assert_string_equal(res(pf, 1, PF_MEMORY)->detail, "GPU 1 has 6.4 of "
	    "79.6 GiB free, less than --gpu-memory-utilization 0.9 asks (71.7 "
	    "GiB)");
	assert_true(preflight_failure(pf, &node, &code, ex, sizeof(ex)));
	assert_int_equal(code, DIAG_GPU_MEMORY_LOW);
	preflight_free(pf);
	config_free(cf);
}

/*
 * tandemctl's wait for a change's verdict outlasts the check: its
 * questions time out at 2 * probe.timeout_s each (issue 46's review found
 * a fixed 80 s under a 60 s probe.timeout_s).
 */
static void
test_verdict_timeout(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");

	(void)state;
	assert_true(preflight_verdict_timeout_s(cf, 80) >= 80);
	cf->probe.timeout_s = 60;
	assert_true(preflight_verdict_timeout_s(cf, 80) >= 2 * 60);
	assert_true(preflight_verdict_timeout_s(cf, 80) >=
	    2 * preflight_timeout_s(cf));
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict_timeout),
		cmocka_unit_test(test_ascend_commands),
		cmocka_unit_test(test_ascend_idle),
		cmocka_unit_test(test_ascend_memory_held),
		cmocka_unit_test(test_ascend_memory_ours),
		cmocka_unit_test(test_ascend_memory_stop_foreign),
		cmocka_unit_test(test_ascend_unhealthy),
		cmocka_unit_test(test_ascend_alarms_pass),
		cmocka_unit_test(test_ascend_no_tool),
		cmocka_unit_test(test_ascend_unreadable),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_nvidia),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
