/*
 * The stall detector fed reading after reading, as the probe cycle would
 * every probe.interval_s: a hung engine, a saturated one that still makes
 * tokens, an idle one, a restart, data-parallel engines, gaps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "stall.h"
#include "util.h"

#define STALL_S		60.0
#define READINGS	3
#define EVERY		5.0

static void
engine(struct vllm_reading *r, const char *id, double running,
    double waiting, double gen, double prompt)
{
	struct vllm_engine *e = &r->engines[r->nengines++];

	memset(e, 0, sizeof(*e));
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->have = VM_RUNNING | VM_WAITING | VM_GEN | VM_PROMPT;
	e->running = running;
	e->waiting = waiting;
	e->gen_tokens = gen;
	e->prompt_tokens = prompt;
	r->have |= e->have;
}

static enum stall_verdict
feed1(struct stall_state *st, double t, double running, double waiting,
    double gen, struct stall_report *rep)
{
	struct vllm_reading r;

	memset(&r, 0, sizeof(r));
	engine(&r, "0", running, waiting, gen, 100);
	return stall_feed(st, &r, t, STALL_S, READINGS, rep);
}

/* Requests stuck, counters frozen, /health still 200: stalled at stall_s. */
static void
test_hung_engine(void **state)
{
	struct stall_state st;
	struct stall_report rep;
	double t;

	(void)state;
	stall_init(&st);
	assert_int_equal(feed1(&st, 0, 8, 2, 5000, &rep), STALL_OK);
	for (t = EVERY; t < STALL_S; t += EVERY)
		assert_int_equal(feed1(&st, t, 8, 2, 5000, &rep),
		    STALL_SUSPECT);
	assert_int_equal(feed1(&st, STALL_S, 8, 2, 5000, &rep),
	    STALL_STALLED);
	assert_string_equal(rep.engine, "0");
	assert_true(rep.pending == 10);
	assert_true(rep.quiet_s == STALL_S);
	assert_int_equal(rep.quiet_readings, 12);
	/* it stays stalled until a token comes */
	assert_int_equal(feed1(&st, STALL_S + EVERY, 8, 2, 5000, &rep),
	    STALL_STALLED);
	assert_int_equal(feed1(&st, STALL_S + 2 * EVERY, 8, 2, 5001, &rep),
	    STALL_OK);
}

/*
 * Saturated: 256 running, 700 waiting, one token every 55 s, for ten
 * minutes of readings. Suspect between tokens, never stalled.
 */
static void
test_saturated_never_stalls(void **state)
{
	struct stall_state st;
	struct stall_report rep;
	double t, tokens = 1e6;
	int suspect = 0;

	(void)state;
	stall_init(&st);
	for (t = 0; t <= 600; t += EVERY) {
		enum stall_verdict v;

		if ((int)t % 55 == 0)
			tokens += 1;
		v = feed1(&st, t, 256, 700, tokens, &rep);
		assert_int_not_equal(v, STALL_STALLED);
		suspect += v == STALL_SUSPECT;
	}
	assert_true(suspect > 0);
	/* tokens came at 550: a completion sent at 540 waited behind them */
	assert_true(stall_tokens_since(&st, 540));
	assert_false(stall_tokens_since(&st, 560));
}

static void
test_idle_is_not_stalled(void **state)
{
	struct stall_state st;
	double t;

	(void)state;
	stall_init(&st);
	for (t = 0; t <= 10 * STALL_S; t += EVERY)
		assert_int_equal(feed1(&st, t, 0, 0, 42, NULL), STALL_OK);
	/* idle is no token: it vouches for nothing */
	assert_false(stall_tokens_since(&st, 0));
	/* work arrives: the clock starts then, not at the last token */
	for (t = 10 * STALL_S + EVERY; t < 11 * STALL_S; t += EVERY)
		assert_int_not_equal(feed1(&st, t, 1, 0, 42, NULL),
		    STALL_STALLED);
	assert_int_equal(feed1(&st, 11 * STALL_S, 1, 0, 42, NULL),
	    STALL_STALLED);
}

/* vLLM restarted: its counters start at 0, which is no stall and no alarm. */
static void
test_counter_reset(void **state)
{
	struct stall_state st;
	struct stall_report rep;
	double t;

	(void)state;
	stall_init(&st);
	feed1(&st, 0, 4, 0, 90000, NULL);
	feed1(&st, 5, 4, 0, 90100, NULL);
	assert_int_equal(feed1(&st, 10, 4, 0, 0, &rep), STALL_OK);
	assert_int_equal(rep.reset, 1);
	assert_int_equal(st.resets, 1);
	for (t = 15; t < 10 + STALL_S; t += EVERY)
		assert_int_equal(feed1(&st, t, 4, 0, 0, &rep), STALL_SUSPECT);
	assert_int_equal(rep.reset, 0);
	assert_int_equal(feed1(&st, 10 + STALL_S, 4, 0, 0, NULL),
	    STALL_STALLED);
}

/* Two readings far apart are not enough: stall_readings in a row are. */
static void
test_sparse_readings(void **state)
{
	struct stall_state st;

	(void)state;
	stall_init(&st);
	feed1(&st, 0, 3, 0, 10, NULL);
	assert_int_equal(feed1(&st, 300, 3, 0, 10, NULL), STALL_SUSPECT);
	assert_int_equal(feed1(&st, 600, 3, 0, 10, NULL), STALL_SUSPECT);
	assert_int_equal(feed1(&st, 900, 3, 0, 10, NULL), STALL_STALLED);
}

static void
test_clock_back(void **state)
{
	struct stall_state st;

	(void)state;
	stall_init(&st);
	feed1(&st, 1000, 3, 0, 10, NULL);
	feed1(&st, 1005, 3, 0, 10, NULL);
	/* the clock went back: everything starts over, nothing is judged */
	assert_int_equal(feed1(&st, 10, 3, 0, 10, NULL), STALL_OK);
	assert_int_equal(feed1(&st, 15, 3, 0, 10, NULL), STALL_SUSPECT);
}

/* Data parallel: one engine hangs, the other serves; the hung one is named. */
static void
test_one_engine_of_two(void **state)
{
	struct stall_state st;
	struct stall_report rep;
	struct vllm_reading r;
	char msg[256];
	double t;
	enum stall_verdict v = STALL_OK;

	(void)state;
	stall_init(&st);
	for (t = 0; t <= STALL_S; t += EVERY) {
		memset(&r, 0, sizeof(r));
		engine(&r, "0", 30, 5, 1000 + t * 40, 50);
		engine(&r, "1", 7, 0, 800, 40);
		v = stall_feed(&st, &r, t, STALL_S, READINGS, &rep);
	}
	assert_int_equal(v, STALL_STALLED);
	assert_string_equal(rep.engine, "1");
	stall_describe(&rep, msg, sizeof(msg));
	assert_string_equal(msg, "engine 1 has 7 requests running or waiting "
	    "and made no token for 60 s (12 readings of vLLM's /metrics in a "
	    "row)");
}

/* An engine that leaves and comes back starts over. */
static void
test_engine_comes_back(void **state)
{
	struct stall_state st;
	struct vllm_reading r;
	double t;

	(void)state;
	stall_init(&st);
	for (t = 0; t < STALL_S; t += EVERY)
		feed1(&st, t, 2, 0, 10, NULL);
	memset(&r, 0, sizeof(r));
	engine(&r, "7", 0, 0, 3, 3);
	stall_feed(&st, &r, STALL_S, STALL_S, READINGS, NULL);
	assert_int_equal(st.n, 1);
	assert_int_equal(feed1(&st, STALL_S + EVERY, 2, 0, 10, NULL),
	    STALL_OK);
}

static void
test_no_counters(void **state)
{
	struct stall_state st;
	struct vllm_reading r;
	struct stall_report rep;

	(void)state;
	stall_init(&st);
	memset(&r, 0, sizeof(r));
	r.have = VM_RUNNING;
	r.nengines = 1;
	r.engines[0].have = VM_RUNNING;
	r.engines[0].running = 4;
	assert_int_equal(stall_feed(&st, &r, 0, STALL_S, READINGS, &rep),
	    STALL_NOINFO);
	assert_string_equal(stall_verdict_name(rep.verdict), "no-info");
	assert_int_equal(st.n, 0);
}

/* Counters without gauges: no telling work from idleness, never stalled. */
static void
test_counters_without_gauges(void **state)
{
	struct stall_state st;
	struct vllm_reading r;
	double t;

	(void)state;
	stall_init(&st);
	for (t = 0; t <= 4 * STALL_S; t += EVERY) {
		memset(&r, 0, sizeof(r));
		r.nengines = 1;
		r.engines[0].have = r.have = VM_GEN;
		r.engines[0].gen_tokens = 5;
		assert_int_equal(stall_feed(&st, &r, t, STALL_S, READINGS,
		    NULL), STALL_OK);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hung_engine),
		cmocka_unit_test(test_saturated_never_stalls),
		cmocka_unit_test(test_idle_is_not_stalled),
		cmocka_unit_test(test_counter_reset),
		cmocka_unit_test(test_sparse_readings),
		cmocka_unit_test(test_clock_back),
		cmocka_unit_test(test_one_engine_of_two),
		cmocka_unit_test(test_engine_comes_back),
		cmocka_unit_test(test_no_counters),
		cmocka_unit_test(test_counters_without_gauges),
	};

	return cmocka_run_group_tests_name("stall", tests, NULL, NULL);
}
