/*
 * A stream cut into lines (lib/linebuf.c): every split of the bytes gives
 * the same lines; a line over the cap is dropped to its newline, counted
 * once, whatever the chunks; a line at the cap is kept; nothing beyond the
 * cap is ever held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "linebuf.h"

struct seen {
	struct sbuf	 all;	/* each line, then '|' */
	size_t		 n;
};

static void
on_line(const char *line, void *arg)
{
	struct seen *s = arg;

	sbuf_add(&s->all, line);
	sbuf_addc(&s->all, '|');
	s->n++;
}

/* Feeds text in chunks of the sizes given (0 ends), then flushes. */
static size_t
feed(size_t cap, const char *text, const size_t *chunks, struct seen *s,
    size_t *held_max)
{
	struct linebuf lb;
	size_t len = strlen(text), off = 0, dropped = 0, i = 0, k;
	char *copy = strdup(text);

	linebuf_init(&lb, cap);
	sbuf_init(&s->all);
	s->n = 0;
	*held_max = 0;
	while (off < len) {
		k = chunks && chunks[i] ? chunks[i++] : len - off;
		if (k > len - off)
			k = len - off;
		dropped += linebuf_feed(&lb, copy + off, k, on_line, s);
		if (lb.part.len > *held_max)
			*held_max = lb.part.len;
		off += k;
	}
	linebuf_flush(&lb, on_line, s);
	linebuf_free(&lb);
	free(copy);
	return dropped;
}

static void
test_every_split(void **state)
{
	const char *text = "die a vllm\n\nstart bb x\nlast";
	size_t len = strlen(text), held;
	struct seen s;

	(void)state;
	/* two chunks, cut at every byte; then one byte at a time */
	for (size_t cut = 0; cut <= len; cut++) {
		size_t chunks[] = { cut ? cut : len, len, 0 };

		assert_int_equal(feed(64, text, chunks, &s, &held), 0);
		assert_string_equal(s.all.s, "die a vllm||start bb x|last|");
		sbuf_free(&s.all);
	}
	{
		size_t ones[64];

		for (size_t i = 0; i < 63; i++)
			ones[i] = 1;
		ones[63] = 0;
		assert_int_equal(feed(64, text, ones, &s, &held), 0);
		assert_string_equal(s.all.s, "die a vllm||start bb x|last|");
		sbuf_free(&s.all);
	}
}

static void
test_over_cap(void **state)
{
	const char *text = "ok1\n0123456789\nok2\n01234567\n012345678";
	size_t len = strlen(text), held;
	struct seen s;

	(void)state;
	/* cap 8: the 10-byte line goes, the 8-byte one stays, the 9-byte tail goes */
	for (size_t cut = 0; cut <= len; cut++) {
		size_t chunks[] = { cut ? cut : len, 3, 5, 1, 7, len, 0 };

		assert_int_equal(feed(8, text, chunks, &s, &held), 2);
		assert_string_equal(s.all.s, "ok1|ok2|01234567|");
		assert_true(held <= 8);
		sbuf_free(&s.all);
	}
}

static void
test_long_line_spans_chunks(void **state)
{
	/* 3 x cap of one line, in chunks smaller than the cap: counted once */
	struct sbuf t;
	struct seen s;
	size_t chunks[] = { 5, 5, 5, 5, 5, 5, 5, 0 }, held;

	(void)state;
	sbuf_init(&t);
	for (int i = 0; i < 30; i++)
		sbuf_addc(&t, 'x');
	sbuf_add(&t, "\nafter\n");
	assert_int_equal(feed(10, t.s, chunks, &s, &held), 1);
	assert_string_equal(s.all.s, "after|");
	assert_true(held <= 10);
	sbuf_free(&s.all);
	sbuf_free(&t);
}

static void
test_flood_one_chunk(void **state)
{
	/* a flooding node: many short lines in one read, each handed on */
	const char *line = "die 0123456789ab vllm-head\n";
	struct sbuf t;
	struct seen s;
	size_t held;

	(void)state;
	sbuf_init(&t);
	for (int i = 0; i < 20000; i++)
		sbuf_add(&t, line);
	assert_int_equal(feed(1024, t.s, NULL, &s, &held), 0);
	assert_int_equal(s.n, 20000);
	assert_int_equal(held, 0);
	sbuf_free(&s.all);
	sbuf_free(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_over_cap),
		cmocka_unit_test(test_long_line_spans_chunks),
		cmocka_unit_test(test_flood_one_chunk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
