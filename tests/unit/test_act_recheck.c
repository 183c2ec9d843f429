/*
 * idle while the retries are stopped (act_recheck.c) against the fake
 * executor: the read-only check of the diagnosis that stopped them asked
 * at once and every recovery.recheck_s, on every node, and nothing else
 * (no rm -f, no docker run); recovery.awaiting says what it waits for;
 * once the check passes, having seen the cause, the cluster is rebuilt
 * (recheck-cleared) within the hourly cap. A diagnosis without such a
 * check, or a check that passes before it ever saw the cause, waits for
 * the operator. The texts are recorded ones (tests/unit/data/).
 */
#include <stdio.h>

#include "act_harness.h"
#include "recheck.h"

#define HEAD	0
#define WORKER	1
#define NET	"net-debian-12/"
#define BOOT_ID	"cat /proc/sys/kernel/random/boot_id"

static const char *stopped_node;	/* the diagnosis's node; NULL: none */

static int
setup(void **state)
{
	(void)state;
	h_setup_file("etc/tandem.json");
	stopped_node = NULL;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	h_teardown();
	return 0;
}

/* The retries stopped on code (on stopped_node, when a test names one):
   idle, halted, the recheck begins. */
static void
stopped_on(enum diag_code code)
{
	h_stopped_on(code, stopped_node);
	h_enter(ST_DEGRADED, A_IDLE);
	assert_ptr_equal(h_act()->ops, &act_recheck);
	h_tick(0);
}

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

/* /status's recovery.awaiting now; the caller frees it. */
static json_t *
awaiting(void)
{
	assert_ptr_equal(h_act()->ops, &act_recheck);
	return recheck_awaiting_json(h_act());
}

static const char *
field(json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

/* Only reading commands were sent: nothing removed, started or loaded. */
static void
read_only(void)
{
	assert_int_equal(h_count("rm -f"), 0);
	assert_int_equal(h_count(" run "), 0);
	assert_int_equal(h_count("load -i"), 0);
	assert_int_equal(h_count("exec "), 0);
}

/*
 * The worker at MTU 9000, the head at 1500: still, named in /status; the
 * worker set back to 1500 (an operator, or its netplan at a reboot): the
 * next check's pings pass and the cluster is rebuilt.
 */
static void
test_mtu_cleared(void **state)
{
	char *ok = h_data(NET "ping-big-ok.out");
	json_t *j;

	(void)state;
	stopped_on(DIAG_MTU_MISMATCH);
	assert_int_equal(h_count("ip -j addr show dev"), 2);
	read_only();
	link_states(NET "state-up.out", NET "state-mtu9000.out");
	assert_int_equal(H.nreports, 0);
	assert_true(h_halted());
	j = awaiting();
	assert_string_equal(field(j, "code"), "mtu-mismatch");
	assert_string_equal(field(j, "check"), "link");
	assert_string_equal(field(j, "node"), "spark-worker");
	assert_non_null(strstr(field(j, "message"), "spark-worker enp1s0f0np0 "
	    "9000, spark-head enp1s0f0np0 1500"));
	assert_non_null(strstr(field(j, "message"), "checked 0 s ago"));
	json_decref(j);

	/* nothing more until recovery.recheck_s (30 s) has passed */
	h_tick(29000);
	assert_int_equal(h_count("ip -j addr show dev"), 0);
	h_tick(12000);
	j = awaiting();
	assert_non_null(strstr(field(j, "message"), "checked 41 s ago"));
	assert_int_equal(json_integer_value(json_object_get(j, "checks")), 1);
	json_decref(j);
	assert_int_equal(h_count("ip -j addr show dev"), 2);
	link_states(NET "state-up.out", NET "state-up-b.out");
	assert_int_equal(H.nreports, 0);
	h_answer_all("ping ", 0, ok, "");
	read_only();
	assert_true(h_reported(REPORT_EVENT, EV_RECHECK_CLEARED));
	assert_non_null(strstr(h_last()->text, "mtu-mismatch cleared"));
	assert_false(h_halted());
	assert_int_equal(h_action(), A_TEARDOWN);
	free(ok);
}

/* Image answers: only image inspect and the archive's test are asked. */
static void
image_answers(size_t node, int present)
{
	char *id = h_data("docker-20.10.24/image-identity.out");
	char *miss = h_data("docker-28/image-missing.err");

	if (present)
		h_answer(h_find(node, "image inspect"), 0, id, "");
	else
		h_answer(h_find(node, "image inspect"), 1, "", miss);
	free(id);
	free(miss);
}

/* The image gone from the worker, then loaded there by hand. */
static void
test_image_cleared(void **state)
{
	json_t *j;

	(void)state;
	stopped_on(DIAG_IMAGE_MISSING);
	assert_int_equal(h_count("image inspect"), 2);
	assert_int_equal(h_count("ip -j"), 0);
	assert_int_equal(h_count("nvidia-smi"), 0);
	read_only();
	image_answers(HEAD, 1);
	image_answers(WORKER, 0);
	j = awaiting();
	assert_string_equal(field(j, "check"), "image");
	assert_string_equal(field(j, "node"), "spark-worker");
	assert_non_null(strstr(field(j, "finding"), "image: absent"));
	json_decref(j);
	assert_true(h_halted());
	h_tick(30000);
	image_answers(HEAD, 1);
	image_answers(WORKER, 1);
	assert_true(h_reported(REPORT_EVENT, EV_RECHECK_CLEARED));
	assert_int_equal(h_action(), A_TEARDOWN);
}

/* ray.auth_token_file: only its test, on every node. */
static void
test_token_cleared(void **state)
{
	(void)state;
	H.cf->ray.auth_token_file = strdup("/etc/tandem/ray-token");
	stopped_on(DIAG_RAY_TOKEN_MISSING);
	assert_int_equal(h_count("test -f /etc/tandem/ray-token"), 2);
	assert_int_equal(H.nasked, 2);
	h_answer(h_find(HEAD, "test -f"), 0, "", "");
	h_answer(h_find(WORKER, "test -f"), 1, "", "");
	assert_true(h_halted());
	h_tick(30000);
	h_answer_all("test -f", 0, "", "");
	assert_true(h_reported(REPORT_EVENT, EV_RECHECK_CLEARED));
}

/*
 * vLLM found the model missing, but the model check passes at once (it
 * cannot see what vLLM saw): no rebuild loop, the operator decides.
 */
static void
test_blind_waits(void **state)
{
	json_t *j;

	(void)state;
	stopped_on(DIAG_MODEL_MISSING);
	assert_int_equal(h_count("cksum"), 2);
	h_answer_all("cksum", 0, "f 4096 config.json\nc 1234567 4096 "
	    "./config.json\n", "");
	assert_int_equal(H.nreports, 0);
	assert_true(h_halted());
	j = awaiting();
	assert_non_null(strstr(field(j, "message"), "never saw model-missing"));
	assert_non_null(strstr(field(j, "message"), "tandemctl resume"));
	json_decref(j);
	h_tick(3600000);
	assert_int_equal(h_count(NULL), 0);
}

/* A diagnosis no read-only check sees: nothing asked, ever. */
static void
test_no_check(void **state)
{
	json_t *j;

	(void)state;
	stopped_on(DIAG_ARCH_UNSUPPORTED);
	h_tick(3600000);
	assert_int_equal(H.nasked, 0);
	j = awaiting();
	assert_true(json_is_null(json_object_get(j, "check")));
	assert_non_null(strstr(field(j, "message"), "no read-only check sees "
	    "arch-unsupported: waiting for the operator"));
	json_decref(j);
}

/* A node's session down: could not tell, asked again; never cleared. */
static void
test_node_down(void **state)
{
	json_t *j;

	(void)state;
	H.down[WORKER] = 1;
	stopped_on(DIAG_IMAGE_MISSING);
	image_answers(HEAD, 1);
	assert_int_equal(H.nreports, 0);
	j = awaiting();
	assert_non_null(strstr(field(j, "message"), "could not tell"));
	json_decref(j);
	H.down[WORKER] = 0;
	h_tick(30000);
	image_answers(HEAD, 1);
	image_answers(WORKER, 1);
	/* cleared, but it never saw the cause: the operator */
	assert_int_equal(H.nreports, 0);
	assert_true(h_halted());
}

/* The hour's rebuilds are used up: cleared, the rebuild waits for it. */
static void
test_hourly_cap(void **state)
{
	json_t *j;
	int i;

	(void)state;
	for (i = 0; i < H.cf->recovery.max_rebuilds_per_hour; i++)
		remedy_note_rebuild(H.cl);
	stopped_on(DIAG_IMAGE_MISSING);
	image_answers(HEAD, 1);
	image_answers(WORKER, 0);
	h_tick(30000);
	image_answers(HEAD, 1);
	image_answers(WORKER, 1);
	assert_int_equal(H.nreports, 0);
	j = awaiting();
	assert_non_null(strstr(field(j, "message"),
	    "recovery.max_rebuilds_per_hour (10) is reached"));
	json_decref(j);
	/* the hour passes: the next check clears and rebuilds */
	h_tick(3600 * 1000);
	image_answers(HEAD, 1);
	image_answers(WORKER, 1);
	assert_true(h_reported(REPORT_EVENT, EV_RECHECK_CLEARED));
}

/* POST /rebuild while a check runs: its answers are dropped. */
static void
test_answer_after_end(void **state)
{
	struct asked *w;

	(void)state;
	stopped_on(DIAG_IMAGE_MISSING);
	w = h_find(WORKER, "image inspect");
	image_answers(HEAD, 1);
	assert_true(h_event(EV_REBUILD));
	assert_int_equal(h_action(), A_TEARDOWN);
	h_answer(w, 0, "", "");
	assert_int_equal(H.nreports, 0);
}

/*
 * host-key on the worker: a fresh login at once and every recheck_s
 * (nothing sent over the sessions), /status names the refusal; once the
 * login is taken (known_hosts fixed), rebuilt.
 */
static void
test_login_cleared(void **state)
{
	json_t *j;

	(void)state;
	H.down[WORKER] = H.refused[WORKER] = 1;
	stopped_on(DIAG_HOST_KEY);
	assert_int_equal(H.logins[WORKER], 1);
	assert_int_equal(H.logins[HEAD], 0);
	assert_int_equal(H.nasked, 0);
	assert_int_equal(H.nreports, 0);
	j = awaiting();
	assert_string_equal(field(j, "check"), "ssh login");
	assert_string_equal(field(j, "node"), "spark-worker");
	assert_non_null(strstr(field(j, "message"), "spark-worker host key of "
	    "10.0.0.2:22 (ed25519 SHA256:abc) is not in"));
	assert_non_null(strstr(field(j, "message"), "checked 0 s ago"));
	json_decref(j);
	h_tick(29000);
	assert_int_equal(H.logins[WORKER], 1);
	H.refused[WORKER] = 0;
	h_tick(2000);
	assert_int_equal(H.logins[WORKER], 2);
	assert_true(h_reported(REPORT_EVENT, EV_RECHECK_CLEARED));
}

/*
 * A fatal Xid on the worker: its boot id kept at the first look; the
 * same one later is still; another one (a reboot) clears it. The head's
 * boot id is not asked about.
 */
static void
test_boot_cleared(void **state)
{
	static const char a[] = "0f4c6d2e-8a1b-4c3d-9e5f-a6b7c8d9e0f1\n";
	static const char b[] = "7d0b3c9a-1e2f-4a5b-8c6d-0e1f2a3b4c5d\n";
	json_t *j;

	(void)state;
	stopped_node = "spark-worker";
	stopped_on(DIAG_GPU_XID);
	assert_int_equal(h_count(BOOT_ID), 2);
	read_only();
	h_answer(h_find(HEAD, BOOT_ID), 0, b, "");
	h_answer(h_find(WORKER, BOOT_ID), 0, a, "");
	assert_int_equal(H.nreports, 0);
	j = awaiting();
	assert_string_equal(field(j, "check"), "boot id");
	assert_string_equal(field(j, "node"), "spark-worker");
	assert_non_null(strstr(field(j, "message"), "boot id 0f4c6d2e-"));
	json_decref(j);
	h_tick(31000);
	h_answer(h_find(HEAD, BOOT_ID), 0, a, "");
	h_answer(h_find(WORKER, BOOT_ID), 0, a, "");
	assert_int_equal(H.nreports, 0);
	/* the worker down a while (rebooting): could not tell */
	h_tick(31000);
	h_answer(h_find(HEAD, BOOT_ID), 0, a, "");
	h_fail(h_find(WORKER, BOOT_ID), "ssh: session down");
	assert_int_equal(H.nreports, 0);
	h_tick(31000);
	h_answer(h_find(HEAD, BOOT_ID), 0, a, "");
	h_answer(h_find(WORKER, BOOT_ID), 0, b, "");
	assert_true(h_reported(REPORT_EVENT, EV_RECHECK_CLEARED));
}

/*
 * A fatal Xid and the worker down at the first look (it rebooted right
 * after): no boot id to compare, so its next answer clears the stop; the
 * rebuild's preflight reads the kernel log again.
 */
static void
test_boot_down_at_first_look(void **state)
{
	static const char a[] = "0f4c6d2e-8a1b-4c3d-9e5f-a6b7c8d9e0f1\n";
	json_t *j;

	(void)state;
	stopped_node = "spark-worker";
	stopped_on(DIAG_GPU_XID);
	h_answer(h_find(HEAD, BOOT_ID), 0, a, "");
	h_fail(h_find(WORKER, BOOT_ID), "ssh: session down");
	assert_int_equal(H.nreports, 0);
	j = awaiting();
	assert_non_null(strstr(field(j, "message"), "could not be read"));
	json_decref(j);
	h_tick(31000);
	h_answer(h_find(HEAD, BOOT_ID), 0, a, "");
	h_answer(h_find(WORKER, BOOT_ID), 0, a, "");
	assert_true(h_reported(REPORT_EVENT, EV_RECHECK_CLEARED));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mtu_cleared, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_image_cleared, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_token_cleared, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_blind_waits, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_no_check, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_node_down, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_hourly_cap, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_login_cleared, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_boot_cleared, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_boot_down_at_first_look,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_after_end, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
