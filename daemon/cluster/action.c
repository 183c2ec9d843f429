/*
 * The actions' life (action.h): the table from the machine's action to its
 * kind, begin and end, the reap, and the one call through which an action
 * reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "vllmdiag.h"

/* No default: -Wswitch makes an action without a kind a build error. */
const struct action_ops *
action_kind(enum caction a, int halted)
{
	switch (a) {
	case A_IDLE:			return halted ? &act_recheck :
					    &act_watch;
	case A_PAUSED:			return &act_watch;
	case A_WAITING_FOR_NODES:	return &act_wait_nodes;
	case A_BACKOFF:			return &act_backoff;
	case A_TEARDOWN:		return &act_teardown;
	case A_LOADING_IMAGE:		return &act_load_image;
	case A_STARTING_RAY:		return &act_start;
	case A_WAITING_RAY:		return &act_wait_ray;
	case A_STARTING_VLLM:		return &act_start_vllm;
	case A_WAITING_VLLM:		return &act_wait_vllm;
	}
	return NULL;
}

static void
answered(struct owner *w, struct op *o, const struct answer *ans)
{
	struct action *a = (struct action *)w;

	/* an ended action's ops were cancelled: only a live one hears */
	a->ops->answered(a, o, ans);
}

void
action_end(struct action *a)
{
	owner_cancel(&a->own);
	a->dead = 1;
	a->next_dead = a->cl->dead;
	a->cl->dead = a;
}

void
action_begin(struct cluster *cl)
{
	const struct action_ops *k = action_kind(cl->fsm.action,
	    cl->fsm.halted);
	struct action *a;

	if (cl->act)
		action_end(cl->act);
	a = xcalloc(1, k->size);
	owner_init(&a->own, cl, answered);
	a->ops = k;
	a->cl = cl;
	a->id = cl->fsm.action;
	a->began_ms = mono_ms();
	a->wake_ms = a->began_ms;
	cl->act = a;
	k->enter(a);
}

void
action_reap(struct cluster *cl)
{
	struct action *a;

	while ((a = cl->dead) != NULL) {
		cl->dead = a->next_dead;
		if (a->ops->free)
			a->ops->free(a);
		free(a);
	}
}

void
action_wake(struct action *a, uint64_t ms)
{
	struct cluster *cl = a->cl;

	a->wake_ms = mono_ms() + ms;
	/*
	 * A tick due before the cron's next run moves the run forward, so a
	 * wait for the GPUs, Ray or vLLM is not rounded up to it. (Within
	 * the cron the timer is not active; the cron sets it again from
	 * wake_ms when it ends.)
	 */
	if (uv_is_active((uv_handle_t *)&cl->cron) &&
	    ms < uv_timer_get_due_in(&cl->cron))
		uv_timer_start(&cl->cron, cluster_cron, ms, 0);
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
	/* an ended action has no say: its ops were cancelled, it cannot ask */
	if (a->dead || a != a->cl->act) {
		log_warnx("report from an ended action %s ignored: %s",
		    action_name(a->id), r->text ? r->text : "");
		return;
	}
	cluster_report(a->cl, r);
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

/*
 * The image vanished after the preflight (docker rmi while serving): a
 * node with an archive retries once, and the retry's preflight loads it.
 * A second image-missing in the generation that loaded it stops.
 */
static int
image_load_retry(struct action *a, size_t node, const struct diag *d,
    const char *excerpt)
{
	struct cluster *cl = a->cl;
	char reason[400];

	if ((d->id != DIAG_IMAGE_MISSING && d->id != DIAG_IMAGE_PULL_FAILED) ||
	    node >= cl->nnodes ||
	    cl->nodes[node].conf->image_archive == NULL || cl->image_loaded)
		return 0;
	/* no diagnosis: it would say the retries stopped */
	cl->preflight_passed = 0;
	utf8_fmt(reason, sizeof(reason), "%s on %s: %s; the next try loads %s",
	    d->code, cl->nodes[node].conf->name, excerpt,
	    cl->nodes[node].conf->image_archive);
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

	if (r->error && !node_up(a->cl, node)) {
		action_lost(a, node, r->error);
		return;
	}
	if (r->error) {
		action_fail(a, DIAG_NODE_UNREACHABLE, node, r->error);
		return;
	}
	d = diag_match_vllm(r->err, a->cl->cf, ex, sizeof(ex));
	if (d == NULL)
		d = diag_match_vllm(r->out, a->cl->cf, ex,
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
