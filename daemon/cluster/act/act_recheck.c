/*
 * idle while the retries are stopped (halted): the recheck (PRODUCT.md
 * section 3, rule 4; issue 41 item 9). The action's name stays "idle"
 * (the contract's list); what it does is ask again, every
 * recovery.recheck_s, the read-only check for the diagnosis that stopped
 * the retries (lib/preflight/recheck.c's table; no teardown, no
 * container), and say what it awaits in /status (recovery.awaiting). The
 * check is the preflight's own for what the preflight found; a fresh SSH
 * login (host key verified against known_hosts as always, a changed key
 * never taken) for ssh-auth and host-key; the node's boot id for a fatal
 * Xid, which only a reboot clears. Once the check passes, having seen the
 * cause at least once, the cluster is rebuilt as POST /rebuild would
 * (recheck-cleared), within recovery.max_rebuilds_per_hour: an operator
 * fixed the node, or the node fixed itself, and nobody had to type
 * tandemctl resume. A check that passes before it ever saw the cause
 * cannot see it (vLLM found it, not the check): it stops asking, and the
 * operator decides, as for a diagnosis without a read-only check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"

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
	/* the check that sees it go (probe_recheck.c); NULL: none */
	struct probe_recheck	*probe;
	const char		*what;		/* the check, for people */
	enum recheck_phase	 phase;
	int			 seen;		/* the cause was seen once */
	unsigned		 checks;	/* made so far */
	uint64_t		 checked_ms;	/* the last verdict; 0: none */
	int			 untold;	/* the last: could not tell */
	char			 node[64];	/* of the finding; "" none */
	char			 finding[400];
};

static uint64_t
every_ms(const struct recheck *r)
{
	return (uint64_t)(act_cf(&r->a)->recovery.recheck_s * 1000);
}

static void
next_check(struct recheck *r)
{
	r->phase = RP_WAITING;
	r->a.quiet = 1;
	action_wake(&r->a, every_ms(r));
}

/*
 * A check's verdict: still there (or could not tell) until the next
 * check, or cleared: rebuilt, unless it never saw the cause or the
 * hourly cap holds the rebuild back.
 */
static void
verdict(struct recheck *r, const struct recheck_seen *s)
{
	const struct config *cf = act_cf(&r->a);
	const struct diag *d = diag_get(r->code);
	struct act_view rt;
	char reason[400];

	r->untold = !s->passed && s->untold;
	r->checks++;
	r->checked_ms = mono_ms();
	if (!s->passed) {
		if (!s->untold)
			r->seen = 1;
		if (strcmp(s->finding, r->finding) != 0)
			log_info("stopped on %s: the %s check still fails: %s",
			    d->code, r->what, s->finding);
		utf8_copy(r->finding, sizeof(r->finding), s->finding);
		utf8_copy(r->node, sizeof(r->node), s->node < cf->nnodes ?
		    cf->nodes[s->node].name : "");
		next_check(r);
		return;
	}
	r->node[0] = r->finding[0] = '\0';
	if (!r->seen) {
		r->phase = RP_BLIND;
		r->a.quiet = 1;
		r->a.wake_ms = UINT64_MAX;
		log_warnx("stopped on %s: the %s check passes but never saw the "
		    "cause, so it cannot see it fixed: waiting for the operator "
		    "(tandemctl resume)", d->code, r->what);
		return;
	}
	act_view(&r->a, &rt);
	if (rt.rebuilds_last_hour >= cf->recovery.max_rebuilds_per_hour) {
		if (r->phase != RP_CAPPED)
			log_warnx("stopped on %s: cleared, but "
			    "recovery.max_rebuilds_per_hour (%d) is reached: "
			    "rebuilt when the hour allows", d->code,
			    cf->recovery.max_rebuilds_per_hour);
		next_check(r);
		r->phase = RP_CAPPED;
		return;
	}
	utf8_fmt(reason, sizeof(reason), "%s cleared: the %s check passes on "
	    "every node (checked %u time%s, every %g s); rebuilding", d->code,
	    r->what, r->checks, r->checks == 1 ? "" : "s",
	    cf->recovery.recheck_s);
	action_event(&r->a, EV_RECHECK_CLEARED, reason);
}

/* The check asked again; it may see at once (the logins, no node up). */
static void
ask(struct recheck *r)
{
	struct recheck_seen s;

	r->phase = RP_ASKING;
	r->a.quiet = 0;
	r->a.wake_ms = UINT64_MAX;
	if (probe_recheck_ask(r->probe, &s))
		verdict(r, &s);
}

static void
recheck_enter(struct action *a)
{
	struct recheck *r = (struct recheck *)a;
	struct act_view rt;
	const struct diag *d;

	act_view(a, &rt);
	d = rt.diag;
	r->code = d ? d->id : DIAG_UNRECOGNISED_ANSWER;
	a->quiet = 1;
	if (d)
		r->probe = probe_recheck_new(a, d->id, &r->what, &r->seen);
	if (r->probe == NULL) {
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
	struct recheck_seen s;
	struct act_view rt;

	if (r->phase == RP_ASKING) {
		/* the logins under way are polled */
		if (now >= a->wake_ms && probe_recheck_tick(r->probe, now, &s))
			verdict(r, &s);
		return;
	}
	if ((r->phase != RP_WAITING && r->phase != RP_CAPPED) ||
	    now < a->wake_ms)
		return;
	/* the evidence the stop began to keep asks the nodes first */
	act_view(a, &rt);
	if (rt.gathering) {
		a->wake_ms = now + POLL_MS;
		return;
	}
	ask(r);
}

static void
recheck_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct recheck *r = (struct recheck *)a;
	struct recheck_seen s;

	if (r->phase == RP_ASKING && probe_recheck_answer(r->probe, o, ans,
	    &s))
		verdict(r, &s);
}

static void
recheck_free(struct action *a)
{
	probe_recheck_free(((struct recheck *)a)->probe);
}

json_t *
recheck_awaiting_json(const struct action *a)
{
	const struct recheck *r = (const struct recheck *)a;
	const struct config *cf = act_cf(a);
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
		    "(tandemctl resume)", r->what, code);
		break;
	case RP_CAPPED:
		utf8_fmt(msg, sizeof(msg), "%s cleared (%s), but "
		    "recovery.max_rebuilds_per_hour (%d) is reached: rebuilt "
		    "when the hour allows", code, when,
		    cf->recovery.max_rebuilds_per_hour);
		break;
	case RP_WAITING:
	case RP_ASKING:
		if (r->finding[0])
			utf8_fmt(msg, sizeof(msg), "%s%s%s%s; %s, again every "
			    "%g s; rebuilt by itself once it passes",
			    r->untold ? "could not tell: " : "",
			    r->node, r->node[0] ? " " : "", r->finding, when,
			    cf->recovery.recheck_s);
		else
			utf8_fmt(msg, sizeof(msg), "the %s check for %s: %s; "
			    "rebuilt by itself once it passes", r->what, code,
			    when);
		break;
	}
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:f, s:I, s:s}",
	    "code", code,
	    "check", r->what ? json_string(r->what) : json_null(),
	    "node", r->node[0] ? json_string(r->node) : json_null(),
	    "finding", r->finding[0] ? json_string(r->finding) : json_null(),
	    "checked_s", r->checked_ms ? json_real(ago) : json_null(),
	    "every_s", cf->recovery.recheck_s,
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
