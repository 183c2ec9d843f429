/*
 * waiting-ray (act_wait_ray.c): ray status until every node and GPU is
 * there, within probe.ray_wait_timeout_s; a node tandem did not start is
 * named (foreign.c) rather than counted.
 */
#include "act_harness.h"
#include "act_texts.h"

#define HEAD	0
#define WORKER	1

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

static void
test_until_complete(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_WAITING_RAY);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_1_NODE, "");
	assert_int_equal(H.nreports, 0);
	assert_int_equal(h_seen()->ray_alive, 1);
	h_tick(100);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	assert_true(h_reported(REPORT_EVENT, EV_RAY_READY));
	assert_string_equal(h_last()->text, "ray status: 2 nodes, 2 GPUs");
	assert_int_equal(h_state(), ST_UP);
	assert_int_equal(h_action(), A_STARTING_VLLM);
}

/* The last status is what the diagnosis quotes. */
static void
test_timeout(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_WAITING_RAY);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_1_NODE, "");
	h_tick(300001);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_1_NODE, "");
	assert_true(h_reported(REPORT_FAILED, DIAG_RAY_INCOMPLETE));
	assert_string_equal(h_last()->text,
	    "ray status: 1 of 2 nodes, 1 of 2 GPUs");
}

/* An answer that is not a status report: asked again, never a diagnosis. */
static void
test_garbage_is_asked_again(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_WAITING_RAY);
	h_answer(h_find(HEAD, "ray status"), 0, "\xff\xfe not ray\n", "");
	assert_int_equal(H.nreports, 0);
	h_tick(100);
	assert_int_equal(h_count("ray status"), 1);
}

/* A third Ray node: every node's engine is asked who runs it. */
static void
test_extra_node_named(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_WAITING_RAY);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_3_NODES, "");
	assert_int_equal(h_count("tandem.cluster"), 2);
	h_answer(h_find(HEAD, "tandem.cluster"), 0, "vllm-head spark\n", "");
	/* the scan runs alone: no new status meanwhile */
	h_tick(1000);
	assert_int_equal(h_count("ray status"), 0);
	h_answer(h_find(WORKER, "tandem.cluster"), 0,
	    "vllm-worker spark\nold-ray-worker \n", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_FOREIGN_CONTAINER));
	assert_string_equal(h_last()->text, "old-ray-worker on spark-worker");
	assert_true(h_halted());
}

/* Nothing foreign found: the stale node it must be. */
static void
test_extra_node_stale(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_WAITING_RAY);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_3_NODES, "");
	h_answer_all("tandem.cluster", 0, "vllm-head spark\n", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_STALE_RAY_NODE));
	assert_false(h_halted());
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_until_complete, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_is_asked_again,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_extra_node_named, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_extra_node_stale, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
