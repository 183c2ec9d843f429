/*
 * The history of the cluster: the ring of its last EVENTS_MAX events
 * (transitions, remedies, GPU faults noted, workloads stopped), as /events,
 * the status page and the evidence bundle show it. state.c writes the ring
 * to events.json and reads it back at start; the funnel (funnel.c),
 * remedy.c, workload.c and hwcheck.c record into it.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

/*
 * An event's reason, valid UTF-8, cut at EVENT_REASON_MAX and kept at its
 * own length: 1000 slots of the cap would be 300 kB, touched as the log
 * fills, for reasons mostly a fifth of that.
 */
static char *
history_reason(const char *reason)
{
	char buf[EVENT_REASON_MAX], *shown = log_mask(reason);

	/* kept in the state dir too: never vLLM's key */
	utf8_copy(buf, sizeof(buf), shown);
	free(shown);
	return xstrdup(buf);
}

static void
history_clear(struct event_rec *e)
{
	free(e->reason);
	memset(e, 0, sizeof(*e));
}

/*
 * Written at every event, so one event at a time: a tree of all 1000 would
 * be thousands of allocations per event, and glibc keeps the peak's heap
 * (the soak saw tandemd's RSS climb with the log's length); what is freed
 * goes back at once.
 */
static void
history_save(struct cluster *cl)
{
	struct sbuf b;
	uint64_t seq, first = cl->hist.seq - cl->hist.n + 1;

	sbuf_init(&b);
	sbuf_addc(&b, '[');
	for (seq = first; seq <= cl->hist.seq; seq++) {
		json_t *e = history_event_json(history_at(&cl->hist, seq));
		char *s = json_dumps(e, JSON_COMPACT);

		json_decref(e);
		/* fields are valid UTF-8 when recorded; never NULL to sbuf */
		if (s == NULL) {
			log_warnx("state dir: event %llu cannot be encoded; "
			    "left out of events.json", (unsigned long long)seq);
			continue;
		}
		if (b.len > 1)
			sbuf_addc(&b, ',');
		sbuf_add(&b, s);
		free(s);
	}
	sbuf_addc(&b, ']');
	state_write(cl, &cl->hist.w, "events.json", b.s, b.len);
	malloc_trim(0);
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
	history_save(cl);
}

/* What happened within the current state and action (a remedy, a fault). */
void
history_note(struct cluster *cl, const char *reason)
{
	const char *st = state_name(cl->fsm.state, cl->fsm.dp);

	history_record(cl, st, st, action_name(cl->fsm.action), reason);
}

/* Event seq of the ring, which must hold it (seq - n < it <= seq). */
const struct event_rec *
history_at(const struct history *h, uint64_t seq)
{
	return &h->ev[(seq - 1) % EVENTS_MAX];
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
		    history_event_json(history_at(&cl->hist, seq)));
	return a;
}

uint64_t
history_last_seq(const struct cluster *cl)
{
	return cl->hist.seq;
}

/*
 * events.json's list as state.c read it at start, back into the ring: each
 * event's number must follow the one before.
 */
static void
history_load(struct cluster *cl, json_t *evs)
{
	json_t *e;
	size_t i;

	json_array_foreach(evs, i, e) {
		struct event_rec *r;
		json_t *js = json_object_get(e, "seq");
		uint64_t seq;

		if (!json_is_integer(js) || json_integer_value(js) <= 0 ||
		    (uint64_t)json_integer_value(js) <= cl->hist.seq) {
			log_warnx("state dir: %s/events.json: entry %zu "
			    "has no sequence number above the one before; "
			    "left out", cl->state_dir, i);
			continue;
		}
		seq = (uint64_t)json_integer_value(js);
		/*
		 * The log is a ring of consecutive numbers: a gap left
		 * a zeroed slot inside it, shown as event 0. Keep the
		 * newest unbroken run.
		 */
		if (cl->hist.seq && seq != cl->hist.seq + 1) {
			log_warnx("state dir: %s/events.json: event %llu "
			    "follows %llu; the %zu before the gap are "
			    "dropped", cl->state_dir,
			    (unsigned long long)seq,
			    (unsigned long long)cl->hist.seq, cl->hist.n);
			cl->hist.n = 0;
		}
		r = &cl->hist.ev[(seq - 1) % EVENTS_MAX];
		history_clear(r);
		r->seq = seq;
		r->time = json_number_value(json_object_get(e, "time"));
#define COPY(f) utf8_copy(r->f, sizeof(r->f), \
		    json_string_value(json_object_get(e, #f)))
		COPY(from);
		COPY(to);
		COPY(action);
#undef COPY
		r->reason = history_reason(json_string_value(
		    json_object_get(e, "reason")));
		cl->hist.seq = seq;
		if (cl->hist.n < EVENTS_MAX)
			cl->hist.n++;
	}
}

void
history_free(struct cluster *cl)
{
	size_t i;

	for (i = 0; i < EVENTS_MAX; i++)
		history_clear(&cl->hist.ev[i]);
}

/* events.json at start: its events back into the ring. */
void
history_restore(struct cluster *cl)
{
	json_t *evs;

	if ((evs = state_read(cl, "events.json")) && !json_is_array(evs))
		log_warnx("state dir: %s/events.json: not a list of events; "
		    "ignored", cl->state_dir);
	if (evs && json_is_array(evs))
		history_load(cl, evs);
	json_decref(evs);
}
