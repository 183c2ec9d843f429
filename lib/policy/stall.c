/*
 * The stall rule, per engine. Progress is any new token, prompt or
 * generated: a long prefill counts its prompt only when its first token
 * comes out (vLLM's IterationStats), which is why probe.stall_s must be
 * longer than the longest prefill. Work is running + waiting: a hung
 * engine core stops updating its gauges, so they keep the values of the
 * moment it hung. Both conditions are needed for a stall: time without a
 * token (stall_s) and consecutive readings that saw it (stall_readings),
 * so that two readings far apart (the daemon was stopped, the clock
 * stepped) are never enough.
 */
#include <stdio.h>
#include <string.h>

#include "stall.h"

void
stall_init(struct stall_state *st)
{
	memset(st, 0, sizeof(*st));
}

const char *
stall_verdict_name(enum stall_verdict v)
{
	switch (v) {
	case STALL_OK:
		return "ok";
	case STALL_SUSPECT:
		return "suspect";
	case STALL_STALLED:
		return "stalled";
	case STALL_NOINFO:
		return "no-info";
	}
	return "?";
}

static struct stall_engine *
find(struct stall_state *st, const char *id)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (strcmp(st->e[i].id, id) == 0)
			return &st->e[i];
	return NULL;
}

static void
forget_unseen(struct stall_state *st)
{
	size_t i, o = 0;

	for (i = 0; i < st->n; i++)
		if (st->e[i].seen)
			st->e[o++] = st->e[i];
	st->n = o;
}

enum stall_verdict
stall_feed(struct stall_state *st, const struct vllm_reading *r, double now,
    double stall_s, int stall_readings, struct stall_report *rep)
{
	struct stall_report dummy;
	size_t i;
	int restart = st->last_t > 0 && now < st->last_t;

	if (rep == NULL)
		rep = &dummy;
	memset(rep, 0, sizeof(*rep));
	if (!(r->have & (VM_GEN | VM_PROMPT))) {
		/* no counter: nothing to judge, and nothing to remember */
		rep->verdict = STALL_NOINFO;
		return STALL_NOINFO;
	}
	if (restart)
		st->n = 0;
	for (i = 0; i < st->n; i++)
		st->e[i].seen = 0;
	rep->verdict = STALL_OK;
	for (i = 0; i < r->nengines; i++) {
		const struct vllm_engine *re = &r->engines[i];
		struct stall_engine *e = find(st, re->id);
		double tokens = re->gen_tokens + re->prompt_tokens;
		double pending = re->running + re->waiting;
		enum stall_verdict v = STALL_OK;

		if (!(re->have & (VM_GEN | VM_PROMPT)))
			continue;
		if (e == NULL) {
			if (st->n == VLLM_ENGINES_MAX)
				continue;
			e = &st->e[st->n++];
			memset(e, 0, sizeof(*e));
			snprintf(e->id, sizeof(e->id), "%s", re->id);
			e->tokens = tokens;
			e->progress_t = now;
			e->seen = 1;
			continue;
		}
		e->seen = 1;
		if (tokens < e->tokens) {
			/* vLLM started again: its counters begin at 0 */
			st->resets++;
			rep->reset = 1;
			e->quiet = 0;
			e->progress_t = now;
		} else if (tokens > e->tokens) {
			e->token_t = now;
			e->quiet = 0;
			e->progress_t = now;
		} else if (pending <= 0 ||
		    !(re->have & (VM_RUNNING | VM_WAITING))) {
			/*
			 * Nothing to do; without the gauges there is no
			 * telling work from idleness, and idleness is never a
			 * stall.
			 */
			e->quiet = 0;
			e->progress_t = now;
		} else {
			e->quiet++;
			v = e->quiet >= stall_readings &&
			    now - e->progress_t >= stall_s ?
			    STALL_STALLED : STALL_SUSPECT;
		}
		e->tokens = tokens;
		if (v > rep->verdict || (v == rep->verdict && v != STALL_OK &&
		    now - e->progress_t > rep->quiet_s)) {
			rep->verdict = v;
			snprintf(rep->engine, sizeof(rep->engine), "%s", e->id);
			rep->pending = pending;
			rep->quiet_s = now - e->progress_t;
			rep->quiet_readings = e->quiet;
		}
	}
	forget_unseen(st);
	st->last_t = now;
	return rep->verdict;
}

int
stall_tokens_since(const struct stall_state *st, double t)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->e[i].token_t > 0 && st->e[i].token_t >= t)
			return 1;
	return 0;
}

void
stall_describe(const struct stall_report *rep, char *buf, size_t len)
{
	char eng[VLLM_ENGINE_ID_MAX + 16];

	if (rep->engine[0])
		snprintf(eng, sizeof(eng), "engine %s", rep->engine);
	else
		snprintf(eng, sizeof(eng), "the engine");
	snprintf(buf, len, "%s has %.0f request%s running or waiting and made "
	    "no token for %.0f s (%d readings of vLLM's /metrics in a row)",
	    eng, rep->pending, rep->pending == 1 ? "" : "s", rep->quiet_s,
	    rep->quiet_readings);
}
