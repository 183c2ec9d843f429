/*
 * The API token's rules (lib/api/token.c): what a token file may hold, who may
 * own it with which mode, the Bearer header and the comparison. The cases
 * of the second outside audit (issue 36) are here: a file starting with
 * NUL bytes read as an empty token that an empty Bearer matched (item 1),
 * and a file owned by an unprivileged user accepted (item 4).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "token.h"

#define P	"/etc/tandem/api-token"

static char *
parse_ok(const char *buf, size_t len)
{
	char err[ERRLEN] = "", *tok = NULL;

	if (token_parse(buf, len, "api_token_file", P, &tok, err,
	    sizeof(err)) != 0)
		fail_msg("refused %zu bytes: %s", len, err);
	return tok;
}

static void
parse_refused(const char *buf, size_t len, const char *needle)
{
	char err[ERRLEN] = "", *tok = (char *)"x";

	assert_int_equal(token_parse(buf, len, "api_token_file", P, &tok,
	    err, sizeof(err)), -1);
	assert_null(tok);
	if (strstr(err, needle) == NULL || strstr(err, P) == NULL)
		fail_msg("message %s: no \"%s\" or path", err, needle);
}

static void
test_parse_trims(void **state)
{
	static const struct { const char *in, *want; } v[] = {
		{ "secret", "secret" },
		{ "secret\n", "secret" },
		{ "secret\r\n", "secret" },
		{ "secret \t\n\n", "secret" },
		/* head -c 32 /dev/urandom | base64: '+', '/', '=' */
		{ "q8Vd+2/aZ9yT0xkLw3Jm1bQe7uH4sNc5fRp6gYi8tOE=\n",
		  "q8Vd+2/aZ9yT0xkLw3Jm1bQe7uH4sNc5fRp6gYi8tOE=" },
	};
	size_t i;
	char *t;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		t = parse_ok(v[i].in, strlen(v[i].in));
		assert_string_equal(t, v[i].want);
		free(t);
	}
}

/* Issue 36, item 1: printf '\0\0\0\0secret-after-nul\n' was token "". */
static void
test_parse_nul(void **state)
{
	static const char audit[] = "\0\0\0\0secret-after-nul\n";
	static const char tail[] = "secret\0\n";
	static const char zeros[64];

	(void)state;
	parse_refused(audit, sizeof(audit) - 1, "NUL byte (byte 1)");
	parse_refused(tail, sizeof(tail) - 1, "NUL byte (byte 7)");
	parse_refused(zeros, sizeof(zeros), "NUL");
}

static void
test_parse_empty(void **state)
{
	(void)state;
	parse_refused("", 0, "is empty");
	parse_refused("\n", 1, "is empty");
	parse_refused(" \r\n\t\n", 5, "is empty");
}

static void
test_parse_not_text(void **state)
{
	char big[TOKEN_MAX + 2];
	char *t;

	(void)state;
	parse_refused("two words\n", 10, "byte 4 is 0x20");
	parse_refused(" lead\n", 6, "byte 1 is 0x20");
	parse_refused("one\ntwo\n", 8, "byte 4 is 0x0a");
	parse_refused("esc\033[0m\n", 8, "0x1b");
	parse_refused("t\xc3\xa9", 3, "0xc3");
	parse_refused("del\x7f", 4, "0x7f");
	memset(big, 'a', sizeof(big));
	t = parse_ok(big, TOKEN_MAX);
	assert_int_equal(strlen(t), TOKEN_MAX);
	free(t);
	parse_refused(big, TOKEN_MAX + 1, "at most 1024");
}

static void
perms_refused(uid_t owner, mode_t mode, uid_t euid, const char *needle)
{
	char err[ERRLEN] = "";

	if (token_perms_ok(owner, mode, euid, "api_token_file", P, err,
	    sizeof(err)) != -1)
		fail_msg("owner %u mode %04o euid %u accepted", (unsigned)owner,
		    (unsigned)mode, (unsigned)euid);
	if (strstr(err, needle) == NULL)
		fail_msg("message %s: no \"%s\"", err, needle);
}

static void
perms_ok(uid_t owner, mode_t mode, uid_t euid)
{
	char err[ERRLEN] = "";

	if (token_perms_ok(owner, mode, euid, "api_token_file", P, err,
	    sizeof(err)) != 0)
		fail_msg("owner %u mode %04o euid %u refused: %s",
		    (unsigned)owner, (unsigned)mode, (unsigned)euid, err);
}

static void
test_perms(void **state)
{
	(void)state;
	/* daemon as root */
	perms_ok(0, S_IFREG | 0600, 0);
	perms_ok(0, S_IFREG | 0400, 0);
	perms_refused(0, S_IFREG | 0640, 0, "chmod 600 " P);
	perms_refused(0, S_IFREG | 0644, 0, "has mode 0644");
	perms_refused(0, S_IFREG | 0604, 0, "chmod 600");
	perms_refused(0, S_IFREG | 0620, 0, "chmod 600");
	/* issue 36, item 4: owned by nobody, 0600 or 0640, daemon as root */
	perms_refused(65534, S_IFREG | 0600, 0, "owned by uid 65534");
	perms_refused(65534, S_IFREG | 0640, 0, "chown root " P);
	perms_refused(1000, S_IFREG | 0400, 0, "owned by uid 1000");
	/* daemon as User=tandem (uid 998) */
	perms_ok(998, S_IFREG | 0600, 998);
	perms_ok(0, S_IFREG | 0640, 998);	/* root:tandem 0640 */
	perms_ok(0, S_IFREG | 0600, 998);	/* then unreadable: 403 */
	perms_refused(998, S_IFREG | 0640, 998, "chmod 600");
	perms_refused(0, S_IFREG | 0660, 998, "has mode 0660");
	perms_refused(0, S_IFREG | 0644, 998, "has mode 0644");
	perms_refused(1000, S_IFREG | 0600, 998, "owned by uid 1000");
	/* setuid, sticky and the like are no permission to anyone */
	perms_ok(0, S_IFREG | 04600, 0);
}

static void
test_authorization(void **state)
{
	(void)state;
	assert_string_equal(token_from_authorization("Bearer abc"), "abc");
	assert_string_equal(token_from_authorization("bearer abc"), "abc");
	assert_string_equal(token_from_authorization("BEARER   abc"), "abc");
	assert_null(token_from_authorization(NULL));
	assert_null(token_from_authorization(""));
	assert_null(token_from_authorization("Bearer"));
	assert_null(token_from_authorization("Bearer "));
	assert_null(token_from_authorization("Bearer    "));
	assert_null(token_from_authorization("Basic abc"));
	assert_null(token_from_authorization("Bearerabc"));
	assert_null(token_from_authorization("Bearer\tabc"));
}

static void
test_matches(void **state)
{
	(void)state;
	assert_true(token_matches("abc", "abc"));
	assert_false(token_matches("abd", "abc"));
	assert_false(token_matches("ab", "abc"));
	assert_false(token_matches("abcd", "abc"));
	assert_false(token_matches("", "abc"));
	/* an empty token matches nothing, not even an empty one */
	assert_false(token_matches("", ""));
	assert_false(token_matches("x", ""));
	assert_false(token_matches(NULL, "abc"));
	assert_false(token_matches("abc", NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_trims),
		cmocka_unit_test(test_parse_nul),
		cmocka_unit_test(test_parse_empty),
		cmocka_unit_test(test_parse_not_text),
		cmocka_unit_test(test_perms),
		cmocka_unit_test(test_authorization),
		cmocka_unit_test(test_matches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
