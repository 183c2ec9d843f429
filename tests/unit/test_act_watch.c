/*
 * idle/paused (act_watch.c): the probe cycle of a built cluster, and at
 * start the adoption of what already runs. The first failure of a cycle
 * is the one reported, only after probe.failures_to_degrade cycles in a
 * row; /health alone never proves serving (the one-token completion).
 * Each cycle reads vLLM's /metrics too (tests/unit/data/vllm-metrics/,
 * vLLM 0.10's shape with the values the case needs): work and no token for
 * probe.stall_s is generation-stalled at once, and tokens still coming
 * vouch for a completion that timed out behind real traffic.
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
	plan_label(h_plan_hash(), label, sizeof(label));
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

/*
 * vLLM 0.10's /metrics (v0.10-single.prom) with the requests running and
 * waiting and the generated tokens the case needs.
 */
static char *
metrics_text(double running, double waiting, double gen)
{
	char *rec = h_data("vllm-metrics/v0.10-single.prom"), *p, *nl, *sp;
	struct sbuf b;

	sbuf_init(&b);
	for (p = rec; *p; p = nl + 1) {
		double v = -1;

		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		if (strncmp(p, "vllm:num_requests_running{", 26) == 0)
			v = running;
		else if (strncmp(p, "vllm:num_requests_waiting{", 26) == 0)
			v = waiting;
		else if (strncmp(p, "vllm:generation_tokens_total{", 29) == 0)
			v = gen;
		sp = memrchr(p, ' ', (size_t)(nl - p));
		if (v >= 0 && sp)
			sbuf_addf(&b, "%.*s %.1f\n", (int)(sp - p), p, v);
		else
			sbuf_addf(&b, "%.*s\n", (int)(nl - p), p);
		if (*nl == '\0')
			break;
	}
	free(rec);
	return sbuf_take(&b);
}

static void
metrics(double running, double waiting, double gen)
{
	char *t = metrics_text(running, waiting, gen);

	h_http(h_find(NO_NODE, "/metrics"), 200, t);
	free(t);
}

/*
 * One whole cycle whose `ray status` prints ray_out, or fails with
 * ray_error (no answer); everything else passes. gen: a completion is
 * asked.
 */
static void
cycle_with_ray(const char *ray_out, const char *ray_error, int gen)
{
	if (h_count("docker inspect -f")) {
		inspect_running(HEAD, label);
		inspect_running(WORKER, label);
	}
	if (ray_error)
		h_fail(h_find(HEAD, "ray status"), ray_error);
	else
		h_answer(h_find(HEAD, "ray status"), 0, ray_out, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	if (gen)
		h_http(h_find(NO_NODE, "/v1/completions"), 200,
		    VLLM_COMPLETION);
	else
		assert_int_equal(h_count("/v1/completions"), 0);
	h_answer_all("nvidia-smi --query-compute-apps=pid,used_memory,"
	    "process_name", 0, "", "");
	metrics(0, 0, 25731);
}

/* One whole cycle that passes. */
static void
healthy_cycle(int gen)
{
	cycle_with_ray(RAY_STATUS_2_NODES, NULL, gen);
}

static void
test_adopt_healthy(void **state)
{
	(void)state;
	h_set_adopted(0);
	h_enter(ST_ABSENT, A_IDLE);
	h_tick(100);
	/* adoption always asks for a completion: /health is not enough */
	healthy_cycle(1);
	assert_true(h_reported(REPORT_EVENT, EV_ADOPT_HEALTHY));
	assert_int_equal(h_state(), ST_SERVING);
	assert_int_equal(h_action(), A_IDLE);
	assert_true(h_adopted());
}

/* An adoption cycle in which vLLM's /health times out or is refused. */
static void
adopt_cycle_health(int timed_out)
{
	if (h_count("docker inspect -f")) {
		inspect_running(HEAD, label);
		inspect_running(WORKER, label);
	}
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	if (timed_out)
		h_http_timeout(h_find(NO_NODE, "/health"));
	else
		h_http(h_find(NO_NODE, "/health"), 0, NULL);
	h_answer_all("nvidia-smi --query-compute-apps=pid,used_memory,"
	    "process_name", 0, "", "");
	metrics(0, 0, 25731);
}

static void
ray_timeout_cycle(void)
{
	cycle_with_ray(NULL, "timed out after 3.0 s", 1);
}

/*
 * A Ray text that is no status report: the first sentence of what `ray
 * start` prints since Ray 2.0 (USAGE_STATS_ENABLED_FOR_CLI_MESSAGE,
 * python/ray/_private/usage/usage_lib.py), as a wrapper or a login banner
 * might put before `ray status`'s own output.
 */
static void
ray_unreadable_cycle(void)
{
	cycle_with_ray("Usage stats collection is enabled.\n", NULL, 1);
}

static void
health_timeout_cycle(void)
{
	adopt_cycle_health(1);
}

/*
 * Adopting: a cycle that could not tell is looked at again, a probe
 * interval later, before the cluster is called partial and torn down; the
 * second in a row is (failures_to_degrade 2).
 */
static void
adopt_looks_again(void (*cycle)(void))
{
	int i;

	h_set_adopted(0);
	h_enter(ST_ABSENT, A_IDLE);
	for (i = 0; i < 2; i++) {
		h_tick(i ? 60000 : 100);
		cycle();
		assert_int_equal(h_reported(REPORT_EVENT, EV_ADOPT_PARTIAL),
		    i == 1);
		assert_int_equal(h_adopted(), i == 1);
	}
	assert_int_equal(h_action(), A_TEARDOWN);
}

/* `ray status` timed out (a loaded head): no answer. */
static void
test_adopt_timeout_looks_again(void **state)
{
	(void)state;
	adopt_looks_again(ray_timeout_cycle);
}

/*
 * `ray status` exits 0 with a text its parser cannot read (a banner, a
 * format of another Ray): could not tell, as with no answer; the message
 * says what came back.
 */
static void
test_adopt_unreadable_looks_again(void **state)
{
	(void)state;
	adopt_looks_again(ray_unreadable_cycle);
	assert_string_equal(h_last()->text, "not adopted: ray status: not a "
	    "status report; it printed: Usage stats collection is enabled.");
}

/* vLLM's /health gives no answer within probe.timeout_s: the same. */
static void
test_adopt_health_timeout_looks_again(void **state)
{
	(void)state;
	adopt_looks_again(health_timeout_cycle);
}

/* Adopting: /health refused is an answer (vLLM is down): at once. */
static void
test_adopt_health_refused_decides(void **state)
{
	(void)state;
	h_set_adopted(0);
	h_enter(ST_ABSENT, A_IDLE);
	h_tick(100);
	adopt_cycle_health(0);
	assert_true(h_reported(REPORT_EVENT, EV_ADOPT_PARTIAL));
	assert_true(h_adopted());
	assert_int_equal(h_action(), A_TEARDOWN);
}

/*
 * Adopting: `ray status` answers with a node missing. That is an answer,
 * not a question left open: the cluster is partial at once.
 */
static void
test_adopt_ray_answer_decides(void **state)
{
	(void)state;
	h_set_adopted(0);
	h_enter(ST_ABSENT, A_IDLE);
	h_tick(100);
	cycle_with_ray(RAY_STATUS_1_NODE, NULL, 1);
	assert_true(h_reported(REPORT_EVENT, EV_ADOPT_PARTIAL));
	assert_true(h_adopted());
	assert_int_equal(h_action(), A_TEARDOWN);
}

/* Built from another config: not adopted, rebuilt. */
static void
test_adopt_other_config(void **state)
{
	char other[PLAN_LABEL_MAX];

	(void)state;
	plan_label(h_plan_hash() ^ 1, other, sizeof(other));
	h_set_adopted(0);
	h_enter(ST_ABSENT, A_IDLE);
	h_tick(100);
	inspect_running(HEAD, label);
	inspect_running(WORKER, other);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	h_http(h_find(NO_NODE, "/v1/completions"), 200, VLLM_COMPLETION);
	metrics(0, 0, 25731);
	assert_true(h_reported(REPORT_EVENT, EV_ADOPT_PARTIAL));
	assert_string_equal(h_last()->text,
	    "not adopted: container runs another configuration");
	assert_int_equal(h_action(), A_TEARDOWN);
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
	assert_true(h_seen()->vllm_healthy);
	/* /status: which endpoint proved generation */
	assert_string_equal(h_seen()->gen_endpoint, "completions");
}

/*
 * A base model: the completion is /v1/completions with a prompt (vLLM's
 * own answer, recorded), never the chat endpoint, whose template a base
 * model lacks.
 */
static void
test_generate_base_model(void **state)
{
	char *body = h_data("vllm-0.10.1-0.15/completions.body");
	struct asked *a;

	(void)state;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	inspect_running(HEAD, label);
	inspect_running(WORKER, label);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	a = h_find(NO_NODE, "/v1/completions");
	assert_non_null(strstr(a->body, "\"prompt\":\"ping\""));
	assert_null(strstr(a->body, "messages"));
	h_http(a, 200, body);
	assert_int_equal(h_count("/chat/"), 0);
	assert_int_equal(H.nreports, 0);
	assert_true(h_seen()->vllm_healthy);
	free(body);
}

/*
 * A completion answered 200 with no choice in it: not vLLM's answer, so
 * could not tell (unrecognised-answer, retried), naming what was asked.
 */
static void
test_generation_unknown(void **state)
{
	int i;

	(void)state;
	h_enter(ST_SERVING, A_IDLE);
	for (i = 0; i < 2; i++) {
		h_tick(i ? 31000 : 0);
		if (h_count("docker inspect -f")) {
			inspect_running(HEAD, label);
			inspect_running(WORKER, label);
		}
		h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES,
		    "");
		h_http(h_find(NO_NODE, "/health"), 200, "");
		h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
		h_http(h_find(NO_NODE, "/v1/completions"), 200,
		    "<html>proxy login</html>");
		metrics(0, 0, 25731);
	}
	assert_true(h_reported(REPORT_CHECK, DIAG_UNRECOGNISED_ANSWER));
	assert_non_null(strstr(h_last()->text, "asked `POST "
	    "http://127.0.0.1:8000/v1/completions`"));
	assert_non_null(strstr(h_last()->text, "proxy login"));
	assert_non_null(strstr(h_last()->text, "could not tell"));
	assert_true(diag_get(DIAG_UNRECOGNISED_ANSWER)->retryable);
	assert_false(h_halted());
}

/*
 * vLLM wants a key tandem lacks (issue 41): /health 200, /v1 401. Named
 * vllm-unauthorized after failures_to_degrade cycles, not vllm-exited.
 */
static void
test_unauthorized_named(void **state)
{
	int i;

	(void)state;
	h_enter(ST_SERVING, A_IDLE);
	for (i = 0; i < 2; i++) {
		h_tick(i ? 5000 : 0);
		if (h_count("docker inspect -f")) {
			inspect_running(HEAD, label);
			inspect_running(WORKER, label);
		}
		h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
		h_http(h_find(NO_NODE, "/health"), 200, "");
		h_http(h_find(NO_NODE, "/v1/models"), 401,
		    "{\"error\":\"Unauthorized\"}");
		metrics(0, 0, 25731);
	}
	assert_true(h_reported(REPORT_CHECK, DIAG_VLLM_UNAUTHORIZED));
	assert_non_null(strstr(h_last()->text, "401"));
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
	h_http(h_find(NO_NODE, "/v1/completions"), 0, NULL);
	metrics(0, 0, 25731);
	assert_int_equal(H.nreports, 0);
	h_tick(5000);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	metrics(0, 0, 25731);
	h_http(h_find(NO_NODE, "/v1/completions"), 500, "{}");
	assert_true(h_reported(REPORT_CHECK, DIAG_GENERATION_FAILED));
	assert_string_equal(h_last()->text,
	    "one-token completion answered HTTP 500: {}");
	assert_int_equal(h_state(), ST_DEGRADED);
	assert_int_equal(h_action(), A_TEARDOWN);
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
	h_http(h_find(NO_NODE, "/v1/completions"), 200, VLLM_COMPLETION);
	metrics(0, 0, 25731);
	/* the first failure of the cycle is the one reported */
	assert_true(h_reported(REPORT_CHECK, DIAG_CONTAINER_DIED));
	assert_int_equal(h_last()->node, WORKER);
	assert_int_equal(h_action(), A_TEARDOWN);
}

/*
 * The container probe: "no such object" in docker 29's and podman 4's
 * words (recorded) is a missing container; an answer in no engine's words
 * is could-not-tell, and degrades only after failures_to_degrade cycles.
 */
static void
test_inspect_answers(void **state)
{
	char *d29 = h_data("docker-29/inspect-missing.err");
	char *pod = h_data("podman-4.3/inspect-missing.err");
	const char *errs[] = { d29, pod };
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		if (i > 0) {
			h_teardown();
			setup(NULL);
		}
		h_enter(ST_SERVING, A_IDLE);
		h_tick(0);
		inspect_running(HEAD, label);
		h_answer(h_find(WORKER, "docker inspect -f"), 1, "\n",
		    errs[i]);
		healthy_cycle(1);
		assert_true(h_reported(REPORT_CHECK, DIAG_CONTAINER_DIED));
		assert_string_equal(h_last()->text, "container missing");
	}
	h_teardown();
	setup(NULL);
	h_enter(ST_SERVING, A_IDLE);
	for (i = 0; i < 2; i++) {
		h_tick(i ? 31000 : 0);
		inspect_running(HEAD, label);
		h_answer(h_find(WORKER, "docker inspect -f"), 0,
		    "<no value>\n", "");
		healthy_cycle(1);	/* 31 s: the completion's turn too */
		assert_int_equal(H.nreports, i);
	}
	assert_true(h_reported(REPORT_CHECK, DIAG_UNRECOGNISED_ANSWER));
	assert_non_null(strstr(h_last()->text, "asked `docker inspect -f"));
	assert_non_null(strstr(h_last()->text, "could not tell"));
	free(d29);
	free(pod);
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
		h_http(h_find(NO_NODE, "/metrics"), 0, NULL);
	}
	assert_int_equal(h_state(), ST_DEGRADED);
	assert_int_equal(h_action(), A_PAUSED);
}

/*
 * A cycle whose every check passes, whatever it asks (the inspect every
 * 30 s, a completion when due); then /metrics with these values.
 */
static void
chain_cycle(double running, double waiting, double gen)
{
	if (h_count("docker inspect -f")) {
		inspect_running(HEAD, label);
		inspect_running(WORKER, label);
	}
	h_answer_all("nvidia-smi --query-compute-apps", 0, "", "");
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
	h_http(h_find(NO_NODE, "/health"), 200, "");
	h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
	if (h_count("/v1/completions"))
		h_http(h_find(NO_NODE, "/v1/completions"), 200,
		    VLLM_COMPLETION);
	metrics(running, waiting, gen);
}

/*
 * A collective hang: /health and /v1/models answer, requests stay
 * running, the token counter stops. With probe.stall_s 12 and 3
 * readings, 5 s apart: the fourth reading (15 s without a token) is a
 * stall, reported at once (no second failed cycle), counted once; the
 * completion, due only every 30 s, was never what noticed.
 */
static void
test_stall_under_load(void **state)
{
	struct config *cf = H.cf;
	int i;

	(void)state;
	cf->probe.stall_s = 12;
	cf->probe.stall_readings = 3;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	healthy_cycle(1);
	h_tick(5000);
	chain_cycle(8, 0, 30000);
	for (i = 0; i < 3; i++) {
		assert_int_equal(H.nreports, 0);
		h_tick(5000);
		chain_cycle(8, 0, 30000);
	}
	assert_true(h_reported(REPORT_CHECK, DIAG_GENERATION_STALLED));
	assert_int_equal(H.nreports, 1);
	assert_int_equal(h_last()->node, HEAD);
	assert_string_equal(h_last()->text, "engine 0 has 8 requests running "
	    "or waiting and made no token for 15 s (3 readings of vLLM's "
	    "/metrics in a row)");
	assert_int_equal(H.cl->cnt.stalls_total, 1);
	assert_int_equal(h_action(), A_TEARDOWN);
}

/*
 * Saturated but progressing: four running, more waiting, a few tokens
 * between readings, for twice probe.stall_s. Never a stall; nor is an
 * engine with nothing to do and a counter that stands still.
 */
static void
test_saturated_progressing(void **state)
{
	struct config *cf = H.cf;
	double gen = 30000;
	int i;

	(void)state;
	cf->probe.stall_s = 12;
	cf->probe.stall_readings = 3;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	healthy_cycle(1);
	for (i = 0; i < 10; i++) {
		h_tick(5000);
		gen += 4;
		chain_cycle(4, 4, gen);
	}
	for (i = 0; i < 6; i++) {
		h_tick(5000);
		chain_cycle(0, 0, gen);
	}
	assert_int_equal(H.nreports, 0);
	assert_int_equal(H.cl->cnt.stalls_total, 0);
	assert_int_equal(h_state(), ST_SERVING);
}

/*
 * Under such load tandem's own completion waits behind real traffic and
 * times out: the reading of this cycle saw new tokens, so the engine
 * works and nothing failed. Two cycles of it (failures_to_degrade 2)
 * degrade nothing. Without tokens in the cycle the same timeout is a
 * failed completion, and the second one degrades.
 */
static void
test_completion_vouched(void **state)
{
	int i;

	(void)state;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	healthy_cycle(1);
	for (i = 0; i < 2; i++) {
		h_tick(30000);
		if (h_count("docker inspect -f")) {
			inspect_running(HEAD, label);
			inspect_running(WORKER, label);
		}
		h_answer_all("nvidia-smi --query-compute-apps", 0, "", "");
		metrics(4, 4, 25731 + 100 * (i + 1));
		h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
		h_http(h_find(NO_NODE, "/health"), 200, "");
		h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
		h_http_timeout(h_find(NO_NODE, "/v1/completions"));
		assert_int_equal(H.nreports, 0);
		assert_true(h_seen()->vllm_healthy);
	}
	/* the counters stand still: the same timeout is a failure */
	for (i = 0; i < 2; i++) {
		h_tick(30000);
		if (h_count("docker inspect -f")) {
			inspect_running(HEAD, label);
			inspect_running(WORKER, label);
		}
		h_answer_all("nvidia-smi --query-compute-apps", 0, "", "");
		metrics(4, 4, 25931);
		h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
		h_http(h_find(NO_NODE, "/health"), 200, "");
		h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
		h_http_timeout(h_find(NO_NODE, "/v1/completions"));
	}
	assert_true(h_reported(REPORT_CHECK, DIAG_GENERATION_FAILED));
	assert_int_equal(H.nreports, 1);
}

/*
 * A vLLM whose /metrics has no counters (--disable-log-stats: 404 from
 * its router, or no vllm: series) is no stall and no failure: the chain
 * alone judges it.
 */
static void
test_metrics_unread(void **state)
{
	int i;

	(void)state;
	H.cf->probe.stall_s = 1;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	healthy_cycle(1);
	for (i = 0; i < 4; i++) {
		h_tick(5000);
		h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_2_NODES, "");
		h_http(h_find(NO_NODE, "/health"), 200, "");
		h_http(h_find(NO_NODE, "/v1/models"), 200, VLLM_MODELS);
		h_http(h_find(NO_NODE, "/metrics"), i % 2 ? 404 : 200, i % 2 ?
		    "{\"detail\":\"Not Found\"}" : "# no vllm here\n");
	}
	assert_int_equal(H.nreports, 0);
	assert_true(H.cl->probe.metrics_unread);
}

/*
 * Ray's ports: with the first cycle a worker looks at the head's (Ray
 * 2.52's dashboard with token authentication off: recorded answers,
 * tests/unit/data/ray-2.52/), and /status warns ray-unauthenticated,
 * naming the worker; a look RAYX_EVERY_MS later that finds the token on
 * clears it. The looks never hold up a probe cycle.
 */
static void
test_ray_unauthenticated(void **state)
{
	char *open = h_data("ray-2.52/exposure-open-disabled.txt");
	char *local = h_data("ray-2.52/exposure-head-local-disabled.txt");
	char *token = h_data("ray-2.52/exposure-open-token.txt");
	json_t *wa;

	(void)state;
	h_enter(ST_SERVING, A_IDLE);
	h_tick(0);
	assert_int_equal(h_count("tandem-ray-check"), 2);
	/* the cycle is judged without them */
	healthy_cycle(1);
	assert_int_equal(H.nreports, 0);
	h_answer(h_find(WORKER, "tandem-ray-check"), 0, open, "");
	h_answer(h_find(HEAD, "tandem-ray-check"), 0, local, "");
	assert_string_equal(h_seen()->rayx_node, "spark-worker");
	assert_non_null(strstr(h_seen()->rayx_msg, "GCS port 6379 and "
	    "dashboard/job API port 8265 answer on 10.10.10.1"));
	wa = cluster_warnings_json(H.cl);
	assert_int_equal(json_array_size(wa), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    wa, 0), "code")), "ray-unauthenticated");
	json_decref(wa);
	/* not again before five minutes */
	h_tick(5000);
	healthy_cycle(0);
	assert_int_equal(h_count("tandem-ray-check"), 0);
	h_tick(300000);
	assert_int_equal(h_count("tandem-ray-check"), 2);
	h_answer_all("tandem-ray-check", 0, token, "");
	assert_string_equal(h_seen()->rayx_msg, "");
	assert_int_equal(H.nreports, 0);
	free(open);
	free(local);
	free(token);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_adopt_healthy, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_adopt_timeout_looks_again,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt_unreadable_looks_again,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_adopt_health_timeout_looks_again, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_adopt_health_refused_decides, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt_ray_answer_decides,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt_other_config, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_generate_every, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_unauthorized_named, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_generation_failed_twice,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_generate_base_model,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_generation_unknown,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_container_exited, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_inspect_answers, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_paused_follows, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_stall_under_load, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_saturated_progressing,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_completion_vouched, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_metrics_unread, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ray_unauthenticated, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
