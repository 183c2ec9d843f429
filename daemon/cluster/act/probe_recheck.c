/*
 * The recheck's probe (act_recheck.c decides on what it saw): which
 * read-only check can see the stopping diagnosis go (lib/preflight/recheck.c's
 * table), asked on the action's ops, and its answers read into one
 * struct recheck_seen. The check is the preflight's own for what the
 * preflight found (probe_preflight.c); a fresh SSH login (act_env's
 * login_again, the host key verified against known_hosts as always; how
 * it went, in the node view) for ssh-auth and host-key; the node's boot
 * id for a fatal Xid, which only a reboot clears.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"
#include "recheck.h"

#define POLL_MS		200	/* the logins under way */

struct probe_recheck {
	struct action		*a;
	enum recheck_kind	 kind;
	unsigned		 ask;		/* enum pf_ask */
	struct preflight	*pf;
	/* RK_BOOT: each node's boot id at the first look, and now ("" none) */
	char			(*boot)[40];
	char			(*now)[40];
	size_t			 pending;	/* boot ids asked, not answered */
	size_t			 xid_node;	/* NO_NODE: any node's reboot */
};

struct probe_recheck *
probe_recheck_new(struct action *a, enum diag_code code, const char **what,
    int *cause_seen)
{
	struct probe_recheck *p;
	enum recheck_kind kind = recheck_kind(code);

	*what = NULL;
	*cause_seen = 0;
	if (kind == RK_NONE)
		return NULL;
	p = xcalloc(1, sizeof(*p));
	p->a = a;
	p->kind = kind;
	p->ask = recheck_asks(code);
	*what = recheck_what(code);
	/*
	 * SSH refused the login that stopped the retries, the kernel log
	 * held the Xid: seen. The boot id is what clears it, not the cause.
	 */
	*cause_seen = kind == RK_LOGIN || kind == RK_BOOT;
	if (kind == RK_BOOT) {
		struct act_view rt;

		p->boot = xcalloc(act_nnodes(a), sizeof(*p->boot));
		p->now = xcalloc(act_nnodes(a), sizeof(*p->now));
		act_view(a, &rt);
		p->xid_node = rt.diag_node;
	}
	return p;
}

static void
seen_set(struct recheck_seen *s, enum recheck_verdict v, size_t node,
    const char *finding)
{
	s->passed = v == RCV_CLEARED;
	s->untold = v == RCV_UNTOLD;
	s->node = node;
	utf8_copy(s->finding, sizeof(s->finding), finding);
}

/* Every node answered the preflight's questions. */
static void
judged(struct probe_recheck *p, struct recheck_seen *s)
{
	enum diag_code code;
	enum recheck_verdict v;
	char finding[sizeof(s->finding)];
	size_t node = NO_NODE;

	v = recheck_judge(p->pf, &node, &code, finding, sizeof(finding));
	preflight_free(p->pf);
	p->pf = NULL;
	seen_set(s, v, node, finding);
}

/*
 * ssh-auth, host-key: every node's fresh login has ended. Up on every
 * node: cleared; refused again: still; unreachable now: could not tell
 * (its session keeps trying, and a refusal stops it again).
 */
static void
logins_judged(struct probe_recheck *p, struct recheck_seen *s)
{
	enum recheck_verdict v = RCV_CLEARED;
	char finding[sizeof(s->finding)] = "";
	struct act_node n;
	size_t i, node = NO_NODE;

	for (i = 0; i < act_nnodes(p->a); i++) {
		if (act_node_up(p->a, i))
			continue;
		act_node(p->a, i, &n);
		if (v == RCV_STILL || (v == RCV_UNTOLD && !n.refused))
			continue;
		v = n.refused ? RCV_STILL : RCV_UNTOLD;
		node = i;
		utf8_copy(finding, sizeof(finding), n.login_failed);
	}
	seen_set(s, v, node, finding);
}

/* The logins under way are polled; once none is, judged (1). */
static int
logins_ended(struct probe_recheck *p, uint64_t now, struct recheck_seen *s)
{
	struct act_node n;
	size_t i;

	for (i = 0; i < act_nnodes(p->a); i++) {
		act_node(p->a, i, &n);
		if (n.logging_in) {
			p->a->wake_ms = now + POLL_MS;
			return 0;
		}
	}
	logins_judged(p, s);
	return 1;
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
boots_judged(struct probe_recheck *p, struct recheck_seen *s)
{
	const struct config *cf = act_cf(p->a);
	enum recheck_verdict v = RCV_STILL;
	char finding[sizeof(s->finding)] = "";
	size_t i, node = NO_NODE, untold = NO_NODE;

	for (i = 0; i < cf->nnodes; i++) {
		if (p->xid_node != NO_NODE && i != p->xid_node)
			continue;
		if (p->now[i][0] == '\0') {
			if (p->boot[i][0] == '\0')
				strcpy(p->boot[i], BOOT_UNSEEN);
			if (untold == NO_NODE)
				untold = i;
			continue;
		}
		if (p->boot[i][0] == '\0')
			memcpy(p->boot[i], p->now[i], sizeof(p->boot[i]));
		else if (strcmp(p->boot[i], BOOT_UNSEEN) == 0) {
			log_info("node %s answers again, unreachable since the "
			    "fatal Xid (boot id %s): taken for a reboot; the "
			    "rebuild's checks read its kernel log again",
			    cf->nodes[i].name, p->now[i]);
			v = RCV_CLEARED;
			continue;
		} else if (strcmp(p->boot[i], p->now[i]) != 0) {
			log_info("node %s rebooted (boot id %s, was %s): the "
			    "fatal Xid is cleared", cf->nodes[i].name,
			    p->now[i], p->boot[i]);
			v = RCV_CLEARED;
			continue;
		}
		if (node == NO_NODE)
			node = i;
	}
	if (v != RCV_CLEARED && node != NO_NODE)
		utf8_fmt(finding, sizeof(finding), "a reboot since the fatal "
		    "Xid (boot id %s unchanged)", p->boot[node]);
	else if (v != RCV_CLEARED && untold != NO_NODE) {
		v = RCV_UNTOLD;
		node = untold;
		utf8_fmt(finding, sizeof(finding), "the boot id "
		    "(/proc/sys/kernel/random/boot_id) could not be read");
	}
	seen_set(s, v, node, finding);
}

int
probe_recheck_ask(struct probe_recheck *p, struct recheck_seen *s)
{
	struct action *a = p->a;
	const struct config *cf = act_cf(a);
	size_t i;

	if (p->kind == RK_LOGIN) {
		for (i = 0; i < cf->nnodes; i++)
			a->env->login_again(a->env->ctx, i);
		return logins_ended(p, mono_ms(), s);
	}
	if (p->kind == RK_BOOT) {
		char *cmd = cmd_boot_id();

		p->pending = 0;
		for (i = 0; i < cf->nnodes; i++) {
			p->now[i][0] = '\0';
			if (act_node_up(a, i) && op_ssh(&a->own, i, 0, 0, cmd,
			    preflight_timeout_s(cf), TS_COUNT) == 0)
				p->pending++;
		}
		free(cmd);
		if (p->pending > 0)
			return 0;
		boots_judged(p, s);
		return 1;
	}
	p->pf = preflight_new_only(act_cf_shared(a), p->ask);
	if (!probe_preflight_ask(a, p->pf, 0))
		return 0;
	judged(p, s);
	return 1;
}

int
probe_recheck_tick(struct probe_recheck *p, uint64_t now,
    struct recheck_seen *s)
{
	return p->kind == RK_LOGIN && logins_ended(p, now, s);
}

int
probe_recheck_answer(struct probe_recheck *p, const struct op *o,
    const struct answer *ans, struct recheck_seen *s)
{
	if (p->kind == RK_BOOT && p->pending > 0 &&
	    o->node < act_nnodes(p->a)) {
		const struct cmd_result *c = ans->cmd;

		if (c == NULL || c->error || c->exit_code != 0 ||
		    recheck_boot_id(c->out, p->now[o->node],
		    sizeof(p->now[o->node])) == -1)
			p->now[o->node][0] = '\0';
		if (--p->pending > 0)
			return 0;
		boots_judged(p, s);
		return 1;
	}
	if (p->pf == NULL || !probe_preflight_answer(p->a, p->pf, o, ans->cmd))
		return 0;
	owner_cancel(&p->a->own);	/* what a finished node still runs */
	judged(p, s);
	return 1;
}

void
probe_recheck_free(struct probe_recheck *p)
{
	if (p == NULL)
		return;
	preflight_free(p->pf);
	free(p->boot);
	free(p->now);
	free(p);
}
