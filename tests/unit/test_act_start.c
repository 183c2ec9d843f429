/*
 * starting-ray and starting-vllm (act_start.c): the head's container,
 * the wait for its GCS (Ray), the workers', vllm serve; a container that
 * dies before docker run answers; a run that fails in the engine's words.
 */
#include "act_harness.h"
#include "act_texts.h"

#define HEAD	0
#define WORKER	1
#define CID	"4f2a9c1d7e3b5a60c8d1e2f3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7"

static int
setup_ray(void **state)
{
	(void)state;
	h_setup_file("etc/tandem.json");
	return 0;
}

static int
setup_dp(void **state)
{
	(void)state;
	h_setup_file("etc/tandem-dp.json");
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
test_ray_head_gcs_workers(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_STARTING_RAY);
	assert_int_equal(h_count("docker run"), 1);
	h_answer(h_find(HEAD, "docker run"), 0, CID "\n", "");
	assert_int_equal(h_node(HEAD).container, CTR_RUNNING);
	/* the workers wait for the head's GCS */
	assert_int_equal(h_count("docker run"), 0);
	h_answer(h_find(HEAD, "ray status"), 1, "",
	    "Failed to connect to GCS at address 10.10.10.1:6379 within 5 "
	    "seconds.\n");
	assert_int_equal(h_count("ray status"), 0);
	h_tick(100);
	h_answer(h_find(HEAD, "ray status"), 0, RAY_STATUS_1_NODE, "");
	assert_int_equal(h_count("docker run"), 1);
	h_answer(h_find(WORKER, "docker run"), 0, CID "\n", "");
	assert_true(h_reported(REPORT_EVENT, EV_CONTAINERS_UP));
	assert_int_equal(h_action(), A_WAITING_RAY);
	/* a stop waits for every start in flight: both answered */
	assert_int_equal(H.starts_answered, 2);
	assert_int_equal(H.cl->exec.starts_inflight, 0);
}

static void
test_gcs_never_answers(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_STARTING_RAY);
	h_answer(h_find(HEAD, "docker run"), 0, CID "\n", "");
	h_tick(301000);		/* past probe.ray_wait_timeout_s */
	h_answer(h_find(HEAD, "ray status"), 1, "", "ConnectionError\n");
	assert_true(h_reported(REPORT_FAILED, DIAG_RAY_INCOMPLETE));
	assert_string_equal(h_last()->text, "the head's GCS never answered");
}

/* The events stream said the container died before docker run answered. */
static void
test_died_before_run_answered(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_STARTING_RAY);
	snprintf(H.cl->nodes[HEAD].dead_id, sizeof(H.cl->nodes[HEAD].dead_id),
	    "%s", CID);
	h_answer(h_find(HEAD, "docker run"), 0, CID "\n", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_CONTAINER_DIED));
	assert_non_null(strstr(h_last()->text, "before docker run answered"));
	assert_int_equal(h_node(HEAD).container, CTR_EXITED);
}

/* docker run without the GPU path: the engine's words, recorded. */
static void
test_run_gpus_off(void **state)
{
	char *err = h_data("docker-28/run-gpus-off.err");

	(void)state;
	h_enter(ST_ABSENT, A_STARTING_RAY);
	h_answer(h_find(HEAD, "docker run"), 125, "", err);
	assert_true(h_reported(REPORT_FAILED, DIAG_NVIDIA_RUNTIME_MISSING));
	assert_true(h_halted());
	free(err);
}

/*
 * An answer no signature knows says nothing about a container: could not
 * tell, with what was asked (the start of the plan's command) and the
 * first line, and a retry.
 */
static void
test_run_unknown_failure(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_STARTING_RAY);
	h_answer(h_find(HEAD, "docker run"), 125, "",
	    "docker: something new went wrong.\nSee 'docker run --help'.\n");
	assert_true(h_reported(REPORT_FAILED, DIAG_UNRECOGNISED_ANSWER));
	assert_string_equal(h_last()->text, "asked `docker run -d --gpus all "
	    "--network host --shm-size=16g --name vllm-head ...`, the answer "
	    "(exit 125, docker: something new went wrong.) is not one tandem "
	    "knows: could not tell");
	assert_false(h_halted());
	assert_int_equal(h_action(), A_BACKOFF);
}

/* dp: no GCS to wait for; the workers start right after the head. */
static void
test_dp_containers(void **state)
{
	(void)state;
	h_enter(ST_ABSENT, A_STARTING_RAY);
	h_answer(h_find(HEAD, "docker run"), 0, CID "\n", "");
	assert_int_equal(h_count("ray status"), 0);
	h_answer(h_find(WORKER, "docker run"), 0, CID "\n", "");
	assert_true(h_reported(REPORT_EVENT, EV_CONTAINERS_UP));
	assert_int_equal(h_action(), A_WAITING_VLLM);
}

static void
test_vllm_serve(void **state)
{
	(void)state;
	h_enter(ST_UP, A_STARTING_VLLM);
	h_answer(h_find(HEAD, "vllm serve"), 0, "", "");
	assert_true(h_reported(REPORT_EVENT, EV_VLLM_STARTED));
	assert_int_equal(h_action(), A_WAITING_VLLM);
}

/* The head's container stopped under the exec: docker says so (20.10
 * and 28, recorded), and that is known: container-died. */
static void
test_vllm_serve_no_container(void **state)
{
	static const char *const texts[] = {
		"docker-28/exec-stopped.err",
		"docker-20.10.24/exec-stopped.err",
		"docker-28/exec-missing.err",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *err = h_data(texts[i]);

		if (i > 0) {
			h_teardown();
			setup_ray(NULL);
		}
		h_enter(ST_UP, A_STARTING_VLLM);
		h_answer(h_find(HEAD, "vllm serve"), 1, "", err);
		assert_true(h_reported(REPORT_FAILED, DIAG_CONTAINER_DIED));
		free(err);
	}
}

/* Any other failure of the exec: could not tell, retried. */
static void
test_vllm_serve_unknown(void **state)
{
	(void)state;
	h_enter(ST_UP, A_STARTING_VLLM);
	h_answer(h_find(HEAD, "vllm serve"), 126, "", "OCI runtime exec "
	    "failed: something new\n");
	assert_true(h_reported(REPORT_FAILED, DIAG_UNRECOGNISED_ANSWER));
	assert_non_null(strstr(h_last()->text, "asked `docker exec -d "
	    "vllm-head bash -c"));
	assert_non_null(strstr(h_last()->text, "could not tell"));
	assert_false(h_halted());
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ray_head_gcs_workers,
		    setup_ray, teardown),
		cmocka_unit_test_setup_teardown(test_gcs_never_answers,
		    setup_ray, teardown),
		cmocka_unit_test_setup_teardown(test_died_before_run_answered,
		    setup_ray, teardown),
		cmocka_unit_test_setup_teardown(test_run_gpus_off, setup_ray,
		    teardown),
		cmocka_unit_test_setup_teardown(test_run_unknown_failure,
		    setup_ray, teardown),
		cmocka_unit_test_setup_teardown(test_dp_containers, setup_dp,
		    teardown),
		cmocka_unit_test_setup_teardown(test_vllm_serve, setup_ray,
		    teardown),
		cmocka_unit_test_setup_teardown(test_vllm_serve_no_container,
		    setup_ray, teardown),
		cmocka_unit_test_setup_teardown(test_vllm_serve_unknown,
		    setup_ray, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
