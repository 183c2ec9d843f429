#include <string.h>

#include "quote.h"

/*
 * Characters that never mean anything to sh(1). '=' and ':' are safe in
 * words such as --port=6379 or 10.10.10.1:6379; '{' '}' are not (brace
 * expansion in bash), nor is '~' at the start of a word.
 */
static int
plain(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("_@%+=:,./-", *s)))
			return 0;
	return 1;
}

void
shell_quote(struct sbuf *b, const char *s)
{
	if (plain(s)) {
		sbuf_add(b, s);
		return;
	}
	/* Inside '...' every byte is literal except ', written as '\''. */
	sbuf_addc(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			sbuf_add(b, "'\\''");
		else
			sbuf_addc(b, *s);
	}
	sbuf_addc(b, '\'');
}

void
shell_join(struct sbuf *b, char *const *argv)
{
	size_t i;

	for (i = 0; argv[i]; i++) {
		if (i)
			sbuf_addc(b, ' ');
		shell_quote(b, argv[i]);
	}
}

char *
shell_command(char *const *argv)
{
	struct sbuf b;

	sbuf_init(&b);
	shell_join(&b, argv);
	return sbuf_take(&b);
}

char *
shell_command_take(struct strv *argv)
{
	char *s = shell_command(argv->v);

	strv_free(argv);
	return s;
}
