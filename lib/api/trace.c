/*
 * A rebuild's trace and its critical path (trace.h). The steps arrive in
 * the order tandemd sent them, so sent_ms never decreases along the array.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "utf8.h"

/* From a local HTTP answer (ms) to a model download by docker run (s). */
const double hist_step_bounds[HIST_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30, 120
};

static const char *const kind_names[TS_COUNT] = {
	[TS_PREFLIGHT] = "preflight",
	[TS_LINK_CHECK] = "link_check",
	[TS_TEARDOWN] = "teardown",
	[TS_GPU_CHECK] = "gpu_check",
	[TS_RUN_HEAD] = "run_head",
	[TS_GCS_WAIT] = "gcs_wait",
	[TS_RUN_WORKER] = "run_worker",
	[TS_RAY_STATUS] = "ray_status",
	[TS_VLLM_SERVE] = "vllm_serve",
	[TS_VLLM_LOG_READY] = "vllm_log_ready",
	[TS_VLLM_HEALTH] = "vllm_health",
	[TS_VLLM_MODELS] = "vllm_models",
	[TS_VLLM_GENERATE] = "vllm_generate",
	[TS_VLLM_PHASES] = "vllm_phases",
	[TS_LOG_TAIL] = "log_tail",
	[TS_VLLM_ALIVE] = "vllm_alive",
};

const char *
trace_kind_name(enum trace_kind k)
{
	return (unsigned)k < TS_COUNT ? kind_names[k] : "unknown";
}

int
trace_kind_side(enum trace_kind k)
{
	return k == TS_LOG_TAIL || k == TS_VLLM_ALIVE;
}

void
trace_begin(struct trace *t, uint64_t generation, uint64_t now_ms)
{
	free(t->steps);
	memset(t, 0, sizeof(*t));
	t->generation = generation;
	t->start_ms = now_ms;
}

long
trace_sent(struct trace *t, enum trace_kind k, size_t node, uint64_t now_ms)
{
	struct trace_step *s;

	if (t->n >= TRACE_STEPS_MAX) {
		t->dropped++;
		return -1;
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->steps = xrealloc(t->steps, t->cap * sizeof(*t->steps));
	}
	s = &t->steps[t->n];
	memset(s, 0, sizeof(*s));
	s->kind = k;
	s->node = node;
	s->sent_ms = now_ms;
	return (long)t->n++;
}

void
trace_answered(struct trace *t, long idx, uint64_t now_ms,
    struct trace_hist *hist)
{
	struct trace_step *s;

	if (idx < 0 || (size_t)idx >= t->n)
		return;
	s = &t->steps[idx];
	if (s->answer_ms)
		return;
	s->answer_ms = now_ms > s->sent_ms ? now_ms : s->sent_ms;
	if (s->answer_ms == 0)		/* 0 means no answer */
		s->answer_ms = 1;
	if (hist && (unsigned)s->kind < TS_COUNT)
		hist_observe(&hist->h[s->kind], hist_step_bounds,
		    (double)(s->answer_ms - s->sent_ms) / 1000);
}

static int
chain(const struct trace_step *s)
{
	return s->answer_ms && !trace_kind_side(s->kind);
}

/* Latest answer first; of equal answers the longest wait first. */
static int
by_answer_desc(const void *a, const void *b, void *arg)
{
	const struct trace *t = arg;
	const struct trace_step *x = &t->steps[*(const size_t *)a];
	const struct trace_step *y = &t->steps[*(const size_t *)b];

	if (x->answer_ms != y->answer_ms)
		return x->answer_ms < y->answer_ms ? 1 : -1;
	if (x->sent_ms != y->sent_ms)
		return x->sent_ms < y->sent_ms ? -1 : 1;
	return 0;
}

/* The first chain step after step i sent at or after ms; 0 when none. */
static uint64_t
next_sent(const struct trace *t, size_t i, uint64_t ms)
{
	size_t lo = i + 1, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->steps[mid].sent_ms < ms)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->n; lo++)
		if (!trace_kind_side(t->steps[lo].kind))
			return t->steps[lo].sent_ms;
	return 0;
}

void
trace_end(struct trace *t, const char *outcome, uint64_t now_ms)
{
	size_t *order, n = 0, i, p = 0;
	uint64_t cur;

	t->end_ms = now_ms > t->start_ms ? now_ms : t->start_ms;
	utf8_copy(t->outcome, sizeof(t->outcome), outcome ? outcome : "");
	t->overhead_ms = t->waiting_ms = 0;
	order = xcalloc(t->n + 1, sizeof(*order));
	for (i = 0; i < t->n; i++) {
		struct trace_step *s = &t->steps[i];

		s->critical = 0;
		s->next_ms = s->answer_ms ? next_sent(t, i, s->answer_ms) : 0;
		if (chain(s))
			order[n++] = i;
	}
	qsort_r(order, n, sizeof(*order), by_answer_desc, t);
	/*
	 * Back from the end: what held the chain up at cur is the step whose
	 * answer came last before cur; from its answer to cur tandem worked
	 * (or slept), from its sending to its answer it waited on a node.
	 */
	cur = t->end_ms;
	for (;;) {
		struct trace_step *s;

		while (p < n && (t->steps[order[p]].answer_ms > cur ||
		    t->steps[order[p]].sent_ms < t->start_ms))
			p++;
		if (p == n) {
			t->overhead_ms += cur - t->start_ms;
			break;
		}
		s = &t->steps[order[p++]];
		s->critical = 1;
		t->overhead_ms += cur - s->answer_ms;
		t->waiting_ms += s->answer_ms - s->sent_ms;
		cur = s->sent_ms;
	}
	free(order);
}

void
trace_phase_seen(struct trace *t, size_t node, enum vllm_phase phase,
    double seconds)
{
	struct trace_phase *p;
	size_t i;

	if ((unsigned)phase >= VP_COUNT)
		return;
	for (i = 0; i < t->nphases; i++) {
		p = &t->phases[i];
		if (p->node == node && p->phase == phase) {
			if (seconds > p->seconds)
				p->seconds = seconds;
			return;
		}
	}
	if (t->nphases == TRACE_PHASES_MAX)
		return;
	p = &t->phases[t->nphases++];
	p->node = node;
	p->phase = phase;
	p->seconds = seconds;
}

void
trace_free(struct trace *t)
{
	free(t->steps);
	memset(t, 0, sizeof(*t));
}

void
trace_move(struct trace *dst, struct trace *src)
{
	free(dst->steps);
	*dst = *src;
	memset(src, 0, sizeof(*src));
}

static json_t *
rel(const struct trace *t, uint64_t ms)
{
	return ms ? json_integer((json_int_t)(ms - t->start_ms)) : json_null();
}

/*
 * vLLM's phases, node by node in the order vLLM logged them; share: the
 * phase's part of the rebuild's wall time (null while it runs), so that
 * an operator sees what of a recovery was vLLM's compile, not tandem.
 */
static json_t *
phases_json(const struct trace *t, const char *const *names, size_t nnames)
{
	json_t *a = json_array();
	uint64_t wall = t->end_ms ? t->end_ms - t->start_ms : 0;
	size_t i;

	for (i = 0; i < t->nphases; i++) {
		const struct trace_phase *p = &t->phases[i];

		json_array_append_new(a, json_pack("{s:s, s:o, s:f, s:o}",
		    "phase", vllm_phase_name(p->phase), "node",
		    p->node < nnames ? json_string(names[p->node]) :
		    json_null(), "seconds", p->seconds, "share", wall ?
		    json_real(p->seconds * 1000.0 / (double)wall) :
		    json_null()));
	}
	return a;
}

json_t *
trace_json(const struct trace *t, const char *const *names, size_t nnames)
{
	json_t *steps = json_array(), *root;
	size_t i;

	for (i = 0; i < t->n; i++) {
		const struct trace_step *s = &t->steps[i];

		json_array_append_new(steps, json_pack("{s:s, s:o, s:o, s:o, "
		    "s:o, s:b}", "step", trace_kind_name(s->kind), "node",
		    s->node < nnames ? json_string(names[s->node]) : json_null(),
		    "sent_ms", rel(t, s->sent_ms), "answer_ms",
		    rel(t, s->answer_ms), "next_ms", rel(t, s->next_ms),
		    "critical", s->critical));
	}
	root = json_pack("{s:I, s:b, s:o, s:o, s:o, s:o, s:I, s:o, s:o}",
	    "generation", (json_int_t)t->generation,
	    "running", t->end_ms == 0,
	    "outcome", t->end_ms ? json_string(t->outcome) : json_null(),
	    "wall_ms", t->end_ms ? json_integer((json_int_t)(t->end_ms -
	    t->start_ms)) : json_null(),
	    "overhead_ms", t->end_ms ? json_integer((json_int_t)
	    t->overhead_ms) : json_null(),
	    "waiting_ms", t->end_ms ? json_integer((json_int_t)
	    t->waiting_ms) : json_null(),
	    "steps_dropped", (json_int_t)t->dropped,
	    "steps", steps,
	    "vllm_phases", phases_json(t, names, nnames));
	return root;
}

void
trace_phases_render(struct sbuf *b, const struct trace *t)
{
	double most[VP_COUNT];
	int seen[VP_COUNT] = { 0 };
	size_t i;
	int k;

	if (t == NULL || t->nphases == 0)
		return;
	for (i = 0; i < t->nphases; i++) {
		const struct trace_phase *p = &t->phases[i];

		if (!seen[p->phase] || p->seconds > most[p->phase])
			most[p->phase] = p->seconds;
		seen[p->phase] = 1;
	}
	metrics_header(b, "tandem_vllm_startup_phase_seconds", "gauge",
	    "vLLM's own timing of its start-up phases in the last rebuild, "
	    "the slowest node's, by phase.");
	for (k = 0; k < VP_COUNT; k++)
		if (seen[k])
			sbuf_addf(b, "tandem_vllm_startup_phase_seconds"
			    "{phase=\"%s\"} %g\n", vllm_phase_name(k), most[k]);
}

void
trace_hist_render(struct sbuf *b, const struct trace_hist *h)
{
	int k;

	metrics_header(b, "tandem_rebuild_step_seconds", "histogram",
	    "Remote steps of rebuilds, sent to answered, by step.");
	for (k = 0; k < TS_COUNT; k++) {
		char lbl[48];

		if (h->h[k].count == 0)
			continue;
		snprintf(lbl, sizeof(lbl), "step=\"%s\"", kind_names[k]);
		hist_render(b, "tandem_rebuild_step_seconds", lbl, &h->h[k],
		    hist_step_bounds);
	}
}
