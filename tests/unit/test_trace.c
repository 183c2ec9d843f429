/* A rebuild's trace: its critical path, tandem's overhead, the histograms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "trace.h"

/*
 * Two nodes: the teardown on both, the GPU check on both, the head, a
 * ray status, and a log tail beside them that answers late (a side step,
 * never on the path).
 */
static void
two_nodes(struct trace *t, struct trace_hist *h)
{
	long a, b;

	trace_begin(t, 7, 1000);
	a = trace_sent(t, TS_TEARDOWN, 0, 1000);
	b = trace_sent(t, TS_TEARDOWN, 1, 1000);
	trace_answered(t, a, 1100, h);
	trace_answered(t, b, 1150, h);
	a = trace_sent(t, TS_GPU_CHECK, 0, 1160);
	b = trace_sent(t, TS_GPU_CHECK, 1, 1160);
	trace_answered(t, b, 1210, h);
	trace_answered(t, a, 1200, h);
	a = trace_sent(t, TS_RUN_HEAD, 0, 1230);
	trace_answered(t, a, 1500, h);
	b = trace_sent(t, TS_LOG_TAIL, 0, 1510);
	a = trace_sent(t, TS_RAY_STATUS, 0, 1550);
	trace_answered(t, a, 1700, h);
	trace_answered(t, b, 1719, h);
}

static void
test_critical_path(void **state)
{
	struct trace t = { 0 };

	(void)state;
	two_nodes(&t, NULL);
	trace_end(&t, "idle", 1720);
	/* 0 before the teardown, 10 + 20 + 50 + 20 after each answer */
	assert_int_equal(t.overhead_ms, 100);
	assert_int_equal(t.waiting_ms, 150 + 50 + 270 + 150);
	assert_int_equal(t.overhead_ms + t.waiting_ms, t.end_ms - t.start_ms);
	/* the later teardown and GPU answers hold the chain up */
	assert_false(t.steps[0].critical);
	assert_true(t.steps[1].critical);
	assert_false(t.steps[2].critical);
	assert_true(t.steps[3].critical);
	assert_false(t.steps[5].critical);	/* the log tail */
	assert_int_equal(t.steps[0].next_ms, 1160);
	assert_int_equal(t.steps[4].next_ms, 1550);	/* the tail skipped */
	assert_int_equal(t.steps[6].next_ms, 0);
	trace_free(&t);
}

/* Nothing answered: all of the wall time is tandem's. */
static void
test_no_answers(void **state)
{
	struct trace t = { 0 };

	(void)state;
	trace_begin(&t, 1, 50);
	(void)trace_sent(&t, TS_TEARDOWN, 0, 60);
	trace_end(&t, "backoff", 80);
	assert_int_equal(t.overhead_ms, 30);
	assert_int_equal(t.waiting_ms, 0);
	trace_end(&t, "backoff", 10);	/* a clock before the start */
	assert_int_equal(t.end_ms, 50);
	assert_int_equal(t.overhead_ms, 0);
	trace_free(&t);
}

/* Steps answered in the ms they were sent still count as answered. */
static void
test_same_ms(void **state)
{
	struct trace t = { 0 };
	long a, b;

	(void)state;
	trace_begin(&t, 1, 0);
	a = trace_sent(&t, TS_VLLM_HEALTH, 0, 0);
	trace_answered(&t, a, 0, NULL);
	b = trace_sent(&t, TS_VLLM_MODELS, 0, 5);
	trace_answered(&t, b, 5, NULL);
	trace_answered(&t, b, 9, NULL);		/* a second answer: ignored */
	trace_end(&t, "idle", 10);
	assert_int_equal(t.steps[0].next_ms, 5);	/* never itself */
	assert_int_equal(t.steps[1].answer_ms, 5);
	assert_int_equal(t.overhead_ms + t.waiting_ms, 10);
	assert_true(t.steps[0].critical && t.steps[1].critical);
	trace_free(&t);
}

static void
test_overflow(void **state)
{
	struct trace t = { 0 };
	size_t i;

	(void)state;
	trace_begin(&t, 1, 0);
	for (i = 0; i < TRACE_STEPS_MAX; i++)
		assert_true(trace_sent(&t, TS_RAY_STATUS, 0, i) >= 0);
	assert_int_equal(trace_sent(&t, TS_RAY_STATUS, 0, i), -1);
	trace_answered(&t, -1, i, NULL);
	assert_int_equal(t.dropped, 1);
	trace_end(&t, "idle", i + 1);
	trace_free(&t);
}

static void
test_json(void **state)
{
	static const char *const names[] = { "spark1", "spark2" };
	struct trace t = { 0 }, last = { 0 };
	json_t *j, *s;
	long a;

	(void)state;
	two_nodes(&t, NULL);
	a = trace_sent(&t, TS_PREFLIGHT, TRACE_NODE_ALL, 1710);
	(void)a;
	j = trace_json(&t, names, 2);
	assert_true(json_is_true(json_object_get(j, "running")));
	assert_true(json_is_null(json_object_get(j, "overhead_ms")));
	json_decref(j);
	trace_end(&t, "idle", 1720);
	trace_move(&last, &t);
	assert_int_equal(t.n, 0);
	j = trace_json(&last, names, 2);
	assert_int_equal(json_integer_value(json_object_get(j, "generation")), 7);
	assert_int_equal(json_integer_value(json_object_get(j, "wall_ms")), 720);
	assert_int_equal(json_integer_value(json_object_get(j, "overhead_ms")), 100);
	assert_string_equal(json_string_value(json_object_get(j, "outcome")), "idle");
	s = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(s, "step")), "teardown");
	assert_string_equal(json_string_value(json_object_get(s, "node")), "spark2");
	assert_int_equal(json_integer_value(json_object_get(s, "sent_ms")), 0);
	assert_int_equal(json_integer_value(json_object_get(s, "answer_ms")), 150);
	assert_int_equal(json_integer_value(json_object_get(s, "next_ms")), 160);
	assert_true(json_is_true(json_object_get(s, "critical")));
	s = json_array_get(json_object_get(j, "steps"), 7);
	assert_string_equal(json_string_value(json_object_get(s, "step")), "preflight");
	assert_true(json_is_null(json_object_get(s, "node")));
	assert_true(json_is_null(json_object_get(s, "answer_ms")));
	json_decref(j);
	trace_free(&last);
}

static void
test_histogram(void **state)
{
	struct trace t = { 0 };
	struct trace_hist h;
	struct sbuf b;

	(void)state;
	memset(&h, 0, sizeof(h));
	two_nodes(&t, &h);
	sbuf_init(&b);
	trace_hist_render(&b, &h);
	assert_non_null(strstr(b.s, "# TYPE tandem_rebuild_step_seconds histogram\n"));
	/* 100 ms and 150 ms */
	assert_non_null(strstr(b.s, "tandem_rebuild_step_seconds_bucket{step=\"teardown\","
	    "le=\"0.1\"} 1\n"));
	assert_non_null(strstr(b.s, "tandem_rebuild_step_seconds_count{step=\"teardown\"} 2\n"));
	assert_non_null(strstr(b.s, "tandem_rebuild_step_seconds_sum{step=\"run_head\"} 0.270000\n"));
	/* the log tail answered, so it is timed too; nothing else was sent */
	assert_non_null(strstr(b.s, "step=\"log_tail\""));
	assert_null(strstr(b.s, "step=\"vllm_serve\""));
	assert_string_equal(trace_kind_name(TS_COUNT), "unknown");
	sbuf_free(&b);
	trace_free(&t);
}

/*
 * vLLM's phases: per node the longest (ranks side by side, the log read
 * again), the share of the wall time once the rebuild ended, and the
 * slowest node's in the metric.
 */
static void
test_phases(void **state)
{
	static const char *const names[] = { "spark1", "spark2" };
	struct trace t = { 0 };
	struct sbuf b;
	json_t *j, *a, *p;
	size_t i;

	(void)state;
	trace_begin(&t, 3, 1000);
	sbuf_init(&b);
	trace_phases_render(&b, &t);
	assert_int_equal(b.len, 0);		/* none: no series */
	trace_phases_render(&b, NULL);
	assert_int_equal(b.len, 0);
	trace_phase_seen(&t, 0, VP_COMPILE, 40);
	trace_phase_seen(&t, 0, VP_COMPILE, 42);
	trace_phase_seen(&t, 0, VP_COMPILE, 41);
	trace_phase_seen(&t, 1, VP_COMPILE, 70);
	trace_phase_seen(&t, 1, VP_LOAD_WEIGHTS, 10);
	trace_phase_seen(&t, 1, VP_COUNT, 10);	/* not a phase: dropped */
	j = trace_json(&t, names, 2);
	p = json_array_get(json_object_get(j, "vllm_phases"), 0);
	assert_true(json_is_null(json_object_get(p, "share")));	/* running */
	json_decref(j);
	trace_end(&t, "idle", 101000);		/* 100 s */
	j = trace_json(&t, names, 2);
	a = json_object_get(j, "vllm_phases");
	assert_int_equal(json_array_size(a), 3);
	p = json_array_get(a, 0);
	assert_string_equal(json_string_value(json_object_get(p, "phase")),
	    "torch_compile");
	assert_string_equal(json_string_value(json_object_get(p, "node")),
	    "spark1");
	assert_true(json_real_value(json_object_get(p, "seconds")) == 42);
	p = json_array_get(a, 1);
	assert_string_equal(json_string_value(json_object_get(p, "node")),
	    "spark2");
	assert_true(json_real_value(json_object_get(p, "share")) > 0.699 &&
	    json_real_value(json_object_get(p, "share")) < 0.701);
	json_decref(j);
	trace_phases_render(&b, &t);
	assert_non_null(strstr(b.s, "# TYPE tandem_vllm_startup_phase_seconds "
	    "gauge\n"));
	assert_non_null(strstr(b.s, "tandem_vllm_startup_phase_seconds"
	    "{phase=\"torch_compile\"} 70\n"));
	assert_non_null(strstr(b.s, "{phase=\"load_weights\"} 10\n"));
	assert_null(strstr(b.s, "graph_capture"));
	sbuf_free(&b);
	/* the table is bounded: more nodes than it holds are dropped */
	for (i = 0; i < TRACE_PHASES_MAX + 10; i++)
		trace_phase_seen(&t, i, VP_INIT_ENGINE, 1);
	assert_int_equal(t.nphases, TRACE_PHASES_MAX);
	trace_free(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_critical_path),
		cmocka_unit_test(test_no_answers),
		cmocka_unit_test(test_same_ms),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_phases),
	};

	return cmocka_run_group_tests_name("trace", tests, NULL, NULL);
}
