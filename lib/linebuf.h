/*
 * A stream's output cut into lines as it arrives (daemon/ssh/ssh_job.c:
 * `docker events`, the heartbeat's echoes). Each line is handed on where
 * it lies, in the bytes just read when it is whole there, so a chunk of
 * any number of lines costs one pass over it: no copy of what is left
 * after each line (a node printing without pause used to cost a memmove
 * of the whole buffer per line, quadratic in the chunk).
 *
 * Only the start of a line whose newline has not come yet is kept, at
 * most cap bytes of it. A line longer than cap is dropped, up to its
 * newline, and counted: keeping its start would fill the buffer for good,
 * and no later line would ever come out.
 */
#ifndef TANDEM_LINEBUF_H
#define TANDEM_LINEBUF_H

#include <stddef.h>

#include "util.h"

typedef void	linebuf_fn(const char *line, void *arg);

struct linebuf {
	struct sbuf	 part;		/* a line's start: no newline yet */
	size_t		 cap;		/* the longest line handed on */
	int		 skipping;	/* a line over cap, to its newline */
};

void	 linebuf_init(struct linebuf *, size_t cap);
/*
 * Hands each whole line of what came (data, n bytes; its newlines are
 * overwritten with NULs) to fn, without its newline, NUL-terminated.
 * Returns how many lines were dropped for being longer than cap.
 */
size_t	 linebuf_feed(struct linebuf *, char *data, size_t n, linebuf_fn *fn,
	    void *arg);
/* At the stream's end: the last line, if it had no newline, to fn. */
void	 linebuf_flush(struct linebuf *, linebuf_fn *fn, void *arg);
void	 linebuf_free(struct linebuf *);

#endif
