/*
 * The unrelated-workload scan (workload.h): what cmd_workloads prints on a
 * node, parsed into warnings; bad, huge and non-UTF-8 output; the
 * container.stop_foreign patterns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "utf8.h"
#include "workload.h"

/*
 * A node of cluster "spark": our head container runs vLLM (pid 4100), a
 * jupyter container holds two GPU processes, a registry holds none, and a
 * python3 on the host holds memory. docker top prints its "PID" header.
 * Each container is "C ID [NAME,LABEL]" (cmd_workloads' ps template).
 */
#define HEAD	"0a1b2c3d4e5f"
#define JUP	"1b2c3d4e5f60"
#define REG	"2c3d4e5f6071"
static const char node_out[] =
    "some other line\n"
    "G 4100, 73728, VLLM::EngineCore\n"
    "G 5200, 12288, /usr/bin/python3\n"
    "G 5201, 6349, /usr/bin/python3\n"
    "G 6100, 2048, python3\n"
    "C " HEAD " [\"vllm-head\",\"spark\"]\n"
    "P " HEAD " PID\n"
    "P " HEAD " 4001\n"
    "P " HEAD " 4100\n"
    "C " JUP " [\"jupyter\",\"\"]\n"
    "P " JUP " PID\n"
    "P " JUP " 5100\n"
    "P " JUP " 5200\n"
    "P " JUP " 5201\n"
    "C " REG " [\"registry\",\"\"]\n"
    "P " REG " PID\n"
    "P " REG " 7000\n";

static void
test_parse(void **state)
{
	struct workloads wl;
	char msg[300];

	(void)state;
	workloads_parse(node_out, sizeof(node_out) - 1, "spark", &wl);
	assert_int_equal(wl.n, 3);
	assert_int_equal(wl.more, 0);
	assert_int_equal(wl.w[0].kind, WL_CONTAINER);
	assert_string_equal(wl.w[0].name, "jupyter");
	assert_int_equal(wl.w[0].mib, 12288 + 6349);
	assert_int_equal(wl.w[0].npids, 2);
	assert_int_equal(wl.w[0].pids[1], 5201);
	assert_int_equal(wl.w[1].kind, WL_CONTAINER);
	assert_string_equal(wl.w[1].name, "registry");
	assert_int_equal(wl.w[1].mib, -1);
	assert_int_equal(wl.w[2].kind, WL_PROCESS);
	assert_string_equal(wl.w[2].name, "python3");
	assert_int_equal(wl.w[2].pid, 6100);
	assert_int_equal(wl.w[2].mib, 2048);

	workload_message(&wl.w[0], "node2", msg, sizeof(msg));
	assert_string_equal(msg, "container \"jupyter\" on node2 holds 18.2 GiB "
	    "of GPU memory");
	workload_message(&wl.w[1], "node2", msg, sizeof(msg));
	assert_string_equal(msg, "container \"registry\" on node2 holds no GPU "
	    "memory");
	workload_message(&wl.w[2], "node2", msg, sizeof(msg));
	assert_string_equal(msg, "process \"python3\" (pid 6100) on node2 holds "
	    "2.0 GiB of GPU memory");

	/* another tandem cluster's container is foreign to this one */
	workloads_parse(node_out, sizeof(node_out) - 1, "other", &wl);
	assert_int_equal(wl.n, 4);
	assert_string_equal(wl.w[0].name, "vllm-head");
	assert_int_equal(wl.w[0].mib, 73728);
}

static void
test_unified_memory(void **state)
{
	/* GB10: nvidia-smi reports no per-process memory */
	static const char out[] = "G 6100, [N/A], python3\n"
	    "G 5200, [N/A], python3\nC " JUP " [\"nb\",\"\"]\n"
	    "P " JUP " 5200\n";
	struct workloads wl;
	char msg[300];

	(void)state;
	workloads_parse(out, sizeof(out) - 1, "spark", &wl);
	assert_int_equal(wl.n, 2);
	assert_string_equal(wl.w[0].name, "nb");
	assert_int_equal(wl.w[0].mib, -1);
	assert_int_equal(wl.w[0].npids, 1);
	assert_int_equal(wl.w[1].mib, -1);
	workload_message(&wl.w[1], "n1", msg, sizeof(msg));
	assert_string_equal(msg, "process \"python3\" (pid 6100) on n1 holds "
	    "GPU memory (amount not reported)");
}

static void
test_nothing(void **state)
{
	struct workloads wl;

	(void)state;
	/* no GPU processes, only our container; no nvidia-smi; empty */
	workloads_parse("C " HEAD " [\"vllm-head\",\"spark\"]\n", 38, "spark",
	    &wl);
	assert_int_equal(wl.n, 0);
	workloads_parse("", 0, "spark", &wl);
	assert_int_equal(wl.n, 0);
	workloads_parse("\n\n", 2, "spark", &wl);
	assert_int_equal(wl.n, 0);
}

static void
test_bad_output(void **state)
{
	static const char bad[] =
	    "G\n"			/* cut short */
	    "G x, 1, a\n"		/* not a pid */
	    "G -5, 1, a\n"
	    "G 99999999999999999999, 1, a\n"	/* overflows */
	    "G 12, 99999999999999999999999, big\n"
	    "G 13\n"
	    "G 14, 7\n"			/* no name */
	    "C \n"
	    "P " JUP " 12\n"		/* a container not listed */
	    "P \n"
	    "X what\n"
	    "G 15, 10, py\xc0\xaf\xed\xa0\x80thon\n"
	    "C " REG " [\"spark\",\"\"]\r\n"	/* CRLF: JSON's whitespace */
	    "C " HEAD " [\"n\xff\xfe\",\"\"]\n";	/* not UTF-8: refused */
	struct workloads wl;
	size_t i;

	(void)state;
	workloads_parse(bad, sizeof(bad) - 1, "spark", &wl);
	/* "spark" is a container without our label; 12 (memory unknown), 14
	 * and 15 are host processes */
	assert_int_equal(wl.n, 4);
	for (i = 0; i < wl.n; i++)
		assert_true(utf8_valid(wl.w[i].name));
	assert_int_equal(wl.w[0].kind, WL_CONTAINER);
	assert_string_equal(wl.w[0].name, "spark");
	assert_int_equal(wl.w[1].pid, 12);
	assert_int_equal(wl.w[1].mib, -1);
	assert_int_equal(wl.w[2].pid, 14);
	assert_string_equal(wl.w[2].name, "");
	assert_int_equal(wl.w[3].pid, 15);
	assert_int_equal(wl.w[3].mib, 10);
}

/*
 * Issue 36: a label is any string. Whatever it holds, a container is its
 * one line: no label makes another container's line, makes ours foreign,
 * or puts a name the engine would never give before container.stop_foreign.
 * A line that is not an ID and a JSON array of two strings, or whose name
 * is not a container name, is skipped (its processes count as the host's).
 */
static void
test_forged(void **state)
{
	static const char out[] =
	    "G 4100, 18000, VLLM::EngineCore\n"
	    "G 5200, 1024, python3\n"
	    /* a label with a newline, as the engine's json prints it */
	    "C 681c045871ab [\"evil\",\"x\\nvllm-head y\"]\n"
	    "P 681c045871ab PID\n"
	    "P 681c045871ab 5200\n"
	    /* one ending like the array, to close it early */
	    "C 6f73f54da122 [\"odd\",\"a\\\",\\\"spark\"]\n"
	    /* lines no engine prints: each skipped */
	    "C 6f73f54da123 [\"vllm-head\",\"\"] x\n"	/* after the array */
	    "C 6f73f54da124 [\"vllm-head\",\"\",\"\"]\n"	/* three */
	    "C 6f73f54da125 [\"vllm-head\"]\n"
	    "C 6f73f54da126 [\"vllm-head\",1]\n"
	    "C 6f73f54da127 {\"a\":\"b\"}\n"
	    /* NUL: refused, not cut */
	    "C 6f73f54da128 [\"vllm-head\",\"\\u0000\"]\n"
	    "C 6f73f54da129 [\"vllm-head\\u0000x\",\"\"]\n"
	    "C 6f73f54da12a [\"a b\",\"\"]\n"		/* not a name */
	    "C 6f73f54da12b [\"-rm\",\"\"]\n"
	    "C 6f73f54da12c [\"\\u001b[31m\",\"\"]\n"
	    "C 6f73f54da12d [\"\",\"\"]\n"
	    "C vllm-head [\"vllm-head\",\"\"]\n"		/* not an ID */
	    "C 6F73F54DA12E [\"vllm-head\",\"\"]\n"
	    "C 6f73f54da1 [\"vllm-head\",\"\"]\n"
	    "C 6f73f54da12f\n"
	    "C 6f73f54da12f [\"vllm-head\",\"\"\n"	/* cut short */
	    /* ours, after them: its own line decides */
	    "C 36ebe69667a2 [\"vllm-head\",\"spark\"]\n"
	    "P 36ebe69667a2 PID\n"
	    "P 36ebe69667a2 4100\n"
	    /* an ID seen before keeps its first line */
	    "C 681c045871ab [\"vllm-head\",\"\"]\n";
	struct workloads wl;

	(void)state;
	workloads_parse(out, sizeof(out) - 1, "spark", &wl);
	assert_int_equal(wl.n, 2);
	assert_int_equal(wl.w[0].kind, WL_CONTAINER);
	assert_string_equal(wl.w[0].name, "evil");
	assert_int_equal(wl.w[0].mib, 1024);
	assert_int_equal(wl.w[1].kind, WL_CONTAINER);
	assert_string_equal(wl.w[1].name, "odd");
	assert_int_equal(wl.w[1].mib, -1);
}

/*
 * The answer is a buffer of len bytes with no NUL after it (issue 36: the
 * last line "C NAME" with no space after the name sent strcspn past the
 * end; ASan's heap-buffer-overflow under SAN=1). Each case in a heap block
 * of exactly its length.
 */
static void
test_unterminated(void **state)
{
	static const char *const cases[] = { "C vllm-head", "C x", "C ",
	    "P vllm-head", "P x", "G 12", "G 12, 5", "G 12, 5, py",
	    "C " HEAD, "C " HEAD " [\"vllm-head\",\"spark\"]",
	    "C " HEAD " [\"vllm-head\",\"spark\"]\nP " HEAD,
	    "C " HEAD " [\"vllm-head\",\"spark\"]\nP " HEAD " 12",
	    "C " HEAD " [\"vllm-head\",\"spark\"]\nP " HEAD " 12\nP" };
	struct workloads wl;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = strlen(cases[i]);
		char *buf = malloc(n);

		assert_non_null(buf);
		memcpy(buf, cases[i], n);
		workloads_parse(buf, n, "spark", &wl);
		free(buf);
	}
	/* the answer ends at its length, not at a NUL beyond it */
	{
		static const char out[] = "G 5200, 1024, py\n"
		    "C " JUP " [\"nb-1\",\"\"]\nP " JUP " 5200123";
		size_t n = sizeof(out) - 1 - 3;
		char *buf = malloc(n);

		assert_non_null(buf);
		memcpy(buf, out, n);
		workloads_parse(buf, n, "spark", &wl);
		free(buf);
		assert_int_equal(wl.n, 1);
		assert_string_equal(wl.w[0].name, "nb-1");
		assert_int_equal(wl.w[0].mib, 1024);
	}
}

static void
test_huge(void **state)
{
	size_t len = 2 * 1024 * 1024, i, at = 0;
	char *big = malloc(len + 1);
	struct workloads wl;
	char msg[300];

	(void)state;
	assert_non_null(big);
	/* a 15 kB name, then more containers and processes than are kept */
	at += (size_t)sprintf(big + at, "C " HEAD " [\"");
	memset(big + at, 'x', 15000);
	at += 15000;
	at += (size_t)sprintf(big + at, "\",\"\"]\n");
	for (i = 0; at < len - 100; i++)
		if (i % 2)
			at += (size_t)sprintf(big + at,
			    "C %012zx [\"c%zu\",\"\"]\n", i + 1, i + 1);
		else
			at += (size_t)sprintf(big + at,
			    "G %zu, 1024, p\xe2\x82\n", i + 1);
	big[at] = '\0';
	workloads_parse(big, at, "spark", &wl);
	assert_int_equal(wl.n, WORKLOADS_MAX);
	assert_true(wl.more > 0);
	/* the containers come first: the name too long for any engine is not
	 * one of them */
	assert_int_equal(wl.w[0].kind, WL_CONTAINER);
	assert_string_equal(wl.w[0].name, "c2");
	for (i = 0; i < wl.n; i++) {
		workload_message(&wl.w[i], "n1", msg, sizeof(msg));
		assert_true(utf8_valid(msg));
	}
	free(big);
}

static void
test_stop_patterns(void **state)
{
	struct strv p;

	(void)state;
	assert_true(workload_valid_regex("jupyter"));
	assert_true(workload_valid_regex("jupyter-.*|notebook[0-9]+"));
	assert_false(workload_valid_regex("("));
	assert_false(workload_valid_regex("[a-"));
	assert_false(workload_valid_regex(""));
	/*
	 * Issue 43: glibc's regcomp took more than 20 s on these, so
	 * --check did. A count only after a character, '.' or [...]; no
	 * backreference; at most 256 bytes.
	 */
	assert_false(workload_valid_regex("((a*)*){30}"));
	assert_false(workload_valid_regex("(((a*)*){5}){5}"));
	assert_false(workload_valid_regex("a{255}{255}{255}"));
	assert_false(workload_valid_regex("a{256}"));
	assert_false(workload_valid_regex("a{1,99999999999999999999}"));
	assert_false(workload_valid_regex("(a*)*\\1"));
	assert_false(workload_valid_regex("{1}"));
	{
		char big[WORKLOAD_RE_MAX + 2];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		assert_false(workload_valid_regex(big));
		big[WORKLOAD_RE_MAX] = '\0';
		assert_true(workload_valid_regex(big));
	}
	assert_true(workload_valid_regex("(a*)*"));
	assert_true(workload_valid_regex("notebook-[0-9]{1,4}"));
	assert_true(workload_valid_regex("x.{2,}|y{3}|[]{}]{2}"));
	assert_true(workload_valid_regex("[[:alnum:]_]{1,255}-\\{"));
	strv_init(&p);
	strv_add(&p, "jupyter-.*");
	strv_add(&p, "nb[0-9]+");
	assert_true(workload_stop_match(&p, "jupyter-alice"));
	assert_true(workload_stop_match(&p, "nb7"));
	/* the whole name, never a part of it */
	assert_false(workload_stop_match(&p, "my-jupyter-alice"));
	assert_false(workload_stop_match(&p, "nb7x"));
	assert_false(workload_stop_match(&p, "vllm-head"));
	strv_free(&p);
	strv_init(&p);
	assert_false(workload_stop_match(&p, "jupyter-alice"));
	strv_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_unified_memory),
		cmocka_unit_test(test_nothing),
		cmocka_unit_test(test_bad_output),
		cmocka_unit_test(test_forged),
		cmocka_unit_test(test_unterminated),
		cmocka_unit_test(test_huge),
		cmocka_unit_test(test_stop_patterns),
	};

	return cmocka_run_group_tests_name("workload", tests, NULL, NULL);
}
