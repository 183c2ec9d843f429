#include <stdio.h>
#include <string.h>

#include "metrics.h"

const double hist_probe_bounds[HIST_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10
};
const double hist_recover_bounds[HIST_BUCKETS] = {
	1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600
};

void
hist_observe(struct histogram *h, const double *bounds, double v)
{
	size_t i;

	for (i = 0; i < HIST_BUCKETS; i++)
		if (v <= bounds[i]) {
			h->counts[i]++;
			break;
		}
	h->count++;
	h->sum += v;
}

void
metrics_escape(struct sbuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			sbuf_add(b, "\\\\");
		else if (*s == '"')
			sbuf_add(b, "\\\"");
		else if (*s == '\n')
			sbuf_add(b, "\\n");
		else
			sbuf_addc(b, *s);
	}
}

void
metrics_header(struct sbuf *b, const char *name, const char *type,
    const char *help)
{
	sbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void
hist_render(struct sbuf *b, const char *name, const char *labels,
    const struct histogram *h, const double *bounds)
{
	uint64_t cum = 0;
	size_t i;
	const char *sep = labels && *labels ? "," : "";

	if (labels == NULL)
		labels = "";
	for (i = 0; i < HIST_BUCKETS; i++) {
		cum += h->counts[i];
		sbuf_addf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
		    bounds[i], (unsigned long long)cum);
	}
	sbuf_addf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
	    (unsigned long long)h->count);
	if (*labels) {
		sbuf_addf(b, "%s_sum{%s} %.6f\n", name, labels, h->sum);
		sbuf_addf(b, "%s_count{%s} %llu\n", name, labels,
		    (unsigned long long)h->count);
	} else {
		sbuf_addf(b, "%s_sum %.6f\n", name, h->sum);
		sbuf_addf(b, "%s_count %llu\n", name,
		    (unsigned long long)h->count);
	}
}
