/*
 * The history of the cluster: the ring of its last EVENTS_MAX events
 * (transitions, remedies, GPU faults noted, workloads stopped), as /events,
 * the status page and the evidence bundle show it. state.c writes the ring
 * to events.json and reads it back at start; the funnel (cluster.c),
 * remedy.c, workload.c and hwcheck.c record into it.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

/*
 * An event's reason, valid UTF-8, cut at EVENT_REASON_MAX and kept at its
 * own length: 1000 slots of the cap would be 300 kB, touched as the log
 * fills, for reasons mostly a fifth of that.
 */
char *
history_reason(const char *reason)
{
	char buf[EVENT_REASON_MAX], *shown = log_mask(reason);

	/* kept in the state dir too: never vLLM's key */
	utf8_copy(buf, sizeof(buf), shown);
	free(shown);
	return xstrdup(buf);
}

void
history_clear(struct event_rec *e)
{
	free(e->reason);
	memset(e, 0, sizeof(*e));
}

void
history_record(struct cluster *cl, const char *from, const char *to,
    const char *action, const char *reason)
{
	struct history *h = &cl->hist;
	struct event_rec *e = &h->ev[h->seq % EVENTS_MAX];

	history_clear(e);
	e->seq = ++h->seq;
	e->time = now_s();
	utf8_copy(e->from, sizeof(e->from), from);
	utf8_copy(e->to, sizeof(e->to), to);
	utf8_copy(e->action, sizeof(e->action), action);
	e->reason = history_reason(reason);
	if (h->n < EVENTS_MAX)
		h->n++;
	state_save_events(cl);
}

json_t *
history_event_json(const struct event_rec *r)
{
	return json_pack("{s:I, s:f, s:s, s:s, s:s, s:s}", "seq",
	    (json_int_t)r->seq, "time", r->time, "from", r->from, "to", r->to,
	    "action", r->action, "reason", r->reason);
}

/*
 * The ring's events after since, at most EVENTS_MAX whatever since is: a
 * since at or past the newest asks for nothing (since + 1 would wrap at
 * 2^64 - 1 and walk from 0).
 */
json_t *
history_json(const struct cluster *cl, uint64_t since)
{
	json_t *a = json_array();
	uint64_t seq, first = cl->hist.seq - cl->hist.n + 1;

	if (since >= cl->hist.seq)
		return a;
	for (seq = first > since ? first : since + 1; seq <= cl->hist.seq;
	    seq++)
		json_array_append_new(a,
		    history_event_json(&cl->hist.ev[(seq - 1) % EVENTS_MAX]));
	return a;
}
