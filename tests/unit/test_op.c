/*
 * The executor (daemon/cluster/act/op.c) alone, on a fake transport: an
 * answer reaches a live owner after the hooks, a cancelled owner's is
 * dropped, the registry cancels by when (the current action's own with
 * the sessions), and the starts in flight are counted. It links no part
 * of the runtime: op.c keeps all it needs in struct exec.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "op.h"

#define SENT_MAX	8

/* The transport: what was sent, to answer it by hand. */
static struct {
	cmd_done_fn	*done[SENT_MAX];
	void		*arg[SENT_MAX];
	size_t		 n;
	int		 down;		/* ssh refuses: the session is down */
	int		 hook_sent;
	int		 hook_answered;
	int		 starts_at_hook;	/* starts_inflight the hook saw */
	void		*hook_arg;
	int		 owner_heard;	/* answers the owner got */
	int		 owner_after_hook;	/* the hook had heard first */
} F;

static int
fake_ssh(void *ctx, size_t node, const char *cmd, double timeout_s,
    cmd_done_fn *done, void *arg)
{
	(void)ctx;
	(void)node;
	(void)cmd;
	(void)timeout_s;
	if (F.down)
		return -1;
	assert_true(F.n < SENT_MAX);
	F.done[F.n] = done;
	F.arg[F.n] = arg;
	F.n++;
	return 0;
}

static void
fake_http(void *ctx, const char *url, const char *body, double timeout_s,
    http_done_fn *done, void *arg)
{
	(void)ctx;
	(void)url;
	(void)body;
	(void)timeout_s;
	(void)done;
	(void)arg;
}

static int
fake_up(void *ctx, size_t node)
{
	(void)ctx;
	return node == 0;
}

static void
on_sent(void *arg, struct op *o, enum trace_kind k)
{
	(void)o;
	(void)k;
	F.hook_arg = arg;
	F.hook_sent++;
}

static void
on_answered(void *arg, struct op *o)
{
	F.hook_arg = arg;
	F.hook_answered++;
	F.starts_at_hook = o->exec->starts_inflight;
}

static void
owner_answered(struct owner *w, struct op *o, const struct answer *a)
{
	(void)w;
	(void)o;
	assert_non_null(a->cmd);
	F.owner_heard++;
	F.owner_after_hook = F.hook_answered == F.owner_heard;
}

/* Each test's executor on the fake transport, and an owner of it. */
static struct exec	 E;
static struct owner	 W;

static int
setup(void **state)
{
	(void)state;
	memset(&F, 0, sizeof(F));
	E = (struct exec){ .ssh = fake_ssh, .http = fake_http, .up = fake_up,
	    .sent = on_sent, .answered = on_answered, .hook_arg = &F };
	owner_init(&W, &E, owner_answered);
	return 0;
}

/* The transport answers the i-th command sent. */
static void
answer(size_t i)
{
	struct cmd_result r = { .exit_code = 0, .out = "", .err = "" };

	F.done[i](&r, F.arg[i]);
}

static void
test_answer_reaches_owner_after_hooks(void **state)
{
	(void)state;
	assert_int_equal(op_ssh(&W, 0, 1, 0, "true", 5, TS_TEARDOWN), 0);
	assert_int_equal(F.hook_sent, 1);
	assert_ptr_equal(F.hook_arg, &F);
	assert_int_equal(owner_count(&W), 1);
	answer(0);
	assert_int_equal(F.owner_heard, 1);
	assert_true(F.owner_after_hook);
	assert_int_equal(owner_count(&W), 0);
	/* an op of no trace step is not told as sent */
	assert_int_equal(op_ssh(&W, 0, 1, 0, "true", 5, TS_COUNT), 0);
	assert_int_equal(F.hook_sent, 1);
	answer(1);
}

static void
test_cancelled_answer_dropped(void **state)
{
	(void)state;
	op_ssh(&W, 0, 1, 0, "true", 5, TS_COUNT);
	owner_cancel(&W);
	assert_int_equal(owner_count(&W), 0);
	answer(0);		/* the transport still answers once */
	assert_int_equal(F.owner_heard, 0);
	assert_int_equal(F.hook_answered, 1);
}

static void
test_registry_cancels_by_when(void **state)
{
	struct owner *both = &W;	/* bg's and hw's when */
	struct owner at_free, act;

	(void)state;
	owner_init(&at_free, &E, owner_answered);
	owner_init(&act, &E, owner_answered);
	owners_register(both, OWNERS_SESSIONS | OWNERS_FREE);
	owners_register(&at_free, OWNERS_SESSIONS);
	owners_register(&at_free, OWNERS_FREE);	/* again: its when, replaced */
	assert_int_equal(E.nowners, 2);
	E.acting = &act;
	op_ssh(both, 0, 1, 0, "a", 5, TS_COUNT);
	op_ssh(&at_free, 0, 1, 0, "b", 5, TS_COUNT);
	op_ssh(&act, 0, 1, 0, "c", 5, TS_COUNT);
	/* new sessions: the action's and both's are void, at_free's not */
	owners_cancel(&E, OWNERS_SESSIONS);
	assert_int_equal(owner_count(both), 0);
	assert_int_equal(owner_count(&act), 0);
	assert_int_equal(owner_count(&at_free), 1);
	answer(0);
	answer(2);
	assert_int_equal(F.owner_heard, 0);
	/* the cluster goes: the rest, but not the action's (it ended first) */
	op_ssh(&act, 0, 1, 0, "d", 5, TS_COUNT);
	owners_cancel(&E, OWNERS_FREE);
	assert_int_equal(owner_count(&at_free), 0);
	assert_int_equal(owner_count(&act), 1);
	answer(1);
	assert_int_equal(F.owner_heard, 0);
	answer(3);
	assert_int_equal(F.owner_heard, 1);
}

static void
test_starts_in_flight(void **state)
{
	(void)state;
	op_ssh(&W, 0, 1, OP_START, "docker run", 5, TS_COUNT);
	op_ssh(&W, 1, 1, OP_START, "docker run", 5, TS_COUNT);
	op_ssh(&W, 0, 2, 0, "ray status", 5, TS_COUNT);
	assert_int_equal(E.starts_inflight, 2);
	/* a start never sent is not waited for, and leaves no op */
	F.down = 1;
	assert_int_equal(op_ssh(&W, 1, 1, OP_START, "docker run", 5,
	    TS_COUNT), -1);
	F.down = 0;
	assert_int_equal(E.starts_inflight, 2);
	assert_int_equal(owner_count(&W), 3);
	answer(2);
	assert_int_equal(E.starts_inflight, 2);
	/* counted before the hook hears: the stop sees the last one go */
	answer(0);
	assert_int_equal(F.starts_at_hook, 1);
	owner_cancel(&W);	/* a cancelled start is still in flight */
	assert_int_equal(E.starts_inflight, 1);
	answer(1);
	assert_int_equal(F.starts_at_hook, 0);
	assert_int_equal(E.starts_inflight, 0);
}

static void
test_node_up(void **state)
{
	(void)state;
	assert_true(op_node_up(&E, 0));
	assert_false(op_node_up(&E, 1));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_answer_reaches_owner_after_hooks,
		    setup),
		cmocka_unit_test_setup(test_cancelled_answer_dropped, setup),
		cmocka_unit_test_setup(test_registry_cancels_by_when, setup),
		cmocka_unit_test_setup(test_starts_in_flight, setup),
		cmocka_unit_test_setup(test_node_up, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
