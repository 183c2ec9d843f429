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

void
metrics_count_xid(struct xid_count *c, size_t *n, size_t max,
    const char *node, int code)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (c[i].code == code && strcmp(c[i].node, node) == 0) {
			c[i].n++;
			return;
		}
	if (*n == max)
		return;
	snprintf(c[*n].node, sizeof(c[*n].node), "%s", node);
	c[*n].code = code;
	c[*n].n = 1;
	(*n)++;
}

void
metrics_render_stalls(struct sbuf *b, uint64_t stalls)
{
	metrics_header(b, "tandem_generation_stalls_total", "counter",
	    "Times vLLM had requests running and made no token for "
	    "probe.stall_s.");
	sbuf_addf(b, "tandem_generation_stalls_total %llu\n",
	    (unsigned long long)stalls);
}

void
metrics_render_xid(struct sbuf *b, const struct xid_count *c, size_t n)
{
	size_t i;

	metrics_header(b, "tandem_gpu_xid_total", "counter",
	    "NVIDIA Xid events in the nodes' kernel logs, by node and code.");
	for (i = 0; i < n; i++) {
		sbuf_add(b, "tandem_gpu_xid_total{node=\"");
		metrics_escape(b, c[i].node);
		sbuf_addf(b, "\",code=\"%d\"} %llu\n", c[i].code,
		    (unsigned long long)c[i].n);
	}
}
