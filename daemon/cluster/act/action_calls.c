/*
 * What every action calls (action.h, act_env.h): the one call through which
 * it reports and its shorthands, its next tick, and what it reads of the
 * runtime through its act_env. Its life (the table, begin, end, reap) is
 * the runtime's: action_run.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"
#include "vllmdiag.h"

void
action_wake(struct action *a, uint64_t ms)
{
	a->wake_ms = mono_ms() + ms;
	a->env->wake(a->env->ctx, ms);
}

uint64_t
action_repoll_ms(uint64_t sent_ms, uint64_t every_ms)
{
	uint64_t took = mono_ms() - sent_ms;

	return took >= every_ms ? 0 : every_ms - took;
}

void
action_report(struct action *a, const struct report *r)
{
	/* the runtime hears only its current action (runtime_env.c) */
	a->env->report(a->env->ctx, a, r);
}

void
action_event(struct action *a, enum event ev, const char *reason)
{
	struct report r = { .kind = REPORT_EVENT, .ev = ev, .node = NO_NODE,
	    .text = reason };

	action_report(a, &r);
}

void
action_fail(struct action *a, enum diag_code d, size_t node,
    const char *excerpt)
{
	struct report r = { .kind = REPORT_FAILED, .diag = d, .node = node,
	    .text = excerpt };

	action_report(a, &r);
}

void
action_lost(struct action *a, size_t node, const char *why)
{
	struct report r = { .kind = REPORT_NODE_LOST, .node = node,
	    .text = why };

	action_report(a, &r);
}

void
action_check(struct action *a, enum fact f, enum diag_code d, size_t node,
    const char *excerpt)
{
	struct report r = { .kind = REPORT_CHECK, .fact = f, .diag = d,
	    .node = node, .text = excerpt };

	action_report(a, &r);
}

const struct config *
act_cf(const struct action *a)
{
	return a->env->config(a->env->ctx);
}

struct config *
act_cf_shared(const struct action *a)
{
	return a->env->config(a->env->ctx);
}

size_t
act_nnodes(const struct action *a)
{
	return act_cf(a)->nnodes;
}

void
act_node(const struct action *a, size_t i, struct act_node *v)
{
	a->env->node(a->env->ctx, i, v);
}

void
act_view(const struct action *a, struct act_view *v)
{
	a->env->view(a->env->ctx, v);
}

int
act_all_reachable(const struct action *a)
{
	struct act_node v;
	size_t i, n = act_nnodes(a);

	for (i = 0; i < n; i++) {
		act_node(a, i, &v);
		if (!v.reachable)
			return 0;
	}
	return 1;
}

int
act_node_up(const struct action *a, size_t node)
{
	return op_node_up(a->own.exec, node);
}

void
act_note(struct action *a, enum diag_code d, size_t node, const char *excerpt)
{
	struct report r = { .kind = REPORT_NOTE, .diag = d, .node = node,
	    .text = excerpt };

	action_report(a, &r);
}

void
act_node_error(struct action *a, size_t node, const char *text)
{
	struct report r = { .kind = REPORT_NODE_ERROR, .node = node,
	    .text = text };

	action_report(a, &r);
}

void
act_ray_seen(struct action *a, const struct ray_seen *seen)
{
	struct report r = { .kind = REPORT_SEEN, .node = NO_NODE,
	    .ray = seen };

	action_report(a, &r);
}

void
act_vllm_seen(struct action *a, const struct vllm_seen *seen)
{
	struct report r = { .kind = REPORT_SEEN, .node = NO_NODE,
	    .vllm = seen };

	action_report(a, &r);
}

void
act_rayx_seen(struct action *a, const struct rayx_seen *seen)
{
	struct report r = { .kind = REPORT_SEEN, .node = NO_NODE,
	    .rayx = seen };

	action_report(a, &r);
}

void
act_ctr_seen(struct action *a, size_t node, const struct ctr_seen *seen)
{
	struct report r = { .kind = REPORT_SEEN, .node = node, .ctr = seen };

	action_report(a, &r);
}

void
act_preflight(struct action *a, const struct preflight *pf, enum pf_what w)
{
	struct report r = { .kind = REPORT_PREFLIGHT, .node = NO_NODE,
	    .pf = pf, .pf_what = w };

	action_report(a, &r);
}

void
act_timed(struct action *a, enum probe_kind k, const struct op *o)
{
	struct report r = { .kind = REPORT_TIMED, .node = o->node,
	    .probe = (int)k,
	    .took_s = (double)(mono_ms() - o->start_ms) / 1000.0 };

	action_report(a, &r);
}

/*
 * The image vanished after the preflight (docker rmi while serving): a
 * node with an archive retries once, and the retry's preflight loads it.
 * A second image-missing in the generation that loaded it stops.
 */
static int
image_load_retry(struct action *a, size_t node, const struct diag *d,
    const char *excerpt)
{
	const struct config *cf = act_cf(a);
	struct act_view rt;
	char reason[400];

	if ((d->id != DIAG_IMAGE_MISSING && d->id != DIAG_IMAGE_PULL_FAILED) ||
	    node >= cf->nnodes || cf->nodes[node].image_archive == NULL)
		return 0;
	act_view(a, &rt);
	if (rt.image_loaded)
		return 0;
	/* no diagnosis: it would say the retries stopped; the next try runs
	   the whole preflight, which finds what to load */
	act_preflight(a, NULL, PFW_AGAIN);
	utf8_fmt(reason, sizeof(reason), "%s on %s: %s; the next try loads %s",
	    d->code, cf->nodes[node].name, excerpt,
	    cf->nodes[node].image_archive);
	log_warnx("%s", reason);
	action_event(a, EV_STEP_FAILED, reason);
	return 1;
}

/* A plan's command is long: its start, cut at a word, is what was asked. */
static void
brief(const char *cmd, char *buf, size_t len)
{
	size_t n = strlen(cmd), cut = 72;

	if (n <= cut) {
		utf8_copy(buf, len, cmd);
		return;
	}
	while (cut > 0 && cmd[cut] != ' ')
		cut--;
	utf8_copyn(buf, len, cmd, cut ? cut : 72);
	if (strlen(buf) + 5 <= len)
		strcat(buf, " ...");
}

void
action_fail_output(struct action *a, size_t node, const char *cmd,
    const struct cmd_result *r, enum diag_code fallback)
{
	char ex[300], line[300], asked[80];
	const struct diag *d;

	if (r->error && !op_node_up(a->own.exec, node)) {
		action_lost(a, node, r->error);
		return;
	}
	if (r->error) {
		action_fail(a, DIAG_NODE_UNREACHABLE, node, r->error);
		return;
	}
	d = diag_match_vllm(r->err, act_cf(a), ex, sizeof(ex));
	if (d == NULL)
		d = diag_match_vllm(r->out, act_cf(a), ex,
		    sizeof(ex));
	if (d && image_load_retry(a, node, d, ex))
		return;
	if (d) {
		action_fail(a, d->id, node, ex);
		return;
	}
	if (fallback == DIAG_UNRECOGNISED_ANSWER) {
		brief(cmd ? cmd : "?", asked, sizeof(asked));
		diag_unknown_excerpt(ex, sizeof(ex), asked, r->exit_code,
		    r->out, r->err);
	} else
		utf8_fmt(ex, sizeof(ex), "exit %d: %s", r->exit_code,
		    utf8_first_line(r->errlen ? r->err : r->out, line,
		    sizeof(line)));
	action_fail(a, fallback, node, ex);
}
