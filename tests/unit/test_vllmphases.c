/*
 * vLLM's timed start-up lines (lib/parse/vllmphases.c) on the texts in
 * tests/unit/data/vllm-phases/ (README there): each release's wording,
 * Ray's forwarded worker lines with their node's address, and lines that
 * look alike but time nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"
#include "vllmphases.h"

#include "slurp.h"

#define DATA "tests/unit/data/vllm-phases/"
#define MAXL 32

struct seen {
	struct vllm_phase_line	 l[MAXL];
	size_t			 n;
};

static void
collect(const struct vllm_phase_line *pl, void *arg)
{
	struct seen *s = arg;

	assert_true(s->n < MAXL);
	s->l[s->n++] = *pl;
}

static size_t
scan_file(const char *name, struct seen *s)
{
	char path[256];
	char *text;
	size_t n;

	snprintf(path, sizeof(path), DATA "%s", name);
	text = slurp(path);
	memset(s, 0, sizeof(*s));
	n = vllmphases_scan(text, strlen(text), collect, s);
	free(text);
	return n;
}

static void
expect(const struct seen *s, size_t i, enum vllm_phase p, double secs,
    const char *ip)
{
	assert_true(i < s->n);
	assert_string_equal(vllm_phase_name(s->l[i].phase),
	    vllm_phase_name(p));
	assert_true(s->l[i].seconds > secs - 1e-6 &&
	    s->l[i].seconds < secs + 1e-6);
	assert_string_equal(s->l[i].ip, ip);
}

/* Older wording, two nodes under Ray: the worker's lines name its ip. */
static void
test_ray_older(void **state)
{
	struct seen s;

	(void)state;
	assert_int_equal(scan_file("ray-older.log", &s), 9);
	expect(&s, 0, VP_LOAD_WEIGHTS, 191.42, "");
	expect(&s, 1, VP_MODEL_LOAD, 192.104553, "");
	expect(&s, 2, VP_LOAD_WEIGHTS, 204.07, "10.0.0.2");
	expect(&s, 3, VP_MODEL_LOAD, 205.331207, "10.0.0.2");
	expect(&s, 4, VP_COMPILE, 143.77, "");
	expect(&s, 5, VP_COMPILE, 146.20, "10.0.0.2");
	expect(&s, 6, VP_GRAPH_CAPTURE, 32, "");
	expect(&s, 7, VP_GRAPH_CAPTURE, 33, "10.0.0.2");
	expect(&s, 8, VP_INIT_ENGINE, 304.88, "");
}

/* Newer wording: "GiB memory and", "took ... in total", "(compilation:". */
static void
test_newer(void **state)
{
	struct seen s;

	(void)state;
	assert_int_equal(scan_file("newer.log", &s), 4);
	expect(&s, 0, VP_MODEL_LOAD, 20.312284, "");
	expect(&s, 1, VP_COMPILE, 42.18, "");
	expect(&s, 2, VP_GRAPH_CAPTURE, 18, "");
	expect(&s, 3, VP_INIT_ENGINE, 66.08, "");
}

/* Alike but not timed, cut off, or absurd: nothing. */
static void
test_not_phases(void **state)
{
	static const char *const lines[] = {
		"Loading weights took seconds",
		"Loading weights took .5 seconds",
		"Model loading took 12.5 GiB",
		"torch.compile takes -3 s in total",
		"Graph capturing finished in",
		"init engine (profile, create kv cache, warmup model) took "
		    "99999999999 seconds",
		"(RayWorkerWrapper pid=1, ip=10.0.0.2 INFO no phase here",
		"",
	};
	struct vllm_phase_line pl;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_int_equal(vllmphases_line(lines[i], strlen(lines[i]),
		    &pl), 0);
	/* a text without its last newline, and a line cut at its start */
	assert_int_equal(vllmphases_scan("ing weights took 3.0 seconds\n"
	    "Loading weights took 4.50 seconds", 62, NULL, NULL), 1);
	/* an unclosed Ray prefix names no node */
	assert_int_equal(vllmphases_line("(RayWorkerWrapper pid=1, ip=10.0.0.2 "
	    "Loading weights took 2 seconds", 67, &pl), 1);
	assert_string_equal(pl.ip, "");
	assert_string_equal(vllm_phase_name(VP_COUNT), "unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ray_older),
		cmocka_unit_test(test_newer),
		cmocka_unit_test(test_not_phases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
