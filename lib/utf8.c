#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "util.h"

static const char repl[] = "\xef\xbf\xbd";	/* U+FFFD */

/*
 * Length of the well-formed sequence at s (at most n bytes), or 0 when it
 * is ill-formed; *bad is then the length of its maximal subpart (Unicode
 * 3.9, "U+FFFD substitution of maximal subparts"), which becomes one
 * U+FFFD. The ranges of the second byte are what rule out overlongs
 * (E0, F0), surrogates (ED) and code points above U+10FFFF (F4).
 */
static size_t
seqlen(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t need, i;

	*bad = 1;
	if (c < 0x80)
		return (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ?
		    0 : 1;
	/* C1 controls, U+0080..U+009F: a terminal takes U+009B as CSI */
	if (c == 0xc2 && n >= 2 && s[1] >= 0x80 && s[1] <= 0x9f) {
		*bad = 2;
		return 0;
	}
	if (c >= 0xc2 && c <= 0xdf)
		need = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	for (i = 1; i < need; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return need;
}

size_t
utf8_copyn(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t in = 0, out = 0, len, bad;

	if (dstlen == 0)
		return 0;
	if (src == NULL)
		srclen = 0;
	else
		srclen = strnlen(src, srclen);
	while (in < srclen) {
		len = seqlen(s + in, srclen - in, &bad);
		if (len) {
			if (out + len > dstlen - 1)
				break;
			memcpy(dst + out, s + in, len);
			in += len;
		} else {
			if (out + 3 > dstlen - 1)
				break;
			memcpy(dst + out, repl, 3);
			in += bad;
			len = 3;
		}
		out += len;
	}
	dst[out] = '\0';
	return out;
}

size_t
utf8_copy(char *dst, size_t dstlen, const char *src)
{
	return utf8_copyn(dst, dstlen, src, src ? strlen(src) : 0);
}

size_t
utf8_fmt(char *dst, size_t dstlen, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	if (dstlen == 0)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		dst[0] = '\0';
		return 0;
	}
	s = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	n = (int)utf8_copyn(dst, dstlen, s, (size_t)n);
	free(s);
	return (size_t)n;
}

int
utf8_valid(const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t n = strlen(src), i = 0, len, bad;

	while (i < n) {
		if ((len = seqlen(s + i, n - i, &bad)) == 0)
			return 0;
		i += len;
	}
	return 1;
}

const char *
utf8_first_line(const char *s, char *buf, size_t len)
{
	const char *e;
	size_t n;

	while (*s == '\n' || *s == ' ')
		s++;
	e = strchr(s, '\n');
	n = e ? (size_t)(e - s) : strlen(s);
	utf8_copyn(buf, len, s, n);
	return buf;
}

const char *
utf8_last_line(const char *s, char *buf, size_t len)
{
	const char *end = s + strlen(s), *b;
	size_t n;

	while (end > s && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	for (b = end; b > s && b[-1] != '\n'; b--)
		;
	n = (size_t)(end - b);
	utf8_copyn(buf, len, b, n);
	return buf;
}

char *
utf8_term(const char *src)
{
	const unsigned char *s = (const unsigned char *)(src ? src : "");
	size_t in = 0, n = strlen((const char *)s), len, bad, i;
	struct sbuf b;

	sbuf_init(&b);
	while (in < n) {
		len = seqlen(s + in, n - in, &bad);
		if (len) {
			sbuf_addn(&b, (const char *)s + in, len);
			in += len;
			continue;
		}
		for (i = 0; i < bad; i++)
			sbuf_addf(&b, "\\x%02x", s[in + i]);
		in += bad;
	}
	return sbuf_take(&b);
}
