/*
 * Every key of the config table (lib/config/config_table.c) is in
 * docs/configuration.md and docs/man/tandem.json.5, under its section, with
 * the same default: a key added to the parser but not to the docs fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config_int.h"

/* The section a key belongs to ("" for the top level, "nodes" for a
 * node's key) and its own name. */
static void
split(const char *path, char *sec, size_t len, const char **key)
{
	const char *dot = strrchr(path, '.');

	snprintf(sec, len, "%.*s", dot ? (int)(dot - path) : 0, path);
	if (strcmp(sec, "nodes[]") == 0)
		sec[5] = '\0';
	*key = dot ? dot + 1 : path;
}

#include "slurp.h"

/*
 * The default as the docs write it, or NULL when the docs describe it in
 * words (computed from other keys, or nothing to show).
 */
static char *
doc_default(const struct ckey *k, int markdown)
{
	const char *q = markdown ? "`" : "";

	if (k->required)
		return markdown ? xstrdup("required") : NULL;
	if (k->idyn || k->sdyn)
		return NULL;
	switch (k->type) {
	case K_STR:
		if (k->sdef == NULL)
			return markdown ? xstrdup("none") : NULL;
		/* FALLTHROUGH */
	case K_CHOICE:
	case K_LISTEN:
		return xprintf("%s%s%s", q, k->sdef, q);
	case K_INT:
		return xprintf("%lld", (long long)k->ndef);
	case K_NUM:
		return xprintf("%g", k->ndef);
	case K_STRLIST:
	case K_STEPS:
		return markdown ? xstrdup("`[]`") : NULL;
	case K_ENV:
		return markdown ? xstrdup("`{}`") : NULL;
	case K_OBJECT:
	case K_NODES:
		break;
	}
	return NULL;
}

/* The text of column n (0-based) of a "| a | b |" row, trimmed. */
static char *
column(const char *row, int n)
{
	const char *p = row;
	size_t len;

	while (n-- > 0)
		if ((p = strchr(p + 1, '|')) == NULL)
			return NULL;
	p++;
	while (*p == ' ')
		p++;
	len = strcspn(p, "|\n");
	while (len > 0 && p[len - 1] == ' ')
		len--;
	return xprintf("%.*s", (int)len, p);
}

/*
 * docs/configuration.md: a "| `key` |" row in the table under its heading,
 * whose default (or required) column agrees with the table.
 */
static void
check_markdown(const char *md, const struct ckey *k)
{
	char sec[64], *head, *row, *want, *got, *name;
	const char *key, *s, *end, *hdr;
	int col;

	split(k->path, sec, sizeof(sec), &key);
	head = sec[0] ? xprintf("\n## `%s`", sec) : xstrdup("\n## Top level");
	if ((s = strstr(md, head)) == NULL)
		fail_msg("configuration.md: no heading \"%s\"", head + 1);
	end = strstr(s + 1, "\n## ");
	if ((hdr = strstr(s, "\n| key |")) == NULL || (end && hdr > end))
		fail_msg("configuration.md: no table under \"%s\"", head + 1);
	row = xprintf("\n| `%s` |", key);
	s = strstr(s, row);
	if (s == NULL || (end && s > end))
		fail_msg("configuration.md: %s is not in its table under "
		    "\"%s\"", k->path, head + 1);
	/* the column headed "default" (or "required" for nodes) */
	for (col = 1; (name = column(hdr + 1, col)) != NULL; col++) {
		int stop = name[0] == '\0' || strcmp(name, "default") == 0 ||
		    strcmp(name, "required") == 0;

		free(name);
		if (stop)
			break;
	}
	name = column(hdr + 1, col);
	if (name == NULL || name[0] == '\0')
		fail_msg("configuration.md: no default column under \"%s\"",
		    head + 1);
	want = strcmp(name, "required") == 0 ?
	    xstrdup(k->required ? "yes" : "no") : doc_default(k, 1);
	got = column(s + 1, col);
	if (want && (got == NULL || strcmp(got, want) != 0))
		fail_msg("configuration.md: %s: default \"%s\", the table "
		    "says \"%s\"", k->path, got ? got : "", want);
	free(name);
	free(got);
	free(want);
	free(head);
	free(row);
}

/* Whether line (up to its end) is a .B/.BR line naming word. */
static int
names(const char *line, const char *word)
{
	size_t n = strcspn(line, "\n"), w = strlen(word);
	const char *p;

	if (strncmp(line, ".B", 2) != 0)
		return 0;
	for (p = line; (p = strstr(p, word)) != NULL && p < line + n; p++)
		if (!(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')) &&
		    !(p[w] == '_' || (p[w] >= 'a' && p[w] <= 'z')))
			return 1;
	return 0;
}

/*
 * docs/man/tandem.json.5: the key in its section's .TP paragraph, and its
 * default the first [bracket] after it.
 */
static void
check_man(const char *man, const struct ckey *k)
{
	char sec[64], got[128], *want;
	const char *key, *tp, *next = NULL, *l, *br;
	size_t i, j;

	split(k->path, sec, sizeof(sec), &key);
	for (tp = strstr(man, "\n.TP\n"); tp; tp = next) {
		const char *first = tp + 5;

		next = strstr(first, "\n.TP\n");
		if (!next && (next = strstr(first, "\n.PP\n")) == NULL)
			next = first + strlen(first);
		if (sec[0] ? names(first, sec) && strcspn(first, "\n") ==
		    strlen(".B ") + strlen(sec) : names(first, key))
			break;
	}
	if (tp == NULL)
		fail_msg("tandem.json.5: no paragraph for %s",
		    sec[0] ? sec : key);
	for (l = tp + 5 + (sec[0] ? strcspn(tp + 5, "\n") + 1 : 0); l < next;
	    l += strcspn(l, "\n") + 1)
		if (names(l, key))
			break;
	if (l >= next)
		fail_msg("tandem.json.5: %s is not in the %s paragraph",
		    k->path, sec[0] ? sec : "top-level");
	if ((want = doc_default(k, 0)) == NULL)
		return;
	br = strchr(l, '[');
	if (br == NULL || br > next)
		fail_msg("tandem.json.5: %s has no [default]", k->path);
	for (i = 1, j = 0; br[i] && !strchr("];", br[i]) && j + 1 < sizeof(got);
	    i++)
		if (br[i] != '\\')	/* \- is a plain '-' */
			got[j++] = br[i];
	got[j] = '\0';
	if (strcmp(got, want) != 0)
		fail_msg("tandem.json.5: %s: default [%s], the table says %s",
		    k->path, got, want);
	free(want);
}

static void
test_docs(void **state)
{
	char *md = slurp("docs/configuration.md");
	char *man = slurp("docs/man/tandem.json.5");
	size_t i;

	(void)state;
	for (i = 0; i < config_ntable; i++) {
		if (config_table[i].type == K_OBJECT ||
		    config_table[i].type == K_NODES)
			continue;
		check_markdown(md, &config_table[i]);
		check_man(man, &config_table[i]);
	}
	free(md);
	free(man);
}

static void
test_table_shape(void **state)
{
	(void)state;
	/* a table that lost its keys would pass test_docs vacuously */
	assert_true(config_ntable > 50);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_shape),
		cmocka_unit_test(test_docs),
	};

	return cmocka_run_group_tests_name("config_docs", tests, NULL, NULL);
}
