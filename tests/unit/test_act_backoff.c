/*
 * backoff (act_backoff.c): the wait doubles with jitter, within the
 * hourly cap, on the monotonic clock; a step of the wall clock changes
 * nothing (issue 36, item 3: a day back left 86,415 s to wait, not 20).
 * The retry waits for the read of the nodes' GPU faults that the failure
 * began (hwcheck.c, issue 33): a fatal Xid stops the retries there, an
 * application's is noted and the retry goes on (recorded kernel lines,
 * tests/unit/data/nvidia-xid/).
 */
#include <unistd.h>

#include "act_harness.h"
#include "bundle_store.h"

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

/* The first wait is backoff_initial_s (5) with a jitter of 0.75 to 1.25. */
static void
test_first_wait(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_BACKOFF);
	assert_int_equal(H.cl->rec.attempt, 1);
	h_tick(3700);
	assert_int_equal(H.nreports, 0);
	h_tick(2600);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
	assert_int_equal(h_action(), A_TEARDOWN);
	/* it asks nothing of the nodes */
	assert_int_equal(h_count("backoff"), 0);
}

/* The wall clock steps back a day mid-wait: the wait ends on time. */
static void
test_wall_clock_step(void **state)
{
	(void)state;
	H.cl->rec.attempt = 2;		/* the third: 20 s, jitter 15-25 */
	h_enter(ST_DEGRADED, A_BACKOFF);
	h_wall_s -= 86400;
	h_tick(14000);
	assert_int_equal(H.nreports, 0);
	h_wall_s += 2 * 86400;		/* and forward two */
	h_tick(11500);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
}

/* Ten rebuilds in the hour: the next attempt waits for the oldest to age
 * out of the window, counted on the monotonic clock. */
static void
test_hourly_cap(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 10; i++) {
		remedy_note_rebuild(H.cl);
		h_now_ms += 60000;	/* one a minute */
	}
	h_enter(ST_DEGRADED, A_BACKOFF);
	assert_true(cluster_capped(H.cl));
	/* the evidence kept at the cap (test_capped_keeps_evidence) */
	h_answer_all("", 0, "", "");
	/* the oldest began ten minutes ago: it leaves the hour in fifty */
	h_tick(49 * 60000);
	assert_int_equal(H.nreports, 0);
	h_tick(61000);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
}

/*
 * The memory ladder (remedy.c remedy_lower_gmu) steps down only for a diagnosis
 * that less memory fixes: cuda-oom yes; kv-cache-no-memory, whose fix is
 * more --gpu-memory-utilization, never (vLLM's own advice).
 */
static void
test_ladder_direction(void **state)
{
	(void)state;
	/* etc/tandem.json: 0.60 in vllm.args, steps [0.6, 0.5] */
	assert_int_equal(H.cf->recovery.ngmu_steps, 2);
	h_set_gmu_step(-1);
	remedy_lower_gmu(H.cl, diag_get(DIAG_KV_CACHE_NO_MEMORY));
	assert_int_equal(h_gmu_step(), -1);
	assert_string_equal(h_events(), "");
	remedy_lower_gmu(H.cl, diag_get(DIAG_UNRECOGNISED_ANSWER));
	assert_int_equal(h_gmu_step(), -1);
	remedy_lower_gmu(H.cl, diag_get(DIAG_CUDA_OOM));
	assert_int_equal(h_gmu_step(), 1);
	assert_string_equal(h_events(), "remedy: --gpu-memory-utilization 0.6 "
	    "-> 0.5\n");
}

/*
 * At the cap the evidence is kept before anything is torn down: every
 * node's container log and state, nvidia-smi, its kernel lines; vLLM's
 * log and ray status from the head. The retry waits for the answers;
 * the tar is written off the loop to the state dir's bundles/ with a
 * README saying what happened, and its name is the newest.
 */
static void
test_capped_keeps_evidence(void **state)
{
	char dir[] = "/tmp/tandem-test-evidence-XXXXXX", *path, *tar;
	char name[128], err[200];
	uint64_t size;
	int i, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	bundle_store_init(dir);
	for (i = 0; i < 10; i++) {
		remedy_note_rebuild(H.cl);
		h_now_ms += 60000;
	}
	history_record(H.cl, "degraded", "degraded", "backoff",
	    "gpu-memory-low: vLLM found too little free GPU memory");
	h_enter(ST_DEGRADED, A_BACKOFF);
	assert_int_equal(h_count("logs --timestamps --tail 2000"), 2);
	assert_int_equal(h_count("inspect --format"), 2);
	assert_int_equal(h_count("journalctl -k"), 2);
	assert_int_equal(h_count("exec vllm-head tail -c 1048576 "
	    "/tmp/vllm_serve.log"), 1);
	assert_int_equal(h_count("ray status"), 1);
	h_answer(h_find(WORKER, "logs --timestamps"), 0,
	    "2026-11-02T09:02:11Z (RayWorker) NCCL WARN ...\n", "");
	h_answer_all("inspect --format", 0, "{\"Status\":\"exited\","
	    "\"ExitCode\":137,\"OOMKilled\":false}\n", "");
	h_answer_all("journalctl", 0, "tandem: journalctl\n", "");
	h_answer_all("nvidia-smi", 0, "", "");
	h_answer_all("logs --timestamps", 0, "", "");
	h_answer_all("/tmp/vllm_serve.log", 0, "", "");
	/* the hour passed, one answer did not come: no retry */
	h_tick(61 * 60000);
	assert_int_equal(H.nreports, 0);
	assert_int_equal(h_count(""), 1);
	h_answer(h_find(HEAD, "ray status"), 1, "", "ConnectionError: GCS "
	    "unreachable\n");
	h_drain();
	assert_non_null(evidence_latest(H.cl));
	fd = bundle_store_open_latest(name, sizeof(name), &size, err,
	    sizeof(err));
	assert_true(fd >= 0);
	assert_string_equal(name, evidence_latest(H.cl));
	tar = calloc(1, size + 1);
	assert_int_equal(read(fd, tar, size), (ssize_t)size);
	close(fd);
	/* README first, with the budget's sentence and a line per file */
	assert_int_equal(strncmp(tar, "README.txt", 10), 0);
	assert_non_null(memmem(tar, size, "recovery.max_rebuilds_per_hour "
	    "(10) reached", 42));
	assert_non_null(memmem(tar, size, "gpu-memory-low: vLLM found", 26));
	assert_non_null(memmem(tar, size, "head/ray-status.txt: 0 bytes, "
	    "exit status 1; stderr: ConnectionError: GCS unreachable", 84));
	assert_non_null(memmem(tar, size, "NCCL WARN", 9));
	assert_non_null(memmem(tar, size, "nodes/spark-worker/kernel-nvrm.txt",
	    34));
	assert_non_null(memmem(tar, size, "tandem/events.json", 18));
	free(tar);
	h_tick(100);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
	path = malloc(strlen(dir) + strlen(name) + 20);
	sprintf(path, "%s/bundles/%s", dir, name);
	unlink(path);
	sprintf(path, "%s/bundles", dir);
	rmdir(path);
	rmdir(dir);
	free(path);
}

#define ECC	"nvidia-smi --query-gpu=index,pci.bus_id"

/* The recorded journalctl answer, only its lines holding one of keep. */
static char *
klog(const char *keep1, const char *keep2)
{
	char *rec = h_data("nvidia-xid/tandem-journalctl.txt"), *p, *nl;
	struct sbuf b;

	sbuf_init(&b);
	for (p = rec; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		*nl = '\0';
		if (strstr(p, keep1) || (keep2 && strstr(p, keep2)) ||
		    strncmp(p, "tandem:", 7) == 0)
			sbuf_addf(&b, "%s\n", p);
	}
	free(rec);
	return sbuf_take(&b);
}

/* The failure read every node: the head's log is clean. */
static void
read_after_failure(const char *worker_log)
{
	char *ecc = h_data("nvidia-xid/ecc-gb10.csv");

	hw_after_failure(H.cl, DIAG_CONTAINER_DIED);
	h_enter(ST_DEGRADED, A_BACKOFF);
	assert_int_equal(h_count("journalctl -k"), 2);
	assert_int_equal(h_count(ECC), 2);
	/* the backoff's time is up, the read is not: no retry yet */
	h_tick(7000);
	assert_int_equal(H.nreports, 0);
	h_answer(h_find(HEAD, "journalctl -k"), 0, "tandem: journalctl\n",
	    "");
	h_answer(h_find(HEAD, ECC), 0, ecc, "");
	h_answer(h_find(WORKER, ECC), 0, ecc, "");
	h_answer(h_find(WORKER, "journalctl -k"), 0, worker_log, "");
	free(ecc);
}

/*
 * The worker's GPU fell off the bus (Xid 79) under the failure: gpu-xid,
 * naming the node, the GPU and the code; the retries stop (halted), and
 * the worker's cursor stays before the line, so it is read again.
 */
static void
test_fatal_xid_stops(void **state)
{
	char *log = klog(": 79,", NULL);
	double since;

	(void)state;
	read_after_failure(log);
	assert_true(h_reported(REPORT_FAILED, DIAG_GPU_XID));
	assert_int_equal(h_last()->node, WORKER);
	assert_string_equal(h_last()->text, "spark-worker GPU 0 (PCI "
	    "000f:01:00): Xid 79, GPU has fallen off the bus: NVRM: Xid "
	    "(PCI:000f:01:00): 79, pid=4388, name=python3, GPU has fallen off "
	    "the bus. (fatal)");
	assert_true(h_halted());
	assert_int_equal(h_action(), A_IDLE);
	assert_false(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
	assert_int_equal(H.cl->cnt.nxid, 1);
	assert_int_equal(H.cl->cnt.xid[0].code, 79);
	assert_string_equal(H.cl->cnt.xid[0].node, "spark-worker");
	/* the head's cursor moved to the read; the worker's did not */
	assert_true(hw_klog_since(H.cl, HEAD) > 0);
	since = hw_klog_since(H.cl, WORKER);
	assert_true(since == 0);
	free(log);
}

/*
 * An application's fault (Xid 13, then the channel's 43) is an event and
 * a count; the retry goes on once the read is in, and the lines are not
 * counted twice when read again.
 */
static void
test_app_xid_noted(void **state)
{
	char *log = klog(": 13,", ": 43,");

	(void)state;
	read_after_failure(log);
	assert_false(h_reported(REPORT_FAILED, DIAG_GPU_XID));
	assert_non_null(strstr(h_events(), "spark-worker GPU 0 (PCI 000f:01:00): "
	    "Xid 13, "));
	assert_non_null(strstr(h_events(), "(application): noted, a rebuild "
	    "fixes it"));
	assert_int_equal(H.cl->cnt.nxid, 2);
	h_tick(100);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
	assert_int_equal(h_action(), A_TEARDOWN);
	/* the same lines again after another failure: counted once */
	hw_after_failure(H.cl, DIAG_CONTAINER_DIED);
	h_answer_all("journalctl -k", 0, log, "");
	h_answer_all(ECC, 0, "", "");
	assert_int_equal(H.cl->cnt.xid[0].n, 1);
	assert_int_equal(H.cl->cnt.xid[1].n, 1);
	free(log);
}

/* A log tandem may not read is never a clean one, nor a reason to stop. */
static void
test_unread_log(void **state)
{
	char *refused = h_data("nvidia-xid/tandem-journal-refused.txt");

	(void)state;
	read_after_failure(refused);
	h_tick(100);
	assert_true(h_reported(REPORT_EVENT, EV_BACKOFF_DONE));
	assert_int_equal(H.cl->cnt.nxid, 0);
	/* unread: the cursor stays, the next read starts from the same */
	assert_true(hw_klog_since(H.cl, WORKER) == 0);
	free(refused);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_wait, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_wall_clock_step, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_hourly_cap, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ladder_direction, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_capped_keeps_evidence,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_fatal_xid_stops, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_app_xid_noted, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_unread_log, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
