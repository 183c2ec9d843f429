/*
 * The diagnoses come from the events' reasons, which begin with the
 * diagnosis code (funnel.c writes "code: message"); a reason that does
 * not is no diagnosis and is not counted.
 */
#include <stdio.h>
#include <string.h>

#include "budget.h"
#include "diagnose.h"
#include "recovery.h"
#include "utf8.h"

/*
 * The bundle's files (lib/api/bundle.c bundle_plan) that answer "why" for
 * each kind of failure, so that the person reading /status at 3 a.m.
 * opens the right one first.
 */
static const struct {
	const char	*codes[8];
	const char	*look;
} where[] = {
	{ { "generation-stalled", "nccl-error", "gloo-loopback",
	    "worker-lost", "generation-failed", NULL },
	  "head/vllm.log (the last lines before the hang: NCCL/Gloo errors) "
	  "and nodes/*/kernel-nvrm.txt (a GPU fault under it)" },
	{ { "gpu-xid", NULL },
	  "nodes/*/kernel-nvrm.txt (the Xid lines) and nodes/*/nvidia-smi.txt" },
	{ { "cuda-oom", "gpu-memory-low", "kv-cache-too-small",
	    "gpu-not-released", NULL },
	  "head/vllm.log (what vLLM asked for) and nodes/*/nvidia-smi.txt "
	  "(who holds the GPU memory)" },
	{ { "container-died", "vllm-exited", NULL },
	  "nodes/*/container-state.json (exit code, OOMKilled) and "
	  "nodes/*/container.log" },
	{ { "gcs-unreachable", "ray-incomplete", "stale-ray-node",
	    "placement-group", "ray-token-missing", NULL },
	  "head/ray-status.txt and the workers' nodes/*/container.log" },
	{ { "startup-timeout", "arch-unsupported", "model-missing", NULL },
	  "head/vllm.log (how far start-up got)" },
	{ { "node-unreachable", NULL },
	  "the node itself: its power, its link, and journalctl -b -1 there "
	  "(the bundle holds what the other nodes saw)" },
};

const char *
budget_look_first(const char *code)
{
	size_t i, j;

	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		for (j = 0; where[i].codes[j]; j++)
			if (strcmp(where[i].codes[j], code) == 0)
				return where[i].look;
	return "README.txt, then head/vllm.log";
}

/* The code an event's reason begins with, if it is a diagnosis. */
static int
reason_code(const char *reason, char *code, size_t len, const char **msg)
{
	const char *colon = reason ? strstr(reason, ": ") : NULL;
	size_t n;

	if (colon == NULL || (n = (size_t)(colon - reason)) == 0 ||
	    n >= len)
		return 0;
	memcpy(code, reason, n);
	code[n] = '\0';
	if (diag_find(code) == NULL)
		return 0;
	*msg = colon + 2;
	return 1;
}

void
budget_summarize(const double *rebuilds, size_t n, int cap, double now,
    const struct budget_event *ev, size_t nev, double ev_now,
    const char *bundle, struct budget_summary *s)
{
	struct sbuf b;
	size_t i, j;

	memset(s, 0, sizeof(*s));
	s->cap = cap;
	s->rebuilds_last_hour = recovery_rebuilds_last_hour(rebuilds, n, now);
	s->capped = s->rebuilds_last_hour >= cap;
	if (s->capped)
		s->retry_in_s = recovery_oldest_last_hour(rebuilds, n, now) +
		    RECOVERY_HOUR_S - now;
	if (s->retry_in_s < 0)
		s->retry_in_s = 0;
	snprintf(s->bundle, sizeof(s->bundle), "%s", bundle ? bundle : "");
	for (i = 0; i < nev; i++) {
		char code[40];
		const char *msg;
		struct budget_diag *d = NULL;

		if (ev[i].time < ev_now - RECOVERY_HOUR_S || ev[i].time > ev_now ||
		    !reason_code(ev[i].reason, code, sizeof(code), &msg) ||
		    strcmp(code, "rebuild-limit") == 0)
			continue;
		for (j = 0; j < s->ndiags; j++)
			if (strcmp(s->diags[j].code, code) == 0)
				d = &s->diags[j];
		if (d == NULL) {
			if (s->ndiags == BUDGET_DIAGS_MAX)
				continue;
			d = &s->diags[s->ndiags++];
			snprintf(d->code, sizeof(d->code), "%s", code);
		}
		d->count++;
		if (ev[i].time >= d->last) {
			d->last = ev[i].time;
			utf8_copy(d->message, sizeof(d->message), msg);
		}
	}
	/* most often first; the latest first among equals */
	for (i = 1; i < s->ndiags; i++)
		for (j = i; j > 0 && (s->diags[j].count > s->diags[j - 1].count ||
		    (s->diags[j].count == s->diags[j - 1].count &&
		    s->diags[j].last > s->diags[j - 1].last)); j--) {
			struct budget_diag t = s->diags[j];

			s->diags[j] = s->diags[j - 1];
			s->diags[j - 1] = t;
		}
	snprintf(s->look_first, sizeof(s->look_first), "%s",
	    budget_look_first(s->ndiags ? s->diags[0].code : ""));
	sbuf_init(&b);
	sbuf_addf(&b, "%d rebuild%s in the last hour (recovery."
	    "max_rebuilds_per_hour %d)", s->rebuilds_last_hour,
	    s->rebuilds_last_hour == 1 ? "" : "s", cap);
	if (s->capped)
		sbuf_addf(&b, "; the cap is reached: the next attempt in %.0f "
		    "s, or at once after tandemctl resume", s->retry_in_s);
	sbuf_add(&b, ".");
	if (s->ndiags) {
		sbuf_add(&b, " Diagnoses:");
		for (i = 0; i < s->ndiags; i++)
			sbuf_addf(&b, "%s %s x%d", i ? "," : "",
			    s->diags[i].code, s->diags[i].count);
		sbuf_addf(&b, " (last: %s).", s->diags[0].message);
	}
	if (s->bundle[0])
		sbuf_addf(&b, " Evidence: %s (tandemctl bundle); look first at "
		    "%s.", s->bundle, s->look_first);
	else
		sbuf_addf(&b, " Look first at %s.", s->look_first);
	utf8_copy(s->text, sizeof(s->text), b.s ? b.s : "");
	sbuf_free(&b);
}

json_t *
budget_json(const struct budget_summary *s)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < s->ndiags; i++)
		json_array_append_new(a, json_pack("{s:s, s:i, s:s}", "code",
		    s->diags[i].code, "count", s->diags[i].count,
		    "last_message", s->diags[i].message));
	return json_pack("{s:b, s:i, s:i, s:f, s:o, s:s, s:o, s:s}",
	    "capped", s->capped, "rebuilds_last_hour", s->rebuilds_last_hour,
	    "max_per_hour", s->cap, "retry_in_s", s->retry_in_s,
	    "diagnoses", a, "look_first", s->look_first,
	    "bundle", s->bundle[0] ? json_string(s->bundle) : json_null(),
	    "text", s->text);
}
