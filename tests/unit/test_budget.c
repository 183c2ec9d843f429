/*
 * The restart budget that explains itself: counts, diagnoses, when
 * retries start again, what to look at first; and the counters of
 * issue 33 in /metrics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "budget.h"
#include "config.h"
#include "metrics.h"
#include "recovery.h"

#define NOW 100000.0

static void
test_capped(void **state)
{
	double rb[REBUILDS_HISTORY] = { 0 };
	size_t n = 0;
	struct budget_summary s;
	const struct budget_event ev[] = {
		{ NOW - 7200, "generation-stalled: old, outside the hour" },
		{ NOW - 3000, "generation-stalled: engine 0 has 8 requests ..." },
		{ NOW - 2000, "nccl-error: NCCL error: unhandled system error" },
		{ NOW - 1000, "generation-stalled: engine 0 has 6 requests "
		  "running or waiting and made no token for 60 s" },
		{ NOW - 900, "rebuild-limit: recovery.max_rebuilds_per_hour "
		  "reached" },
		{ NOW - 800, "POST /pause" },
		{ NOW - 700, "not-a-code: something" },
		{ NOW + 10, "generation-stalled: from the future" },
	};
	json_t *j;
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		recovery_note_rebuild(rb, &n, NOW - 3000 + i * 1000);
	budget_summarize(rb, n, 3, NOW, ev, sizeof(ev) / sizeof(ev[0]), NOW,
	    "tandem-bundle-20261102T081403Z-g17.tar", &s);
	assert_int_equal(s.rebuilds_last_hour, 3);
	assert_int_equal(s.capped, 1);
	assert_true(s.retry_in_s == 600);
	assert_int_equal(s.ndiags, 2);
	assert_string_equal(s.diags[0].code, "generation-stalled");
	assert_int_equal(s.diags[0].count, 2);
	assert_string_equal(s.diags[1].code, "nccl-error");
	assert_string_equal(s.text, "3 rebuilds in the last hour (recovery."
	    "max_rebuilds_per_hour 3); the cap is reached: the next attempt in "
	    "600 s, or at once after tandemctl resume. Diagnoses: "
	    "generation-stalled x2, nccl-error x1 (last: engine 0 has 6 "
	    "requests running or waiting and made no token for 60 s). "
	    "Evidence: tandem-bundle-20261102T081403Z-g17.tar (tandemctl "
	    "bundle); look first at head/vllm.log (the last lines before the "
	    "hang: NCCL/Gloo errors) and nodes/*/kernel-nvrm.txt (a GPU fault "
	    "under it).");
	j = budget_json(&s);
	assert_true(json_is_true(json_object_get(j, "capped")));
	assert_int_equal(json_integer_value(json_object_get(j,
	    "rebuilds_last_hour")), 3);
	assert_int_equal(json_array_size(json_object_get(j, "diagnoses")), 2);
	assert_string_equal(json_string_value(json_object_get(j, "bundle")),
	    "tandem-bundle-20261102T081403Z-g17.tar");
	json_decref(j);
	/* resume: "I fixed it", the hour is given back */
	recovery_forgive_all(rb, n);
	budget_summarize(rb, n, 3, NOW, NULL, 0, NOW, NULL, &s);
	assert_int_equal(s.rebuilds_last_hour, 0);
	assert_int_equal(s.capped, 0);
	assert_string_equal(s.text, "0 rebuilds in the last hour (recovery."
	    "max_rebuilds_per_hour 3). Look first at README.txt, then "
	    "head/vllm.log.");
	j = budget_json(&s);
	assert_true(json_is_null(json_object_get(j, "bundle")));
	json_decref(j);
}

static void
test_look_first(void **state)
{
	(void)state;
	assert_non_null(strstr(budget_look_first("gpu-xid"),
	    "kernel-nvrm.txt"));
	assert_non_null(strstr(budget_look_first("container-died"),
	    "container-state.json"));
	assert_non_null(strstr(budget_look_first("cuda-oom"),
	    "nvidia-smi.txt"));
	assert_string_equal(budget_look_first("whatever"),
	    "README.txt, then head/vllm.log");
}

/* More diagnoses than kept: the table stays bounded, no crash. */
static void
test_many_codes(void **state)
{
	static const char *const codes[] = { "stale-ray-node", "cuda-oom",
	    "gpu-memory-low", "nccl-error", "worker-lost", "vllm-exited",
	    "container-died", "startup-timeout", "gcs-unreachable",
	    "engine-down" };
	struct budget_event ev[10];
	char reasons[10][64];
	struct budget_summary s;
	double rb[1] = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < 10; i++) {
		snprintf(reasons[i], sizeof(reasons[i]), "%s: x", codes[i]);
		ev[i].time = NOW - 10;
		ev[i].reason = reasons[i];
	}
	budget_summarize(rb, 0, 10, NOW, ev, 10, NOW, NULL, &s);
	assert_int_equal(s.ndiags, BUDGET_DIAGS_MAX);
}

static void
test_metrics(void **state)
{
	struct xid_count c[2];
	size_t n = 0;
	struct sbuf b;

	(void)state;
	metrics_count_xid(c, &n, 2, "spark-2", 79);
	metrics_count_xid(c, &n, 2, "spark-2", 79);
	metrics_count_xid(c, &n, 2, "sp\"ark", 13);
	metrics_count_xid(c, &n, 2, "spark-3", 48);	/* table full */
	assert_int_equal(n, 2);
	sbuf_init(&b);
	metrics_render_stalls(&b, 3);
	metrics_render_xid(&b, c, n);
	assert_string_equal(b.s, "# HELP tandem_generation_stalls_total Times "
	    "vLLM had requests running and made no token for probe.stall_s.\n"
	    "# TYPE tandem_generation_stalls_total counter\n"
	    "tandem_generation_stalls_total 3\n"
	    "# HELP tandem_gpu_xid_total NVIDIA Xid events in the nodes' "
	    "kernel logs, by node and code.\n"
	    "# TYPE tandem_gpu_xid_total counter\n"
	    "tandem_gpu_xid_total{node=\"spark-2\",code=\"79\"} 2\n"
	    "tandem_gpu_xid_total{node=\"sp\\\"ark\",code=\"13\"} 1\n");
	sbuf_free(&b);
}

/*
 * tandemd keeps the rebuilds on the monotonic clock (seconds since boot)
 * and the events on the wall clock: each is compared with its own now.
 */
static void
test_two_clocks(void **state)
{
	double rb[REBUILDS_HISTORY] = { 0 };
	size_t n = 0;
	struct budget_summary s;
	const double wall = 1.8e9;
	const struct budget_event ev[] = {
		{ wall - 600, "gpu-memory-low: free GPU memory is below ..." },
		{ wall - 5000, "vllm-exited: before the hour" },
	};

	(void)state;
	recovery_note_rebuild(rb, &n, 120);	/* two minutes after boot */
	recovery_note_rebuild(rb, &n, 700);
	budget_summarize(rb, n, 2, 800, ev, 2, wall, NULL, &s);
	assert_int_equal(s.rebuilds_last_hour, 2);
	assert_int_equal(s.capped, 1);
	assert_true(s.retry_in_s == 120 + 3600 - 800);
	assert_int_equal(s.ndiags, 1);
	assert_string_equal(s.diags[0].code, "gpu-memory-low");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capped),
		cmocka_unit_test(test_look_first),
		cmocka_unit_test(test_many_codes),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_two_clocks),
	};

	return cmocka_run_group_tests_name("budget", tests, NULL, NULL);
}
