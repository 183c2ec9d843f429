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
	h_http(h_find(NO_NODE, "/v1/completions"), 200, VLLM_COMPLETION);
	/* ready once vLLM's timed start-up lines are read too (issue 47) */
	assert_false(h_reported(REPORT_EVENT, EV_VLLM_READY));
	h_answer(h_find(HEAD, "Graph capturing finished"), 0,
	    "(EngineCore_DP0 pid=82) INFO 03-02 09:46:34 [monitor.py:48] "
	    "torch.compile took 42.18 s in total\n", "");
	assert_true(h_reported(REPORT_EVENT, EV_VLLM_READY));
	assert_int_equal(h_state(), ST_SERVING);
	assert_true(h_seen()->vllm_healthy);
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
	h_http(h_find(NO_NODE, "/v1/completions"), 200, VLLM_COMPLETION);
	/* vLLM passed before its log said so: its phases are read now */
	assert_false(h_reported(REPORT_EVENT, EV_VLLM_READY));
	h_answer(h_find(HEAD, "Graph capturing finished"), 1, "", "");
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
	assert_int_equal(h_action(), A_BACKOFF);
	/* the remedy ladder is funnel.c's, not the action's */
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

/*
 * vLLM refuses tandem, not a slow start (issue 41): 401 on /v1 is
 * vllm-unauthorized, a model list without tandem's name vllm-model-name,
 * at once, not at ready_timeout_s (tests/unit/data/vllm-api-key/).
 */
static void
test_refusals_named(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_answer(h_find(HEAD, "Application startup complete"), 0, "", "");
	h_answer(h_find(HEAD, "Graph capturing finished"), 1, "", "");
	h_tick(100);
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 401, "{\"error\":\"Unauthorized\"}");
	assert_true(h_reported(REPORT_FAILED, DIAG_VLLM_UNAUTHORIZED));
	assert_non_null(strstr(h_last()->text, "401"));
	assert_int_equal(diag_get(DIAG_VLLM_UNAUTHORIZED)->retryable, 0);
}

static void
test_served_name_named(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_answer(h_find(HEAD, "Application startup complete"), 0, "", "");
	h_answer(h_find(HEAD, "Graph capturing finished"), 1, "", "");
	h_tick(100);
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, "{\"object\":\"list\","
	    "\"data\":[{\"id\":\"qwen\",\"object\":\"model\"}]}");
	assert_true(h_reported(REPORT_FAILED, DIAG_VLLM_MODEL_NAME));
	assert_non_null(strstr(h_last()->text, "lists qwen"));
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
	h_answer(h_find(HEAD, "Graph capturing finished"), 1, "", "");
	h_tick(100);
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/completions"), 500,
	    "{\"error\":\"EngineDeadError\"}");
	assert_int_equal(H.nreports, 0);
	h_tick(100);
	assert_int_equal(h_count("/health"), 1);
}

/*
 * A base model: vLLM answers the chat endpoint 400 for want of a chat
 * template; the wait asks /v1/completions (vLLM's answer recorded) and is
 * ready, saying which endpoint proved generation.
 */
static void
test_base_model_ready(void **state)
{
	char *body = h_data("vllm-0.6-0.10.0/completions.body");

	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_answer(h_find(HEAD, "Application startup complete"), 0, "", "");
	h_answer(h_find(HEAD, "Graph capturing finished"), 1, "", "");
	h_tick(100);
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/completions"), 200, body);
	assert_int_equal(h_count("/chat/"), 0);
	assert_true(h_reported(REPORT_EVENT, EV_VLLM_READY));
	assert_string_equal(h_seen()->gen_endpoint, "completions");
	free(body);
}

/*
 * An answer tandem does not know (200 without a choice): could not tell,
 * asked again; the timeout then says what the last answer was.
 */
static void
test_completion_unknown_retried(void **state)
{
	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_answer(h_find(HEAD, "Application startup complete"), 0, "", "");
	h_answer(h_find(HEAD, "Graph capturing finished"), 1, "", "");
	h_tick(100);
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/completions"), 200,
	    "{\"object\":\"text_completion\",\"choices\":[]}");
	assert_int_equal(H.nreports, 0);
	assert_null(h_seen()->gen_endpoint);
	h_tick(100);
	assert_int_equal(h_count("/health"), 1);
	h_tick(1801000);
	assert_true(h_reported(REPORT_FAILED, DIAG_STARTUP_TIMEOUT));
	assert_non_null(strstr(h_last()->text, "could not tell"));
	assert_non_null(strstr(h_last()->text, "/v1/completions"));
}

/*
 * vLLM waits for its placement group (its log, recorded from
 * vllm/v1/executor/ray_utils.py) while ray status shows every GPU used
 * and the group pending (Ray's formatter, v2): placement-group-wait at
 * once, retried, naming what Ray shows. The first look has no ray status
 * yet; it asks, and the next look judges.
 */
static void
test_pg_held(void **state)
{
	char *log = h_data("vllm-log/pg-wait-30s.log");
	char *held = h_data("ray-2.4x-2.5x/v2-pg-held.out");

	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_tick(1000);
	h_answer(h_find(HEAD, "tail -c"), 0, log, "");
	assert_int_equal(H.nreports, 0);
	h_answer(h_find(HEAD, "ray status"), 0, held, "");
	assert_int_equal(H.nreports, 0);
	h_answer(h_find(HEAD, "pkill -0"), 0, "", "");
	h_tick(1000);
	h_answer(h_find(HEAD, "tail -c"), 0, log, "");
	assert_true(h_reported(REPORT_FAILED, DIAG_PLACEMENT_GROUP_WAIT));
	assert_int_equal(h_last()->node, HEAD);
	assert_non_null(strstr(h_last()->text, "it needs 2 GPUs; ray status "
	    "shows 2 of 2 in use"));
	assert_true(diag_get(DIAG_PLACEMENT_GROUP_WAIT)->retryable);
	assert_int_equal(h_action(), A_BACKOFF);
	free(log);
	free(held);
}

/* A node left Ray after vLLM started: fewer GPUs than it needs. */
static void
test_pg_short(void **state)
{
	char *log = h_data("vllm-log/pg-warning.log");

	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	h_tick(1000);
	h_answer(h_find(HEAD, "tail -c"), 0, log, "");
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_1_NODE, "");
	h_answer(h_find(HEAD, "pkill -0"), 0, "", "");
	h_tick(1000);
	h_answer(h_find(HEAD, "tail -c"), 0, log, "");
	assert_true(h_reported(REPORT_FAILED, DIAG_PLACEMENT_GROUP_WAIT));
	assert_non_null(strstr(h_last()->text, "it needs 2 GPUs and ray status "
	    "shows 1 on 1 nodes"));
	free(log);
}

/*
 * Ray shows the GPUs free and vLLM still waits: named once the first
 * sign is probe.ray_wait_timeout_s (300 s) old, long before
 * vllm.ready_timeout_s (1800 s) and vLLM's own 2,550 s.
 */
static void
test_pg_too_long(void **state)
{
	char *log = h_data("vllm-log/pg-wait-30s.log");
	int i;

	(void)state;
	h_enter(ST_UP, A_WAITING_VLLM);
	for (i = 0; i < 2; i++) {
		h_tick(i ? 299000 : 1000);
		h_answer(h_find(HEAD, "tail -c"), 0, log, "");
		assert_int_equal(H.nreports, 0);
		h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
		h_answer(h_find(HEAD, "pkill -0"), 0, "", "");
	}
	h_tick(1100);
	h_answer(h_find(HEAD, "tail -c"), 0, log, "");
	assert_true(h_reported(REPORT_FAILED, DIAG_PLACEMENT_GROUP_WAIT));
	assert_non_null(strstr(h_last()->text, "since vLLM's first sign"));
	free(log);
}

/* A wait that ended (vLLM logged on): no sign, nothing asked of Ray. */
static void
test_pg_wait_over(void **state)
{
	char *log = h_data("vllm-log/pg-wait-30s.log");
	char *more = malloc(strlen(log) + 200);

	(void)state;
	sprintf(more, "%s(APIServer pid=13) INFO 03-04 10:00:41 [ray_env.py:"
	    "66] RAY_NON_CARRY_OVER_ENV_VARS from config: set()\n", log);
	h_enter(ST_UP, A_WAITING_VLLM);
	h_tick(1000);
	h_answer(h_find(HEAD, "tail -c"), 0, more, "");
	assert_int_equal(H.nreports, 0);
	assert_int_equal(h_count("ray status"), 0);
	free(log);
	free(more);
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
		cmocka_unit_test_setup_teardown(test_refusals_named, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_served_name_named, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_completion_retried, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_base_model_ready, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_completion_unknown_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pg_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pg_short, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pg_too_long, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pg_wait_over, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
