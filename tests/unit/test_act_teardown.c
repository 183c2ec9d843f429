/*
 * teardown (act_teardown.c) against the fake executor: the preflight on
 * every node, the fast link's check before every later rebuild, rm -f of
 * every container, the wait for GPU memory; the failures each step names;
 * answers that come after the action ended.
 */
#include "act_harness.h"

#define RAY	"etc/tandem.json"
#define HEAD	0
#define WORKER	1
#define NET	"net-debian-12/"

/* Every node's link state as recorded: the head's end, then the worker's. */
static void
link_states(const char *head, const char *worker)
{
	char *h = h_data(head), *w = h_data(worker);

	h_answer(h_find(HEAD, "ip -j addr show dev"), 0, h, "");
	h_answer(h_find(WORKER, "ip -j addr show dev"), 0, w, "");
	free(h);
	free(w);
}

/* The full-size pings, each way, answered as on a healthy link. */
static void
pings_ok(void)
{
	char *h = h_data(NET "ping-big-ok.out");
	char *w = h_data(NET "ping-big-ok-b.out");

	assert_int_equal(h_count("ping -n -c 1 -W 1 -M do -s 1472"), 2);
	h_answer(h_find(HEAD, "ping "), 0, h, "");
	h_answer(h_find(WORKER, "ping "), 0, w, "");
	free(h);
	free(w);
}

/* The link check before a rebuild, on a healthy link: nothing removed
 * until it passed. */
static void
link_ok(void)
{
	assert_int_equal(h_count("rm -f"), 0);
	link_states(NET "state-up.out", NET "state-up-b.out");
	assert_int_equal(h_count("rm -f"), 0);
	pings_ok();
}

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
	link_ok();
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
	link_ok();
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
	link_ok();
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
	link_ok();
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
	link_ok();
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
	/* nor is the link checked: the nodes are waited for first */
	assert_int_equal(h_count("ip -j addr"), 0);
}

/*
 * A cable pulled since the last rebuild: the worker's end has no carrier.
 * link-down on the worker, with the fix, before anything is removed;
 * retried (the cable may come back).
 */
static void
test_link_down_before_rm(void **state)
{
	const char *t;

	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	link_states(NET "state-up.out", NET "state-no-carrier.out");
	assert_true(h_reported(REPORT_FAILED, DIAG_LINK_DOWN));
	assert_int_equal(h_last()->node, WORKER);
	t = h_last()->text;
	assert_non_null(strstr(t, "preflight link: link-down: spark-worker: "
	    "enp1s0f0np0 has no carrier"));
	assert_non_null(strstr(t, "; fix: check the cable of spark-worker's "
	    "enp1s0f0np0"));
	/* no ping for a link already named, nothing removed, no start */
	assert_int_equal(h_count("ping "), 0);
	assert_int_equal(h_count("rm -f"), 0);
	assert_int_equal(h_count("docker run"), 0);
	assert_int_equal(H.cl->fsm.action, A_BACKOFF);
}

/*
 * The head's full-size ping gets no reply, nor does the small one asked
 * then: link-unreachable naming both nodes, before rm -f.
 */
static void
test_link_unreachable_before_rm(void **state)
{
	char *lost = h_data(NET "ping-lost.out");
	char *ok = h_data(NET "ping-big-ok-b.out");
	const char *t;

	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	link_states(NET "state-up.out", NET "state-up-b.out");
	h_answer(h_find(HEAD, "ping "), 1, lost, "");
	h_answer(h_find(WORKER, "ping "), 0, ok, "");
	assert_int_equal(H.nreports, 0);
	/* the small one tells a path's MTU from a peer not reached; the
	 * full-size one again, a lost packet from a path's MTU */
	h_answer(h_find(HEAD, "ping -n -c 1 -W 1 -I enp1s0f0np0 10.10.10.2"),
	    1, lost, "");
	assert_int_equal(H.nreports, 0);
	h_answer(h_find(HEAD, "-M do -s 1472 -I enp1s0f0np0 10.10.10.2"), 1,
	    lost, "");
	assert_true(h_reported(REPORT_FAILED, DIAG_LINK_UNREACHABLE));
	assert_int_equal(h_last()->node, HEAD);
	t = h_last()->text;
	assert_non_null(strstr(t, "spark-head cannot reach spark-worker "
	    "(10.10.10.2) over enp1s0f0np0"));
	assert_non_null(strstr(t, "; fix: check the fast link between "
	    "spark-head and spark-worker"));
	assert_int_equal(h_count("rm -f"), 0);
	assert_int_equal(H.cl->fsm.action, A_BACKOFF);
	free(lost);
	free(ok);
}

/*
 * Small packets pass and full-size ones do not, twice: the path's MTU,
 * mtu-mismatch. Once only (a link that just came back lost the first):
 * the link passes, nothing named.
 */
static void
test_link_path_mtu(void **state)
{
	char *lost = h_data(NET "ping-big-lost.out");
	char *ok = h_data(NET "ping-ok.out");
	char *big_ok = h_data(NET "ping-big-ok.out");
	char *w = h_data(NET "ping-big-ok-b.out");
	int again;

	(void)state;
	for (again = 0; again < 2; again++) {
		h_enter(ST_DEGRADED, A_TEARDOWN);
		link_states(NET "state-up.out", NET "state-up-b.out");
		h_answer(h_find(HEAD, "ping "), 1, lost, "");
		h_answer(h_find(WORKER, "ping "), 0, w, "");
		assert_int_equal(h_count("ping "), 2);
		h_answer(h_find(HEAD, "ping -n -c 1 -W 1 -I"), 0, ok, "");
		h_answer(h_find(HEAD, "ping "), again ? 0 : 1,
		    again ? big_ok : lost, "");
		if (again) {
			assert_int_equal(H.nreports, 0);
			assert_int_equal(h_count("rm -f"), 2);
			continue;
		}
		assert_true(h_reported(REPORT_FAILED, DIAG_MTU_MISMATCH));
		assert_int_equal(h_last()->node, HEAD);
		assert_non_null(strstr(h_last()->text, "spark-head reaches "
		    "spark-worker (10.10.10.2) over enp1s0f0np0 with small "
		    "packets but not with 1472 bytes"));
		assert_int_equal(h_count("rm -f"), 0);
		assert_true(H.cl->fsm.halted);
		h_teardown();
		h_setup_file(RAY);
	}
	free(lost);
	free(ok);
	free(big_ok);
	free(w);
}

/* The worker at MTU 9000, the head at 1500: mtu-mismatch, retries stop. */
static void
test_link_mtu_mismatch(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	link_states(NET "state-up.out", NET "state-mtu9000.out");
	assert_true(h_reported(REPORT_FAILED, DIAG_MTU_MISMATCH));
	assert_int_equal(h_last()->node, WORKER);
	assert_non_null(strstr(h_last()->text, "spark-worker enp1s0f0np0 9000, "
	    "spark-head enp1s0f0np0 1500"));
	assert_int_equal(h_count("ping "), 0);
	assert_int_equal(h_count("rm -f"), 0);
	assert_true(H.cl->fsm.halted);
}

/* ip answered something not understood: could not tell, retried. */
static void
test_link_could_not_tell(void **state)
{
	char *w = h_data(NET "state-up-b.out");

	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	h_answer(h_find(HEAD, "ip -j addr show dev"), 0, "{\"not\": 1}\n",
	    "");
	h_answer(h_find(WORKER, "ip -j addr show dev"), 0, w, "");
	assert_true(h_reported(REPORT_FAILED, DIAG_UNRECOGNISED_ANSWER));
	assert_int_equal(h_last()->node, HEAD);
	assert_non_null(strstr(h_last()->text, "could not tell"));
	assert_int_equal(h_count("rm -f"), 0);
	assert_false(H.cl->fsm.halted);
	assert_int_equal(H.cl->fsm.action, A_BACKOFF);
	free(w);
}

/* Answer every preflight command of a node as a healthy node does. */
static void
healthy_node(size_t node)
{
	char *info = h_data("docker-20.10.24/info-version.out");
	char *image = h_data("docker-20.10.24/image-id.out");
	char *runtimes = h_data("docker-20.10.24/info-runtimes.out");
	char *up_head = h_data(NET "state-up.out");
	char *up_worker = h_data(NET "state-up-b.out");
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
		else if (strstr(c, "ip -j addr show dev"))
			out = node == HEAD ? up_head : up_worker;
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
	free(up_head);
	free(up_worker);
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
	/* every check answered but the link's pings, asked only now */
	assert_int_equal(H.cl->preflight_passed, 0);
	pings_ok();
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
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
		cmocka_unit_test_setup_teardown(test_link_down_before_rm,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_link_unreachable_before_rm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_path_mtu, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_link_mtu_mismatch, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_link_could_not_tell,
		    setup, teardown),
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
