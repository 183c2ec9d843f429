/*
 * idle/paused (act_watch.c): the probe cycle of a built cluster, and at
 * start the adoption of what already runs. The first failure of a cycle
 * is the one reported, only after probe.failures_to_degrade cycles in a
 * row; /health alone never proves serving (the one-token completion).
 */
#include "act_harness.h"
#include "act_texts.h"

#define HEAD	0
#define WORKER	1

static char	 label[PLAN_LABEL_MAX];

static int
setup(void **state)
{
	(void)state;
	h_setup_file("etc/tandem.json");
	plan_label(H.cl->plan.hash, label, sizeof(label));
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
inspect_running(size_t node, const char *lbl)
{
	char out[200];

	snprintf(out, sizeof(out), "true %s %s\n", node == HEAD ?
	    "aa11aa11aa11aa11" : "bb22bb22bb22bb22", lbl);
	h_answer(h_find(node, "docker inspect -f"), 0, out, "");
}

/* One whole cycle that passes; gen: a completion is asked. */
static void
healthy_cycle(int gen)
{
	if (h_count("docker inspect -f")) {
		inspect_running(HEAD, label);
		inspect_running(WORKER, label);
	}
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	if (gen)
		h_http(h_find(NO_NODE, "/v1/chat/completions"), 200,
		    VLLM_COMPLETION);
	else
		assert_int_equal(h_count("/v1/chat/completions"), 0);
	h_answer_all("nvidia-smi --query-compute-apps=pid,used_memory,"
	    "process_name", 0, "", "");
}

static void
test_adopt_healthy(void **state)
{
	(void)state;
	H.cl->adopted = 0;
	h_enter(ST_ABSENT, A_IDLE);
	h_tick(100);
	/* adoption always asks for a completion: /health is not enough */
	healthy_cycle(1);
	assert_true(h_reported(REPORT_EVENT, EV_ADOPT_HEALTHY));
	assert_int_equal(H.cl->fsm.state, ST_SERVING);
	assert_int_equal(H.cl->fsm.action, A_IDLE);
	assert_true(H.cl->adopted);
}

/* Built from another config: not adopted, rebuilt. */
static void
test_adopt_other_config(void **state)
{
	char other[PLAN_LABEL_MAX];

	(void)state;
	plan_label(H.cl->plan.hash ^ 1, other, sizeof(other));
	H.cl->adopted = 0;
	h_enter(ST_ABSENT, A_IDLE);
	h_tick(100);
	inspect_running(HEAD, label);
	inspect_running(WORKER, other);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/chat/completions"), 200, VLLM_COMPLETION);
	assert_true(h_reported(REPORT_EVENT, EV_ADOPT_PARTIAL));
	assert_string_equal(h_last()->text,
	    "not adopted: container runs another configuration");
	assert_int_equal(H.cl->fsm.action, A_TEARDOWN);
}

/* Serving: a completion every generate_every_s, not every cycle. */
static void
test_generate_every(void **state)
{
	(void)state;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	healthy_cycle(1);
	h_tick(5000);
	healthy_cycle(0);
	h_tick(5000);
	healthy_cycle(0);
	h_tick(25000);
	healthy_cycle(1);
	assert_int_equal(H.nreports, 0);
	assert_true(H.cl->seen.vllm_healthy);
}

/* /health 200 while the completion fails (dead Ray workers): degraded
 * after the second failed cycle, not the first. */
static void
test_generation_failed_twice(void **state)
{
	(void)state;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	inspect_running(HEAD, label);
	inspect_running(WORKER, label);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/chat/completions"), 0, NULL);
	assert_int_equal(H.nreports, 0);
	h_tick(5000);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/chat/completions"), 500, "{}");
	assert_true(h_reported(REPORT_CHECK, DIAG_GENERATION_FAILED));
	assert_string_equal(h_last()->text,
	    "one-token completion answered HTTP 500");
	assert_int_equal(H.cl->fsm.state, ST_DEGRADED);
	assert_int_equal(H.cl->fsm.action, A_TEARDOWN);
}

/* A container seen dead needs no second look. */
static void
test_container_exited(void **state)
{
	(void)state;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	inspect_running(HEAD, label);
	h_answer(h_find(WORKER, "docker inspect -f"), 0,
	    "false bb22bb22bb22bb22 x\n", "");
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_1_NODE, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/chat/completions"), 200, VLLM_COMPLETION);
	/* the first failure of the cycle is the one reported */
	assert_true(h_reported(REPORT_CHECK, DIAG_CONTAINER_DIED));
	assert_int_equal(h_last()->node, WORKER);
	assert_int_equal(H.cl->fsm.action, A_TEARDOWN);
}

/* Paused: the state follows the probes, but nothing is rebuilt. */
static void
test_paused_follows(void **state)
{
	int i;

	(void)state;
	h_enter(ST_SERVING, A_PAUSED);
	for (i = 0; i < 2; i++) {
		h_tick(i ? 5000 : 0);
		if (h_count("docker inspect"))
			h_answer_all("docker inspect -f", 1, "",
			    "Error: No such object: vllm-head\n");
		h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
		h_http(h_find(NO_NODE, "/health"), 0, NULL);
	}
	assert_int_equal(H.cl->fsm.state, ST_DEGRADED);
	assert_int_equal(H.cl->fsm.action, A_PAUSED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_adopt_healthy, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_adopt_other_config, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_generate_every, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_generation_failed_twice,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_container_exited, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_paused_follows, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
