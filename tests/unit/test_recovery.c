/*
 * Recovery policy: the gpu_memory_utilization ladder, the backoff and its
 * jitter, the hourly rebuild cap, the probe hysteresis, and which diagnosis
 * each failed check becomes -- over every step and at every boundary.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "recovery.h"

#define NOW	1000000.0	/* any wall-clock time well past the epoch */

static const double steps[] = { 0.9, 0.75, 0.6 };
#define NSTEPS	(sizeof(steps) / sizeof(steps[0]))

static void
test_gmu_of_step(void **state)
{
	int i;

	(void)state;
	/* the configured value (-1) and anything outside the list add nothing */
	for (i = -3; i < 0; i++)
		assert_true(recovery_gmu(steps, NSTEPS, i) == 0);
	for (i = 0; i < (int)NSTEPS; i++)
		assert_true(recovery_gmu(steps, NSTEPS, i) == steps[i]);
	for (i = (int)NSTEPS; i < (int)NSTEPS + 3; i++)
		assert_true(recovery_gmu(steps, NSTEPS, i) == 0);
	assert_true(recovery_gmu(NULL, 0, 0) == 0);
	assert_true(recovery_gmu(NULL, 0, -1) == 0);
}

/* From each rung, with each configured value: where the next failure goes. */
static void
test_ladder_every_rung(void **state)
{
	static const struct {
		double	 configured;	/* 0: not in vllm.args */
		int	 step;
		double	 in_force;
		int	 next;
	} t[] = {
		/* not configured: vLLM's own 0.9 is in force */
		{ 0,     -1, 0.9,  1 },
		{ 0,      0, 0.9,  1 },
		{ 0,      1, 0.75, 2 },
		{ 0,      2, 0.6, -1 },	/* the bottom: the ladder ends */
		/* configured above every step: the first step is lower */
		{ 0.95,  -1, 0.95, 0 },
		{ 0.95,   0, 0.9,  1 },
		{ 0.95,   1, 0.75, 2 },
		{ 0.95,   2, 0.6, -1 },
		/* configured equal to a step: that step changes nothing */
		{ 0.9,   -1, 0.9,  1 },
		{ 0.75,  -1, 0.75, 2 },
		{ 0.6,   -1, 0.6, -1 },
		/* configured between steps */
		{ 0.8,   -1, 0.8,  1 },
		{ 0.7,   -1, 0.7,  2 },
		/* configured below every step: nothing to lower to */
		{ 0.5,   -1, 0.5, -1 },
		/* a step kept in the state dir wins over the configured value */
		{ 0.5,    0, 0.9,  1 },
		{ 0.5,    1, 0.75, 2 },
		/* a step index that no longer exists is the configured value */
		{ 0.8,    3, 0.8,  1 },
		{ 0,      7, 0.9,  1 },
		{ 0.8,   -2, 0.8,  1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		double f = recovery_gmu_in_force(steps, NSTEPS, t[i].step,
		    t[i].configured);
		int n = recovery_next_gmu_step(steps, NSTEPS, t[i].step,
		    t[i].configured);

		if (f != t[i].in_force || n != t[i].next)
			fail_msg("row %zu: configured %g step %d: in force %g "
			    "(want %g), next %d (want %d)", i, t[i].configured,
			    t[i].step, f, t[i].in_force, n, t[i].next);
	}
}

static void
test_ladder_walk_and_edges(void **state)
{
	int step = -1, rungs = 0;

	(void)state;
	/* failure after failure walks every rung once, then stops */
	while ((step = recovery_next_gmu_step(steps, NSTEPS, step, 0)) != -1) {
		rungs++;
		assert_true(rungs <= (int)NSTEPS);
	}
	assert_int_equal(rungs, 2);	/* 0.9 is in force from the start */
	rungs = 0;
	step = -1;
	while ((step = recovery_next_gmu_step(steps, NSTEPS, step, 0.95)) !=
	    -1)
		rungs++;
	assert_int_equal(rungs, 3);
	/* no steps configured: never changed */
	assert_int_equal(recovery_next_gmu_step(NULL, 0, -1, 0.9), -1);
	assert_int_equal(recovery_next_gmu_step(NULL, 0, -1, 0), -1);
	/* within 1e-9 a step counts as equal, not lower */
	assert_int_equal(recovery_next_gmu_step(steps, NSTEPS, -1,
	    0.75 + 5e-10), 2);
	assert_int_equal(recovery_next_gmu_step(steps, NSTEPS, -1,
	    0.75 + 2e-9), 1);
}

static double
want_backoff(double initial, double max, int attempt, double u)
{
	double d = initial;
	int i;

	for (i = 1; i < attempt; i++)
		d *= 2;
	if (d > max)
		d = max;
	return d * (0.75 + 0.5 * u);
}

static void
test_backoff(void **state)
{
	static const double initial[] = { 0.1, 1, 5, 7.5 };
	static const double max[] = { 0.1, 4, 300, 3600 };
	size_t i, j;
	int a, k;

	(void)state;
	/* the defaults: 5 s doubling to 300 s, no jitter drawn mid-range */
	assert_true(recovery_backoff_s(5, 300, 1, 0.5) == 5);
	assert_true(recovery_backoff_s(5, 300, 2, 0.5) == 10);
	assert_true(recovery_backoff_s(5, 300, 6, 0.5) == 160);
	assert_true(recovery_backoff_s(5, 300, 7, 0.5) == 300);
	assert_true(recovery_backoff_s(5, 300, 60, 0.5) == 300);
	/* the jitter's ends: 0.75 and 1.25 times, the cap included */
	assert_true(recovery_backoff_s(5, 300, 1, 0) == 3.75);
	assert_true(recovery_backoff_s(5, 300, 1, 1) == 6.25);
	assert_true(recovery_backoff_s(5, 300, 9, 1) == 375);
	for (i = 0; i < sizeof(initial) / sizeof(initial[0]); i++)
		for (j = 0; j < sizeof(max) / sizeof(max[0]); j++) {
			double prev = 0;

			if (max[j] < initial[i])
				continue;	/* config refuses it */
			for (a = 1; a <= 40; a++) {
				double lo = recovery_backoff_s(initial[i],
				    max[j], a, 0);
				double hi = recovery_backoff_s(initial[i],
				    max[j], a, 1);

				assert_true(lo >= 0.75 * initial[i] - 1e-12);
				assert_true(hi <= 1.25 * max[j] + 1e-9);
				assert_true(lo >= prev - 1e-12);
				prev = lo;
				for (k = 0; k <= 20; k++) {
					double u = k / 20.0;
					double d = recovery_backoff_s(
					    initial[i], max[j], a, u);

					assert_true(d >= lo - 1e-12 &&
					    d <= hi + 1e-12);
					assert_true(fabs(d - want_backoff(
					    initial[i], max[j], a, u)) < 1e-9);
				}
			}
		}
}

static void
test_hour_window(void **state)
{
	double ring[REBUILDS_HISTORY];
	size_t n = 0;

	(void)state;
	memset(ring, 0, sizeof(ring));
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, NOW), 0);
	assert_true(recovery_oldest_last_hour(ring, n, NOW) == NOW);
	/* exactly an hour old has left the window; a hair younger has not */
	recovery_note_rebuild(ring, &n, NOW - 3600);
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, NOW), 0);
	recovery_note_rebuild(ring, &n, NOW - 3599.5);
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, NOW), 1);
	assert_true(recovery_oldest_last_hour(ring, n, NOW) == NOW - 3599.5);
	recovery_note_rebuild(ring, &n, NOW - 10);
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, NOW), 2);
	assert_true(recovery_oldest_last_hour(ring, n, NOW) == NOW - 3599.5);
	assert_int_equal(n, 3);
	/* a rebuild given back (stopped for a missing node) is not counted */
	recovery_forgive_last(ring, n);
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, NOW), 1);
	assert_true(recovery_oldest_last_hour(ring, n, NOW) == NOW - 3599.5);
	recovery_forgive_last(ring, 0);		/* nothing to give back */
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, NOW), 1);
}

static void
test_ring_wraps(void **state)
{
	double ring[REBUILDS_HISTORY];
	size_t n = 0, i;

	(void)state;
	memset(ring, 0, sizeof(ring));
	/* twice the ring, one a second: the newest REBUILDS_HISTORY stay */
	for (i = 0; i < 2 * REBUILDS_HISTORY; i++)
		recovery_note_rebuild(ring, &n, NOW - 2 * REBUILDS_HISTORY + i);
	assert_int_equal(n, 2 * REBUILDS_HISTORY);
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, NOW),
	    REBUILDS_HISTORY);
	assert_true(recovery_oldest_last_hour(ring, n, NOW) ==
	    NOW - REBUILDS_HISTORY);
	/* the one given back is the newest, in its slot of the ring */
	recovery_forgive_last(ring, n);
	assert_true(ring[(n - 1) % REBUILDS_HISTORY] == RECOVERY_FORGIVEN);
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, NOW),
	    REBUILDS_HISTORY - 1);
}

/*
 * The monotonic clock starts near 0 at boot: what is given back must not
 * count as a rebuild at time 0, still in the hour 100 s after boot;
 * tandemctl resume gives back the whole hour.
 */
static void
test_forgiven_near_boot(void **state)
{
	double ring[REBUILDS_HISTORY];
	size_t n = 0;

	(void)state;
	recovery_note_rebuild(ring, &n, 10);
	recovery_note_rebuild(ring, &n, 50);
	recovery_note_rebuild(ring, &n, 90);
	recovery_forgive_last(ring, n);
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, 100), 2);
	assert_true(recovery_oldest_last_hour(ring, n, 100) == 10);
	recovery_forgive_all(ring, n);
	assert_int_equal(recovery_rebuilds_last_hour(ring, n, 100), 0);
	assert_true(recovery_oldest_last_hour(ring, n, 100) == 100);
}

/* Every cap from 1 to 12 against 0 to 12 rebuilds in the hour. */
static void
test_cap_boundaries(void **state)
{
	int max, k, capped;

	(void)state;
	for (max = 1; max <= 12; max++)
		for (k = 0; k <= 12; k++) {
			double ring[REBUILDS_HISTORY], next, oldest;
			size_t n = 0;
			int i;

			memset(ring, 0, sizeof(ring));
			/* one old rebuild outside the hour never counts */
			recovery_note_rebuild(ring, &n, NOW - 7200);
			for (i = 0; i < k; i++)
				recovery_note_rebuild(ring, &n,
				    NOW - 3000 + 60 * i);
			oldest = NOW - 3000;
			next = recovery_next_attempt(NOW, 5, ring, n, max,
			    &capped);
			if (k < max) {
				assert_false(capped);
				assert_true(next == NOW + 5);
			} else {
				assert_true(capped);
				/* not before the oldest leaves the hour */
				assert_true(next == oldest + 3600);
			}
		}
	/* a backoff longer than the wait for the hour wins */
	{
		double ring[REBUILDS_HISTORY] = { NOW - 3590 };
		size_t n = 1;

		assert_true(recovery_next_attempt(NOW, 300, ring, n, 1,
		    &capped) == NOW + 300);
		assert_true(capped);
		assert_true(recovery_next_attempt(NOW, 5, ring, n, 1,
		    &capped) == NOW + 10);
		assert_true(capped);
	}
}

static void
test_hysteresis(void **state)
{
	int ftd, c, code;

	(void)state;
	for (ftd = 1; ftd <= 5; ftd++)
		for (c = 1; c <= 6; c++)
			for (code = 0; code < DIAG_COUNT; code++) {
				int want = c >= ftd ||
				    code == DIAG_CONTAINER_DIED ||
				    code == DIAG_GENERATION_STALLED;

				assert_int_equal(recovery_check_degrades(c, ftd,
				    (enum diag_code)code), want);
			}
	/* the default of 2: one failed cycle is noted, two degrade */
	assert_false(recovery_check_degrades(1, 2, DIAG_VLLM_EXITED));
	assert_true(recovery_check_degrades(2, 2, DIAG_VLLM_EXITED));
	assert_true(recovery_check_degrades(1, 2, DIAG_CONTAINER_DIED));
	assert_true(recovery_check_degrades(1, 2, DIAG_GENERATION_STALLED));
}

static void
test_attempts_reset(void **state)
{
	(void)state;
	assert_false(recovery_attempts_reset(3, 1, RECOVERY_STABLE_S));
	assert_true(recovery_attempts_reset(3, 1, RECOVERY_STABLE_S + 0.001));
	assert_false(recovery_attempts_reset(3, 0, RECOVERY_STABLE_S + 100));
	assert_false(recovery_attempts_reset(0, 1, RECOVERY_STABLE_S + 100));
	assert_true(recovery_attempts_reset(1, 1, 1e9));
}

static void
test_count_failure(void **state)
{
	struct fail_count f[3];
	size_t n = 0;

	(void)state;
	memset(f, 0, sizeof(f));
	recovery_count_failure(f, &n, 3, DIAG_CONTAINER_DIED);
	recovery_count_failure(f, &n, 3, DIAG_CONTAINER_DIED);
	recovery_count_failure(f, &n, 3, DIAG_CUDA_OOM);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].reason, "container-died");
	assert_int_equal(f[0].n, 2);
	assert_string_equal(f[1].reason, "cuda-oom");
	assert_int_equal(f[1].n, 1);
	recovery_count_failure(f, &n, 3, DIAG_KV_CACHE_TOO_SMALL);
	assert_int_equal(n, 3);
	assert_string_equal(f[2].reason, "kv-cache-too-small");
	/* full: a new reason is dropped, a known one still counts */
	recovery_count_failure(f, &n, 3, DIAG_HOST_KEY);
	assert_int_equal(n, 3);
	recovery_count_failure(f, &n, 3, DIAG_CUDA_OOM);
	assert_int_equal(f[1].n, 2);
	/* every name fits the metrics label */
	{
		int c;

		for (c = 0; c < DIAG_COUNT; c++)
			assert_true(strlen(diag_code_name((enum diag_code)c)) <
			    sizeof(f[0].reason));
	}
}

static void
test_preflight_diagnosis(void **state)
{
	static const struct {
		enum pf_check	 check;
		const char	*detail;
		const char	*code;
	} t[] = {
		{ PF_SSH, "host key mismatch", "host-key" },
		{ PF_SSH, "not in known_hosts", "host-key" },
		{ PF_SSH, "authentication failed", "ssh-auth" },
		{ PF_SSH, "connection refused", "node-unreachable" },
		{ PF_SSH, "", "node-unreachable" },
		{ PF_ENGINE, "Cannot connect to the Docker daemon at unix:///var/"
		  "run/docker.sock. Is the docker daemon running?",
		  "engine-down" },
		/* only a recognised text is a diagnosis (issue 29) */
		{ PF_ENGINE, "Cannot connect", "unrecognised-answer" },
		{ PF_IMAGE, "absent: Error response from daemon: No such image: "
		  "x:1", "image-missing" },
		{ PF_IMAGE, "absent: Error: inspecting object: x:1: image not "
		  "known", "image-missing" },
		{ PF_IMAGE, "not present", "unrecognised-answer" },
		{ PF_IMAGE, "differs: 6fbc003f34b6 here, 20cfc4c663f3 on head",
		  "image-mismatch" },
		{ PF_MODEL, "config.json missing", "model-missing" },
		{ PF_MODEL, "differs from head's in 1 file: config.json",
		  "model-mismatch" },
		{ PF_MODEL, "directory missing: sh: 1: cd: can't cd to /m",
		  "model-missing" },
		{ PF_IFACE, "does not carry the node's ip", "interface-wrong" },
		{ PF_IFACE, "no such interface", "interface-wrong" },
		{ PF_LINK, "link-down: node2: enp1s0f0np0 has no carrier",
		  "link-down" },
		{ PF_LINK, "link-unreachable: node1 cannot reach node2",
		  "link-unreachable" },
		{ PF_LINK, "mtu-mismatch: the fast link's MTU differs",
		  "mtu-mismatch" },
		{ PF_LINK, "interface-wrong: node2: no interface enp1s0f1np1",
		  "interface-wrong" },
		/* could not tell: the finding's message, no code */
		{ PF_LINK, "could not tell whether node1 reaches node2",
		  "unrecognised-answer" },
		{ PF_GPUS, "no NPUs visible", "gpus-missing" },
		{ PF_GPUS, "8 NPUs (910B4), not healthy: NPU 5 chip 0 Critical",
		  "gpus-missing" },
		{ PF_GPUS, "NPUs: could not tell: npu-smi answered \"x\"",
		  "unrecognised-answer" },
		{ PF_MEMORY, "NPU 0 chip 0 has 24.0 of 64.0 GiB free, less than "
		  "--gpu-memory-utilization 0.6 asks (38.4 GiB)",
		  "gpu-memory-low" },
		{ PF_RAYPORT, "held by another process", "port-in-use" },
		{ PF_NAME, "vllm-head exists, not started by tandem",
		  "foreign-container" },
		/* a runtime list without nvidia fails nothing (the hook) */
		{ PF_NVIDIA, "absent: docker info Runtimes: runc",
		  "unrecognised-answer" },
		{ PF_NVIDIA, "refused: Error: setting up CDI devices: "
		  "unresolvable CDI devices nvidia.com/gpu=all",
		  "cdi-unresolvable" },
		{ PF_NVIDIA, "driver: nvidia-container-cli: initialization "
		  "error: nvml error: driver not loaded: unknown",
		  "gpus-missing" },
		{ PF_NVIDIA, "refused: docker: Error response from daemon: could "
		  "not select device driver \"\" with capabilities: [[gpu]].",
		  "nvidia-runtime-missing" },
		/* the incident: the query rejected, never the runtime missing */
		{ PF_NVIDIA, "not checked: template: :1:2: executing \"\" at "
		  "<.Runtimes>: unsupported", "unrecognised-answer" },
		{ PF_ENGINE, "host key", "unrecognised-answer" },
		{ PF_COUNT, "", "unrecognised-answer" },
	};
	int seen[PF_COUNT] = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_string_equal(diag_code_name(recovery_preflight_diag(
		    t[i].check, t[i].detail)), t[i].code);
		if (t[i].check < PF_COUNT)
			seen[t[i].check] = 1;
	}
	for (i = 0; i < PF_COUNT; i++)
		assert_true(seen[i]);
	assert_int_equal(recovery_ssh_refused_diag("host key mismatch"),
	    DIAG_HOST_KEY);
	assert_int_equal(recovery_ssh_refused_diag("no known_hosts entry"),
	    DIAG_HOST_KEY);
	assert_int_equal(recovery_ssh_refused_diag("authentication failed"),
	    DIAG_SSH_AUTH);
	assert_int_equal(recovery_ssh_refused_diag(""), DIAG_SSH_AUTH);
	/* both are retried never: they stop and say what to do (rule 4) */
	assert_false(diag_get(DIAG_HOST_KEY)->retryable);
	assert_false(diag_get(DIAG_SSH_AUTH)->retryable);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gmu_of_step),
		cmocka_unit_test(test_ladder_every_rung),
		cmocka_unit_test(test_ladder_walk_and_edges),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_hour_window),
		cmocka_unit_test(test_ring_wraps),
		cmocka_unit_test(test_forgiven_near_boot),
		cmocka_unit_test(test_cap_boundaries),
		cmocka_unit_test(test_hysteresis),
		cmocka_unit_test(test_attempts_reset),
		cmocka_unit_test(test_count_failure),
		cmocka_unit_test(test_preflight_diagnosis),
	};

	return cmocka_run_group_tests_name("recovery", tests, NULL, NULL);
}
