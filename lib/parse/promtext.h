/*
 * Reading the Prometheus text exposition format (version 0.0.4) that other
 * programs serve, vLLM's GET /metrics first. Tolerant by design: a line
 * that is not a sample (a comment, garbage, a truncated tail) is skipped
 * and counted, never an error; label values may hold escapes and any
 * bytes; values may be NaN or +Inf; lines may be of any length. Nothing is
 * copied: a sample points into the caller's text.
 */
#ifndef TANDEM_PROMTEXT_H
#define TANDEM_PROMTEXT_H

#include <stddef.h>

struct prom_sample {
	const char	*name;		/* the metric name, not terminated */
	size_t		 namelen;
	const char	*labels;	/* between the braces; NULL: none */
	size_t		 labelslen;
	double		 value;		/* NaN and +-Inf as strtod gives them */
};

struct prom_stats {
	size_t	 lines;		/* every line read */
	size_t	 samples;	/* handed to the callback */
	size_t	 comments;	/* # HELP, # TYPE and other comments */
	size_t	 bad;		/* neither: skipped */
};

/* Returns nonzero to stop the walk early. */
typedef int (*prom_cb)(const struct prom_sample *, void *arg);

/*
 * Walks the LEN bytes of TEXT (NUL bytes included: they end nothing) and
 * calls CB for every well-formed sample line. STATS may be NULL.
 */
void	prom_parse(const char *text, size_t len, prom_cb cb, void *arg,
	    struct prom_stats *stats);
/* Whether the sample's name is exactly NAME. */
int	prom_name_is(const struct prom_sample *, const char *name);
/*
 * The value of label KEY, unescaped (\\, \", \n), into BUF (truncated to
 * BUFLEN - 1 bytes, always terminated). Returns 1 when the label is there,
 * 0 when not (BUF then empty).
 */
int	prom_label(const struct prom_sample *, const char *key, char *buf,
	    size_t buflen);

#endif
