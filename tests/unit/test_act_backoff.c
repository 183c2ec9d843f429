/*
 * backoff (act_backoff.c): the wait doubles with jitter, within the
 * hourly cap, on the monotonic clock; a step of the wall clock changes
 * nothing (issue 36, item 3: a day back left 86,415 s to wait, not 20).
 */
#include "act_harness.h"

static int
setup(void **state)
{
	(void)state;
	h_setup_file("etc/tandem.json");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	h_teardown();
	return 0;
}

/* The first wait is backoff_initial_s (5) with a jitter of 0.75 to 1.25. */
static void
test_first_wait(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_BACKOFF);
	assert_int_equal(H.cl->rec.attempt, 1);
	h_tick(3700);
	assert_int_equal(H.nreports, 0);
	h_tick(2600);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
	assert_int_equal(H.cl->fsm.action, A_TEARDOWN);
	/* it asks nothing of the nodes */
	assert_int_equal(h_count("backoff"), 0);
}

/* The wall clock steps back a day mid-wait: the wait ends on time. */
static void
test_wall_clock_step(void **state)
{
	(void)state;
	H.cl->rec.attempt = 2;		/* the third: 20 s, jitter 15-25 */
	h_enter(ST_DEGRADED, A_BACKOFF);
	h_wall_s -= 86400;
	h_tick(14000);
	assert_int_equal(H.nreports, 0);
	h_wall_s += 2 * 86400;		/* and forward two */
	h_tick(11500);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
}

/* Ten rebuilds in the hour: the next attempt waits for the oldest to age
 * out of the window, counted on the monotonic clock. */
static void
test_hourly_cap(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 10; i++) {
		note_rebuild(H.cl);
		h_now_ms += 60000;	/* one a minute */
	}
	h_enter(ST_DEGRADED, A_BACKOFF);
	/* the oldest began ten minutes ago: it leaves the hour in fifty */
	h_tick(49 * 60000);
	assert_int_equal(H.nreports, 0);
	h_tick(61000);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_wait, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_wall_clock_step, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_hourly_cap, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
