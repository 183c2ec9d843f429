/*
 * Quoting: the rendered string, run by a real sh -c, must hand the program
 * exactly the original argument vector, also when nested inside "bash -c"
 * the way docker exec receives the vllm command.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "quote.h"

static const char *const hostile[] = {
	"plain", "two words", "", "'", "\"", "it's", "$(touch /tmp/pwned)",
	"`id`", "a;b", "a&&b", "a|b", "line\nbreak", "tab\there", "\\",
	"*", "?", "~", "~root", "{a,b}", "$HOME", "${IFS}", "!", "#comment",
	"-n", "--flag=va lue", "\xe4\xbd\xa0\xe5\xa5\xbd", "'\"'\"'", "a'b'c",
	">out", "<in", "(sub)", "x\\'y", " lead", "trail ", "=", NULL
};

/* Runs sh -c SCRIPT and returns its stdout (NUL-separated words). */
static size_t
run_sh(const char *script, char *out, size_t cap)
{
	int fd[2], status;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while ((r = read(fd[0], out + n, cap - n)) > 0)
		n += (size_t)r;
	close(fd[0]);
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return n;
}

static void
expect_words(const char *got, size_t n, const char *const *want)
{
	size_t off = 0, i;

	for (i = 0; want[i]; i++) {
		assert_true(off < n);
		assert_string_equal(got + off, want[i]);
		off += strlen(want[i]) + 1;
	}
	assert_int_equal(off, n);
}

static void
build_argv(struct strv *v)
{
	size_t i;

	strv_init(v);
	strv_add(v, "printf");
	strv_add(v, "%s\\0");
	for (i = 0; hostile[i]; i++)
		strv_add(v, hostile[i]);
}

static void
test_roundtrip(void **state)
{
	static char out[65536];
	struct strv v;
	char *script;
	size_t n;

	(void)state;
	build_argv(&v);
	script = shell_command(v.v);
	n = run_sh(script, out, sizeof(out));
	expect_words(out, n, hostile);
	free(script);
	strv_free(&v);
}

static void
test_nested(void **state)
{
	static char out[65536];
	struct strv v, outer;
	char *inner, *script;
	size_t n;

	(void)state;
	build_argv(&v);
	inner = shell_command(v.v);
	strv_init(&outer);
	strv_add(&outer, "sh");
	strv_add(&outer, "-c");
	strv_add(&outer, inner);
	script = shell_command(outer.v);
	n = run_sh(script, out, sizeof(out));
	expect_words(out, n, hostile);
	free(inner);
	free(script);
	strv_free(&v);
	strv_free(&outer);
}

static void
test_readable(void **state)
{
	struct sbuf b;

	(void)state;
	sbuf_init(&b);
	shell_quote(&b, "--node-ip-address=10.10.10.1");
	sbuf_addc(&b, ' ');
	shell_quote(&b, "{{.State.Running}}");
	sbuf_addc(&b, ' ');
	shell_quote(&b, "it's");
	sbuf_addc(&b, ' ');
	shell_quote(&b, "");
	assert_string_equal(b.s, "--node-ip-address=10.10.10.1 "
	    "'{{.State.Running}}' 'it'\\''s' ''");
	sbuf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_readable),
	};

	return cmocka_run_group_tests_name("quote", tests, NULL, NULL);
}
