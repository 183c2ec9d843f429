/* The state machine, transition by transition, against PRODUCT.md section 3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fsm.h"

static struct fsm
at(enum cstate s, enum caction a)
{
	struct fsm f;

	fsm_init(&f, 0);
	f.state = s;
	f.action = a;
	return f;
}

static void
expect(struct fsm f, enum event ev, enum cstate s, enum caction a)
{
	fsm_step(&f, ev);
	assert_string_equal(state_name(f.state, 0), state_name(s, 0));
	assert_string_equal(action_name(f.action), action_name(a));
}

static void
test_cold_start_path(void **state)
{
	struct fsm f;

	(void)state;
	fsm_init(&f, 0);
	assert_int_equal(f.state, ST_ABSENT);
	assert_int_equal(f.action, A_IDLE);
	assert_true(fsm_step(&f, EV_ADOPT_PARTIAL));
	assert_int_equal(f.action, A_TEARDOWN);
	assert_true(fsm_step(&f, EV_TEARDOWN_DONE));
	assert_int_equal(f.action, A_STARTING_RAY);
	assert_true(fsm_step(&f, EV_CONTAINERS_UP));
	assert_int_equal(f.action, A_WAITING_RAY);
	assert_true(fsm_step(&f, EV_RAY_READY));
	assert_int_equal(f.state, ST_UP);
	assert_int_equal(f.action, A_STARTING_VLLM);
	assert_true(fsm_step(&f, EV_VLLM_STARTED));
	assert_int_equal(f.action, A_WAITING_VLLM);
	assert_true(fsm_step(&f, EV_VLLM_READY));
	assert_int_equal(f.state, ST_SERVING);
	assert_int_equal(f.action, A_IDLE);
}

static void
test_dp_skips_ray(void **state)
{
	struct fsm f;

	(void)state;
	fsm_init(&f, 1);
	f.action = A_STARTING_RAY;
	fsm_step(&f, EV_CONTAINERS_UP);
	assert_int_equal(f.state, ST_UP);
	assert_int_equal(f.action, A_WAITING_VLLM);
	assert_string_equal(state_name(f.state, 1), "nodes-up");
	assert_string_equal(state_name(ST_UP, 0), "ray-up");
}

static void
test_adopt(void **state)
{
	(void)state;
	expect(at(ST_ABSENT, A_IDLE), EV_ADOPT_HEALTHY, ST_SERVING, A_IDLE);
}

static void
test_failures_rebuild_everything(void **state)
{
	(void)state;
	/* rule 1: a failed check of a built cluster rebuilds all nodes */
	expect(at(ST_SERVING, A_IDLE), EV_CHECK_FAILED, ST_DEGRADED,
	    A_TEARDOWN);
	expect(at(ST_UP, A_WAITING_VLLM), EV_CHECK_FAILED, ST_DEGRADED,
	    A_TEARDOWN);
	/* a failed step waits out the backoff first */
	expect(at(ST_UP, A_WAITING_VLLM), EV_STEP_FAILED, ST_DEGRADED,
	    A_BACKOFF);
	expect(at(ST_ABSENT, A_WAITING_RAY), EV_STEP_FAILED, ST_ABSENT,
	    A_BACKOFF);
	expect(at(ST_DEGRADED, A_BACKOFF), EV_BACKOFF_DONE, ST_DEGRADED,
	    A_TEARDOWN);
	expect(at(ST_DEGRADED, A_TEARDOWN), EV_TEARDOWN_DONE, ST_ABSENT,
	    A_STARTING_RAY);
}

static void
test_nodes(void **state)
{
	(void)state;
	/* rule 2: wait for the node, then rebuild without anyone acting */
	expect(at(ST_SERVING, A_IDLE), EV_NODES_MISSING, ST_DEGRADED,
	    A_WAITING_FOR_NODES);
	expect(at(ST_ABSENT, A_STARTING_RAY), EV_NODES_MISSING, ST_ABSENT,
	    A_WAITING_FOR_NODES);
	expect(at(ST_DEGRADED, A_WAITING_FOR_NODES), EV_NODES_BACK,
	    ST_DEGRADED, A_TEARDOWN);
	/* nodes coming back mean nothing outside of waiting for them */
	expect(at(ST_SERVING, A_IDLE), EV_NODES_BACK, ST_SERVING, A_IDLE);
}

static void
test_fatal_stops_retries(void **state)
{
	struct fsm f = at(ST_UP, A_WAITING_VLLM);

	(void)state;
	fsm_step(&f, EV_FATAL);
	assert_true(f.halted);
	assert_int_equal(f.state, ST_DEGRADED);
	assert_int_equal(f.action, A_IDLE);
	/* rule 4: nothing automatic restarts it ... */
	assert_false(fsm_step(&f, EV_CHECK_FAILED));
	assert_false(fsm_step(&f, EV_ADOPT_PARTIAL));
	fsm_step(&f, EV_NODES_MISSING);
	assert_int_equal(f.action, A_IDLE);
	/* ... until an operator asks */
	fsm_step(&f, EV_REBUILD);
	assert_false(f.halted);
	assert_int_equal(f.action, A_TEARDOWN);
}

static void
test_pause(void **state)
{
	struct fsm f = at(ST_SERVING, A_IDLE);

	(void)state;
	fsm_step(&f, EV_PAUSE);
	assert_int_equal(f.action, A_PAUSED);
	/* paused: state follows the probes, nothing acts */
	fsm_step(&f, EV_CHECK_FAILED);
	assert_int_equal(f.state, ST_DEGRADED);
	assert_int_equal(f.action, A_PAUSED);
	assert_false(fsm_step(&f, EV_BACKOFF_DONE));
	assert_false(fsm_step(&f, EV_REBUILD));
	fsm_step(&f, EV_RESUME);
	assert_int_equal(f.action, A_TEARDOWN);
	f = at(ST_SERVING, A_PAUSED);
	fsm_step(&f, EV_RESUME);
	assert_int_equal(f.action, A_IDLE);
}

static void
test_stale_events_ignored(void **state)
{
	struct fsm f = at(ST_SERVING, A_IDLE);

	(void)state;
	assert_false(fsm_step(&f, EV_TEARDOWN_DONE));
	assert_false(fsm_step(&f, EV_RAY_READY));
	assert_false(fsm_step(&f, EV_VLLM_READY));
	assert_false(fsm_step(&f, EV_CONTAINERS_UP));
	assert_false(fsm_step(&f, EV_BACKOFF_DONE));
}

static void
test_rebuild_counts(void **state)
{
	(void)state;
	assert_true(fsm_starts_rebuild(A_IDLE, A_TEARDOWN));
	assert_true(fsm_starts_rebuild(A_BACKOFF, A_TEARDOWN));
	assert_false(fsm_starts_rebuild(A_TEARDOWN, A_TEARDOWN));
	assert_false(fsm_starts_rebuild(A_TEARDOWN, A_STARTING_RAY));
	expect(at(ST_SERVING, A_IDLE), EV_REBUILD, ST_DEGRADED, A_TEARDOWN);
}

static void
test_names(void **state)
{
	int i;

	(void)state;
	for (i = A_IDLE; i <= A_PAUSED; i++)
		assert_string_not_equal(action_name((enum caction)i), "?");
	for (i = EV_ADOPT_HEALTHY; i <= EV_RESUME; i++)
		assert_string_not_equal(event_name((enum event)i), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_start_path),
		cmocka_unit_test(test_dp_skips_ray),
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_failures_rebuild_everything),
		cmocka_unit_test(test_nodes),
		cmocka_unit_test(test_fatal_stops_retries),
		cmocka_unit_test(test_pause),
		cmocka_unit_test(test_stale_events_ignored),
		cmocka_unit_test(test_rebuild_counts),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests_name("fsm", tests, NULL, NULL);
}
