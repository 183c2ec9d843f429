/* Cutting a stream into lines: see linebuf.h. */
#include <string.h>

#include "linebuf.h"

void
linebuf_init(struct linebuf *lb, size_t cap)
{
	sbuf_init(&lb->part);
	lb->cap = cap;
	lb->skipping = 0;
}

/* A line over the cap: what is kept of it goes (the memory too). */
static void
drop(struct linebuf *lb)
{
	sbuf_free(&lb->part);
	lb->skipping = 1;
}

size_t
linebuf_feed(struct linebuf *lb, char *data, size_t n, linebuf_fn *fn,
    void *arg)
{
	char *p = data, *end = data + n, *nl;
	size_t dropped = 0, seg;

	while (p < end) {
		seg = (size_t)(end - p);
		if ((nl = memchr(p, '\n', seg)) == NULL) {
			/* a line's start, its newline still to come */
			if (lb->skipping)
				break;
			if (lb->part.len + seg > lb->cap) {
				drop(lb);
				dropped++;
				break;
			}
			sbuf_addn(&lb->part, p, seg);
			break;
		}
		seg = (size_t)(nl - p);
		*nl = '\0';
		if (lb->skipping) {
			/* the end of a line dropped (and counted) before */
			lb->skipping = 0;
		} else if (lb->part.len + seg > lb->cap) {
			sbuf_free(&lb->part);
			dropped++;
		} else if (lb->part.len == 0) {
			fn(p, arg);
		} else {
			sbuf_addn(&lb->part, p, seg);
			fn(lb->part.s, arg);
			sbuf_reset(&lb->part);
		}
		p = nl + 1;
	}
	return dropped;
}

void
linebuf_flush(struct linebuf *lb, linebuf_fn *fn, void *arg)
{
	if (!lb->skipping && lb->part.len)
		fn(lb->part.s, arg);
	sbuf_reset(&lb->part);
	lb->skipping = 0;
}

void
linebuf_free(struct linebuf *lb)
{
	sbuf_free(&lb->part);
	lb->skipping = 0;
}
