#include <stdlib.h>
#include <string.h>

#include "jsonpos.h"
#include "util.h"

struct entry {
	char	*path;
	int	 line;
	int	 col;
};

struct jsonpos {
	struct entry	*e;
	size_t		 n;
	size_t		 cap;
};

struct cursor {
	const char	*p;
	int		 line;
	int		 col;
	int		 depth;
};

static void
adv(struct cursor *c)
{
	if (*c->p == '\n') {
		c->line++;
		c->col = 1;
	} else if (((unsigned char)*c->p & 0xC0) != 0x80)
		c->col++;	/* count UTF-8 characters, as jansson does */
	c->p++;
}

static void
skipws(struct cursor *c)
{
	while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')
		adv(c);
}

static void
record(struct jsonpos *jp, const char *path, int line, int col)
{
	if (jp->n == jp->cap) {
		jp->cap = jp->cap ? jp->cap * 2 : 32;
		jp->e = xrealloc(jp->e, jp->cap * sizeof(*jp->e));
	}
	jp->e[jp->n].path = xstrdup(path);
	jp->e[jp->n].line = line;
	jp->e[jp->n].col = col;
	jp->n++;
}

/* Reads a string token; appends its raw (still escaped) body to key if set. */
static int
skipstr(struct cursor *c, struct sbuf *key)
{
	if (*c->p != '"')
		return -1;
	adv(c);
	while (*c->p && *c->p != '"') {
		if (*c->p == '\\') {
			if (key)
				sbuf_addc(key, *c->p);
			adv(c);
			if (!*c->p)
				return -1;
		}
		if (key)
			sbuf_addc(key, *c->p);
		adv(c);
	}
	if (*c->p != '"')
		return -1;
	adv(c);
	return 0;
}

static int
value(struct jsonpos *jp, struct cursor *c, const char *path)
{
	char *sub;
	int rc = 0;
	size_t i;

	if (++c->depth > 64)
		return -1;
	skipws(c);
	record(jp, path, c->line, c->col);
	if (*c->p == '{') {
		adv(c);
		skipws(c);
		while (*c->p && *c->p != '}') {
			struct sbuf key;

			sbuf_init(&key);
			if (skipstr(c, &key) == -1) {
				sbuf_free(&key);
				return -1;
			}
			skipws(c);
			if (*c->p != ':') {
				sbuf_free(&key);
				return -1;
			}
			adv(c);
			sub = *path ? xprintf("%s.%s", path, key.s ? key.s : "")
			    : xstrdup(key.s ? key.s : "");
			sbuf_free(&key);
			rc = value(jp, c, sub);
			free(sub);
			if (rc == -1)
				return -1;
			skipws(c);
			if (*c->p == ',') {
				adv(c);
				skipws(c);
			}
		}
		if (*c->p != '}')
			return -1;
		adv(c);
	} else if (*c->p == '[') {
		adv(c);
		skipws(c);
		for (i = 0; *c->p && *c->p != ']'; i++) {
			sub = xprintf("%s[%zu]", path, i);
			rc = value(jp, c, sub);
			free(sub);
			if (rc == -1)
				return -1;
			skipws(c);
			if (*c->p == ',')
				adv(c);
			skipws(c);
		}
		if (*c->p != ']')
			return -1;
		adv(c);
	} else if (*c->p == '"') {
		if (skipstr(c, NULL) == -1)
			return -1;
	} else {
		while (*c->p && strchr(",]} \t\r\n", *c->p) == NULL)
			adv(c);
	}
	c->depth--;
	return 0;
}

struct jsonpos *
jsonpos_index(const char *text)
{
	struct jsonpos *jp = xcalloc(1, sizeof(*jp));
	struct cursor c = { text, 1, 1, 0 };

	/* A failure leaves what was indexed so far; lookups then fall back. */
	(void)value(jp, &c, "");
	return jp;
}

int
jsonpos_find(const struct jsonpos *jp, const char *path, int *line, int *col)
{
	size_t i;

	if (jp == NULL)
		return -1;
	for (i = 0; i < jp->n; i++) {
		if (strcmp(jp->e[i].path, path) == 0) {
			*line = jp->e[i].line;
			*col = jp->e[i].col;
			return 0;
		}
	}
	return -1;
}

void
jsonpos_free(struct jsonpos *jp)
{
	size_t i;

	if (jp == NULL)
		return;
	for (i = 0; i < jp->n; i++)
		free(jp->e[i].path);
	free(jp->e);
	free(jp);
}
