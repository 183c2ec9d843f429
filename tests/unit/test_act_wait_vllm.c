/*
 * waiting-vllm (act_wait_vllm.c): vLLM's log line "Application startup
 * complete" ends the wait for its API server; then /health, /v1/models and
 * a one-token completion. Meanwhile the log is read once a second for a
 * failure it names, and (Ray) whether vllm serve still runs.
 */
#include "act_harness.h"
#include "act_texts.h"

#define HEAD	0

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
test_log_then_chain(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	/* while the log line is awaited, /health only now and then */
	h_tick(100);
	assert_int_equal(h_count("/health"), 0);
	h_answer(h_find(HEAD, "Application startup complete"), 0,
	    "(APIServer pid=81) INFO:     Application startup complete.\n",
	    "");
	h_tick(100);
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/chat/completions"), 200, VLLM_COMPLETION);
	assert_true(h_reported(REPORT_EVENT, EV_VLLM_READY));
	assert_int_equal(H.cl->fsm.state, ST_SERVING);
	assert_true(H.cl->seen.vllm_healthy);
}

/* No log line (the tail failed): /health is asked meanwhile anyway. */
static void
test_fallback_health(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_tick(1100);
	h_http(h_find(NO_NODE, "/health"), 0, NULL);
	h_tick(100);
	assert_int_equal(h_count("/health"), 0);	/* once a second */
	h_tick(1000);
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/chat/completions"), 200, VLLM_COMPLETION);
	assert_true(h_reported(REPORT_EVENT, EV_VLLM_READY));
}

/* The log names a failure: the diagnosis comes long before the timeout. */
static void
test_log_names_failure(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_tick(1000);
	h_answer(h_find(HEAD, "tail -c"), 0,
	    "INFO 04-16 03:58:02 [model_runner.py:1038] Loading model\n"
	    "ValueError: Free memory on device (10.5/119.7 GiB) on startup "
	    "is less than desired GPU memory utilization (0.9, 107.7 GiB).\n",
	    "");
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_MEMORY_LOW));
	assert_int_equal(H.cl->fsm.action, A_BACKOFF);
	/* the remedy ladder is cluster.c's, not the action's */
}

/* vllm serve is gone and its log names nothing known: vllm-exited with
 * the log's last line. */
static void
test_vllm_gone(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_tick(1000);
	h_answer(h_find(HEAD, "tail -c"), 0, "starting\n", "");
	h_answer(h_find(HEAD, "pkill -0"), 1, "", "");
	assert_int_equal(H.nreports, 0);
	h_answer(h_find(HEAD, "tail -c"), 0, "starting\nSegmentation fault\n",
	    "");
	assert_true(h_reported(REPORT_FAILED, DIAG_VLLM_EXITED));
	assert_string_equal(h_last()->text, "Segmentation fault");
}

static void
test_startup_timeout(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_tick(1801000);
	assert_true(h_reported(REPORT_FAILED, DIAG_STARTUP_TIMEOUT));
}

/* A completion that fails is asked again; nothing is reported. */
static void
test_completion_retried(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_answer(h_find(HEAD, "Application startup complete"), 0, "", "");
	h_tick(100);
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/chat/completions"), 500,
	    "{\"error\":\"EngineDeadError\"}");
	assert_int_equal(H.nreports, 0);
	h_tick(100);
	assert_int_equal(h_count("/health"), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_log_then_chain, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_fallback_health, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_log_names_failure, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_vllm_gone, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_startup_timeout, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_completion_retried, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
