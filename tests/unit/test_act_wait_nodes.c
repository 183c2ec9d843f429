/*
 * waiting-for-nodes (act_wait_nodes.c): every node's session up, then
 * every engine asked, until all answer; the engine's own words name why
 * one does not meanwhile.
 */
#include "act_harness.h"

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
test_back_when_all_answer(void **state)
{
	char *ver = h_data("docker-20.10.24/info-version.out");

	(void)state;
	h_set_reachable(WORKER, 0);
	h_enter(ST_DEGRADED, A_WAITING_FOR_NODES);
	h_tick(100);
	/* nothing is asked while a session is down */
	assert_int_equal(h_count("ServerVersion"), 0);
	h_set_reachable(WORKER, 1);
	h_tick(100);
	assert_int_equal(h_count("ServerVersion"), 2);
	h_answer_all("ServerVersion", 0, ver, "");
	assert_true(h_reported(REPORT_EVENT, EV_NODES_BACK));
	assert_int_equal(h_action(), A_TEARDOWN);
	free(ver);
}

/* The worker's engine is down: its words name the diagnosis meanwhile,
 * and it is asked again a second later. */
static void
test_engine_down(void **state)
{
	char *err = h_data("docker-28/engine-down.err");
	char *ver = h_data("docker-20.10.24/info-version.out");

	(void)state;
	h_enter(ST_DEGRADED, A_WAITING_FOR_NODES);
	h_tick(100);
	h_answer(h_find(HEAD, "ServerVersion"), 0, ver, "");
	h_answer(h_find(WORKER, "ServerVersion"), 1, "", err);
	assert_int_equal(H.nreports, 0);
	assert_string_equal(H.last_diag, "engine-down");
	assert_non_null(strstr(h_node(WORKER).last_error, "engine: "));
	h_tick(500);
	assert_int_equal(h_count("ServerVersion"), 0);
	h_tick(600);
	h_answer_all("ServerVersion", 0, ver, "");
	assert_true(h_reported(REPORT_EVENT, EV_NODES_BACK));
	assert_string_equal(h_node(WORKER).last_error, "");
	free(err);
	free(ver);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_back_when_all_answer, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_engine_down, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
