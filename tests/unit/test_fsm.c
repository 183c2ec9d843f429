/*
 * The state machine against PRODUCT.md section 3: every state x action x
 * event, halted or not, topology ray or dp, is looked up in the table below
 * and compared with fsm_step. The contract gives the states, the actions
 * and rules 1-4; the table writes those rules out event by event. Where
 * the contract says nothing (an event that does not belong to the action),
 * nothing changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "fsm.h"

#define NSTATES		(ST_DEGRADED + 1)
#define NACTIONS	(A_PAUSED + 1)
#define NEVENTS		(EV_RECHECK_CLEARED + 1)
#define NFACTS		(FACT_SSH_REFUSED + 1)

#define S(x)		(1u << (x))
#define ANY_STATE	(S(ST_ABSENT) | S(ST_UP) | S(ST_SERVING) | S(ST_DEGRADED))
#define BUILT		(S(ST_UP) | S(ST_SERVING) | S(ST_DEGRADED))
#define A(x)		(1u << (x))
#define BUILDING	(A(A_TEARDOWN) | A(A_LOADING_IMAGE) | A(A_STARTING_RAY) | \
			 A(A_WAITING_RAY) | A(A_STARTING_VLLM) | \
			 A(A_WAITING_VLLM))
#define NOT_PAUSED	(A(A_IDLE) | A(A_WAITING_FOR_NODES) | A(A_BACKOFF) | \
			 BUILDING)
#define ANY		(-1)

/* Result states beyond the enum's. */
enum { SAME = 100, BROKEN };	/* BROKEN: degraded, but absent stays absent */

struct row {
	enum event	 ev;
	unsigned	 states;
	unsigned	 actions;
	int		 halted;	/* 0, 1 or ANY */
	int		 dp;		/* 0, 1 or ANY */
	int		 to_state;	/* a cstate, SAME or BROKEN */
	int		 to_action;	/* a caction or SAME */
	int		 to_halted;	/* 0, 1 or SAME */
	const char	*why;
};

/* First match wins; no match: nothing changes. */
static const struct row table[] = {
	/* Paused: the state follows what probes see; nothing acts. */
	{ EV_RESUME, S(ST_SERVING), A(A_PAUSED), ANY, ANY,
	  SAME, A_IDLE, 0, "resume a serving cluster: just watch it" },
	{ EV_RESUME, S(ST_ABSENT) | S(ST_UP) | S(ST_DEGRADED), A(A_PAUSED),
	  ANY, ANY, SAME, A_TEARDOWN, 0, "resume anything less: rebuild" },
	{ EV_CHECK_FAILED, ANY_STATE, A(A_PAUSED), ANY, ANY,
	  BROKEN, SAME, SAME, "paused: a failed check shows, nothing acts" },
	{ EV_NODES_MISSING, ANY_STATE, A(A_PAUSED), ANY, ANY,
	  BROKEN, SAME, SAME, "paused: a missing node shows, nothing acts" },
	{ EV_ADOPT_HEALTHY, ANY_STATE, A(A_PAUSED), ANY, ANY,
	  ST_SERVING, SAME, SAME, "paused at start: adopt what serves" },

	/* The operator. */
	{ EV_PAUSE, ANY_STATE, NOT_PAUSED, ANY, ANY,
	  SAME, A_PAUSED, SAME, "pause stops every action" },
	{ EV_REBUILD, ANY_STATE, NOT_PAUSED, ANY, ANY,
	  BROKEN, A_TEARDOWN, 0, "rebuild: tear down on purpose, retry again" },

	/* Rule 3: adopt a cluster that already serves; else rebuild. */
	{ EV_ADOPT_HEALTHY, ANY_STATE, A(A_IDLE), ANY, ANY,
	  ST_SERVING, SAME, SAME, "rule 3: adopt, no teardown" },
	{ EV_ADOPT_PARTIAL, ANY_STATE, A(A_IDLE), 0, ANY,
	  SAME, A_TEARDOWN, SAME, "rule 3: anything less is rebuilt" },

	/* Rule 2: wait for a missing node, then rebuild by itself. */
	{ EV_NODES_MISSING, ANY_STATE, NOT_PAUSED, 0, ANY,
	  BROKEN, A_WAITING_FOR_NODES, SAME, "rule 2: wait for the node" },
	{ EV_NODES_MISSING, ANY_STATE, NOT_PAUSED, 1, ANY,
	  BROKEN, SAME, SAME, "rule 4: stopped; the state still shows it" },
	{ EV_NODES_BACK, ANY_STATE, A(A_WAITING_FOR_NODES), ANY, ANY,
	  SAME, A_TEARDOWN, SAME, "rule 2: every node answers: rebuild" },

	/* A node without the image loads it from its archive first. */
	{ EV_LOAD_IMAGE, ANY_STATE, A(A_TEARDOWN), ANY, ANY,
	  SAME, A_LOADING_IMAGE, SAME, "preflight: load the image archive" },
	{ EV_IMAGE_LOADED, ANY_STATE, A(A_LOADING_IMAGE), ANY, ANY,
	  SAME, A_TEARDOWN, SAME, "loaded: on with the same rebuild" },

	/* Rule 1: a rebuild tears down everything, then head, workers, vLLM. */
	{ EV_TEARDOWN_DONE, ANY_STATE, A(A_TEARDOWN), ANY, ANY,
	  ST_ABSENT, A_STARTING_RAY, SAME, "rule 1: all gone, start the head" },
	{ EV_CONTAINERS_UP, ANY_STATE, A(A_STARTING_RAY), ANY, 0,
	  SAME, A_WAITING_RAY, SAME, "ray: wait for every node and GPU" },
	{ EV_CONTAINERS_UP, ANY_STATE, A(A_STARTING_RAY), ANY, 1,
	  ST_UP, A_WAITING_VLLM, SAME, "dp: containers run the engines" },
	{ EV_RAY_READY, ANY_STATE, A(A_WAITING_RAY), ANY, ANY,
	  ST_UP, A_STARTING_VLLM, SAME, "ray-up: start vLLM on the head" },
	{ EV_VLLM_STARTED, ANY_STATE, A(A_STARTING_VLLM), ANY, ANY,
	  SAME, A_WAITING_VLLM, SAME, "wait for vLLM to serve" },
	{ EV_VLLM_READY, ANY_STATE, A(A_WAITING_VLLM), ANY, ANY,
	  ST_SERVING, A_IDLE, SAME, "serving" },

	/* Rule 1: a failed check of a built cluster rebuilds all nodes. */
	{ EV_CHECK_FAILED, BUILT, A(A_IDLE) | BUILDING, 0, ANY,
	  ST_DEGRADED, A_TEARDOWN, SAME, "rule 1: rebuild everything" },
	{ EV_CHECK_FAILED, BUILT, NOT_PAUSED, ANY, ANY,
	  ST_DEGRADED, SAME, SAME, "degraded; stopped or already acting" },

	/* Rule 4: retries back off; what a retry cannot fix stops them. */
	{ EV_STEP_FAILED, ANY_STATE, A(A_IDLE) | BUILDING, ANY, ANY,
	  BROKEN, A_BACKOFF, SAME, "rule 4: back off, then retry" },
	{ EV_FATAL, ANY_STATE, NOT_PAUSED, ANY, ANY,
	  BROKEN, A_IDLE, 1, "rule 4: stop retrying, say what to do" },
	{ EV_BACKOFF_DONE, ANY_STATE, A(A_BACKOFF), ANY, ANY,
	  SAME, A_TEARDOWN, SAME, "rule 4: retry = a full rebuild" },
	{ EV_RECHECK_CLEARED, ANY_STATE, A(A_IDLE), 1, ANY,
	  BROKEN, A_TEARDOWN, 0, "rule 4: the cause cleared: rebuild by "
	  "itself" },
};
#define NROWS	(sizeof(table) / sizeof(table[0]))

static const struct row *
lookup(enum cstate s, enum caction a, int halted, int dp, enum event ev)
{
	size_t i;

	for (i = 0; i < NROWS; i++) {
		const struct row *r = &table[i];

		if (r->ev == ev && (r->states & S(s)) && (r->actions & A(a)) &&
		    (r->halted == ANY || r->halted == halted) &&
		    (r->dp == ANY || r->dp == dp))
			return r;
	}
	return NULL;
}

static void
test_table(void **state)
{
	int used[NROWS] = { 0 };
	int s, a, ev, halted, dp;
	size_t i;

	(void)state;
	for (s = 0; s < NSTATES; s++)
	for (a = 0; a < NACTIONS; a++)
	for (ev = 0; ev < NEVENTS; ev++)
	for (halted = 0; halted <= 1; halted++)
	for (dp = 0; dp <= 1; dp++) {
		const struct row *r = lookup((enum cstate)s, (enum caction)a,
		    halted, dp, (enum event)ev);
		int ws = s, wa = a, wh = halted, changed;
		struct fsm f;

		fsm_init(&f, dp);
		f.state = (enum cstate)s;
		f.action = (enum caction)a;
		f.halted = halted;
		if (r) {
			used[r - table] = 1;
			if (r->to_state == BROKEN)
				ws = s == ST_ABSENT ? ST_ABSENT : ST_DEGRADED;
			else if (r->to_state != SAME)
				ws = r->to_state;
			if (r->to_action != SAME)
				wa = r->to_action;
			if (r->to_halted != SAME)
				wh = r->to_halted;
		}
		changed = fsm_step(&f, (enum event)ev);
		if ((int)f.state != ws || (int)f.action != wa ||
		    f.halted != wh || changed != (ws != s || wa != a || wh != halted) ||
		    f.dp != dp)
			fail_msg("%s/%s%s%s + %s: got %s/%s halted %d (%d), "
			    "want %s/%s halted %d (%s)", state_name(
			    (enum cstate)s, dp), action_name((enum caction)a),
			    halted ? " halted" : "", dp ? " dp" : "",
			    event_name((enum event)ev), state_name(f.state, dp),
			    action_name(f.action), f.halted, changed,
			    state_name((enum cstate)ws, dp),
			    action_name((enum caction)wa), wh,
			    r ? r->why : "nothing changes");
	}
	/* a row no combination reaches is a mistake in the table */
	for (i = 0; i < NROWS; i++)
		if (!used[i])
			fail_msg("row %zu (%s) never matched", i, table[i].why);
}

/*
 * Which event a fact means, for every state, action and halted flag.
 * -1: none.
 */
static int
want_decision(enum fact fact, enum cstate s, enum caction a)
{
	switch (fact) {
	case FACT_CHECK_FAILED:
		return a == A_IDLE || a == A_PAUSED ? EV_CHECK_FAILED :
		    EV_STEP_FAILED;
	case FACT_CONTAINER_DIED:
		if (a == A_IDLE || a == A_PAUSED)
			return s == ST_ABSENT ? -1 : EV_CHECK_FAILED;
		if (a == A_STARTING_RAY || a == A_WAITING_RAY ||
		    a == A_STARTING_VLLM || a == A_WAITING_VLLM)
			return EV_STEP_FAILED;
		/* torn down on purpose, or nothing of ours runs */
		return -1;
	case FACT_NODE_LOST:
		return a == A_WAITING_FOR_NODES ? -1 : EV_NODES_MISSING;
	case FACT_SSH_REFUSED:
		return EV_FATAL;
	}
	return -2;
}

static void
test_decide(void **state)
{
	int fact, s, a, halted, dp;

	(void)state;
	for (fact = 0; fact < NFACTS; fact++)
	for (s = 0; s < NSTATES; s++)
	for (a = 0; a < NACTIONS; a++)
	for (halted = 0; halted <= 1; halted++)
	for (dp = 0; dp <= 1; dp++) {
		struct fsm f, before;
		enum event ev = EV_RESUME;
		int want = want_decision((enum fact)fact, (enum cstate)s,
		    (enum caction)a), got;

		fsm_init(&f, dp);
		f.state = (enum cstate)s;
		f.action = (enum caction)a;
		f.halted = halted;
		before = f;
		got = fsm_decide(&f, (enum fact)fact, &ev) ? (int)ev : -1;
		if (got != want)
			fail_msg("fact %d in %s/%s: got %s, want %s", fact,
			    state_name((enum cstate)s, dp),
			    action_name((enum caction)a),
			    got < 0 ? "none" : event_name((enum event)got),
			    want < 0 ? "none" : event_name((enum event)want));
		/* deciding changes nothing: only fsm_step writes the state */
		assert_memory_equal(&f, &before, sizeof(f));
	}
}

/* A walk through a cold start, the way the daemon drives it. */
static void
test_cold_start_path(void **state)
{
	struct fsm f;

	(void)state;
	fsm_init(&f, 0);
	assert_int_equal(f.state, ST_ABSENT);
	assert_int_equal(f.action, A_IDLE);
	assert_true(fsm_step(&f, EV_ADOPT_PARTIAL));
	assert_int_equal(f.action, A_TEARDOWN);
	assert_true(fsm_step(&f, EV_TEARDOWN_DONE));
	assert_int_equal(f.action, A_STARTING_RAY);
	assert_true(fsm_step(&f, EV_CONTAINERS_UP));
	assert_int_equal(f.action, A_WAITING_RAY);
	assert_true(fsm_step(&f, EV_RAY_READY));
	assert_int_equal(f.state, ST_UP);
	assert_int_equal(f.action, A_STARTING_VLLM);
	assert_true(fsm_step(&f, EV_VLLM_STARTED));
	assert_int_equal(f.action, A_WAITING_VLLM);
	assert_true(fsm_step(&f, EV_VLLM_READY));
	assert_int_equal(f.state, ST_SERVING);
	assert_int_equal(f.action, A_IDLE);
}

/* The topology set on a reload decides the next rebuild's steps. */
static void
test_set_dp(void **state)
{
	struct fsm f;

	(void)state;
	fsm_init(&f, 0);
	f.action = A_STARTING_RAY;
	fsm_set_dp(&f, 1);
	fsm_step(&f, EV_CONTAINERS_UP);
	assert_int_equal(f.state, ST_UP);
	assert_int_equal(f.action, A_WAITING_VLLM);
	assert_string_equal(state_name(f.state, f.dp), "nodes-up");
	fsm_init(&f, 1);
	f.action = A_STARTING_RAY;
	fsm_set_dp(&f, 0);
	fsm_step(&f, EV_CONTAINERS_UP);
	assert_int_equal(f.state, ST_ABSENT);
	assert_int_equal(f.action, A_WAITING_RAY);
	assert_string_equal(state_name(ST_UP, f.dp), "ray-up");
}

/* Rule 4 over several events: a stop holds until an operator asks. */
static void
test_fatal_stops_retries(void **state)
{
	struct fsm f;

	(void)state;
	fsm_init(&f, 0);
	f.state = ST_UP;
	f.action = A_WAITING_VLLM;
	fsm_step(&f, EV_FATAL);
	assert_false(fsm_step(&f, EV_CHECK_FAILED));
	assert_false(fsm_step(&f, EV_ADOPT_PARTIAL));
	fsm_step(&f, EV_NODES_MISSING);
	fsm_step(&f, EV_PAUSE);
	fsm_step(&f, EV_CHECK_FAILED);
	assert_true(f.halted);
	fsm_step(&f, EV_RESUME);
	assert_false(f.halted);
	assert_int_equal(f.action, A_TEARDOWN);
}

static void
test_rebuild_counts(void **state)
{
	int from, to;

	(void)state;
	for (from = 0; from < NACTIONS; from++)
		for (to = 0; to < NACTIONS; to++)
			assert_int_equal(fsm_starts_rebuild(
			    (enum caction)from, (enum caction)to),
			    to == A_TEARDOWN && from != A_TEARDOWN &&
			    from != A_LOADING_IMAGE);
}

/*
 * Issue 42: a resume that rebuilds nothing (paused while serving) is no
 * rebuild in tandem_rebuilds_total; one that must rebuild counts once.
 */
static void
test_resume_counts_no_rebuild(void **state)
{
	struct fsm f;
	enum caction was;

	(void)state;
	fsm_init(&f, 0);
	f.state = ST_SERVING;
	f.action = A_PAUSED;
	was = f.action;
	fsm_step(&f, EV_RESUME);
	assert_int_equal(f.action, A_IDLE);
	assert_false(fsm_starts_rebuild(was, f.action));
	f.state = ST_DEGRADED;
	f.action = A_PAUSED;
	was = f.action;
	fsm_step(&f, EV_RESUME);
	assert_int_equal(f.action, A_TEARDOWN);
	assert_true(fsm_starts_rebuild(was, f.action));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_cold_start_path),
		cmocka_unit_test(test_set_dp),
		cmocka_unit_test(test_fatal_stops_retries),
		cmocka_unit_test(test_rebuild_counts),
		cmocka_unit_test(test_resume_counts_no_rebuild),
	};

	return cmocka_run_group_tests_name("fsm", tests, NULL, NULL);
}
