/* Prometheus text helpers: histograms and label escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"

static void
test_histogram(void **state)
{
	struct histogram h;
	struct sbuf b;

	(void)state;
	memset(&h, 0, sizeof(h));
	hist_observe(&h, hist_probe_bounds, 0.0005);
	hist_observe(&h, hist_probe_bounds, 0.003);
	hist_observe(&h, hist_probe_bounds, 99);
	sbuf_init(&b);
	hist_render(&b, "x_seconds", "probe=\"ray\"", &h, hist_probe_bounds);
	assert_non_null(strstr(b.s, "x_seconds_bucket{probe=\"ray\",le=\"0.001\"} 1\n"));
	assert_non_null(strstr(b.s, "x_seconds_bucket{probe=\"ray\",le=\"0.005\"} 2\n"));
	assert_non_null(strstr(b.s, "x_seconds_bucket{probe=\"ray\",le=\"10\"} 2\n"));
	assert_non_null(strstr(b.s, "x_seconds_bucket{probe=\"ray\",le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(b.s, "x_seconds_count{probe=\"ray\"} 3\n"));
	assert_non_null(strstr(b.s, "x_seconds_sum{probe=\"ray\"} 99.003500\n"));
	sbuf_reset(&b);
	hist_render(&b, "y", NULL, &h, hist_probe_bounds);
	assert_non_null(strstr(b.s, "y_bucket{le=\"+Inf\"} 3\ny_sum 99.003500\ny_count 3\n"));
	sbuf_free(&b);
}

static void
test_escape(void **state)
{
	struct sbuf b;

	(void)state;
	sbuf_init(&b);
	metrics_escape(&b, "a\"b\\c\nd");
	assert_string_equal(b.s, "a\\\"b\\\\c\\nd");
	sbuf_reset(&b);
	metrics_header(&b, "m", "gauge", "Help text.");
	assert_string_equal(b.s, "# HELP m Help text.\n# TYPE m gauge\n");
	sbuf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
