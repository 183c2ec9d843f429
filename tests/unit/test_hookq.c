/*
 * hooks.on_state's queue and environment (lib/api/hookq.c): changes wait in
 * order, a full queue folds a new change into the newest waiting one (its
 * OLD state kept, TANDEM_COALESCED counting), and the command's
 * environment is the daemon's without its TANDEM_* plus the change.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hookq.h"

static void
change(struct hook_event *e, const char *from, const char *to, int gen)
{
	hook_event_set(e, "c", from, to, "idle", NULL, NULL, "why", gen, 1.5);
}

static void
test_order(void **state)
{
	struct hookq q;
	struct hook_event e, out;

	(void)state;
	memset(&q, 0, sizeof(q));
	assert_int_equal(hookq_pop(&q, &out), 0);
	change(&e, "absent", "ray-up", 1);
	hookq_push(&q, &e);
	change(&e, "ray-up", "serving", 1);
	hookq_push(&q, &e);
	assert_int_equal(hookq_pop(&q, &out), 1);
	assert_string_equal(out.old_state, "absent");
	assert_string_equal(out.new_state, "ray-up");
	change(&e, "serving", "degraded", 1);
	hookq_push(&q, &e);
	assert_int_equal(hookq_pop(&q, &out), 1);
	assert_string_equal(out.new_state, "serving");
	assert_int_equal(hookq_pop(&q, &out), 1);
	assert_string_equal(out.new_state, "degraded");
	assert_int_equal(out.coalesced, 0);
	assert_int_equal(hookq_pop(&q, &out), 0);
}

/* A command that hangs while the cluster flaps: the queue stays bounded
 * and its last entry ends where the cluster is. */
static void
test_full_folds(void **state)
{
	static const char *const st[] = { "serving", "degraded", "absent",
	    "ray-up" };
	struct hookq q;
	struct hook_event e, out;
	int i, n = 0;

	(void)state;
	memset(&q, 0, sizeof(q));
	for (i = 0; i < HOOKQ_MAX + 10; i++) {
		change(&e, st[i % 4], st[(i + 1) % 4], i);
		hookq_push(&q, &e);
	}
	assert_int_equal(q.n, HOOKQ_MAX);
	assert_int_equal(q.coalesced_total, 10);
	while (hookq_pop(&q, &out)) {
		n++;
		if (n < HOOKQ_MAX) {
			assert_int_equal(out.coalesced, 0);
			assert_int_equal(out.generation, n - 1);
		}
	}
	assert_int_equal(n, HOOKQ_MAX);
	/* the 16th entry began with change 15 and ends with the last (25) */
	assert_int_equal(out.coalesced, 10);
	assert_string_equal(out.old_state, st[(HOOKQ_MAX - 1) % 4]);
	assert_string_equal(out.new_state, st[(HOOKQ_MAX + 10) % 4]);
	assert_int_equal(out.generation, HOOKQ_MAX + 9);
}

static const char *
getv(const struct strv *env, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < env->n; i++)
		if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=')
			return env->v[i] + n + 1;
	return NULL;
}

static void
test_env(void **state)
{
	char *daemon_env[] = { "PATH=/usr/bin", "TANDEM_CONFIG=/x",
	    "TANDEM_NEW_STATE=forged", "HOME=/root", NULL };
	struct hook_event e;
	struct strv env;
	size_t i, n = 0;

	(void)state;
	hook_event_set(&e, "spark", "serving", "degraded", "waiting-for-nodes",
	    "node-unreachable", "node node2 unreachable: silent for 4.0 s\n",
	    "node-unreachable: ...", 7, 1733330000.25);
	hook_env(&e, daemon_env, &env);
	assert_string_equal(getv(&env, "PATH"), "/usr/bin");
	assert_string_equal(getv(&env, "HOME"), "/root");
	assert_null(getv(&env, "TANDEM_CONFIG"));
	assert_string_equal(getv(&env, "TANDEM_CLUSTER"), "spark");
	assert_string_equal(getv(&env, "TANDEM_OLD_STATE"), "serving");
	assert_string_equal(getv(&env, "TANDEM_NEW_STATE"), "degraded");
	assert_string_equal(getv(&env, "TANDEM_ACTION"), "waiting-for-nodes");
	assert_string_equal(getv(&env, "TANDEM_DIAGNOSIS"), "node-unreachable");
	assert_string_equal(getv(&env, "TANDEM_DIAGNOSIS_MESSAGE"),
	    "node node2 unreachable: silent for 4.0 s\n");
	assert_string_equal(getv(&env, "TANDEM_GENERATION"), "7");
	assert_string_equal(getv(&env, "TANDEM_TIME"), "1733330000.250");
	assert_string_equal(getv(&env, "TANDEM_COALESCED"), "0");
	for (i = 0; i < env.n; i++)
		if (strncmp(env.v[i], "TANDEM_NEW_STATE=", 17) == 0)
			n++;
	assert_int_equal(n, 1);
	assert_null(env.v[env.n]);
	strv_free(&env);

	/* no diagnosis: empty, not absent; remote bytes made UTF-8 */
	hook_event_set(&e, "c", "degraded", "serving", "idle", NULL, NULL,
	    "\xff", 8, 0);
	hook_env(&e, NULL, &env);
	assert_string_equal(getv(&env, "TANDEM_DIAGNOSIS"), "");
	assert_string_equal(getv(&env, "TANDEM_REASON"), "\xef\xbf\xbd");
	strv_free(&env);
}

/* hooks.on_change: the verdict, and none of a change of state's names. */
static void
test_change_env(void **state)
{
	char *daemon_env[] = { "PATH=/usr/bin", "TANDEM_CHANGE_RESULT=x",
	    NULL };
	struct hook_event e;
	struct strv env;

	(void)state;
	hook_change_set(&e, "spark", "rolled-back", "00000000000000aa",
	    "00000000000000bb", "vllm-kv-cache: too small", 9, 1733330000.5);
	hook_env(&e, daemon_env, &env);
	assert_string_equal(getv(&env, "PATH"), "/usr/bin");
	assert_string_equal(getv(&env, "TANDEM_CLUSTER"), "spark");
	assert_string_equal(getv(&env, "TANDEM_CHANGE_RESULT"), "rolled-back");
	assert_string_equal(getv(&env, "TANDEM_CHANGE_FROM"),
	    "00000000000000aa");
	assert_string_equal(getv(&env, "TANDEM_CHANGE_TO"), "00000000000000bb");
	assert_string_equal(getv(&env, "TANDEM_CHANGE_REASON"),
	    "vllm-kv-cache: too small");
	assert_string_equal(getv(&env, "TANDEM_GENERATION"), "9");
	assert_string_equal(getv(&env, "TANDEM_TIME"), "1733330000.500");
	assert_null(getv(&env, "TANDEM_OLD_STATE"));
	assert_null(env.v[env.n]);
	strv_free(&env);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_full_folds),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_change_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
