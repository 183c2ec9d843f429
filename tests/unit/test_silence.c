/*
 * Whether a node's silence is its own (lib/policy/silence.c): the daemon's
 * beats against the socket's last data each way, as tcp_info gives them.
 * A look happens at every pump, before that pump's beat is asked and
 * written; the tests drive it the same way, a beat every 1000 ms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "silence.h"

#define BEAT	1000	/* keepalive_s 1: the bed's */
#define LIMIT	3000	/* 3 x keepalive_s with the heartbeat */

/* The socket as the kernel keeps it: when data last went each way. */
struct sock {
	uint64_t	 in_ms;
	uint64_t	 out_ms;
};

static uint64_t
look(struct silence *s, const struct sock *k, uint64_t now)
{
	return silence_look(s, now, (uint32_t)(now - k->in_ms),
	    (uint32_t)(now - k->out_ms), BEAT);
}

/* A pump at now that asks a beat and writes it at once. */
static uint64_t
pump_and_beat(struct silence *s, struct sock *k, uint64_t now)
{
	uint64_t q = look(s, k, now);

	silence_beat(s, now);
	k->out_ms = now + 1;
	return q;
}

/* Answered beats: never near the limit, and nothing owed after. */
static void
test_answered(void **state)
{
	struct silence s;
	struct sock k = { 1000, 1000 };
	uint64_t t;

	(void)state;
	silence_start(&s, 1000);
	for (t = 1000; t <= 20000; t += BEAT) {
		assert_true(pump_and_beat(&s, &k, t) < BEAT + 10);
		k.in_ms = t + 2;	/* the echo, 1 ms later */
	}
	assert_int_equal(look(&s, &k, 20003), 0);
	assert_int_equal(silence_owed_ago(&s, 20003), 0);
}

/*
 * A cut node: as before, silent from its last byte, so it is lost 3 s
 * after its last echo (at most one beat less than the limit after the
 * cut), not a beat later.
 */
static void
test_cut_as_before(void **state)
{
	struct silence s;
	struct sock k = { 1000, 1000 };
	uint64_t t, q = 0;

	(void)state;
	silence_start(&s, 1000);
	for (t = 1000; t <= 5000; t += BEAT) {
		q = pump_and_beat(&s, &k, t);
		k.in_ms = t + 2;
	}
	/* cut after the echo of 5000: nothing comes any more */
	for (t = 6000; t <= 8000; t += BEAT)
		assert_true(pump_and_beat(&s, &k, t) <= LIMIT);
	q = look(&s, &k, 8003);
	assert_int_equal(q, 3001);	/* since the last byte, 5002 */
	assert_true(q > LIMIT);
	/* the oldest unanswered beat, 6000's, written 2003 ms ago */
	assert_int_equal(silence_owed_ago(&s, 8003), 2003);
}

/*
 * The daemon stands still 2.5 s after the node's last echo (less than
 * alive_watch's two-beat stand-still: not seen as one), then its beat
 * waits unwritten for a second (libssh2 blocked outbound). Nothing was
 * asked meanwhile: not the node's silence. The node's last byte was
 * 3.5 s before, so counted from it (the daemon before) the node was lost.
 */
static void
test_daemon_stall_not_the_nodes(void **state)
{
	struct silence s;
	struct sock k = { 1000, 1000 };
	uint64_t t, q;

	(void)state;
	silence_start(&s, 1000);
	for (t = 1000; t <= 3000; t += BEAT) {
		pump_and_beat(&s, &k, t);
		k.in_ms = t + 2;
	}
	/* stood still from 3002 to 5500: nothing asked, nothing written */
	q = look(&s, &k, 5500);
	assert_int_equal(q, 0);
	silence_beat(&s, 5500);		/* asked, not written */
	q = look(&s, &k, 6500);
	assert_int_equal(q, 0);
	assert_true(6500 - k.in_ms > LIMIT);	/* the old measure: lost */
	k.out_ms = 6501;		/* written after that look */
	q = look(&s, &k, 7500);
	/* owed from the look before the write, plus one beat */
	assert_int_equal(q, 1000 + BEAT);
	assert_true(q <= LIMIT);
	k.in_ms = 6800;			/* the echo came: answered */
	q = look(&s, &k, 7600);
	assert_int_equal(q, 0);
}

/* A beat written and never answered is the node's, from then on. */
static void
test_unanswered_counts(void **state)
{
	struct silence s;
	struct sock k = { 1000, 1000 };
	uint64_t q;

	(void)state;
	silence_start(&s, 1000);
	pump_and_beat(&s, &k, 1000);
	k.in_ms = 1002;
	/* the daemon asks again only at 4000 (a stall), writes at once */
	pump_and_beat(&s, &k, 4000);
	q = look(&s, &k, 5000);
	assert_int_equal(q, 1000 + BEAT);
	q = look(&s, &k, 6001);
	assert_true(q > LIMIT - BEAT);
	q = look(&s, &k, 6500);
	assert_int_equal(q, 2500 + BEAT);
	assert_true(q > LIMIT);
}

/* Data out before the beat was asked does not count as the beat. */
static void
test_earlier_data_is_not_the_beat(void **state)
{
	struct silence s;
	struct sock k = { 1000, 1000 };

	(void)state;
	silence_start(&s, 1000);
	k.in_ms = 1000;
	k.out_ms = 1500;		/* a command, answered or not */
	look(&s, &k, 2000);
	silence_beat(&s, 2000);		/* not written: blocked */
	assert_int_equal(look(&s, &k, 3000), 0);
	assert_int_equal(silence_owed_ago(&s, 3000), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answered),
		cmocka_unit_test(test_cut_as_before),
		cmocka_unit_test(test_daemon_stall_not_the_nodes),
		cmocka_unit_test(test_unanswered_counts),
		cmocka_unit_test(test_earlier_data_is_not_the_beat),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
