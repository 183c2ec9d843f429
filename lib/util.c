#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static void
oom(void)
{
	/* Allocation failure is the one broken invariant we do not recover. */
	fputs("tandem: out of memory\n", stderr);
	abort();
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		oom();
	return p;
}

void *
xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (p == NULL)
		oom();
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		oom();
	return p;
}

char *
xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

static int	sbuf_vaddf(struct sbuf *b, const char *fmt, va_list ap);

/* NULL for a format vsnprintf cannot write. */
static char *
vxprintf(const char *fmt, va_list ap)
{
	struct sbuf b;

	sbuf_init(&b);
	return sbuf_vaddf(&b, fmt, ap) == 0 ? b.s : NULL;
}

char *
xprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = vxprintf(fmt, ap);
	va_end(ap);
	if (s == NULL)
		oom();
	return s;
}

void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void
sbuf_init(struct sbuf *b)
{
	b->s = NULL;
	b->len = b->cap = 0;
}

static void
sbuf_grow(struct sbuf *b, size_t more)
{
	if (b->len + more + 1 <= b->cap)
		return;
	if (b->cap == 0)
		b->cap = 64;
	while (b->len + more + 1 > b->cap)
		b->cap *= 2;
	b->s = xrealloc(b->s, b->cap);
}

void
sbuf_addn(struct sbuf *b, const char *s, size_t n)
{
	sbuf_grow(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void
sbuf_add(struct sbuf *b, const char *s)
{
	sbuf_addn(b, s, strlen(s));
}

void
sbuf_addc(struct sbuf *b, char c)
{
	sbuf_addn(b, &c, 1);
}

/* -1, adding nothing, for a format vsnprintf cannot write. */
static int
sbuf_vaddf(struct sbuf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n >= 0) {
		sbuf_grow(b, (size_t)n);
		vsnprintf(b->s + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
	return n < 0 ? -1 : 0;
}

void
sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)sbuf_vaddf(b, fmt, ap);
	va_end(ap);
}

void
sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

char *
sbuf_take(struct sbuf *b)
{
	char *s = b->s ? b->s : xstrdup("");

	sbuf_init(b);
	return s;
}

void
sbuf_free(struct sbuf *b)
{
	free(b->s);
	sbuf_init(b);
}

void
strv_init(struct strv *sv)
{
	sv->v = xcalloc(1, sizeof(char *));
	sv->n = 0;
	sv->cap = 1;
}

/* Appends s, which the vector then owns. */
static void
strv_take(struct strv *sv, char *s)
{
	if (sv->n + 2 > sv->cap) {
		sv->cap = sv->cap * 2 + 2;
		sv->v = xrealloc(sv->v, sv->cap * sizeof(char *));
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
}

void
strv_add(struct strv *sv, const char *s)
{
	strv_take(sv, xstrdup(s));
}

void
strv_addf(struct strv *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = vxprintf(fmt, ap);
	va_end(ap);
	if (s)
		strv_take(sv, s);
}

void
strv_free(struct strv *sv)
{
	size_t i;

	if (sv->v == NULL)
		return;
	for (i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}

const char *
span_str(const char *p, const char *end, const char *needle)
{
	size_t n = strlen(needle);

	for (; p + n <= end; p++)
		if (memcmp(p, needle, n) == 0)
			return p;
	return NULL;
}
