/*
 * vLLM's /metrics as recorded in tests/unit/data/vllm-metrics/ (README
 * there), and the Prometheus text reader on what a server may also send:
 * escapes, NaN, huge lines, bytes that are not UTF-8, NUL bytes, no final
 * newline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "promtext.h"
#include "util.h"
#include "vllmmetrics.h"

#include "slurp.h"

#define DATA "tests/unit/data/vllm-metrics/"

static void
read_file(const char *name, struct vllm_reading *r)
{
	char path[256], err[ERRLEN];
	char *text;

	snprintf(path, sizeof(path), DATA "%s", name);
	text = slurp(path);
	if (vllm_metrics_parse(text, strlen(text), r, err, sizeof(err)) != 0)
		fail_msg("%s: %s", name, err);
	free(text);
}

static void
test_single_engine(void **state)
{
	struct vllm_reading r;
	const struct vllm_engine *e;

	(void)state;
	read_file("v0.10-single.prom", &r);
	assert_int_equal(r.nengines, 1);
	e = vllm_reading_engine(&r, "0");
	assert_non_null(e);
	assert_int_equal(e->have, VM_RUNNING | VM_WAITING | VM_GEN | VM_PROMPT);
	assert_true(r.running == 3.0 && r.waiting == 1.0);
	/* not the _created timestamp beside it, nor a histogram */
	assert_true(r.gen_tokens == 25731.0);
	assert_true(r.prompt_tokens == 4410.0);
	assert_int_equal(r.bad_lines, 0);
}

static void
test_data_parallel_multiprocess(void **state)
{
	struct vllm_reading r;

	(void)state;
	read_file("v0.10-dp2-multiproc.prom", &r);
	assert_int_equal(r.nengines, 2);
	assert_true(vllm_reading_engine(&r, "0")->running == 2.0);
	assert_true(vllm_reading_engine(&r, "1")->running == 5.0);
	assert_true(vllm_reading_engine(&r, "1")->waiting == 4.0);
	assert_true(r.running == 7.0 && r.waiting == 4.0);
	assert_true(r.gen_tokens == 1024.0 + 387.0);
	assert_true(r.prompt_tokens == 51.0 + 68.0);
}

static void
test_recent_capture(void **state)
{
	struct vllm_reading r;

	(void)state;
	read_file("v0.30-obs.prom", &r);
	assert_int_equal(r.nengines, 1);
	/* estimated_flops_per_gpu_total is another counter */
	assert_true(r.gen_tokens == 32.0 && r.prompt_tokens == 8.0);
	assert_true(r.running == 0.0);
}

static void
test_v0_engine_has_no_engine_label(void **state)
{
	struct vllm_reading r;

	(void)state;
	read_file("v0.5-obs.prom", &r);
	assert_int_equal(r.nengines, 1);
	assert_string_equal(r.engines[0].id, "");
	assert_true(r.running == 12.0);
	assert_true(r.gen_tokens == 1006431.0);
}

static void
test_not_vllm(void **state)
{
	struct vllm_reading r;
	char err[ERRLEN];
	const char *other = "# HELP go_goroutines Number of goroutines.\n"
	    "go_goroutines 12\nprocess_open_fds 9\n";

	(void)state;
	assert_int_equal(vllm_metrics_parse(other, strlen(other), &r, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "no vllm:num_requests_running or "
	    "vllm:generation_tokens_total in 3 lines (2 samples)");
	assert_int_equal(vllm_metrics_parse("", 0, &r, err, sizeof(err)), -1);
	assert_int_equal(vllm_metrics_parse("<html>404</html>", 16, &r, err,
	    sizeof(err)), -1);
}

/* A pid label splits a gauge per process: the engine has the largest. */
static void
test_gauge_per_process(void **state)
{
	struct vllm_reading r;
	char err[ERRLEN];
	const char *t =
	    "vllm:num_requests_running{engine=\"0\",pid=\"11\"} 0.0\n"
	    "vllm:num_requests_running{engine=\"0\",pid=\"12\"} 4.0\n"
	    "vllm:num_requests_running{engine=\"0\",pid=\"13\"} 1.0\n"
	    "vllm:generation_tokens_total{engine=\"0\"} 10\n";

	(void)state;
	assert_int_equal(vllm_metrics_parse(t, strlen(t), &r, err,
	    sizeof(err)), 0);
	assert_true(r.running == 4.0);
}

static void
test_bad_values_ignored(void **state)
{
	struct vllm_reading r;
	char err[ERRLEN];
	const char *t =
	    "vllm:num_requests_running{engine=\"0\"} NaN\n"
	    "vllm:num_requests_waiting{engine=\"0\"} +Inf\n"
	    "vllm:generation_tokens_total{engine=\"0\"} -3\n"
	    "vllm:prompt_tokens_total{engine=\"0\"} 7e2\n";

	(void)state;
	assert_int_equal(vllm_metrics_parse(t, strlen(t), &r, err,
	    sizeof(err)), -1);
	assert_int_equal(r.bad_values, 3);
	assert_true(r.prompt_tokens == 700.0);
}

/* The text format itself. */

struct seen {
	int	 n;
	char	 names[8][64];
	double	 values[8];
	char	 model[8][64];
};

static int
collect(const struct prom_sample *s, void *arg)
{
	struct seen *sn = arg;

	if (sn->n < 8) {
		snprintf(sn->names[sn->n], 64, "%.*s", (int)s->namelen,
		    s->name);
		sn->values[sn->n] = s->value;
		prom_label(s, "model_name", sn->model[sn->n], 64);
		sn->n++;
	}
	return 0;
}

static void
test_escapes_and_spacing(void **state)
{
	struct seen sn = { 0 };
	struct prom_stats st;
	const char t[] =
	    "# HELP x y\n"
	    "a{model_name=\"q\\\"uo\\\\te\\nd\",engine=\"0\",} 1 1700000000000\r\n"
	    "   b { model_name = \"sp}a{ce\" } 2\n"
	    "c 3\n"
	    "\n"
	    "d{model_name=\"\"} 4";	/* no final newline */

	(void)state;
	prom_parse(t, sizeof(t) - 1, collect, &sn, &st);
	assert_int_equal(sn.n, 4);
	assert_string_equal(sn.names[0], "a");
	assert_string_equal(sn.model[0], "q\"uo\\te\nd");
	assert_true(sn.values[0] == 1.0);
	assert_string_equal(sn.names[1], "b");
	assert_string_equal(sn.model[1], "sp}a{ce");
	assert_string_equal(sn.model[2], "");
	assert_true(sn.values[3] == 4.0);
	assert_int_equal(st.comments, 1);
	assert_int_equal(st.bad, 0);
}

static void
test_malformed_lines_skipped(void **state)
{
	struct seen sn = { 0 };
	struct prom_stats st;
	const char t[] =
	    "a{model_name=\"unterminated} 1\n"
	    "b{model_name=\"x\" 2\n"
	    "c{=\"x\"} 3\n"
	    "d 4abc\n"
	    "9e 5\n"
	    "e\n"
	    "f{x=\"y\"}6\n"
	    "g{x=\"\\\n"
	    "ok 7\n";

	(void)state;
	prom_parse(t, sizeof(t) - 1, collect, &sn, &st);
	assert_int_equal(sn.n, 1);
	assert_string_equal(sn.names[0], "ok");
	assert_int_equal(st.bad, 8);
}

static void
test_huge_and_binary(void **state)
{
	struct seen sn = { 0 };
	struct prom_stats st;
	static const char junk[] = "\xff\xfe garbage \0 line\n";
	struct sbuf b;
	size_t i;

	(void)state;
	sbuf_init(&b);
	/* a 1 MiB label value, not UTF-8, with a NUL in it */
	sbuf_add(&b, "vllm:num_requests_running{model_name=\"");
	for (i = 0; i < 1024 * 1024; i++)
		sbuf_addc(&b, (char)(0x80 + i % 0x7f));
	sbuf_addn(&b, "\0\xff", 2);
	sbuf_add(&b, "\",engine=\"0\"} 5\n");
	sbuf_addn(&b, junk, sizeof(junk) - 1);
	sbuf_add(&b, "vllm:generation_tokens_total{engine=\"0\"} 9\n");
	prom_parse(b.s, b.len, collect, &sn, &st);
	assert_int_equal(sn.n, 2);
	assert_true(sn.values[0] == 5.0);
	assert_int_equal(strlen(sn.model[0]), 63);	/* truncated copy */
	assert_int_equal(st.bad, 1);
	{
		struct vllm_reading r;
		char err[ERRLEN];

		assert_int_equal(vllm_metrics_parse(b.s, b.len, &r, err,
		    sizeof(err)), 0);
		assert_true(r.running == 5.0 && r.gen_tokens == 9.0);
	}
	sbuf_free(&b);
}

static void
test_more_engines_than_kept(void **state)
{
	struct vllm_reading r;
	char err[ERRLEN];
	struct sbuf b;
	int i;

	(void)state;
	sbuf_init(&b);
	for (i = 0; i < VLLM_ENGINES_MAX + 6; i++)
		sbuf_addf(&b, "vllm:num_requests_running{engine=\"%d\"} 1\n"
		    "vllm:generation_tokens_total{engine=\"%d\"} 2\n", i, i);
	assert_int_equal(vllm_metrics_parse(b.s, b.len, &r, err, sizeof(err)),
	    0);
	assert_int_equal(r.nengines, VLLM_ENGINES_MAX);
	assert_int_equal(r.engines_dropped, 12);
	assert_true(r.running == VLLM_ENGINES_MAX + 6);
	sbuf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_engine),
		cmocka_unit_test(test_data_parallel_multiprocess),
		cmocka_unit_test(test_recent_capture),
		cmocka_unit_test(test_v0_engine_has_no_engine_label),
		cmocka_unit_test(test_not_vllm),
		cmocka_unit_test(test_gauge_per_process),
		cmocka_unit_test(test_bad_values_ignored),
		cmocka_unit_test(test_escapes_and_spacing),
		cmocka_unit_test(test_malformed_lines_skipped),
		cmocka_unit_test(test_huge_and_binary),
		cmocka_unit_test(test_more_engines_than_kept),
	};

	return cmocka_run_group_tests_name("vllmmetrics", tests, NULL, NULL);
}
