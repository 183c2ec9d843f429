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
	enum recheck_kind	 kind;
	unsigned		 ask;		/* enum pf_ask */
	enum recheck_phase	 phase;
	struct preflight	*pf;
	int			 seen;		/* the cause was seen once */
	unsigned		 checks;	/* made so far */
	uint64_t		 checked_ms;	/* the last verdict; 0: none */
	enum recheck_verdict	 last;
	char			 node[64];	/* of the finding; "" none */
	char			 finding[400];
	/* RK_BOOT: each node's boot id at the first look, and now ("" none) */
	char			(*boot)[40];
	char			(*now)[40];
	size_t			 pending;	/* boot ids asked, not answered */
	size_t			 xid_node;	/* NO_NODE: any node's reboot */
};

static uint64_t
every_ms(const struct recheck *r)
{
	return (uint64_t)(act_cf(&r->a)->recovery.recheck_s * 1000);
}

/* The preflight driver's send (lib/preflight/preflight_run.c): the action's
 * ops on the node's session (pf_cmd.node). */
static int
send_cmd(void *ctx, const struct pf_cmd *c)
{
	struct recheck *r = ctx;

	return op_ssh(&r->a.own, c->node, c->tag, 0, c->cmd,
	    preflight_timeout_s(act_cf(&r->a)), TS_COUNT);
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

/*
 * A check's verdict: still there (or could not tell) until the next
 * check, or cleared: rebuilt, unless it never saw the cause or the
 * hourly cap holds the rebuild back.
 */
static void
verdict(struct recheck *r, enum recheck_verdict v, size_t node,
    const char *finding)
{
	const struct config *cf = act_cf(&r->a);
	const struct diag *d = diag_get(r->code);
	char reason[400];

	r->last = v;
	r->checks++;
	r->checked_ms = mono_ms();
	switch (v) {
	case RCV_STILL:
		r->seen = 1;
		/* FALLTHROUGH */
	case RCV_UNTOLD:
		if (strcmp(finding, r->finding) != 0)
			log_info("stopped on %s: the %s check still fails: %s",
			    d->code, recheck_what(r->code), finding);
		utf8_copy(r->finding, sizeof(r->finding), finding);
		utf8_copy(r->node, sizeof(r->node), node < cf->nnodes ?
		    cf->nodes[node].name : "");
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
	if (r->a.env->rebuilds_last_hour(r->a.env->ctx) >=
	    cf->recovery.max_rebuilds_per_hour) {
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
	    recheck_what(r->code), r->checks, r->checks == 1 ? "" : "s",
	    cf->recovery.recheck_s);
	action_event(&r->a, EV_RECHECK_CLEARED, reason);
}

/* Every node answered the preflight's questions. */
static void
judged(struct recheck *r)
{
	enum diag_code code;
	enum recheck_verdict v;
	char finding[sizeof(r->finding)];
	size_t node = NO_NODE;

	v = recheck_judge(r->pf, &node, &code, finding, sizeof(finding));
	preflight_free(r->pf);
	r->pf = NULL;
	verdict(r, v, node, finding);
}

/*
 * ssh-auth, host-key: every node's fresh login has ended. Up on every
 * node: cleared; refused again: still; unreachable now: could not tell
 * (its session keeps trying, and a refusal stops it again).
 */
static void
logins_judged(struct recheck *r)
{
	const struct config *cf = act_cf(&r->a);
	enum recheck_verdict v = RCV_CLEARED;
	char finding[sizeof(r->finding)] = "";
	const char *why;
	size_t i, node = NO_NODE;
	int refused;

	for (i = 0; i < cf->nnodes; i++) {
		if (act_node_up(&r->a, i))
			continue;
		why = r->a.env->login_failed(r->a.env->ctx, i, &refused);
		if (v == RCV_STILL || (v == RCV_UNTOLD && !refused))
			continue;
		v = refused ? RCV_STILL : RCV_UNTOLD;
		node = i;
		utf8_copy(finding, sizeof(finding), why);
	}
	verdict(r, v, node, finding);
}

/* The logins under way are polled; once none is, judged. */
static void
logins_ended(struct recheck *r, uint64_t now)
{
	size_t i;

	for (i = 0; i < act_nnodes(&r->a); i++)
		if (r->a.env->logging_in(r->a.env->ctx, i)) {
			r->a.wake_ms = now + POLL_MS;
			return;
		}
	logins_judged(r);
}

/*
 * A fatal Xid: every node's boot id has answered. The first look keeps
 * them; cleared once the Xid's node (any node, when the finding named
 * none) answers another one: it was rebooted. A GPU reset (nvidia-smi -r)
 * leaves the Xid in the kernel log, which the rebuild's checks would read
 * again: the reboot is the signal, as the driver's Xid 154 asks. A node
 * that did not answer the first look (rebooting right after the Xid) has
 * no boot id to compare: its next answer is taken for a reboot, since a
 * node that was not rebooted still has the Xid in its kernel log, which
 * the rebuild's preflight reads and stops on again (one attempt, capped).
 */
#define BOOT_UNSEEN	"-"

static void
boots_judged(struct recheck *r)
{
	const struct config *cf = act_cf(&r->a);
	enum recheck_verdict v = RCV_STILL;
	char finding[sizeof(r->finding)] = "";
	size_t i, node = NO_NODE, untold = NO_NODE;

	for (i = 0; i < cf->nnodes; i++) {
		if (r->xid_node != NO_NODE && i != r->xid_node)
			continue;
		if (r->now[i][0] == '\0') {
			if (r->boot[i][0] == '\0')
				strcpy(r->boot[i], BOOT_UNSEEN);
			if (untold == NO_NODE)
				untold = i;
			continue;
		}
		if (r->boot[i][0] == '\0')
			memcpy(r->boot[i], r->now[i], sizeof(r->boot[i]));
		else if (strcmp(r->boot[i], BOOT_UNSEEN) == 0) {
			log_info("node %s answers again, unreachable since the "
			    "fatal Xid (boot id %s): taken for a reboot; the "
			    "rebuild's checks read its kernel log again",
			    cf->nodes[i].name, r->now[i]);
			v = RCV_CLEARED;
			continue;
		} else if (strcmp(r->boot[i], r->now[i]) != 0) {
			log_info("node %s rebooted (boot id %s, was %s): the "
			    "fatal Xid is cleared", cf->nodes[i].name,
			    r->now[i], r->boot[i]);
			v = RCV_CLEARED;
			continue;
		}
		if (node == NO_NODE)
			node = i;
	}
	if (v != RCV_CLEARED && node != NO_NODE)
		utf8_fmt(finding, sizeof(finding), "a reboot since the fatal "
		    "Xid (boot id %s unchanged)", r->boot[node]);
	else if (v != RCV_CLEARED && untold != NO_NODE) {
		v = RCV_UNTOLD;
		node = untold;
		utf8_fmt(finding, sizeof(finding), "the boot id "
		    "(/proc/sys/kernel/random/boot_id) could not be read");
	}
	verdict(r, v, node, finding);
}

static void
ask(struct recheck *r)
{
	const struct config *cf = act_cf(&r->a);
	struct pf_runner pr;
	size_t i;

	r->phase = RP_ASKING;
	r->a.quiet = 0;
	r->a.wake_ms = UINT64_MAX;
	if (r->kind == RK_LOGIN) {
		for (i = 0; i < cf->nnodes; i++)
			r->a.env->login_again(r->a.env->ctx, i);
		logins_ended(r, mono_ms());
		return;
	}
	if (r->kind == RK_BOOT) {
		char *cmd = cmd_boot_id();

		r->pending = 0;
		for (i = 0; i < cf->nnodes; i++) {
			r->now[i][0] = '\0';
			if (act_node_up(&r->a, i) && op_ssh(&r->a.own, i, 0, 0, cmd,
			    preflight_timeout_s(cf), TS_COUNT) == 0)
				r->pending++;
		}
		free(cmd);
		if (r->pending == 0)
			boots_judged(r);
		return;
	}
	r->pf = preflight_new_only(act_cf_shared(&r->a), r->ask);
	pr = runner(r);
	for (i = 0; i < cf->nnodes; i++)
		preflight_run_node(&pr, i, act_node_up(&r->a, i), "ssh: not connected "
		    "(the daemon's session to the node is down)");
	preflight_run_more(&pr);
	if (preflight_complete(r->pf))
		judged(r);
}

static void
recheck_enter(struct action *a)
{
	struct recheck *r = (struct recheck *)a;
	const struct diag *d = a->env->diag(a->env->ctx);

	r->code = d ? d->id : DIAG_UNRECOGNISED_ANSWER;
	r->ask = d ? recheck_asks(d->id) : 0;
	r->kind = d ? recheck_kind(d->id) : RK_NONE;
	a->quiet = 1;
	/*
	 * SSH refused the login that stopped the retries, the kernel log
	 * held the Xid: seen. The boot id is what clears it, not the cause.
	 */
	r->seen = r->kind == RK_LOGIN || r->kind == RK_BOOT;
	if (r->kind == RK_BOOT) {
		r->boot = xcalloc(act_nnodes(a), sizeof(*r->boot));
		r->now = xcalloc(act_nnodes(a), sizeof(*r->now));
		r->xid_node = a->env->diag_node(a->env->ctx);
	}
	if (r->kind == RK_NONE) {
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

	if (r->phase == RP_ASKING && r->kind == RK_LOGIN) {
		if (now >= a->wake_ms)
			logins_ended(r, now);
		return;
	}
	if ((r->phase != RP_WAITING && r->phase != RP_CAPPED) ||
	    now < a->wake_ms)
		return;
	/* the evidence the stop began to keep asks the nodes first */
	if (a->env->gathering(a->env->ctx)) {
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

	if (r->phase == RP_ASKING && r->kind == RK_BOOT && r->pending > 0 &&
	    o->node < act_nnodes(a)) {
		const struct cmd_result *c = ans->cmd;

		if (c == NULL || c->error || c->exit_code != 0 ||
		    recheck_boot_id(c->out, r->now[o->node],
		    sizeof(r->now[o->node])) == -1)
			r->now[o->node][0] = '\0';
		if (--r->pending == 0)
			boots_judged(r);
		return;
	}
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
	struct recheck *r = (struct recheck *)a;

	preflight_free(r->pf);
	free(r->boot);
	free(r->now);
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
		    "(tandemctl resume)", recheck_what(r->code), code);
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
			    r->last == RCV_UNTOLD ? "could not tell: " : "",
			    r->node, r->node[0] ? " " : "", r->finding, when,
			    cf->recovery.recheck_s);
		else
			utf8_fmt(msg, sizeof(msg), "the %s check for %s: %s; "
			    "rebuilt by itself once it passes",
			    recheck_what(r->code), code, when);
		break;
	}
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:f, s:I, s:s}",
	    "code", code,
	    "check", r->kind != RK_NONE ? json_string(recheck_what(r->code)) :
	    json_null(),
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
