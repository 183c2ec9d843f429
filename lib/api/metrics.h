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

/*
 * Issue 33's counters. tandem_generation_stalls_total: generation-stalled
 * verdicts (lib/policy/stall.c) that degraded the cluster. tandem_gpu_xid_total
 * {node,code}: Xid events read from the nodes' kernel logs (lib/parse/xid.c),
 * each line once (xid_seen).
 */
#define XID_COUNTS_MAX	64
struct xid_count {
	char		 node[64];
	int		 code;
	uint64_t	 n;
};

/* Counts one; a full table drops new (node, code) pairs. */
void	metrics_count_xid(struct xid_count *, size_t *n, size_t max,
	    const char *node, int code);
void	metrics_render_stalls(struct sbuf *, uint64_t stalls);
void	metrics_render_xid(struct sbuf *, const struct xid_count *, size_t n);

#endif
