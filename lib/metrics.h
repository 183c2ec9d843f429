/*
 * Prometheus text exposition (version 0.0.4): histograms and label
 * escaping, with no I/O, so /metrics can be tested as plain text.
 */
#ifndef TANDEM_METRICS_H
#define TANDEM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define HIST_BUCKETS 12

struct histogram {
	uint64_t	 counts[HIST_BUCKETS];	/* cumulative at render */
	uint64_t	 count;
	double		 sum;
};

struct fail_count {
	char		 reason[40];
	uint64_t	 n;
};

extern const double hist_probe_bounds[HIST_BUCKETS];
extern const double hist_recover_bounds[HIST_BUCKETS];

void	hist_observe(struct histogram *, const double *bounds, double v);
/* Appends "name_bucket{labels,le=...}" lines, _sum and _count. */
void	hist_render(struct sbuf *, const char *name, const char *labels,
	    const struct histogram *, const double *bounds);
/* Appends s escaped for a label value (backslash, quote, newline). */
void	metrics_escape(struct sbuf *, const char *s);
void	metrics_header(struct sbuf *, const char *name, const char *type,
	    const char *help);

#endif
