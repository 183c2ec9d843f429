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

char *
xprintf(const char *fmt, ...)
{
	struct sbuf b;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	b.cap = (size_t)n + 1;
	b.s = xmalloc(b.cap);
	va_start(ap, fmt);
	vsnprintf(b.s, b.cap, fmt, ap);
	va_end(ap);
	return b.s;
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

void
sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sbuf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
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

void
strv_add(struct strv *sv, const char *s)
{
	if (sv->n + 2 > sv->cap) {
		sv->cap = sv->cap * 2 + 2;
		sv->v = xrealloc(sv->v, sv->cap * sizeof(char *));
	}
	sv->v[sv->n++] = xstrdup(s);
	sv->v[sv->n] = NULL;
}

void
strv_addf(struct strv *sv, const char *fmt, ...)
{
	struct sbuf b;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sbuf_init(&b);
	sbuf_grow(&b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b.s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (sv->n + 2 > sv->cap) {
		sv->cap = sv->cap * 2 + 2;
		sv->v = xrealloc(sv->v, sv->cap * sizeof(char *));
	}
	sv->v[sv->n++] = b.s;
	sv->v[sv->n] = NULL;
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
