/*
 * teardown (act_teardown.c) against the fake executor: the preflight on
 * every node, the fast link's check before every later rebuild, rm -f of
 * every container, the wait for device memory (GPU memory from
 * nvidia-smi; NPU memory from npu-smi info's process table, recorded
 * under tests/unit/data/npu-smi/); the failures each step names;
 * answers that come after the action ended.
 * After a failure it waits for the read of the GPU faults (hwcheck.c)
 * before rm -f; the preflight reads the same kernel lines, and Ray's
 * token file when token authentication is on (issue 33).
 */
#include <stdio.h>

#include "act_harness.h"
#include "accel.h"

#define RAY	"etc/tandem.json"
#define DP	"etc/tandem-dp.json"	/* Ascend: /dev/davinci* devices */
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
	h_answer_all("class/infiniband", 0, "none\n", "");
	free(h);
	free(w);
}

#define NPU_SMI	"npu-smi info"

/* s with every from replaced by to (a new string). */
static char *
replace(const char *s, const char *from, const char *to)
{
	size_t n = 0, lf = strlen(from), lt = strlen(to);
	const char *p;
	char *out, *o;

	for (p = s; (p = strstr(p, from)) != NULL; p += lf)
		n++;
	out = o = calloc(1, strlen(s) + n * lt + 1);
	assert_non_null(out);
	for (p = s; *p;)
		if (strncmp(p, from, lf) == 0) {
			memcpy(o, to, lt);
			o += lt;
			p += lf;
		} else
			*o++ = *p++;
	return out;
}

/*
 * A healthy node's link state: the one recorded with enp1s0f0np0 and
 * 10.10.10.1, the node's own interface and address in their place.
 */
static char *
link_state_of(size_t node)
{
	char *rec = h_data(NET "state-up.out");
	char *a = replace(rec, "10.10.10.1", H.cf->nodes[node].ip);
	char *b = replace(a, "enp1s0f0np0", H.cf->nodes[node].ifname);

	free(rec);
	free(a);
	return b;
}

/* The full-size pings, each way, answered as on a healthy link. */
static void
pings_ok(void)
{
	char *ok = h_data(NET "ping-big-ok.out");

	assert_int_equal(h_count("ping -n -c 1 -W 1 -M do -s 1472"), 2);
	h_answer(h_find(HEAD, "ping "), 0, ok, "");
	h_answer(h_find(WORKER, "ping "), 0, ok, "");
	free(ok);
}

/* Whatever full-size pings are due answered as on a healthy link. */
static void
pings_answered(void)
{
	char *ok = h_data(NET "ping-big-ok.out");

	h_answer_all("ping ", 0, ok, "");
	free(ok);
}

/* The link check before a rebuild, on a healthy link: nothing removed
 * until it passed. */
static void
link_ok(void)
{
	char *h = link_state_of(HEAD), *w = link_state_of(WORKER);

	assert_int_equal(h_count("rm -f"), 0);
	h_answer(h_find(HEAD, "ip -j addr show dev"), 0, h, "");
	h_answer(h_find(WORKER, "ip -j addr show dev"), 0, w, "");
	h_answer_all("class/infiniband", 0, "none\n", "");
	assert_int_equal(h_count("rm -f"), 0);
	pings_ok();
	free(h);
	free(w);
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
	    "released on every node (read from nvidia-smi)");
	/* the machine went on: the head's docker run is asked */
	assert_int_equal(h_action(), A_STARTING_RAY);
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
	h_answer(h_find(HEAD, "nvidia-smi"), 0, "4242, 18000, python3\n", "");
	h_answer(h_find(WORKER, "nvidia-smi"), 0, "", "");
	assert_int_equal(H.nreports, 0);
	assert_string_equal(h_node(HEAD).last_error, "GPU memory still "
	    "held: pid 4242 (python3) holds 18000 MiB");
	/* asked again after POLL_MS */
	assert_int_equal(h_count("nvidia-smi"), 0);
	h_tick(100);
	assert_int_equal(h_count("nvidia-smi"), 2);
	h_answer_all("nvidia-smi", 0, "4242, 18000, python3\n", "");
	h_tick(31000);
	h_answer_all("nvidia-smi", 0, "4242, 18000, python3\n", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_NOT_RELEASED));
	assert_int_equal(h_last()->node, HEAD);
	assert_string_equal(h_last()->text, "pid 4242 (python3) holds 18000 "
	    "MiB");
	assert_int_equal(h_action(), A_BACKOFF);
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
	assert_int_equal(h_action(), A_BACKOFF);
	free(err);
}

/*
 * rm -f of a missing container exits 0 (docker 20.10 to 29, recorded):
 * any failure in words tandem does not know is could-not-tell, naming
 * the command, not a container that died.
 */
static void
test_rm_unknown(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	link_ok();
	h_answer(h_find(WORKER, "rm -f"), 1, "", "Error response from daemon: "
	    "something tandem never saw\n");
	assert_true(h_reported(REPORT_FAILED, DIAG_UNRECOGNISED_ANSWER));
	assert_string_equal(h_last()->text, "asked `docker rm -f vllm-worker`, "
	    "the answer (exit 1, Error response from daemon: something tandem "
	    "never saw) is not one tandem knows: could not tell");
	assert_false(h_halted());
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
	assert_int_equal(h_action(), A_BACKOFF);
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
	assert_int_equal(h_action(), A_WAITING_FOR_NODES);
}

/* A node whose session is down at the start: nothing is removed. */
static void
test_node_down_at_start(void **state)
{
	(void)state;
	h_set_reachable(WORKER, 0);
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
	assert_int_equal(h_action(), A_BACKOFF);
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
	assert_int_equal(h_action(), A_BACKOFF);
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
		assert_true(h_halted());
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
	assert_true(h_halted());
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
	h_answer_all("class/infiniband", 0, "none\n", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_UNRECOGNISED_ANSWER));
	assert_int_equal(h_last()->node, HEAD);
	assert_non_null(strstr(h_last()->text, "could not tell"));
	assert_int_equal(h_count("rm -f"), 0);
	assert_false(h_halted());
	assert_int_equal(h_action(), A_BACKOFF);
	free(w);
}

/* Answer every preflight command of a node as a healthy node does. */
static void
healthy_node_npu(size_t node, const char *npu_file)
{
	char *info = h_data("docker-20.10.24/info-version.out");
	char *image = h_data("docker-20.10.24/image-identity.out");
	char *runtimes = h_data("docker-20.10.24/info-runtimes.out");
	char *npu = h_data(npu_file);
	char iface[200];
	char *up = link_state_of(node);
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
			out = up;
		else if (strstr(c, "ip -o")) {
			snprintf(iface, sizeof(iface), "2: %s    inet %s/24 "
			    "scope global %s\n", H.cf->nodes[node].ifname,
			    H.cf->nodes[node].ip,
			    H.cf->nodes[node].ifname);
			out = iface;
		} else if (strcmp(c, NPU_SMI) == 0)
			out = npu;
		else if (strstr(c, "nvidia-smi -L"))
			out = "GPU 0: NVIDIA GB10 (UUID: GPU-1)\n";
		else if (strstr(c, "nvidia-smi --query-gpu"))
			out = "0, NVIDIA GB10, [N/A], [N/A]\n";
		else if (strstr(c, "Runtimes"))
			out = runtimes;
		h_answer(a, 0, out, "");
	}
	free(info);
	free(image);
	free(runtimes);
	free(up);
	free(npu);
}

static void
healthy_node(size_t node)
{
	healthy_node_npu(node, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
}

static void
test_preflight_then_teardown(void **state)
{
	(void)state;
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	assert_int_equal(h_count("rm -f"), 0);
	healthy_node(HEAD);
	assert_int_equal(H.nreports, 0);
	healthy_node(WORKER);
	/* every check answered but the link's pings, asked only now */
	assert_int_equal(h_preflight_passed(), 0);
	pings_ok();
	assert_int_equal(h_preflight_passed(), 1);
	remove_and_release();
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
}

/* The image absent on the worker, no archive: a fatal image-missing. */
static void
test_preflight_image_missing(void **state)
{
	char *err = h_data("docker-28/image-missing.err");

	(void)state;
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node(HEAD);
	h_answer(h_find(WORKER, "image inspect"), 1, "\n", err);
	/* the node's other checks answer ok */
	h_answer_all("", 0, "", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_IMAGE_MISSING));
	assert_int_equal(h_last()->node, WORKER);
	assert_true(h_halted());
	assert_int_equal(h_count("rm -f"), 0);
	free(err);
}

/* The worker's answer to needle replaced, the rest of both healthy. */
static void
preflight_with(const char *needle, const char *dir, const char *name)
{
	char path[200], *out, *err, *rc;

	snprintf(path, sizeof(path), "%s/%s.out", dir, name);
	out = h_data(path);
	snprintf(path, sizeof(path), "%s/%s.err", dir, name);
	err = h_data(path);
	snprintf(path, sizeof(path), "%s/%s.rc", dir, name);
	rc = h_data(path);
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node(HEAD);
	h_answer(h_find(WORKER, needle), atoi(rc), out, err);
	healthy_node(WORKER);
	pings_answered();
	free(out);
	free(err);
	free(rc);
}

/*
 * GPUs through NVIDIA's hook alone: `docker run --gpus all` works although
 * docker info lists no nvidia runtime (recorded on the bed's dockerd).
 */
static void
test_preflight_gpus_hook_alone(void **state)
{
	char *list = h_data("docker-20.10.24/info-runtimes-unlisted.out");

	(void)state;
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node(HEAD);
	h_answer(h_find(WORKER, "Runtimes"), 0, list, "");
	h_answer(h_find(WORKER, "run --rm --pull never --network none --label "
	    "tandem.cluster=spark --label tandem.check=gpus --gpus all "
	    "--entrypoint true"), 0, "", "");
	healthy_node(WORKER);
	pings_answered();
	assert_int_equal(H.nreports, 0);
	assert_int_equal(h_preflight_passed(), 1);
	assert_int_equal(h_count("rm -f"), 2);
	free(list);
}

/* No hook at all: the engine's own refusal, terminal, with its fix. */
static void
test_preflight_gpus_refused(void **state)
{
	(void)state;
	preflight_with("--gpus all", "docker-20.10.24", "gpus-run-off");
	assert_true(h_reported(REPORT_FAILED, DIAG_NVIDIA_RUNTIME_MISSING));
	assert_int_equal(h_last()->node, WORKER);
	assert_non_null(strstr(h_last()->text, "preflight nvidia: refused: "));
	assert_non_null(strstr(h_last()->text, "could not select device "
	    "driver"));
	assert_non_null(strstr(h_last()->text, "fix: install "
	    "nvidia-container-toolkit"));
	assert_true(h_halted());
}

/* The hook ran, the driver did not answer: gpus-missing, the driver. */
static void
test_preflight_gpus_driver(void **state)
{
	(void)state;
	preflight_with("--gpus all", "docker-28", "gpus-run-driver");
	assert_true(h_reported(REPORT_FAILED, DIAG_GPUS_MISSING));
	assert_non_null(strstr(h_last()->text, "driver: "
	    "nvidia-container-cli: initialization error"));
}

/*
 * The incident: the engine rejects the version query's template. Could
 * not tell, retried, the command named, no guessed "start the engine".
 */
static void
test_preflight_engine_template(void **state)
{
	(void)state;
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node(HEAD);
	h_answer(h_find(WORKER, "ServerVersion"), 125, "",
	    "Error: unsupported template\n");
	healthy_node(WORKER);
	pings_answered();
	assert_true(h_reported(REPORT_FAILED, DIAG_UNRECOGNISED_ANSWER));
	assert_string_equal(h_last()->text, "preflight engine: asked `docker "
	    "info --format '{{.ServerVersion}}'`, the answer (exit 125, Error: "
	    "unsupported template) is not one tandem knows: could not tell");
	assert_false(h_halted());
	assert_int_equal(h_action(), A_BACKOFF);
	assert_string_equal(H.last_diag, "unrecognised-answer");
}

/* An engine that is down: its words, and the fix that starts it. */
static void
test_preflight_engine_down(void **state)
{
	(void)state;
	preflight_with("ServerVersion", "docker-28", "engine-down");
	assert_true(h_reported(REPORT_FAILED, DIAG_ENGINE_DOWN));
	assert_non_null(strstr(h_last()->text, "fix: start the engine: "
	    "systemctl start docker"));
}

/*
 * docker 20.10's CLI answers the version query of a user outside the
 * docker group with a template error (recorded), and ps with "permission
 * denied": the recognised answer names the cause.
 */
static void
test_preflight_permission_old_cli(void **state)
{
	char *info = h_data("docker-20.10.24/permission-denied-info.err");
	char *ps = h_data("docker-20.10.24/permission-denied-ps.err");

	(void)state;
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node(HEAD);
	h_answer(h_find(WORKER, "ServerVersion"), 1, "\n", info);
	h_answer(h_find(WORKER, "docker ps -a"), 1, "", ps);
	healthy_node(WORKER);
	pings_answered();
	assert_true(h_reported(REPORT_FAILED, DIAG_ENGINE_PERMISSION));
	assert_int_equal(h_last()->node, WORKER);
	assert_true(h_halted());
	free(info);
	free(ps);
}

/*
 * Every check fed an answer it does not know (a failed command in words
 * no tool of tandem's says): could not tell, naming the command, retried;
 * never a terminal diagnosis. (The devices check is the accelerator's,
 * lib/config/accel.c.)
 */
static void
test_preflight_every_check_unknown(void **state)
{
	static const char *const needles[] = {
		"ServerVersion", "{{range .RootFS.Layers}}", "cksum",
		"ip -o addr", "docker ps -a", "ss -ltnH", "--gpus all",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(needles) / sizeof(needles[0]); i++) {
		if (i > 0) {
			h_teardown();
			h_setup_file(RAY);
		}
		h_set_preflight_passed(0);
		h_enter(ST_ABSENT, A_TEARDOWN);
		/* the Ray port is the head's alone */
		h_answer(h_find(strstr(needles[i], "ss -") ? HEAD : WORKER,
		    needles[i]), 1, "",
		    "Error: an answer no tool of tandem's gives\n");
		healthy_node(HEAD);
		healthy_node(WORKER);
	pings_answered();
		assert_true(h_reported(REPORT_FAILED,
		    DIAG_UNRECOGNISED_ANSWER));
		assert_non_null(strstr(h_last()->text, "could not tell"));
		assert_non_null(strstr(h_last()->text, "asked `"));
		assert_non_null(strstr(h_last()->text, "Error: an answer no "
		    "tool"));
		assert_null(strstr(h_last()->text, "fix:"));
		assert_false(h_halted());
		assert_int_equal(h_action(), A_BACKOFF);
	}
}

/*
 * The head on docker's classic image store, the worker on the containerd
 * store (docker 29, texts from moby's source): two IDs for one build, the
 * same date and layers. One build, no mismatch.
 */
static void
test_preflight_two_stores(void **state)
{
	char *classic = h_data("docker-29/image-identity.out");
	char *cd = h_data("docker-29-containerd/image-identity.out");

	(void)state;
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	h_answer(h_find(HEAD, "{{range .RootFS.Layers}}"), 0, classic, "");
	h_answer(h_find(WORKER, "{{range .RootFS.Layers}}"), 0, cd, "");
	healthy_node(HEAD);
	healthy_node(WORKER);
	pings_answered();
	assert_int_equal(H.nreports, 0);
	assert_int_equal(h_preflight_passed(), 1);
	free(classic);
	free(cd);
}

/*
 * Another build of the tag on the worker: other layers, or the same
 * layers under a new date (a rebuild that changed only an ENV).
 * image-mismatch, retries stopped, both builds named.
 */
static void
test_preflight_other_build(void **state)
{
	static const char *const other[] = {
		"docker-29-containerd/image-identity-other.out",
		"docker-29/image-identity-env-only.out",
	};
	char *classic = h_data("docker-29/image-identity.out");
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		char *o = h_data(other[i]);

		if (i > 0) {
			h_teardown();
			h_setup_file(RAY);
		}
		h_set_preflight_passed(0);
		h_enter(ST_ABSENT, A_TEARDOWN);
		h_answer(h_find(HEAD, "{{range .RootFS.Layers}}"), 0, classic,
		    "");
		h_answer(h_find(WORKER, "{{range .RootFS.Layers}}"), 0, o, "");
		healthy_node(HEAD);
		healthy_node(WORKER);
	pings_answered();
		assert_true(h_reported(REPORT_FAILED, DIAG_IMAGE_MISMATCH));
		assert_int_equal(h_last()->node, WORKER);
		assert_non_null(strstr(h_last()->text, "6e79a4934b9a "
		    "(2026-01-07T10:00:00Z) on spark-head"));
		assert_true(h_halted());
		free(o);
	}
	free(classic);
}

/*
 * The worker lacks the image and has its archive: loading-image, though
 * the GPU check could not run the image there (docker's "No such image",
 * asked with --pull never): it runs in the preflight after the load.
 */
static void
test_preflight_load_before_gpus(void **state)
{
	char *missing = h_data("docker-28/image-missing.err");
	char *run = h_data("docker-28.2-cli/gpus-run-no-pull.err");

	(void)state;
	free(H.cf->nodes[WORKER].image_archive);
	H.cf->nodes[WORKER].image_archive = strdup("/var/lib/tandem/v.tar");
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	h_answer(h_find(WORKER, "{{range .RootFS.Layers}}"), 1, "\n", missing);
	h_answer(h_find(WORKER, "--gpus all"), 125, "", run);
	healthy_node(HEAD);
	healthy_node(WORKER);
	pings_answered();
	assert_true(h_reported(REPORT_EVENT, EV_LOAD_IMAGE));
	assert_int_equal(h_action(), A_LOADING_IMAGE);
	assert_true(h_image_ref(&(struct image_ident){ 0 }));
	assert_int_equal(h_count("manifest.json"), 1);
	free(missing);
	free(run);
}

/* A preflight command that never ran to its end: the node is waited for,
 * not diagnosed from a silence. */
static void
test_preflight_timeout_is_unreachable(void **state)
{
	(void)state;
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node(HEAD);
	h_fail(h_find(WORKER, "image inspect"), "timed out after 20.0 s");
	assert_true(h_reported(REPORT_NODE_LOST, 0));
	assert_int_equal(h_last()->node, WORKER);
	/* which command did not answer, not only that one did not */
	assert_non_null(strstr(h_last()->text,
	    "the image check: timed out after 20.0 s"));
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
	h_set_preflight_passed(0);
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
	assert_false(h_preflight_passed());
}

/* Ascend ----------------------------------------------------------------- */

static int
setup_dp(void **state)
{
	(void)state;
	h_setup_file(DP);
	return 0;
}

/* rm -f on both Ascend nodes (after the link check); npu-smi info is
 * asked once both are gone. */
static void
removed_dp(void)
{
	link_ok();
	assert_int_equal(h_count("rm -f"), 2);
	h_answer_all("rm -f", 0, "", "");
	assert_int_equal(h_count(NPU_SMI), 2);
	assert_int_equal(h_count("nvidia-smi"), 0);
}

static void
answer_npu(size_t node, const char *file)
{
	char *out = h_data(file);

	h_answer(h_find(node, NPU_SMI), 0, out, "");
	free(out);
}

/* Idle NPUs on both nodes: released, and read so. */
static void
test_npu_released(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	removed_dp();
	answer_npu(HEAD, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_int_equal(H.nreports, 0);
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
	assert_string_equal(h_last()->text, "containers removed, NPU memory "
	    "released on every node (read from npu-smi)");
	assert_null(strstr(h_last()->text, "GPU"));
}

/*
 * A process of ours still holds 37709 MiB on NPU 2 of the head (the
 * recorded busy 910B3): asked again until the deadline, then
 * gpu-not-released naming its pid, its NPU and chip and its memory.
 */
static void
test_npu_held_by_ours(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	removed_dp();
	answer_npu(HEAD, "npu-smi/info-910b3-busy-25.2.0.out");
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_int_equal(H.nreports, 0);
	assert_string_equal(h_node(HEAD).last_error, "NPU memory still "
	    "held: pid 1333928 (name not shown) holds 37709 MiB on NPU 2 chip "
	    "0");
	h_tick(100);
	assert_int_equal(h_count(NPU_SMI), 2);
	answer_npu(HEAD, "npu-smi/info-910b3-busy-25.2.0.out");
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_int_equal(H.nreports, 0);
	h_tick(31000);
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	answer_npu(HEAD, "npu-smi/info-910b3-busy-25.2.0.out");
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_NOT_RELEASED));
	assert_int_equal(h_last()->node, HEAD);
	assert_string_equal(h_last()->text, "pid 1333928 (name not shown) "
	    "holds 37709 MiB on NPU 2 chip 0");
	assert_true(diag_get(DIAG_GPU_NOT_RELEASED)->retryable);
	assert_null(strstr(diag_get(DIAG_GPU_NOT_RELEASED)->message, "GPU"));
	assert_int_equal(h_action(), A_BACKOFF);
	/* nothing was started on the held NPUs */
	assert_int_equal(h_count("docker run"), 0);
}

/*
 * The same process, found by the unrelated-workload scan before the
 * teardown (a foreign NPU workload): not ours to wait for.
 */
static void
test_npu_held_by_foreign(void **state)
{
	struct workload *w = &H.cl->nodes[HEAD].wl.w[0];

	(void)state;
	w->kind = WL_PROCESS;
	w->pid = 1333928;
	w->pids[0] = 1333928;
	w->npids = 1;
	w->mib = 37709;
	w->npu = 1;
	H.cl->nodes[HEAD].wl.n = 1;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	removed_dp();
	answer_npu(HEAD, "npu-smi/info-910b3-busy-25.2.0.out");
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
	assert_string_equal(h_last()->text, "containers removed, NPU memory "
	    "released on every node (read from npu-smi)");
}

/* No npu-smi on the worker (exit 127): skipped, and said so. */
static void
test_npu_tool_missing(void **state)
{
	char *err = h_data("npu-smi/missing.err");

	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	removed_dp();
	answer_npu(HEAD, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	h_answer(h_find(WORKER, NPU_SMI), 127, "", err);
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
	assert_string_equal(h_last()->text, "containers removed, NPU memory "
	    "check skipped: atlas-2: NPU memory not checked: npu-smi is not on "
	    "the node (exit 127: bash: line 1: npu-smi: command not found)");
	assert_null(strstr(h_last()->text, "released"));
	free(err);
}

/*
 * An answer tandem cannot read (the recorded idle table cut short after
 * its header): asked again; at the deadline "could not tell" with what
 * was asked and what came back, retried, never terminal.
 */
static void
test_npu_unreadable(void **state)
{
	char *cut = h_data("npu-smi/info-910b4-idle-25.0.rc1.1.out"), *p = cut;
	int i;

	(void)state;
	for (i = 0; i < 6 && (p = strchr(p, '\n')) != NULL; i++)
		p++;
	assert_non_null(p);
	*p = '\0';
	h_enter(ST_DEGRADED, A_TEARDOWN);
	removed_dp();
	h_answer(h_find(HEAD, NPU_SMI), 0, cut, "");
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_int_equal(H.nreports, 0);
	assert_non_null(strstr(h_node(HEAD).last_error, "NPU memory: "
	    "could not tell: npu-smi answered"));
	h_tick(31000);
	h_answer(h_find(HEAD, NPU_SMI), 0, cut, "");
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_true(h_reported(REPORT_FAILED, ACCEL_COULD_NOT_TELL));
	assert_int_equal(h_last()->node, HEAD);
	assert_non_null(strstr(h_last()->text, "asked `npu-smi info`: NPU "
	    "memory: could not tell: npu-smi answered \""));
	assert_string_equal(diag_code_name(ACCEL_COULD_NOT_TELL),
	    "unrecognised-answer");
	assert_true(diag_get(ACCEL_COULD_NOT_TELL)->retryable);
	assert_false(h_halted());
	assert_int_equal(h_action(), A_BACKOFF);
	free(cut);
}

/*
 * The question timed out with the session up: nothing was read, asked
 * again; the session went under it: the node is waited for.
 */
static void
test_npu_timeout_then_lost(void **state)
{
	struct asked *a;

	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	removed_dp();
	h_fail(h_find(HEAD, NPU_SMI), "timed out after 10.0 s");
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_int_equal(H.nreports, 0);
	assert_string_equal(h_node(HEAD).last_error, "NPU memory: could "
	    "not tell: timed out after 10.0 s");
	h_tick(100);
	a = h_find(WORKER, NPU_SMI);
	H.down[WORKER] = 1;
	h_fail(a, "ssh: connection lost");
	assert_true(h_reported(REPORT_NODE_LOST, 0));
	assert_int_equal(h_last()->node, WORKER);
	assert_int_equal(h_action(), A_WAITING_FOR_NODES);
}

/* Unreadable once, then read: released, no diagnosis. */
static void
test_npu_unreadable_then_read(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	removed_dp();
	h_answer(h_find(HEAD, NPU_SMI), 0, "", "");
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_int_equal(H.nreports, 0);
	h_tick(100);
	answer_npu(HEAD, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	answer_npu(WORKER, "npu-smi/info-910b4-idle-25.0.rc1.1.out");
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
	assert_string_equal(h_last()->text, "containers removed, NPU memory "
	    "released on every node (read from npu-smi)");
}

/* container.accelerator none: nothing asked, nothing claimed. */
static void
test_accelerator_none(void **state)
{
	(void)state;
	H.cf->container.accelerator = ACCEL_NONE;
	h_enter(ST_DEGRADED, A_TEARDOWN);
	link_ok();
	h_answer_all("rm -f", 0, "", "");
	assert_int_equal(h_count(NPU_SMI), 0);
	assert_int_equal(h_count("nvidia-smi"), 0);
	assert_true(h_reported(REPORT_EVENT, EV_TEARDOWN_DONE));
	assert_string_equal(h_last()->text, "containers removed, device "
	    "memory check skipped: container.accelerator is none");
}

/*
 * The preflight on Ascend: 23.9 GiB free on the head's NPU 2 is less than
 * the configured 0.90 asks: gpu-memory-low naming the holder, retried (the
 * ladder steps down); on the ladder's step 0.3 the same NPUs pass.
 */
static void
test_preflight_npu_memory(void **state)
{
	(void)state;
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node_npu(HEAD, "npu-smi/info-910b3-busy-25.2.0.out");
	healthy_node(WORKER);
	pings_ok();
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_MEMORY_LOW));
	assert_int_equal(h_last()->node, HEAD);
	assert_non_null(strstr(h_last()->text, "preflight memory: NPU 2 chip 0 "
	    "has 23.9 of 64.0 GiB free, less than --gpu-memory-utilization 0.9 "
	    "asks (57.6 GiB); held by pid 1333928 (name not shown) 37709 MiB"));
	assert_int_equal(h_count("rm -f"), 0);
	assert_int_equal(h_action(), A_BACKOFF);
}

static void
test_preflight_npu_memory_ladder(void **state)
{
	(void)state;
	H.cf->recovery.gmu_steps = calloc(1, sizeof(double));
	H.cf->recovery.gmu_steps[0] = 0.3;
	H.cf->recovery.ngmu_steps = 1;
	h_set_gmu_step(0);
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	healthy_node_npu(HEAD, "npu-smi/info-910b3-busy-25.2.0.out");
	healthy_node(WORKER);
	pings_ok();
	assert_int_equal(h_preflight_passed(), 1);
	assert_int_equal(h_count("rm -f"), 2);
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
	assert_true(h_halted());
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
	link_ok();
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
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	cmd = h_find(WORKER, "journalctl")->cmd;
	/* no cursor yet: this boot's whole log */
	assert_null(strstr(cmd, "--since"));
	h_answer(h_find(WORKER, "journalctl"), 0, log, "");
	h_answer(h_find(WORKER, ECC), 0, "0, 0000000F:01:00.0, [N/A]\n", "");
	healthy_node(HEAD);
	healthy_node(WORKER);
	pings_answered();
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_XID));
	assert_int_equal(h_last()->node, WORKER);
	assert_non_null(strstr(h_last()->text, "preflight devices: fatal GPU "
	    "fault: spark-worker GPU 0 (PCI 000f:01:00): Xid 79"));
	assert_true(h_halted());
	assert_int_equal(h_count("rm -f"), 0);
	assert_int_equal(H.cl->cnt.nxid, 3);	/* 13, 43 and 79 */
	free(log);
}

/* With a cursor, the preflight asks only what is newer. */
static void
test_preflight_reads_from_cursor(void **state)
{
	(void)state;
	h_set_preflight_passed(0);
	hw_resume(H.cl);
	h_enter(ST_ABSENT, A_TEARDOWN);
	assert_non_null(strstr(h_find(HEAD, "journalctl")->cmd,
	    "--since @1700000000"));
	healthy_node(HEAD);
	healthy_node(WORKER);
	pings_answered();
	assert_int_equal(h_preflight_passed(), 1);
}

/* Ray's token authentication on and the worker has no token file. */
static void
test_preflight_ray_token_missing(void **state)
{
	(void)state;
	H.cf->ray.auth_token_file = strdup("/etc/tandem/ray-token");
	h_set_preflight_passed(0);
	h_enter(ST_ABSENT, A_TEARDOWN);
	h_answer(h_find(WORKER, "test -f /etc/tandem/ray-token"), 1, "", "");
	healthy_node(HEAD);
	healthy_node(WORKER);
	pings_answered();
	assert_true(h_reported(REPORT_FAILED, DIAG_RAY_TOKEN_MISSING));
	assert_int_equal(h_last()->node, WORKER);
	assert_string_equal(h_last()->text, "preflight ray port: "
	    "ray.auth_token_file /etc/tandem/ray-token: missing or empty; "
	    "fix: copy the token file to the same path on every node (chmod "
	    "600)");
	assert_true(h_halted());
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
		cmocka_unit_test_setup_teardown(test_rm_unknown, setup,
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
		cmocka_unit_test_setup_teardown(test_preflight_gpus_hook_alone,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_gpus_refused,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_gpus_driver,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_engine_template,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_engine_down,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_preflight_permission_old_cli, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_preflight_every_check_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_two_stores,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_other_build,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_load_before_gpus,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_npu_released, setup_dp,
		    teardown),
		cmocka_unit_test_setup_teardown(test_npu_held_by_ours,
		    setup_dp, teardown),
		cmocka_unit_test_setup_teardown(test_npu_held_by_foreign,
		    setup_dp, teardown),
		cmocka_unit_test_setup_teardown(test_npu_tool_missing,
		    setup_dp, teardown),
		cmocka_unit_test_setup_teardown(test_npu_unreadable,
		    setup_dp, teardown),
		cmocka_unit_test_setup_teardown(test_npu_unreadable_then_read,
		    setup_dp, teardown),
		cmocka_unit_test_setup_teardown(test_npu_timeout_then_lost,
		    setup_dp, teardown),
		cmocka_unit_test_setup_teardown(test_accelerator_none,
		    setup_dp, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_npu_memory,
		    setup_dp, teardown),
		cmocka_unit_test_setup_teardown(
		    test_preflight_npu_memory_ladder, setup_dp, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
