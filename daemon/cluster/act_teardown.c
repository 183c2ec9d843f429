/*
 * teardown: before the first rebuild, the preflight of every node (a
 * missing image or a foreign container is a diagnosis, not containers that
 * cannot work); then the containers removed on every node; then the wait
 * until the GPU memory is released (the DGX Spark Ray guide: a start
 * before it is free fails). Its end begins the starts. After a failure
 * it first waits for the read of the nodes' GPU faults (hwcheck.c): a
 * fatal one stops the retries before anything is torn down; and for the
 * evidence a stop began to keep (evidence.c), which tandemctl resume may
 * interrupt with a rebuild.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

#define TEARDOWN_TIMEOUT_S	60
#define GPU_RELEASE_S		30
#define GPU_CHECK_TIMEOUT_S	10
#define POLL_MS			50

enum teardown_step {
	TD_HW_WAIT,		/* the GPU faults, the evidence (gathering) */
	TD_PREFLIGHT,		/* the checks of every node */
	TD_REMOVING,		/* rm -f of every container */
	TD_GPU_CHECK,		/* asking whether GPU memory is released */
	TD_GPU_HELD,		/* a node answered that it still holds some */
};

enum { TAG_PREFLIGHT, TAG_REMOVE = 0x40, TAG_GPU };

struct teardown {
	struct action		 a;
	enum teardown_step	 step;
	struct preflight	*pf;
	long			 pf_step;	/* the preflight's trace step */
	uint64_t		 pf_trace;
	size_t			 held_node;
	char			 held[300];	/* what still holds GPU memory */
	uint64_t		 gpu_sent_ms;
};

static void	remove_containers(struct teardown *);

/*
 * Every node answered the preflight: a failure is a diagnosis (a node that
 * could not be asked is waited for); an image to load is loading-image;
 * else the teardown proper.
 */
static void
preflight_judged(struct teardown *t)
{
	struct cluster *cl = t->a.cl;
	struct op o = { .cl = cl, .step = t->pf_step, .trace_ms = t->pf_trace };
	const struct workloads *wl;
	enum diag_code code;
	char ex[460];		/* the detail and the fix, 200 each */
	size_t i, node;

	step_answered(cl, &o);
	hw_preflight_seen(cl, t->pf);
	if (preflight_failure(t->pf, &node, &code, ex, sizeof(ex))) {
		if (code == DIAG_NODE_UNREACHABLE)
			action_lost(&t->a, node, ex);
		else
			action_fail(&t->a, code, node, ex);
		return;
	}
	for (i = 0; i < cl->nnodes; i++)
		if ((wl = preflight_workloads(t->pf, i)) != NULL)
			workloads_seen(cl, i, wl);
	if (image_load_wanted(&t->a, t->pf))
		return;
	cl->preflight_passed = 1;
	log_info("preflight passed on every node");
	remove_containers(t);
}

/*
 * On the nodes' own sessions: a second session per node cost a handshake
 * and a key decoding each, and at 32 nodes on a loaded head timed out the
 * preflight again and again.
 */
static void
run_preflight(struct teardown *t)
{
	struct cluster *cl = t->a.cl;
	struct op o = { .cl = cl, .node = TRACE_NODE_ALL };
	struct pf_cmd *cmds;
	size_t i, j, k;

	t->step = TD_PREFLIGHT;
	t->pf = preflight_new(cl->cf);
	/* one step of every node at once in the trace */
	step_sent(cl, &o, TS_PREFLIGHT);
	t->pf_step = o.step;
	t->pf_trace = o.trace_ms;
	for (i = 0; i < cl->nnodes; i++) {
		if (!node_up(cl, i)) {
			preflight_node_down(t->pf, i, "ssh: not connected (the "
			    "daemon's session to the node is down)");
			continue;
		}
		preflight_hw_since(t->pf, i, hw_since(cl, i));
		k = preflight_commands(t->pf, i, &cmds);
		for (j = 0; j < k; j++)
			if (op_ssh(&t->a.own, i, TAG_PREFLIGHT + cmds[j].tag,
			    0, cmds[j].cmd, preflight_timeout_s(cl->cf),
			    TS_COUNT) == -1) {
				struct cmd_result down = { .exit_code = -1,
				    .out = "", .err = "",
				    .error = "ssh: session down" };

				preflight_answer(t->pf, i, cmds[j].tag, &down);
			}
		preflight_cmds_free(cmds, k);
	}
	if (preflight_complete(t->pf))
		preflight_judged(t);
}

static void
gpu_check(struct teardown *t)
{
	struct cluster *cl = t->a.cl;
	char *cmd = cmd_gpu_apps();
	size_t i;

	t->a.wake_ms = UINT64_MAX;
	t->gpu_sent_ms = mono_ms();
	for (i = 0; i < cl->nnodes; i++) {
		cl->nodes[i].last_error[0] = '\0';
		(void)op_ssh(&t->a.own, i, TAG_GPU, 0, cmd,
		    GPU_CHECK_TIMEOUT_S, TS_GPU_CHECK);
	}
	free(cmd);
	/* every session down: the node-lost report follows from node.c */
}

static void
remove_containers(struct teardown *t)
{
	struct cluster *cl = t->a.cl;
	size_t i;

	if (!all_reachable(cl)) {
		action_event(&t->a, EV_NODES_MISSING,
		    "teardown needs every node");
		return;
	}
	stop_foreign(cl);
	t->step = TD_REMOVING;
	for (i = 0; i < cl->nnodes; i++) {
		char *cmd = cmd_teardown(cl->cf, i);
		int rc = op_ssh(&t->a.own, i, TAG_REMOVE, 0, cmd,
		    TEARDOWN_TIMEOUT_S, TS_TEARDOWN);

		free(cmd);
		if (rc == -1) {
			action_event(&t->a, EV_NODES_MISSING,
			    "node went away");
			return;
		}
	}
}

static void
teardown_begin(struct teardown *t)
{
	t->a.wake_ms = UINT64_MAX;
	if (!t->a.cl->preflight_passed)
		run_preflight(t);
	else
		remove_containers(t);
}

static void
teardown_enter(struct action *a)
{
	struct teardown *t = (struct teardown *)a;

	if (gathering(a->cl)) {
		t->step = TD_HW_WAIT;
		a->wake_ms = mono_ms() + POLL_MS;
		return;
	}
	teardown_begin(t);
}

static void
removed(struct teardown *t, struct op *o, const struct cmd_result *r)
{
	struct node_rt *n = &t->a.cl->nodes[o->node];

	n->container = CTR_MISSING;
	n->cid[0] = '\0';
	n->dead_id[0] = '\0';
	if (r->exit_code != 0) {
		action_fail_output(&t->a, o->node, r, DIAG_CONTAINER_DIED);
		return;
	}
	if (owner_count(&t->a.own) > 0)
		return;
	t->step = TD_GPU_CHECK;
	t->a.deadline_ms = mono_ms() + GPU_RELEASE_S * 1000;
	gpu_check(t);
}

static void
gpu_answered(struct teardown *t, struct op *o, const struct cmd_result *r)
{
	struct cluster *cl = t->a.cl;
	struct node_rt *n = &cl->nodes[o->node];
	char line[200];

	/* No nvidia-smi (exit 127): not an NVIDIA node; nothing to check. */
	if (r->exit_code == 0 && gpu_held_by_us(n, r->out, line,
	    sizeof(line))) {
		/* the report names the first node, in config order */
		if (t->step != TD_GPU_HELD || o->node < t->held_node) {
			t->held_node = o->node;
			utf8_fmt(t->held, sizeof(t->held), "pid,MiB %s", line);
		}
		t->step = TD_GPU_HELD;
		utf8_fmt(n->last_error, sizeof(n->last_error),
		    "GPU memory still held: pid,MiB %s", line);
	}
	if (owner_count(&t->a.own) > 0)
		return;
	if (t->step == TD_GPU_CHECK) {
		action_event(&t->a, EV_TEARDOWN_DONE, "containers removed, "
		    "GPU memory released on every node");
		return;
	}
	if (mono_ms() > t->a.deadline_ms) {
		action_fail(&t->a, DIAG_GPU_NOT_RELEASED, t->held_node,
		    t->held);
		return;
	}
	t->step = TD_GPU_CHECK;
	action_wake(&t->a, action_repoll_ms(t->gpu_sent_ms, POLL_MS));
}

static void
teardown_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct teardown *t = (struct teardown *)a;

	switch (o->tag) {
	case TAG_REMOVE:
		removed(t, o, ans->cmd);
		return;
	case TAG_GPU:
		gpu_answered(t, o, ans->cmd);
		return;
	}
	preflight_answer(t->pf, o->node, o->tag - TAG_PREFLIGHT, ans->cmd);
	if (preflight_complete(t->pf) && t->step == TD_PREFLIGHT) {
		t->step = TD_REMOVING;	/* judged once */
		owner_cancel(&a->own);	/* what a finished node still runs */
		preflight_judged(t);
	}
}

static void
teardown_tick(struct action *a, uint64_t now)
{
	struct teardown *t = (struct teardown *)a;

	if (t->step == TD_HW_WAIT) {
		if (gathering(a->cl))
			a->wake_ms = now + POLL_MS;
		else
			teardown_begin(t);
		return;
	}
	if (t->step == TD_GPU_CHECK && owner_count(&a->own) == 0 &&
	    now >= a->wake_ms)
		gpu_check(t);
}

static void
teardown_free(struct action *a)
{
	preflight_free(((struct teardown *)a)->pf);
}

const struct action_ops act_teardown = {
	.size = sizeof(struct teardown),
	.enter = teardown_enter,
	.answered = teardown_answered,
	.tick = teardown_tick,
	.free = teardown_free,
};
