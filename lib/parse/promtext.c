/*
 * The Prometheus text format, read as its exposition_formats.md writes it:
 *
 *   metric_name [ "{" label_name "=" `"` label_value `"` { "," ... } [ "," ] "}" ]
 *       value [ timestamp ]
 *
 * Every scan is bounded by the line's end, never by a NUL, so a body with
 * NUL bytes or without a final newline is read like any other.
 */
#include <stdlib.h>
#include <string.h>

#include "promtext.h"

static int
name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    c == ':';
}

static int
name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static int
blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * The label set from *p (just past '{') to its '}': returns the position
 * past the '}', or NULL when the set is malformed.
 */
static const char *
skip_labels(const char *p, const char *end)
{
	for (;;) {
		while (p < end && blank(*p))
			p++;
		if (p < end && *p == '}')
			return p + 1;
		if (p >= end || !name_start(*p))
			return NULL;
		while (p < end && name_char(*p))
			p++;
		while (p < end && blank(*p))
			p++;
		if (p >= end || *p != '=')
			return NULL;
		p++;
		while (p < end && blank(*p))
			p++;
		if (p >= end || *p != '"')
			return NULL;
		for (p++; p < end && *p != '"'; p++)
			if (*p == '\\' && ++p >= end)
				return NULL;
		if (p >= end)
			return NULL;
		p++;
		while (p < end && blank(*p))
			p++;
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == '}')
			return p + 1;
		return NULL;
	}
}

/* One line, without its newline. Returns 1 for a sample. */
static int
parse_line(const char *p, const char *end, struct prom_sample *s,
    int *comment)
{
	const char *v;
	char num[64], *stop;
	size_t n;

	*comment = 0;
	while (p < end && blank(*p))
		p++;
	if (p < end && *p == '#') {
		*comment = 1;
		return 0;
	}
	if (p >= end || !name_start(*p))
		return 0;
	s->name = p;
	while (p < end && name_char(*p))
		p++;
	s->namelen = (size_t)(p - s->name);
	v = p;
	while (p < end && blank(*p))
		p++;
	s->labels = NULL;
	s->labelslen = 0;
	if (p < end && *p == '{') {
		const char *close = skip_labels(p + 1, end);

		if (close == NULL)
			return 0;
		s->labels = p + 1;
		s->labelslen = (size_t)(close - 1 - s->labels);
		v = p = close;
	}
	/* the value is separated by blanks from what comes before */
	if (p >= end || (p == v && !blank(*p)))
		return 0;
	while (p < end && blank(*p))
		p++;
	v = p;
	while (p < end && !blank(*p))
		p++;
	n = (size_t)(p - v);
	if (n == 0 || n >= sizeof(num))
		return 0;
	memcpy(num, v, n);
	num[n] = '\0';
	s->value = strtod(num, &stop);
	/* the timestamp, if any, is not ours to judge */
	return *stop == '\0';
}

void
prom_parse(const char *text, size_t len, prom_cb cb, void *arg,
    struct prom_stats *st)
{
	struct prom_stats dummy;
	const char *p = text, *end = text + len, *nl, *e;
	struct prom_sample s;
	int comment;

	if (st == NULL)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (text == NULL)
		return;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		e = nl ? nl : end;
		st->lines++;
		if (e > p && e[-1] == '\r')
			e--;
		if (parse_line(p, e, &s, &comment)) {
			st->samples++;
			if (cb && cb(&s, arg))
				return;
		} else if (comment)
			st->comments++;
		else {
			const char *q = p;

			while (q < e && blank(*q))
				q++;
			if (q < e)	/* an empty line is no error */
				st->bad++;
		}
		p = nl ? nl + 1 : end;
	}
}

int
prom_name_is(const struct prom_sample *s, const char *name)
{
	size_t n = strlen(name);

	return s->namelen == n && memcmp(s->name, name, n) == 0;
}

int
prom_label(const struct prom_sample *s, const char *key, char *buf,
    size_t buflen)
{
	const char *p = s->labels, *end = p ? p + s->labelslen : NULL;
	size_t klen = strlen(key), o;

	if (buflen)
		buf[0] = '\0';
	if (p == NULL)
		return 0;
	/* the set was checked by skip_labels: every step below is safe */
	while (p < end) {
		const char *k;
		size_t kn;
		int match;

		while (p < end && (blank(*p) || *p == ','))
			p++;
		if (p >= end)
			break;
		k = p;
		while (p < end && name_char(*p))
			p++;
		kn = (size_t)(p - k);
		match = kn == klen && memcmp(k, key, klen) == 0;
		while (p < end && *p != '"')
			p++;
		p++;
		for (o = 0; p < end && *p != '"'; p++) {
			char c = *p;

			if (c == '\\' && p + 1 < end) {
				c = *++p;
				if (c == 'n')
					c = '\n';
			}
			if (match && buflen && o + 1 < buflen)
				buf[o++] = c;
		}
		p++;
		if (match) {
			if (buflen)
				buf[o] = '\0';
			return 1;
		}
	}
	return 0;
}
