/*
 * The API's connection queue (lib/api/connq.c): deadlines for a request head
 * and for the request, and at the limit the connection that waited
 * longest for its head makes room (issue 32: 1,000 clients trickling
 * headers and 5,000 idle ones from one address must leave a complete
 * GET /status its way in).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "connq.h"

#define HEAD	5000
#define REQ	10000

static void
test_limit_for(void **state)
{
	(void)state;
	assert_int_equal(connq_limit_for(16384), CONNQ_MAX);
	assert_int_equal(connq_limit_for(CONNQ_MAX + CONNQ_FD_RESERVE +
	    CONNQ_SLACK), CONNQ_MAX);
	assert_int_equal(connq_limit_for(1024), 1024 - CONNQ_FD_RESERVE -
	    CONNQ_SLACK);
	assert_int_equal(connq_limit_for(2048), 2048 - CONNQ_FD_RESERVE -
	    CONNQ_SLACK);
	assert_int_equal(connq_limit_for(UINT64_MAX), CONNQ_MAX);
	assert_int_equal(connq_limit_for(100), CONNQ_MIN);
	assert_int_equal(connq_limit_for(0), CONNQ_MIN);
	/* systemd's default soft limit leaves the API 704 */
	assert_true(connq_limit_for(1024) >= 700);
}

static void
test_deadlines(void **state)
{
	struct connq q;
	struct connq_ent a, b, c;

	(void)state;
	connq_init(&q, 10, HEAD, REQ);
	assert_int_equal(connq_next_deadline(&q), UINT64_MAX);
	assert_null(connq_overdue(&q, 1000000));
	assert_null(connq_add(&q, &a, 0));
	assert_null(connq_add(&q, &b, 1000));
	assert_null(connq_add(&q, &c, 2000));
	assert_int_equal(q.n, 3);
	assert_int_equal(connq_next_deadline(&q), HEAD);
	/* b's head is in: it has REQ from then */
	connq_head_done(&q, &b, 3000);
	assert_int_equal(b.phase, CONNQ_REQUEST);
	assert_int_equal(b.deadline, 3000 + REQ);
	connq_head_done(&q, &b, 3500);		/* a second call: no change */
	assert_int_equal(b.deadline, 3000 + REQ);
	assert_null(connq_overdue(&q, HEAD - 1));
	assert_ptr_equal(connq_overdue(&q, HEAD), &a);
	assert_int_equal(a.phase, CONNQ_CLOSING);
	assert_int_equal(q.head_timeouts, 1);
	assert_int_equal(connq_next_deadline(&q), 2000 + HEAD);
	assert_ptr_equal(connq_overdue(&q, 20000), &c);
	assert_ptr_equal(connq_overdue(&q, 20000), &b);
	assert_null(connq_overdue(&q, 20000));
	assert_int_equal(q.head_timeouts, 2);
	assert_int_equal(q.request_timeouts, 1);
	assert_int_equal(q.n, 0);
	/* closed by then: gone already, nothing to undo */
	connq_remove(&q, &a);
	connq_remove(&q, &b);
	connq_remove(&q, &c);
	assert_int_equal(q.n, 0);
}

/* An answered request waits for the next head on a kept-alive connection. */
static void
test_keepalive(void **state)
{
	struct connq q;
	struct connq_ent a;

	(void)state;
	connq_init(&q, 10, HEAD, REQ);
	connq_add(&q, &a, 0);
	connq_head_done(&q, &a, 10);
	connq_answered(&q, &a, 20);
	assert_int_equal(a.phase, CONNQ_HEAD);
	assert_int_equal(a.deadline, 20 + HEAD);
	assert_null(connq_overdue(&q, 20 + HEAD - 1));
	assert_ptr_equal(connq_overdue(&q, 20 + HEAD), &a);
	connq_answered(&q, &a, 30);		/* a closing one stays so */
	assert_int_equal(a.phase, CONNQ_CLOSING);
	assert_int_equal(q.n, 0);
}

/*
 * At the limit, the one that waited longest for its head goes, also when
 * it arrived after connections busy with a request; never the newcomer.
 */
static void
test_evicts_oldest_head(void **state)
{
	struct connq q;
	struct connq_ent e[5], fresh, last, more[3];
	int i;

	(void)state;
	connq_init(&q, 5, HEAD, REQ);
	for (i = 0; i < 5; i++)
		assert_null(connq_add(&q, &e[i], (uint64_t)i));
	connq_head_done(&q, &e[0], 10);		/* e[0] and e[1] busy */
	connq_head_done(&q, &e[1], 10);
	assert_ptr_equal(connq_add(&q, &fresh, 20), &e[2]);
	assert_int_equal(e[2].phase, CONNQ_CLOSING);
	assert_int_equal(q.n, 5);
	assert_int_equal(q.evicted, 1);
	assert_ptr_equal(connq_add(&q, &last, 30), &e[3]);
	/* e[4], then the newcomers, before any busy one */
	for (i = 0; i < 3; i++) {
		struct connq_ent *v = connq_add(&q, &more[i], 40);

		assert_non_null(v);
		assert_int_equal(v == &e[0] || v == &e[1], 0);
	}
	assert_int_equal(q.n, 5);
	assert_int_equal(q.evicted, 5);
}

/* Every slot busy with a request: the oldest request makes room. */
static void
test_evicts_oldest_request(void **state)
{
	struct connq q;
	struct connq_ent e[3], fresh;
	int i;

	(void)state;
	connq_init(&q, 3, HEAD, REQ);
	for (i = 0; i < 3; i++) {
		connq_add(&q, &e[i], (uint64_t)i);
		connq_head_done(&q, &e[i], (uint64_t)i);
	}
	assert_ptr_equal(connq_add(&q, &fresh, 5), &e[0]);
	assert_int_equal(fresh.phase, CONNQ_HEAD);
	assert_int_equal(q.n, 3);
}

/*
 * The flood of issue 32 against a limit of 704 (systemd's default 1024
 * open files): 5,000 idle connections and 1,000 trickling ones, then a
 * GET /status. However many come, the queue stays at its limit, the
 * newest connection is always in, and only connections waiting for a
 * head are closed.
 */
static void
test_flood(void **state)
{
	size_t limit = connq_limit_for(1024), i, n = 6000;
	struct connq_ent *e = calloc(n + 1, sizeof(*e));
	struct connq q;
	struct connq_ent *v;
	uint64_t closed = 0;

	(void)state;
	connq_init(&q, limit, HEAD, REQ);
	for (i = 0; i < n; i++) {
		if ((v = connq_add(&q, &e[i], i / 10)) != NULL) {
			assert_int_equal(v->phase, CONNQ_CLOSING);
			assert_true(v < &e[i]);
			closed++;
		}
		assert_true(q.n <= limit);
	}
	assert_int_equal(closed, n - limit);
	assert_int_equal(q.n, limit);
	/* GET /status: in, its head complete at once, answered */
	v = connq_add(&q, &e[n], n / 10);
	assert_non_null(v);
	assert_int_equal(e[n].phase, CONNQ_HEAD);
	connq_head_done(&q, &e[n], n / 10);
	connq_answered(&q, &e[n], n / 10);
	connq_remove(&q, &e[n]);
	assert_int_equal(q.n, limit - 1);
	free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit_for),
		cmocka_unit_test(test_deadlines),
		cmocka_unit_test(test_keepalive),
		cmocka_unit_test(test_evicts_oldest_head),
		cmocka_unit_test(test_evicts_oldest_request),
		cmocka_unit_test(test_flood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
