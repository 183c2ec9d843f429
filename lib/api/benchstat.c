#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchstat.h"

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
percentile(double *v, size_t n, double q)
{
	size_t rank;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(double), cmp_double);
	rank = (size_t)ceil(q * (double)n);
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

void
bench_add(struct bench_level *l, const struct bench_sample *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->s = xrealloc(l->s, l->cap * sizeof(*l->s));
	}
	l->s[l->n++] = *s;
}

void
bench_free(struct bench_level *l)
{
	free(l->s);
	l->s = NULL;
	l->n = l->cap = 0;
}

const char *
bench_err_name(int e)
{
	switch (e) {
	case BE_HTTP:		return "http";
	case BE_TIMEOUT:	return "timeout";
	case BE_CONNECT:	return "connection";
	default:		return "other";
	}
}

void
bench_summarize(const struct bench_level *l, struct bench_summary *o)
{
	double *lat = xcalloc(l->n + 1, sizeof(double));
	double *ttft = xcalloc(l->n + 1, sizeof(double));
	double *itl = xcalloc(l->n + 1, sizeof(double));
	size_t i, nl = 0, nt = 0;
	double sum = 0, pt = 0, ct = 0;

	memset(o, 0, sizeof(*o));
	o->concurrency = l->concurrency;
	o->wall_s = l->wall_s;
	for (i = 0; i < l->n; i++) {
		const struct bench_sample *s = &l->s[i];

		if (!s->ok) {
			o->failed++;
			o->errors[s->err < BE_COUNT ? s->err : BE_OTHER]++;
			continue;
		}
		o->ok++;
		lat[nl++] = s->latency_s;
		sum += s->latency_s;
		pt += s->prompt_tokens;
		ct += s->completion_tokens;
		if (s->ttft_s > 0) {
			ttft[nt] = s->ttft_s;
			itl[nt++] = s->itl_s;
		}
	}
	if (l->wall_s > 0) {
		o->qps = o->ok / l->wall_s;
		o->prompt_tps = pt / l->wall_s;
		o->completion_tps = ct / l->wall_s;
		o->total_tps = (pt + ct) / l->wall_s;
	}
	o->lat_avg = nl ? sum / (double)nl : 0;
	o->lat_p50 = percentile(lat, nl, 0.50);
	o->lat_p95 = percentile(lat, nl, 0.95);
	o->lat_p99 = percentile(lat, nl, 0.99);
	o->ttft_p50 = percentile(ttft, nt, 0.50);
	o->ttft_p95 = percentile(ttft, nt, 0.95);
	o->itl_p50 = percentile(itl, nt, 0.50);
	free(lat);
	free(ttft);
	free(itl);
}

static void
errors_text(struct sbuf *b, const struct bench_summary *s)
{
	int e, first = 1;

	for (e = 0; e < BE_COUNT; e++) {
		if (!s->errors[e])
			continue;
		sbuf_addf(b, "%s%s %d", first ? "" : ", ", bench_err_name(e),
		    s->errors[e]);
		first = 0;
	}
	if (first)
		sbuf_add(b, "-");
}

void
bench_render(struct sbuf *b, enum bench_format f, int stream,
    const struct bench_summary *s, size_t n)
{
	size_t i;
	const char *sep = f == BF_MARKDOWN ? " | " : "  ";
	double base_ct = n ? s[0].completion_tps : 0;

	if (f == BF_JSON) {
		sbuf_add(b, "[");
		for (i = 0; i < n; i++) {
			sbuf_addf(b, "%s{\"concurrency\":%d,\"total_s\":%.3f,"
			    "\"qps\":%.3f,\"prompt_tok_s\":%.3f,"
			    "\"completion_tok_s\":%.3f,\"total_tok_s\":%.3f,"
			    "\"latency_avg_s\":%.3f,\"latency_p50_s\":%.3f,"
			    "\"latency_p95_s\":%.3f,\"latency_p99_s\":%.3f,"
			    "\"ok\":%d,\"failed\":%d,\"errors\":{\"http\":%d,"
			    "\"timeout\":%d,\"connection\":%d,\"other\":%d}",
			    i ? "," : "", s[i].concurrency, s[i].wall_s,
			    s[i].qps, s[i].prompt_tps, s[i].completion_tps,
			    s[i].total_tps, s[i].lat_avg, s[i].lat_p50,
			    s[i].lat_p95, s[i].lat_p99, s[i].ok, s[i].failed,
			    s[i].errors[BE_HTTP], s[i].errors[BE_TIMEOUT],
			    s[i].errors[BE_CONNECT], s[i].errors[BE_OTHER]);
			if (stream)
				sbuf_addf(b, ",\"ttft_p50_s\":%.4f,\"ttft_p95_s\":"
				    "%.4f,\"itl_p50_s\":%.4f", s[i].ttft_p50,
				    s[i].ttft_p95, s[i].itl_p50);
			sbuf_add(b, "}");
		}
		sbuf_add(b, "]\n");
		return;
	}
	if (f == BF_CSV) {
		sbuf_add(b, "concurrency,total_s,qps,prompt_tok_s,"
		    "completion_tok_s,total_tok_s,latency_avg_s,latency_p50_s,"
		    "latency_p95_s,ok,failed\n");
		for (i = 0; i < n; i++)
			sbuf_addf(b, "%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
			    "%.3f,%d,%d\n", s[i].concurrency, s[i].wall_s,
			    s[i].qps, s[i].prompt_tps, s[i].completion_tps,
			    s[i].total_tps, s[i].lat_avg, s[i].lat_p50,
			    s[i].lat_p95, s[i].ok, s[i].failed);
		return;
	}
	if (f == BF_MARKDOWN)
		sbuf_add(b, "| ");
	sbuf_addf(b, "%-11s%s%-9s%s%-9s%s%-12s%s%-16s%s%-11s%s%-9s%s%-7s%s"
	    "%-7s%s%-7s%s%s", "concurrency", sep, "total(s)", sep, "QPS", sep,
	    "prompt tok/s", sep, "completion tok/s", sep, "total tok/s", sep,
	    "avg(s)", sep, "p50(s)", sep, "p95(s)", sep, "ok/failed", sep,
	    "errors");
	if (stream)
		sbuf_addf(b, "%sTTFT p50(s)%sITL p50(s)", sep, sep);
	sbuf_add(b, f == BF_MARKDOWN ? " |\n" : "\n");
	if (f == BF_MARKDOWN)
		sbuf_addf(b, "|---|---|---|---|---|---|---|---|---|---|---|%s\n",
		    stream ? "---|---|" : "");
	for (i = 0; i < n; i++) {
		char okf[32];

		snprintf(okf, sizeof(okf), "%d/%d", s[i].ok, s[i].failed);
		if (f == BF_MARKDOWN)
			sbuf_add(b, "| ");
		sbuf_addf(b, "%-11d%s%-9.3f%s%-9.3f%s%-12.3f%s%-16.3f%s%-11.3f"
		    "%s%-9.3f%s%-7.3f%s%-7.3f%s%-9s%s", s[i].concurrency, sep,
		    s[i].wall_s, sep, s[i].qps, sep, s[i].prompt_tps, sep,
		    s[i].completion_tps, sep, s[i].total_tps, sep, s[i].lat_avg,
		    sep, s[i].lat_p50, sep, s[i].lat_p95, sep, okf, sep);
		errors_text(b, &s[i]);
		if (stream)
			sbuf_addf(b, "%s%-11.4f%s%.4f", sep, s[i].ttft_p50, sep,
			    s[i].itl_p50);
		sbuf_add(b, f == BF_MARKDOWN ? " |\n" : "\n");
	}
	sbuf_add(b, "\n");
	if (f == BF_MARKDOWN)
		sbuf_add(b, "| concurrency | completion tok/s | vs first level "
		    "| QPS |\n|---|---|---|---|\n");
	else
		sbuf_addf(b, "%-11s  %-16s  %-14s  %s\n", "concurrency",
		    "completion tok/s", "vs first level", "QPS");
	for (i = 0; i < n; i++) {
		double rel = base_ct > 0 ? s[i].completion_tps / base_ct : 0;
		char rel_s[16];

		snprintf(rel_s, sizeof(rel_s), "%.1fx", rel);
		if (f == BF_MARKDOWN)
			sbuf_addf(b, "| %d | %.1f | %s | %.3f |\n",
			    s[i].concurrency, s[i].completion_tps, rel_s,
			    s[i].qps);
		else
			sbuf_addf(b, "%-11d  %-16.1f  %-14s  %.3f\n",
			    s[i].concurrency, s[i].completion_tps, rel_s,
			    s[i].qps);
	}
}
