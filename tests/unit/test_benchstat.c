/* Load-test statistics: percentiles, token rates, failures, formats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "benchstat.h"

static void
test_percentile(void **state)
{
	double v[] = { 5, 1, 4, 2, 3, 10, 9, 8, 7, 6 };
	double one[] = { 42 };

	(void)state;
	/* nearest rank: p50 of 1..10 is 5, p95 is 10, p10 is 1 */
	assert_true(percentile(v, 10, 0.50) == 5);
	assert_true(percentile(v, 10, 0.95) == 10);
	assert_true(percentile(v, 10, 0.10) == 1);
	assert_true(percentile(v, 10, 0.0) == 1);
	assert_true(percentile(one, 1, 0.95) == 42);
	assert_true(percentile(NULL, 0, 0.5) == 0);
}

static struct bench_level
level(void)
{
	struct bench_level l;
	struct bench_sample s;
	int i;

	memset(&l, 0, sizeof(l));
	l.concurrency = 4;
	l.wall_s = 2.0;
	for (i = 1; i <= 20; i++) {
		memset(&s, 0, sizeof(s));
		s.ok = 1;
		s.latency_s = i / 10.0;
		s.prompt_tokens = 18;
		s.completion_tokens = 64;
		bench_add(&l, &s);
	}
	memset(&s, 0, sizeof(s));
	s.err = BE_TIMEOUT;
	bench_add(&l, &s);
	s.err = BE_HTTP;
	s.status = 500;
	bench_add(&l, &s);
	return l;
}

static void
test_summary(void **state)
{
	struct bench_level l = level();
	struct bench_summary s;

	(void)state;
	bench_summarize(&l, &s);
	assert_int_equal(s.ok, 20);
	assert_int_equal(s.failed, 2);
	assert_int_equal(s.errors[BE_TIMEOUT], 1);
	assert_int_equal(s.errors[BE_HTTP], 1);
	assert_true(s.qps == 10.0);			/* 20 ok in 2 s */
	assert_true(s.completion_tps == 640.0);		/* 20 x 64 / 2 */
	assert_true(s.prompt_tps == 180.0);
	assert_true(s.total_tps == 820.0);
	/* failures do not enter the latency statistics */
	assert_true(s.lat_p50 > 0.999 && s.lat_p50 < 1.001);
	assert_true(s.lat_p95 > 1.899 && s.lat_p95 < 1.901);
	assert_true(s.lat_avg > 1.049 && s.lat_avg < 1.051);
	bench_free(&l);
}

static void
test_formats(void **state)
{
	struct bench_level l = level();
	struct bench_summary s[2];
	struct sbuf b;

	(void)state;
	bench_summarize(&l, &s[0]);
	s[1] = s[0];
	s[1].concurrency = 8;
	s[1].completion_tps = 1280;
	sbuf_init(&b);
	bench_render(&b, BF_TABLE, 0, s, 2);
	assert_non_null(strstr(b.s, "concurrency  total(s)"));
	assert_non_null(strstr(b.s, "20/2"));
	assert_non_null(strstr(b.s, "http 1, timeout 1"));
	assert_non_null(strstr(b.s, "8            1280.0            2.0x"));
	sbuf_reset(&b);
	bench_render(&b, BF_CSV, 0, s, 2);
	assert_non_null(strstr(b.s, "concurrency,total_s,qps,"));
	assert_non_null(strstr(b.s, "\n4,2.000,10.000,180.000,640.000,"));
	sbuf_reset(&b);
	bench_render(&b, BF_JSON, 0, s, 2);
	assert_non_null(strstr(b.s, "[{\"concurrency\":4,"));
	assert_non_null(strstr(b.s, "\"errors\":{\"http\":1,\"timeout\":1,"));
	sbuf_reset(&b);
	bench_render(&b, BF_MARKDOWN, 1, s, 2);
	assert_non_null(strstr(b.s, "| concurrency | total(s)"));
	assert_non_null(strstr(b.s, "TTFT p50(s)"));
	assert_non_null(strstr(b.s, "| 8 | 1280.0 | 2.0x | 10.000 |"));
	sbuf_free(&b);
	bench_free(&l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_percentile),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_formats),
	};

	return cmocka_run_group_tests_name("benchstat", tests, NULL, NULL);
}
