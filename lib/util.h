/*
 * Small helpers shared by everything: allocation that cannot return NULL,
 * a growable string, and the error-buffer convention used across lib/:
 * a function that can fail returns 0 or -1 and, on -1, has written a
 * one-line message into the caller's `err` buffer.
 */
#ifndef TANDEM_UTIL_H
#define TANDEM_UTIL_H

#include <stdarg.h>
#include <stddef.h>

#define ERRLEN 512

/*
 * json_dumps flags for reals as a person wrote them: jansson's default of
 * 17 significant digits prints 0.6 as 0.59999999999999998; 15 (DBL_DIG)
 * gives back every decimal of up to 15 digits, a timestamp with its
 * milliseconds included. For files that include <jansson.h>.
 */
#define TANDEM_JSON_REALS	JSON_REAL_PRECISION(15)

void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xrealloc(void *, size_t);
char	*xstrdup(const char *);
char	*xprintf(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 seterr(char *, size_t, const char *, ...)
	    __attribute__((format(printf, 3, 4)));

struct sbuf {
	char	*s;
	size_t	 len;
	size_t	 cap;
};

void	 sbuf_init(struct sbuf *);
void	 sbuf_add(struct sbuf *, const char *);
void	 sbuf_addn(struct sbuf *, const char *, size_t);
void	 sbuf_addf(struct sbuf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	 sbuf_addc(struct sbuf *, char);
void	 sbuf_reset(struct sbuf *);
char	*sbuf_take(struct sbuf *);
void	 sbuf_free(struct sbuf *);

/* A NULL-terminated vector of owned strings. */
struct strv {
	char	**v;
	size_t	  n;
	size_t	  cap;
};

void	 strv_init(struct strv *);
void	 strv_add(struct strv *, const char *);
void	 strv_addf(struct strv *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	 strv_free(struct strv *);

/*
 * Where needle first stands in the bytes [p, end), which need not end in a
 * NUL (a line of a larger answer); NULL: nowhere.
 */
const char *span_str(const char *p, const char *end, const char *needle);

#endif
