/*
 * idle while the retries are stopped (halted): the recheck (PRODUCT.md
 * section 3, rule 4; issue 41 item 9). The action's name stays "idle"
 * (the contract's list); what it does is ask again, every
 * recovery.recheck_s, the preflight's own read-only check for the
 * diagnosis that stopped the retries (lib/preflight/recheck.c's table; no teardown,
 * no container), on every node, and say what it awaits in /status
 * (recovery.awaiting). Once the check passes, having seen the cause at
 * least once, the cluster is rebuilt as POST /rebuild would
 * (recheck-cleared), within recovery.max_rebuilds_per_hour: an operator
 * fixed the node, or the node fixed itself, and nobody had to type
 * tandemctl resume. A check that passes before it ever saw the cause
 * cannot see it (vLLM found it, not the check): it stops asking, and the
 * operator decides, as for a diagnosis without a read-only check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "preflight_run.h"
#include "recheck.h"

#define POLL_MS		200	/* while the evidence is being gathered */

enum recheck_phase {
	RP_NONE,	/* no read-only check sees the cause: the operator */
	RP_WAITING,	/* until the next check */
	RP_ASKING,	/* a check runs */
	RP_BLIND,	/* passed before it saw the cause: the operator */
	RP_CAPPED,	/* passed; the hourly cap holds the rebuild back */
};

struct recheck {
	struct action		 a;
	enum diag_code		 code;		/* what stopped the retries */
	unsigned		 ask;		/* enum pf_ask */
	enum recheck_phase	 phase;
	struct preflight	*pf;
	int			 seen;		/* the cause was seen once */
	unsigned		 checks;	/* made so far */
	uint64_t		 checked_ms;	/* the last verdict; 0: none */
	enum recheck_verdict	 last;
	char			 node[64];	/* of the finding; "" none */
	char			 finding[400];
};

static uint64_t
every_ms(const struct recheck *r)
{
	return (uint64_t)(r->a.cl->cf->recovery.recheck_s * 1000);
}

/* The preflight driver's send (lib/preflight/preflight_run.c): the action's
 * ops on the node's session (pf_cmd.node). */
static int
send_cmd(void *ctx, const struct pf_cmd *c)
{
	struct recheck *r = ctx;

	return op_ssh(&r->a.own, c->node, c->tag, 0, c->cmd,
	    preflight_timeout_s(r->a.cl->cf), TS_COUNT);
}

static struct pf_runner
runner(struct recheck *r)
{
	return (struct pf_runner){ .pf = r->pf, .send = send_cmd, .ctx = r };
}

static void
next_check(struct recheck *r)
{
	r->phase = RP_WAITING;
	r->a.quiet = 1;
	action_wake(&r->a, every_ms(r));
}

/* Every node answered: still there, could not tell, or gone. */
static void
judged(struct recheck *r)
{
	struct cluster *cl = r->a.cl;
	const struct diag *d = diag_get(r->code);
	enum diag_code code;
	char finding[sizeof(r->finding)], reason[400];
	size_t node;

	r->last = recheck_judge(r->pf, &node, &code, finding, sizeof(finding));
	preflight_free(r->pf);
	r->pf = NULL;
	r->checks++;
	r->checked_ms = mono_ms();
	switch (r->last) {
	case RCV_STILL:
		r->seen = 1;
		/* FALLTHROUGH */
	case RCV_UNTOLD:
		if (strcmp(finding, r->finding) != 0)
			log_info("stopped on %s: the %s check still fails: %s",
			    d->code, recheck_what(r->code), finding);
		utf8_copy(r->finding, sizeof(r->finding), finding);
		utf8_copy(r->node, sizeof(r->node), node < cl->nnodes ?
		    cl->nodes[node].conf->name : "");
		next_check(r);
		return;
	case RCV_CLEARED:
		break;
	}
	r->node[0] = r->finding[0] = '\0';
	if (!r->seen) {
		r->phase = RP_BLIND;
		r->a.quiet = 1;
		r->a.wake_ms = UINT64_MAX;
		log_warnx("stopped on %s: the %s check passes but never saw the "
		    "cause, so it cannot see it fixed: waiting for the operator "
		    "(tandemctl resume)", d->code, recheck_what(r->code));
		return;
	}
	if (cluster_rebuilds_last_hour(cl) >=
	    cl->cf->recovery.max_rebuilds_per_hour) {
		if (r->phase != RP_CAPPED)
			log_warnx("stopped on %s: cleared, but "
			    "recovery.max_rebuilds_per_hour (%d) is reached: "
			    "rebuilt when the hour allows", d->code,
			    cl->cf->recovery.max_rebuilds_per_hour);
		next_check(r);
		r->phase = RP_CAPPED;
		return;
	}
	utf8_fmt(reason, sizeof(reason), "%s cleared: the %s check passes on "
	    "every node (checked %u time%s, every %g s); rebuilding", d->code,
	    recheck_what(r->code), r->checks, r->checks == 1 ? "" : "s",
	    cl->cf->recovery.recheck_s);
	action_event(&r->a, EV_RECHECK_CLEARED, reason);
}

static void
ask(struct recheck *r)
{
	struct cluster *cl = r->a.cl;
	struct pf_runner pr;
	size_t i;

	r->phase = RP_ASKING;
	r->a.quiet = 0;
	r->a.wake_ms = UINT64_MAX;
	r->pf = preflight_new_only(cl->cf, r->ask);
	pr = runner(r);
	for (i = 0; i < cl->nnodes; i++)
		preflight_run_node(&pr, i, node_up(cl, i), "ssh: not connected "
		    "(the daemon's session to the node is down)");
	preflight_run_more(&pr);
	if (preflight_complete(r->pf))
		judged(r);
}

static void
recheck_enter(struct action *a)
{
	struct recheck *r = (struct recheck *)a;
	const struct diag *d = a->cl->diag;

	r->code = d ? d->id : DIAG_UNRECOGNISED_ANSWER;
	r->ask = d ? recheck_asks(d->id) : 0;
	a->quiet = 1;
	if (r->ask == 0) {
		r->phase = RP_NONE;
		a->wake_ms = UINT64_MAX;
		log_info("stopped on %s: no read-only check sees it; waiting for "
		    "the operator", r->code == DIAG_UNRECOGNISED_ANSWER ?
		    "a stop" : diag_code_name(r->code));
		return;
	}
	/* the first look at once: it must see the cause to see it go */
	r->phase = RP_WAITING;
	a->wake_ms = a->began_ms;
}

static void
recheck_tick(struct action *a, uint64_t now)
{
	struct recheck *r = (struct recheck *)a;

	if ((r->phase != RP_WAITING && r->phase != RP_CAPPED) ||
	    now < a->wake_ms)
		return;
	/* the evidence the stop began to keep asks the nodes first */
	if (gathering(a->cl)) {
		a->wake_ms = now + POLL_MS;
		return;
	}
	ask(r);
}

static void
recheck_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct recheck *r = (struct recheck *)a;
	struct pf_runner pr;

	if (r->phase != RP_ASKING || r->pf == NULL)
		return;
	pr = runner(r);
	preflight_run_answer(&pr, o->node, o->tag, ans->cmd);
	if (preflight_complete(r->pf)) {
		owner_cancel(&a->own);	/* what a finished node still runs */
		judged(r);
	}
}

static void
recheck_free(struct action *a)
{
	preflight_free(((struct recheck *)a)->pf);
}

json_t *
recheck_awaiting_json(const struct action *a)
{
	const struct recheck *r = (const struct recheck *)a;
	const struct cluster *cl = a->cl;
	const char *code = diag_code_name(r->code);
	double ago = r->checked_ms ? (double)(mono_ms() - r->checked_ms) /
	    1000.0 : -1;
	char msg[700], when[80];

	if (r->checked_ms)
		snprintf(when, sizeof(when), "checked %.0f s ago", ago);
	else
		snprintf(when, sizeof(when), "not checked yet");
	switch (r->phase) {
	case RP_NONE:
		utf8_fmt(msg, sizeof(msg), "no read-only check sees %s: "
		    "waiting for the operator (fix the cause, then tandemctl "
		    "resume)", code);
		break;
	case RP_BLIND:
		utf8_fmt(msg, sizeof(msg), "the %s check passes but never saw "
		    "%s, so it cannot see it fixed: waiting for the operator "
		    "(tandemctl resume)", recheck_what(r->code), code);
		break;
	case RP_CAPPED:
		utf8_fmt(msg, sizeof(msg), "%s cleared (%s), but "
		    "recovery.max_rebuilds_per_hour (%d) is reached: rebuilt "
		    "when the hour allows", code, when,
		    cl->cf->recovery.max_rebuilds_per_hour);
		break;
	case RP_WAITING:
	case RP_ASKING:
		if (r->finding[0])
			utf8_fmt(msg, sizeof(msg), "%s%s%s%s; %s, again every "
			    "%g s; rebuilt by itself once it passes",
			    r->last == RCV_UNTOLD ? "could not tell: " : "",
			    r->node, r->node[0] ? " " : "", r->finding, when,
			    cl->cf->recovery.recheck_s);
		else
			utf8_fmt(msg, sizeof(msg), "the %s check for %s: %s; "
			    "rebuilt by itself once it passes",
			    recheck_what(r->code), code, when);
		break;
	}
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:f, s:I, s:s}",
	    "code", code,
	    "check", r->ask ? json_string(recheck_what(r->code)) : json_null(),
	    "node", r->node[0] ? json_string(r->node) : json_null(),
	    "finding", r->finding[0] ? json_string(r->finding) : json_null(),
	    "checked_s", r->checked_ms ? json_real(ago) : json_null(),
	    "every_s", cl->cf->recovery.recheck_s,
	    "checks", (json_int_t)r->checks,
	    "message", msg);
}

const struct action_ops act_recheck = {
	.size = sizeof(struct recheck),
	.enter = recheck_enter,
	.answered = recheck_answered,
	.tick = recheck_tick,
	.free = recheck_free,
};
