/*
 * The running rebuild's trace (lib/api/trace.c): a rebuild opens it, each
 * remote step of its chain is stamped when sent and when answered (op.c
 * stamps every answer), and the rebuild's end closes it into trace_last,
 * which GET /rebuilds/last shows.
 */
#include <stdlib.h>

#include "cluster_int.h"

static int
trace_running(const struct cluster *cl)
{
	return cl->trace.start_ms != 0 && cl->trace.end_ms == 0;
}

void
tracing_rebuild_begins(struct cluster *cl)
{
	if (trace_running(cl))
		tracing_rebuild_ends(cl, "rebuilt again");
	trace_begin(&cl->trace, cl->generation, mono_ms());
}

void
tracing_rebuild_ends(struct cluster *cl, const char *outcome)
{
	if (!trace_running(cl))
		return;
	trace_end(&cl->trace, outcome, mono_ms());
	log_info("rebuild %llu: %llu ms, of which tandem's own %llu ms "
	    "(GET /rebuilds/last)", (unsigned long long)cl->trace.generation,
	    (unsigned long long)(cl->trace.end_ms - cl->trace.start_ms),
	    (unsigned long long)cl->trace.overhead_ms);
	trace_move(&cl->trace_last, &cl->trace);
}

/* Both steps have the executor's hook form (op.h): arg is the cluster. */
void
tracing_step_sent(void *arg, struct op *o, enum trace_kind k)
{
	struct cluster *cl = arg;

	o->step = -1;
	if (!trace_running(cl))
		return;
	o->step = trace_sent(&cl->trace, k, o->node, mono_ms());
	o->trace_ms = cl->trace.start_ms;
}

/* An answer to a step of an earlier trace (or none) stamps nothing. */
void
tracing_step_answered(void *arg, struct op *o)
{
	struct cluster *cl = arg;

	if (o->step < 0)
		return;
	if (trace_running(cl) && o->trace_ms == cl->trace.start_ms)
		trace_answered(&cl->trace, o->step, mono_ms(), &cl->cnt.h_step);
	o->step = -1;
}

json_t *
cluster_trace_json(const struct cluster *cl)
{
	const struct trace *t = trace_running(cl) ? &cl->trace :
	    &cl->trace_last;
	const char **names;
	json_t *j;
	size_t i;

	if (t->start_ms == 0)
		return NULL;
	names = xcalloc(cl->nnodes + 1, sizeof(*names));
	for (i = 0; i < cl->nnodes; i++)
		names[i] = cl->nodes[i].conf->name;
	j = trace_json(t, names, cl->nnodes);
	free(names);
	return j;
}
