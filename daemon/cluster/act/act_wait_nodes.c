/*
 * waiting-for-nodes: a node stopped answering, and the cluster waits until
 * every node's session is up and its engine answers (PRODUCT.md section
 * 3, rule 2); then it is rebuilt. The sessions reconnect by themselves
 * (node.c); this asks each engine once every node is up, and again a
 * second later while one does not answer.
 */
#include <stdlib.h>

#include "act_env.h"

#define RETRY_MS	1000

struct wait_nodes {
	struct action	 a;
	int		 asking;	/* every engine asked, answers due */
	int		 not_yet;	/* one did not answer this round */
};

static void
ask_engines(struct wait_nodes *w)
{
	const struct config *cf = act_cf(&w->a);
	char *cmd = cmd_engine_info(cf);
	size_t i;

	w->asking = 1;
	w->not_yet = 0;
	w->a.wake_ms = UINT64_MAX;
	for (i = 0; i < cf->nnodes; i++) {
		if (op_ssh(&w->a.own, i, 0, 0, cmd, cf->probe.timeout_s,
		    TS_COUNT) == -1) {
			/* a session went down again: wait for it */
			owner_cancel(&w->a.own);
			w->asking = 0;
			action_wake(&w->a, RETRY_MS);
			break;
		}
	}
	free(cmd);
}

static void
wait_nodes_enter(struct action *a)
{
	a->wake_ms = mono_ms();
}

static void
wait_nodes_tick(struct action *a, uint64_t now)
{
	struct wait_nodes *w = (struct wait_nodes *)a;

	if (!w->asking && now >= a->wake_ms && act_all_reachable(a))
		ask_engines(w);
}

static void
wait_nodes_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct wait_nodes *w = (struct wait_nodes *)a;
	const struct cmd_result *r = ans->cmd;
	const struct diag *d;
	char ex[300], err[256];

	if (r->exit_code != 0) {
		w->not_yet = 1;
		utf8_fmt(err, sizeof(err), "engine: %s",
		    utf8_first_line(r->error ? r->error : r->err, ex, sizeof(ex)));
		act_node_error(a, o->node, err);
		/* the engine's own words may name why: say it meanwhile */
		if ((d = diag_match(r->err, ex, sizeof(ex))) != NULL)
			act_note(a, d->id, o->node, ex);
	} else
		act_node_error(a, o->node, "");
	if (owner_count(&a->own) > 0)
		return;
	w->asking = 0;
	if (!w->not_yet && act_all_reachable(a)) {
		action_event(a, EV_NODES_BACK, "every node and engine answers");
		return;
	}
	action_wake(a, RETRY_MS);
}

const struct action_ops act_wait_nodes = {
	.size = sizeof(struct wait_nodes),
	.enter = wait_nodes_enter,
	.answered = wait_nodes_answered,
	.tick = wait_nodes_tick,
};
