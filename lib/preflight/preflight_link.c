/*
 * The preflight's link check in rounds (preflight_link.h): the commands
 * come from plan_init.c (cmd_link_state, cmd_link_ping), the verdicts from
 * linkcheck.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "netinfo.h"
#include "plan.h"
#include "preflight_link.h"
#include "utf8.h"
#include "util.h"

void
pflink_init(struct pf_link *lk, size_t n)
{
	size_t i;

	memset(lk, 0, sizeof(*lk));
	lk->n = n;
	lk->st = xcalloc(n, sizeof(*lk->st));
	lk->big = xcalloc(n * n, sizeof(*lk->big));
	lk->small = xcalloc(n * n, sizeof(*lk->small));
	lk->again = xcalloc(n * n, sizeof(*lk->again));
	for (i = 0; i < n * n; i++)
		lk->big[i].v = lk->small[i].v = lk->again[i].v =
		    PING_NOT_ASKED;
}

void
pflink_free(struct pf_link *lk)
{
	free(lk->st);
	free(lk->big);
	free(lk->small);
	free(lk->again);
	preflight_cmds_free(lk->due, lk->ndue);
	lk->st = NULL;
	lk->big = lk->small = lk->again = NULL;
	lk->due = NULL;
	lk->ndue = 0;
}

static void
due(struct pf_link *lk, size_t node, int tag, char *cmd)
{
	lk->due = xrealloc(lk->due, (lk->ndue + 1) * sizeof(*lk->due));
	lk->due[lk->ndue].tag = tag;
	lk->due[lk->ndue].node = node;
	lk->due[lk->ndue].cmd = cmd;
	lk->ndue++;
	lk->owed++;
}

static void
judge(struct pf_link *lk, const struct config *cf, int pings)
{
	const char **names = xcalloc(lk->n, sizeof(*names));
	const char **ifn = xcalloc(lk->n, sizeof(*ifn));
	const char **ips = xcalloc(lk->n, sizeof(*ips));
	struct linkcheck_in in;
	size_t i;

	for (i = 0; i < lk->n; i++) {
		names[i] = cf->nodes[i].name;
		ifn[i] = cf->nodes[i].ifname;
		ips[i] = cf->nodes[i].ip;
	}
	in = (struct linkcheck_in){ lk->n, names, ifn, ips, lk->st,
	    pings ? lk->big : NULL, pings ? lk->small : NULL };
	lk->failed = linkcheck_judge(&in, &lk->f);
	free(names);
	free(ifn);
	free(ips);
}

static void
done(struct pf_link *lk)
{
	lk->phase = LK_DONE;
	lk->ran = 1;
}

/*
 * Every interface answered: a node's interface or the MTUs already name
 * the failure (no ping needed); else the full-size pings, every pair.
 */
static void
states_in(struct pf_link *lk, const struct config *cf)
{
	size_t a, b;

	judge(lk, cf, 0);
	if (lk->failed || lk->n < 2) {
		done(lk);
		return;
	}
	lk->phase = LK_BIG;
	for (a = 0; a < lk->n; a++)
		for (b = 0; b < lk->n; b++)
			if (a != b)
				due(lk, a, PF_LINK_TAG_PING + 3 * (int)b,
				    cmd_link_ping(cf, a, b, linkcheck_ping_size(
				    lk->st[a].mtu)));
}

void
pflink_state(struct pf_link *lk, const struct config *cf, size_t node,
    const struct cmd_result *r)
{
	if (lk->phase != LK_STATES || node >= lk->n)
		return;
	linkcheck_state(r->error ? 255 : r->exit_code, r->out, r->error ?
	    r->error : r->err, cf->nodes[node].ifname, cf->nodes[node].ip,
	    &lk->st[node]);
	if (++lk->states == lk->n)
		states_in(lk, cf);
}

/*
 * Every full-size ping answered: the pairs that got no reply are asked
 * with 56 bytes and at full size again, both at once. Only a lost one
 * needs it: the sender's own MTU refusal is an MTU problem already, and
 * no route or no device an unreachable peer whatever the size.
 */
static void
bigs_in(struct pf_link *lk, const struct config *cf)
{
	size_t a, b;

	lk->phase = LK_SMALL;
	for (a = 0; a < lk->n; a++)
		for (b = 0; b < lk->n; b++)
			if (a != b && lk->big[a * lk->n + b].v == PING_LOST) {
				due(lk, a, PF_LINK_TAG_PING + 3 * (int)b + 1,
				    cmd_link_ping(cf, a, b, 0));
				due(lk, a, PF_LINK_TAG_PING + 3 * (int)b + 2,
				    cmd_link_ping(cf, a, b, linkcheck_ping_size(
				    lk->st[a].mtu)));
			}
	if (lk->owed == 0) {
		judge(lk, cf, 1);
		done(lk);
	}
}

/*
 * The second full-size ping of a pair got its reply: the first one's loss
 * was the link's moment, not its MTU; the pair passes.
 */
static void
smalls_in(struct pf_link *lk, const struct config *cf)
{
	size_t i;

	for (i = 0; i < lk->n * lk->n; i++)
		if (lk->again[i].v == PING_OK)
			lk->big[i] = lk->again[i];
	judge(lk, cf, 1);
	done(lk);
}

void
pflink_ping(struct pf_link *lk, const struct config *cf, size_t node,
    int tag, const struct cmd_result *r)
{
	int k = tag - PF_LINK_TAG_PING;
	size_t peer = (size_t)(k / 3);
	struct ping_res *p;

	if (k < 0 || node >= lk->n || peer >= lk->n || lk->owed == 0 ||
	    (k % 3 ? lk->phase != LK_SMALL : lk->phase != LK_BIG))
		return;
	p = &(k % 3 == 0 ? lk->big : k % 3 == 1 ? lk->small :
	    lk->again)[node * lk->n + peer];
	if (p->v != PING_NOT_ASKED)
		return;		/* answered twice: the first counts */
	/* a channel that failed: the transport's words, could not tell */
	linkcheck_ping(r->error ? 255 : r->exit_code, r->error ? "" : r->out,
	    r->error ? r->error : r->err, p);
	if (--lk->owed > 0)
		return;
	if (lk->phase == LK_BIG)
		bigs_in(lk, cf);
	else
		smalls_in(lk, cf);
}

void
pflink_abandon(struct pf_link *lk)
{
	if (lk->phase == LK_DONE)
		return;
	lk->phase = LK_DONE;
	lk->ran = 0;
	preflight_cmds_free(lk->due, lk->ndue);
	lk->due = NULL;
	lk->ndue = 0;
}

size_t
pflink_more(struct pf_link *lk, struct pf_cmd **cmds)
{
	size_t n = lk->ndue;

	*cmds = lk->due;
	lk->due = NULL;
	lk->ndue = 0;
	return n;
}

/* The node could not ping: ping is not installed there. */
static int
no_ping(const struct pf_link *lk, size_t node)
{
	size_t b;

	for (b = 0; b < lk->n; b++)
		if (b != node && lk->big[node * lk->n + b].v == PING_MISSING)
			return 1;
	return 0;
}

void
pflink_result(const struct pf_link *lk, const struct config *cf,
    size_t node, struct pf_result *r)
{
	const struct link_state *st = &lk->st[node];
	char buf[320], speed[32];

	memset(r, 0, sizeof(*r));
	r->done = 1;
	linkcheck_node_detail(st, cf->nodes[node].ifname, buf, sizeof(buf));
	r->ok = st->v == LS_OK;
	r->status = r->ok ? PFS_PASSED : st->v == LS_UNKNOWN ? PFS_UNKNOWN :
	    PFS_FAILED;
	if (r->ok && no_ping(lk, node)) {
		/* the interface checked, the pairs not: never "passed" */
		r->status = PFS_NOT_CHECKED;
		utf8_fmt(r->detail, sizeof(r->detail), "%s; its peers not "
		    "pinged: no ping on the node (apt install iputils-ping)",
		    buf);
	} else
		utf8_copy(r->detail, sizeof(r->detail), buf);
	if (st->v == LS_OK) {
		net_speed_label(st->speed, speed, sizeof(speed));
		utf8_fmt(r->value, sizeof(r->value), "%s, MTU %d", speed,
		    st->mtu);
	}
	if (!lk->failed || lk->f.a != node)
		return;
	r->ok = 0;
	r->status = PFS_FAILED;
	if (lk->f.could_not_tell) {
		/* asked again, never terminal */
		r->status = PFS_UNKNOWN;
		utf8_copy(r->detail, sizeof(r->detail), lk->f.message);
	} else
		utf8_fmt(r->detail, sizeof(r->detail), "%s: %s",
		    diag_code_name(lk->f.code), lk->f.message);
	utf8_copy(r->fix, sizeof(r->fix), lk->f.fix);
}
