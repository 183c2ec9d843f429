/*
 * The preflight's driver (lib/preflight/preflight_run.c), on a fake send:
 * each node's first commands go out, a node that is down is told down and
 * sent nothing, a command the send refuses is answered as its node's
 * session down (so the preflight still completes, and names it), and an
 * answer goes on to what it made due.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conffile.h"
#include "preflight_run.h"
#include "util.h"

/* What the fake send saw, and whether it lets a command go. */
struct sent {
	size_t	 n;
	size_t	 node[256];
	int	 tag[256];
	int	 refuse;	/* every send fails: the session is down */
};

static int
fake_send(void *ctx, const struct pf_cmd *c)
{
	struct sent *s = ctx;

	if (s->refuse)
		return -1;
	assert_true(s->n < 256);
	s->node[s->n] = c->node;
	s->tag[s->n] = c->tag;
	s->n++;
	return 0;
}

static struct config *
load(const char *path)
{
	char err[ERRLEN];
	struct config *cf = conffile_load(path, err, sizeof(err));

	if (cf == NULL)
		fail_msg("%s: %s", path, err);
	return cf;
}

/* A node up gets its commands; one down none, and is told down. */
static void
test_node_up_and_down(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct preflight *pf = preflight_new(cf);
	struct sent s = { 0 };
	struct pf_runner r = { .pf = pf, .send = fake_send, .ctx = &s };
	size_t i;

	(void)state;
	assert_true(cf->nnodes >= 2);
	preflight_run_node(&r, 0, 1, NULL);
	assert_true(s.n > 0);
	for (i = 0; i < s.n; i++)
		assert_int_equal(s.node[i], 0);
	i = s.n;
	preflight_run_node(&r, 1, 0, "ssh: connection refused");
	assert_int_equal(s.n, i);	/* nothing sent to a node down */
	assert_false(preflight_complete(pf));	/* node 0 still owes */
	preflight_free(pf);
	config_free(cf);
}

/*
 * Every send refused: every command is answered as the session down, so
 * the preflight completes without one answer from a node, and fails.
 */
static void
test_refused_send_answers_down(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct preflight *pf = preflight_new(cf);
	struct sent s = { .refuse = 1 };
	struct pf_runner r = { .pf = pf, .send = fake_send, .ctx = &s };
	enum diag_code code;
	size_t i, node;
	char ex[300];

	(void)state;
	for (i = 0; i < cf->nnodes; i++)
		preflight_run_node(&r, i, 1, NULL);
	preflight_run_more(&r);
	assert_int_equal(s.n, 0);
	assert_true(preflight_complete(pf));
	assert_true(preflight_failure(pf, &node, &code, ex, sizeof(ex)));
	assert_int_equal(node, 0);
	assert_non_null(strstr(ex, "ssh: session down"));
	preflight_free(pf);
	config_free(cf);
}

/* An answer is fed to the preflight: the node owes one command fewer. */
static void
test_answer_counts(void **state)
{
	struct config *cf = load("etc/tandem-dp.json");
	struct preflight *pf = preflight_new(cf);
	struct sent s = { 0 };
	struct pf_runner r = { .pf = pf, .send = fake_send, .ctx = &s };
	struct cmd_result down = { .exit_code = -1, .out = "", .err = "",
	    .error = "ssh: session down" };
	size_t i, n;

	(void)state;
	for (i = 0; i < cf->nnodes; i++)
		preflight_run_node(&r, i, 1, NULL);
	n = s.n;
	assert_true(n > 0);
	/* every command answered (as a session lost): complete, and the
	 * link check's pings are never due without an interface read */
	for (i = 0; i < n; i++)
		preflight_run_answer(&r, s.node[i], s.tag[i], &down);
	assert_int_equal(s.n, n);
	assert_true(preflight_complete(pf));
	preflight_free(pf);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_up_and_down),
		cmocka_unit_test(test_refused_send_answers_down),
		cmocka_unit_test(test_answer_counts),
	};

	return cmocka_run_group_tests_name("preflight_run", tests, NULL, NULL);
}
