/*
 * utf8_copy and friends (issue 15: node text cut at a fixed byte length
 * split "é", jansson refused the string and tandemd crashed). Every cut of
 * every sequence length, every ill-formed form Unicode names, and the
 * agreement with jansson over all two- and three-byte inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "utf8.h"

#define R "\xef\xbf\xbd"

static void
check(const char *in, size_t dstlen, const char *want)
{
	char out[256];
	size_t n;

	memset(out, 'X', sizeof(out));
	n = utf8_copy(out, dstlen, in);
	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));
	assert_true(n < dstlen);
	assert_true(utf8_valid(out));
}

static void
test_valid_kept(void **state)
{
	(void)state;
	check("", 10, "");
	check("plain ascii\ttab\nnewline", 64, "plain ascii\ttab\nnewline");
	check("\xc2\xa0 \xdf\xbf \xe0\xa0\x80 \xef\xbf\xbf \xf0\x90\x80\x80 "
	    "\xf4\x8f\xbf\xbf", 64, "\xc2\xa0 \xdf\xbf \xe0\xa0\x80 "
	    "\xef\xbf\xbf \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf");
	check("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 64,
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	check(NULL, 10, "");
}

/* A sequence that does not fit whole is dropped, never split. */
static void
test_every_cut(void **state)
{
	static const char *const seqs[] = { "\xc3\xa9", "\xe2\x82\xac",
	    "\xf0\x9f\x98\x80" };
	char in[64], want[64];
	size_t s, dstlen, pre;

	(void)state;
	for (s = 0; s < 3; s++) {
		size_t L = strlen(seqs[s]);

		for (pre = 0; pre < 4; pre++) {
			memset(in, 'a', pre);
			memcpy(in + pre, seqs[s], L);
			memcpy(in + pre + L, seqs[s], L);
			in[pre + 2 * L] = '\0';
			for (dstlen = 1; dstlen <= pre + 2 * L + 1; dstlen++) {
				size_t fit = dstlen - 1, keep;

				if (fit <= pre)
					keep = fit;
				else if (fit < pre + L)
					keep = pre;
				else if (fit < pre + 2 * L)
					keep = pre + L;
				else
					keep = pre + 2 * L;
				memcpy(want, in, keep);
				want[keep] = '\0';
				check(in, dstlen, want);
			}
		}
	}
}

static void
test_exact_fit_and_zero(void **state)
{
	char out[8] = "zzzzzzz";

	(void)state;
	check("abc", 4, "abc");
	check("abc", 3, "ab");
	check("abc", 1, "");
	check("\xc3\xa9", 3, "\xc3\xa9");
	check("\xc3\xa9", 2, "");
	check("\xff", 4, R);
	check("\xff", 3, "");	/* the replacement does not fit either */
	assert_int_equal(utf8_copy(out, 0, "abc"), 0);
	assert_string_equal(out, "zzzzzzz");
}

static void
test_ill_formed(void **state)
{
	(void)state;
	check("\xff", 16, R);
	check("a\xfe" "b", 16, "a" R "b");
	check("\x80", 16, R);				/* lone continuation */
	check("\xbf\x80", 16, R R);
	check("\xc0\xaf", 16, R R);			/* overlong '/' */
	check("\xc1\xbf", 16, R R);
	check("\xe0\x80\xaf", 16, R R R);		/* overlong */
	check("\xf0\x80\x80\xaf", 16, R R R R);	/* overlong */
	check("\xed\xa0\x80", 16, R R R);		/* surrogate D800 */
	check("\xed\xbf\xbf", 16, R R R);		/* surrogate DFFF */
	check("\xed\x9f\xbf", 16, "\xed\x9f\xbf");	/* U+D7FF is fine */
	check("\xf4\x90\x80\x80", 16, R R R R);	/* U+110000 */
	check("\xf5\x80\x80\x80", 16, R R R R);
	check("\xf8\x88\x80\x80\x80", 32, R R R R R);
	/* a truncated sequence is one U+FFFD (its maximal subpart) */
	check("\xe2\x82" "a", 16, R "a");
	check("\xf0\x9f\x98" "a", 16, R "a");
	check("\xf0\x9f\x98", 16, R);
	check("\xc3", 16, R);
	check("x\xc3", 16, "x" R);
	check("\xe2\x82\xe2\x82\xac", 16, R "\xe2\x82\xac");
}

static void
test_controls(void **state)
{
	(void)state;
	check("\x1b[31mred\x1b[0m", 32, R "[31mred" R "[0m");
	check("a\rb\x7f" "c\x01", 32, "a" R "b" R "c" R);
	check("\t\n", 8, "\t\n");
	/*
	 * C1 controls (U+0080..U+009F) act on a terminal as ESC does: U+009B
	 * is CSI, so "\xc2\x9b" "31m" turns it red (issue 36). Each is one
	 * U+FFFD; U+00A0 and above are text.
	 */
	check("a\xc2\x9b" "31mred", 32, "a" R "31mred");
	check("\xc2\x80\xc2\x85\xc2\x9d\xc2\x9f", 32, R R R R);
	check("\xc2\x9f\xc2\xa0\xc2\xbf", 32, R "\xc2\xa0\xc2\xbf");
	check("\xc2\x9b", 4, R);
	check("\xc2\x9b", 3, "");
	check("\xc2", 8, R);
}

static void
test_copyn_and_fmt(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(utf8_copyn(out, sizeof(out), "abcdef", 3), 3);
	assert_string_equal(out, "abc");
	/* srclen cutting a character: the source itself is truncated */
	utf8_copyn(out, sizeof(out), "\xc3\xa9", 1);
	assert_string_equal(out, R);
	/* a NUL before srclen ends the source */
	utf8_copyn(out, sizeof(out), "ab\0cd", 5);
	assert_string_equal(out, "ab");
	utf8_fmt(out, sizeof(out), "exit %d: %s", 1, "\xff\xc3\xa9\xc3\xa9"
	    "\xc3\xa9");
	assert_string_equal(out, "exit 1: " R "\xc3\xa9\xc3\xa9");
	utf8_fmt(out, 10, "%s", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
	assert_string_equal(out, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
}

/* What comes out is always what jansson takes. */
static void
jansson_takes(const char *out)
{
	json_t *j = json_string(out);

	assert_non_null(j);
	json_decref(j);
}

static void
test_all_short_inputs(void **state)
{
	unsigned a, b, c;
	char in[4], out[16];

	(void)state;
	for (a = 1; a < 256; a++)
		for (b = 1; b < 256; b++) {
			in[0] = (char)a;
			in[1] = (char)b;
			in[2] = '\0';
			utf8_copy(out, sizeof(out), in);
			assert_true(utf8_valid(out));
			jansson_takes(out);
			/* valid in, same out (controls aside) */
			if (a >= 0x20 && b >= 0x20 && a != 0x7f && b != 0x7f &&
			    !(a == 0xc2 && b < 0xa0)) {
				json_t *j = json_stringn(in, 2);

				assert_int_equal(j != NULL,
				    strcmp(in, out) == 0);
				json_decref(j);
			}
		}
	for (a = 0xc0; a < 256; a++)
		for (b = 0x80; b < 0xc0; b++)
			for (c = 1; c < 256; c++) {
				json_t *j;

				in[0] = (char)a;
				in[1] = (char)b;
				in[2] = (char)c;
				in[3] = '\0';
				utf8_copy(out, sizeof(out), in);
				assert_true(utf8_valid(out));
				if (c >= 0x20 && c != 0x7f &&
				    !(a == 0xc2 && b < 0xa0)) {
					j = json_stringn(in, 3);
					assert_int_equal(j != NULL,
					    strcmp(in, out) == 0);
					json_decref(j);
				}
			}
}

/* Random bytes, every buffer size: valid, within bounds, a prefix of the
 * unbounded result. */
static void
test_random(void **state)
{
	uint32_t x = 12345;
	char in[64], full[256], out[256];
	size_t i, k, d;

	(void)state;
	for (i = 0; i < 20000; i++) {
		size_t n = 1 + i % 60;

		for (k = 0; k < n; k++) {
			x = x * 1103515245u + 12345u;
			in[k] = (char)((x >> 16) % 255 + 1);
			if ((x >> 8) % 3 == 0)	/* plenty of é */
				in[k] = k % 2 ? (char)0xc3 : (char)0xa9;
		}
		in[n] = '\0';
		utf8_copy(full, sizeof(full), in);
		d = 1 + i % 200;
		utf8_copy(out, d, in);
		assert_true(strlen(out) < d);
		assert_true(utf8_valid(out));
		assert_memory_equal(out, full, strlen(out));
		jansson_takes(out);
	}
}

/*
 * Issue 43 item 7: what tandemctl init prints of the nodes' answers. The
 * OSC 52 (write the clipboard), the screen clear and the window title a
 * node could send show escaped; tab, newline and valid UTF-8 stay.
 */
static void
test_term(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "28.5.2", "28.5.2" },
		{ "\x1b]52;c;cm0gLXJmIH4=\x07", "\\x1b]52;c;cm0gLXJmIH4=\\x07" },
		{ "\x1b[2J\x1b[H/models/x", "\\x1b[2J\\x1b[H/models/x" },
		{ "\x1b]0;pwned\x1b\\", "\\x1b]0;pwned\\x1b\\" },
		{ "a\tb\nc\rd\x7f", "a\tb\nc\\x0dd\\x7f" },
		/* C1 CSI as UTF-8 and as a raw byte; é kept */
		{ "\xc2\x9b" "2J caf\xc3\xa9 \x9b\xff", "\\xc2\\x9b2J caf"
		    "\xc3\xa9 \\x9b\\xff" },
		{ "", "" },
	};
	size_t i;
	char *t;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = utf8_term(cases[i].in);
		assert_string_equal(t, cases[i].out);
		assert_true(utf8_valid(t));
		free(t);
	}
	t = utf8_term(NULL);
	assert_string_equal(t, "");
	free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_kept),
		cmocka_unit_test(test_every_cut),
		cmocka_unit_test(test_exact_fit_and_zero),
		cmocka_unit_test(test_ill_formed),
		cmocka_unit_test(test_controls),
		cmocka_unit_test(test_copyn_and_fmt),
		cmocka_unit_test(test_all_short_inputs),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_term),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
