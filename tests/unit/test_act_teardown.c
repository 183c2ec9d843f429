/*
 * teardown (act_teardown.c) against the fake executor: the preflight on
 * every node, rm -f of every container, the wait for GPU memory; the
 * failures each step names; answers that come after the action ended.
 * After a failure it waits for the read of the GPU faults (hwcheck.c)
 * before rm -f; the preflight reads the same kernel lines, and Ray's
 * token file when token authentication is on (issue 33).
 */
#include "act_harness.h"

#define RAY	"etc/tandem.json"
#define HEAD	0
#define WORKER	1

static int
setup(void **state)
{
	(void)state;
	h_setup_file(RAY);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	h_teardown();
	return 0;
}

/* rm -f on both nodes, then nvidia-smi with nothing of ours left. */
static void
remove_and_release(void)
{
	assert_int_equal(h_count("rm -f"), 2);
	h_answer(h_find(HEAD, "rm -f"), 0, "vllm-head\n", "");
	/* the GPUs are asked only once every container is gone */
	assert_int_equal(h_count("nvidia-smi"), 0);
	h_answer(h_find(WORKER, "rm -f"), 0, "vllm-worker\n", "");
	assert_int_equal(h_count("nvidia-smi"), 2);
	h_answer_all("nvidia-smi", 0, "", "");
}

static void
test_removes_then_gpus(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	remove_and_release();
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
	assert_string_equal(h_last()->text, "containers removed, GPU memory "
	    "released on every node");
	/* the machine went on: the head's docker run is asked */
	assert_int_equal(H.cl->fsm.action, A_STARTING_RAY);
	assert_int_equal(h_count("docker run"), 1);
}

/* GPU memory held after the rm: asked again until the deadline. */
static void
test_gpu_held_until_deadline(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	assert_int_equal(h_count("rm -f"), 2);
	h_answer_all("rm -f", 0, "", "");
	h_answer(h_find(HEAD, "nvidia-smi"), 0, "4242, 18000 MiB\n", "");
	h_answer(h_find(WORKER, "nvidia-smi"), 0, "", "");
	assert_int_equal(H.nreports, 0);
	/* asked again after POLL_MS */
	assert_int_equal(h_count("nvidia-smi"), 0);
	h_tick(100);
	assert_int_equal(h_count("nvidia-smi"), 2);
	h_answer_all("nvidia-smi", 0, "4242, 18000 MiB\n", "");
	h_tick(31000);
	h_answer_all("nvidia-smi", 0, "4242, 18000 MiB\n", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_NOT_RELEASED));
	assert_int_equal(h_last()->node, HEAD);
	assert_non_null(strstr(h_last()->text, "4242"));
	assert_int_equal(H.cl->fsm.action, A_BACKOFF);
}

/* rm -f answered by an engine that is down: its own words name it. */
static void
test_rm_engine_down(void **state)
{
	char *err = h_data("docker-28/engine-down.err");

	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	h_answer(h_find(WORKER, "rm -f"), 1, "", err);
	assert_true(h_reported(REPORT_FAILED, DIAG_ENGINE_DOWN));
	assert_int_equal(h_last()->node, WORKER);
	/* the head's answer comes after the action ended: dropped */
	h_answer(h_find(HEAD, "rm -f"), 0, "", "");
	assert_int_equal(H.nreports, 1);
	assert_int_equal(H.cl->fsm.action, A_BACKOFF);
	free(err);
}

/* The channel timed out with the session still up: unreachable, retried. */
static void
test_rm_timeout(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	h_fail(h_find(WORKER, "rm -f"), "timed out after 60.0 s");
	assert_true(h_reported(REPORT_FAILED, DIAG_NODE_UNREACHABLE));
	assert_int_equal(H.cl->fsm.action, A_BACKOFF);
}

/* A session that went down under the command: the node is waited for. */
static void
test_rm_node_lost(void **state)
{
	struct asked *a;

	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	a = h_find(WORKER, "rm -f");
	H.down[WORKER] = 1;
	h_fail(a, "ssh: connection lost");
	assert_true(h_reported(REPORT_NODE_LOST, 0));
	assert_int_equal(H.cl->fsm.action, A_WAITING_FOR_NODES);
}

/* A node whose session is down at the start: nothing is removed. */
static void
test_node_down_at_start(void **state)
{
	(void)state;
	H.cl->nodes[WORKER].reachable = 0;
	H.down[WORKER] = 1;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	assert_true(h_reported(REPORT_EVENT, EV_NODES_MISSING));
	assert_int_equal(h_count("rm -f"), 0);
}

/* Answer every preflight command of a node as a healthy node does. */
static void
healthy_node(size_t node)
{
	char *info = h_data("docker-20.10.24/info-version.out");
	char *image = h_data("docker-20.10.24/image-id.out");
	char *runtimes = h_data("docker-20.10.24/info-runtimes.out");
	size_t i, n = H.nasked;	/* not what the last answer asks next */

	for (i = 0; i < n; i++) {
		struct asked *a = &H.asked[i];
		const char *c = a->cmd, *out = "";

		if (a->answered || a->node != node)
			continue;
		if (strstr(c, "ServerVersion"))
			out = info;
		else if (strstr(c, "image inspect"))
			out = image;
		else if (strstr(c, "cksum"))
			out = "f 4096 config.json\nf 9000000 model.safetensors\n"
			    "c 1234567 4096 ./config.json\n";
		else if (strstr(c, "ip -o"))
			out = node == HEAD ? "2: enp1s0f0np0    inet "
			    "10.10.10.1/24 brd 10.10.10.255 scope global "
			    "enp1s0f0np0\n" : "2: enp1s0f0np0    inet "
			    "10.10.10.2/24 brd 10.10.10.255 scope global "
			    "enp1s0f0np0\n";
		else if (strstr(c, "nvidia-smi -L"))
			out = "GPU 0: NVIDIA GB10 (UUID: GPU-1)\n";
		else if (strstr(c, "Runtimes"))
			out = runtimes;
		h_answer(a, 0, out, "");
	}
	free(info);
	free(image);
	free(runtimes);
}

static void
test_preflight_then_teardown(void **state)
{
	(void)state;
	H.cl->preflight_passed = 0;
	h_enter(ST_ABSENT, A_TEARDOWN);
	assert_int_equal(h_count("rm -f"), 0);
	healthy_node(HEAD);
	assert_int_equal(H.nreports, 0);
	healthy_node(WORKER);
	assert_int_equal(H.cl->preflight_passed, 1);
	remove_and_release();
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
}

/* The image absent on the worker, no archive: a fatal image-missing. */
static void
test_preflight_image_missing(void **state)
{
	char *err = h_data("docker-28/image-missing.err");

	(void)state;
	H.cl->preflight_passed = 0;
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node(HEAD);
	h_answer(h_find(WORKER, "image inspect"), 1, "\n", err);
	/* the node's other checks answer ok */
	h_answer_all("", 0, "", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_IMAGE_MISSING));
	assert_int_equal(h_last()->node, WORKER);
	assert_true(H.cl->fsm.halted);
	assert_int_equal(h_count("rm -f"), 0);
	free(err);
}

/* A preflight command that never ran to its end: the node is waited for,
 * not diagnosed from a silence. */
static void
test_preflight_timeout_is_unreachable(void **state)
{
	(void)state;
	H.cl->preflight_passed = 0;
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node(HEAD);
	h_fail(h_find(WORKER, "image inspect"), "timed out after 20.0 s");
	assert_true(h_reported(REPORT_NODE_LOST, 0));
	assert_int_equal(h_last()->node, WORKER);
	/* the worker's other checks come later: dropped with the action */
	h_answer_all("", 0, "", "");
	assert_int_equal(H.nreports, 1);
}

/* The operator rebuilds during the preflight: the old answers are void. */
static void
test_answers_after_cancellation(void **state)
{
	size_t before;

	(void)state;
	H.cl->preflight_passed = 0;
	h_enter(ST_ABSENT, A_TEARDOWN);
	before = H.nasked;
	/* a reload's "teardown again": the action begins anew */
	action_begin(H.cl);
	assert_int_equal(H.nasked, 2 * before);
	/* every answer of the first round: none reaches anyone */
	while (before-- > 0)
		h_answer(&H.asked[before], 0, "", "");
	assert_int_equal(H.nreports, 0);
	h_tick(100);	/* the ended action is freed (ASan checks) */
	assert_false(H.cl->preflight_passed);
}

#define ECC	"nvidia-smi --query-gpu=index,pci.bus_id"

/* A failure began the read of every node's GPU faults: nothing is removed
 * until it is in, and a fatal Xid stops there. */
static void
test_waits_for_hw_read(void **state)
{
	char *fatal = h_data("nvidia-xid/tandem-journalctl.txt");

	(void)state;
	hw_after_failure(H.cl, DIAG_CONTAINER_DIED);
	h_enter(ST_DEGRADED, A_TEARDOWN);
	h_tick(100);
	assert_int_equal(h_count("rm -f"), 0);
	h_answer(h_find(HEAD, "journalctl"), 0, "tandem: journalctl\n", "");
	h_answer_all(ECC, 0, "0, 0000000F:01:00.0, [N/A]\n", "");
	h_tick(100);
	assert_int_equal(h_count("rm -f"), 0);
	h_answer(h_find(WORKER, "journalctl"), 0, fatal, "");
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_XID));
	assert_true(H.cl->fsm.halted);
	h_tick(100);
	assert_int_equal(h_count("rm -f"), 0);
	free(fatal);
}

static void
test_clean_hw_read_then_removes(void **state)
{
	(void)state;
	hw_after_failure(H.cl, DIAG_CONTAINER_DIED);
	h_enter(ST_DEGRADED, A_TEARDOWN);
	h_answer_all("journalctl", 0, "tandem: journalctl\n", "");
	h_answer_all(ECC, 0, "0, 0000000F:01:00.0, [N/A]\n", "");
	assert_int_equal(h_count("rm -f"), 0);
	h_tick(100);
	remove_and_release();
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
}

/*
 * The preflight reads the kernel log from the node's cursor on: a fatal
 * Xid there fails the gpus column, gpu-xid, nothing removed; it is
 * counted in tandem_gpu_xid_total.
 */
static void
test_preflight_fatal_xid(void **state)
{
	char *log = h_data("nvidia-xid/tandem-journalctl.txt");
	const char *cmd;

	(void)state;
	H.cl->preflight_passed = 0;
	h_enter(ST_ABSENT, A_TEARDOWN);
	cmd = h_find(WORKER, "journalctl")->cmd;
	/* no cursor yet: this boot's whole log */
	assert_null(strstr(cmd, "--since"));
	h_answer(h_find(WORKER, "journalctl"), 0, log, "");
	h_answer(h_find(WORKER, ECC), 0, "0, 0000000F:01:00.0, [N/A]\n", "");
	healthy_node(HEAD);
	healthy_node(WORKER);
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_XID));
	assert_int_equal(h_last()->node, WORKER);
	assert_non_null(strstr(h_last()->text, "preflight gpus: fatal GPU "
	    "fault: spark-worker GPU 0 (PCI 000f:01:00): Xid 79"));
	assert_true(H.cl->fsm.halted);
	assert_int_equal(h_count("rm -f"), 0);
	assert_int_equal(H.cl->cnt.nxid, 3);	/* 13, 43 and 79 */
	free(log);
}

/* With a cursor, the preflight asks only what is newer. */
static void
test_preflight_reads_from_cursor(void **state)
{
	(void)state;
	H.cl->preflight_passed = 0;
	hw_resume(H.cl);
	h_enter(ST_ABSENT, A_TEARDOWN);
	assert_non_null(strstr(h_find(HEAD, "journalctl")->cmd,
	    "--since @1700000000"));
	healthy_node(HEAD);
	healthy_node(WORKER);
	assert_int_equal(H.cl->preflight_passed, 1);
}

/* Ray's token authentication on and the worker has no token file. */
static void
test_preflight_ray_token_missing(void **state)
{
	(void)state;
	H.cl->cf->ray.auth_token_file = strdup("/etc/tandem/ray-token");
	H.cl->preflight_passed = 0;
	h_enter(ST_ABSENT, A_TEARDOWN);
	h_answer(h_find(WORKER, "test -f /etc/tandem/ray-token"), 1, "", "");
	healthy_node(HEAD);
	healthy_node(WORKER);
	assert_true(h_reported(REPORT_FAILED, DIAG_RAY_TOKEN_MISSING));
	assert_int_equal(h_last()->node, WORKER);
	assert_string_equal(h_last()->text, "preflight ray port: "
	    "ray.auth_token_file /etc/tandem/ray-token: missing or empty; "
	    "fix: copy the token file to the same path on every node (chmod "
	    "600)");
	assert_true(H.cl->fsm.halted);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_waits_for_hw_read, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_clean_hw_read_then_removes,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_fatal_xid, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_preflight_reads_from_cursor,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_ray_token_missing,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_removes_then_gpus, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_gpu_held_until_deadline,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_rm_engine_down, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_rm_timeout, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_rm_node_lost, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_node_down_at_start, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_preflight_then_teardown,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_image_missing,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_preflight_timeout_is_unreachable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answers_after_cancellation,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
