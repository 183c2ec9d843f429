/*
 * teardown: before the first rebuild, the preflight of every node (a
 * missing image or a foreign container is a diagnosis, not containers that
 * cannot work); before every later one, its fast-link check alone (a
 * cable pulled since is named in a second, not by Ray or Gloo timing out
 * minutes into the start); then the containers removed on every node;
 * then the wait until no process of ours holds device memory, read from
 * nvidia-smi or npu-smi (accel.h; the DGX Spark Ray guide: a start before
 * it is free fails). "Released" is said only when it was read; a node
 * without the tool, or container.accelerator none, is said to be skipped.
 * Its end begins the starts. After a failure it first waits for the read
 * of the nodes' GPU faults (hwcheck.c): a fatal one stops the retries
 * before anything is torn down; and for the evidence a stop began to keep
 * (evidence.c), which tandemctl resume may interrupt with a rebuild.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "act_env.h"

#define TEARDOWN_TIMEOUT_S	60
#define GPU_RELEASE_S		30
#define GPU_CHECK_TIMEOUT_S	10
#define POLL_MS			50

enum teardown_step {
	TD_HW_WAIT,		/* the GPU faults, the evidence (gathering) */
	TD_PREFLIGHT,		/* the checks of every node */
	TD_REMOVING,		/* rm -f of every container */
	TD_GPU_CHECK,		/* asking whether device memory is released */
};

/* A round's answers of one verdict: the first node, in config order. */
struct round_seen {
	int		 n;
	size_t		 node;
	char		 msg[300];
};

/* the preflight's tags are its own, 0 and up (pf_cmd) */
enum { TAG_REMOVE = -2, TAG_GPU = -1 };

struct teardown {
	struct action		 a;
	enum teardown_step	 step;
	struct preflight	*pf;
	long			 pf_step;	/* the preflight's trace step */
	uint64_t		 pf_trace;
	/* the round of the memory question: held, could not tell, skipped */
	struct round_seen	 held, unknown, skipped;
	uint64_t		 gpu_sent_ms;
};

static void	remove_containers(struct teardown *);
static int	image_load_wanted(struct teardown *);

/*
 * Every node answered the preflight: a failure is a diagnosis (a node that
 * could not be asked is waited for); an image to load is loading-image;
 * else the teardown proper.
 */
static void
preflight_judged(struct teardown *t)
{
	const struct act_env *e = t->a.env;
	struct op o = { .step = t->pf_step, .trace_ms = t->pf_trace };
	enum diag_code code;
	char ex[740];		/* the detail (400) and the fix (320) */
	size_t node;

	e->trace.step_answered(e->ctx, &o);
	/* before a refusal too: what holds the memory it names is flagged */
	act_preflight(&t->a, t->pf, PFW_FOUND);
	if (preflight_failure(t->pf, &node, &code, ex, sizeof(ex))) {
		if (code == DIAG_NODE_UNREACHABLE)
			action_lost(&t->a, node, ex);
		else
			action_fail(&t->a, code, node, ex);
		return;
	}
	act_preflight(&t->a, t->pf, PFW_RDMA);
	if (preflight_link_only(t->pf)) {
		remove_containers(t);
		return;
	}
	if (image_load_wanted(t))
		return;
	act_preflight(&t->a, t->pf, PFW_PASSED);
	log_info("preflight passed on every node");
	remove_containers(t);
}

/*
 * The preflight found nodes without the image, or with another build, and
 * an archive readable there: loading-image, once per generation (the
 * runtime keeps which nodes load which build). Returns 1 when it reported
 * (the load, or that loading once did not help).
 */
static int
image_load_wanted(struct teardown *t)
{
	const struct preflight *pf = t->pf;
	const struct config *cf = act_cf(&t->a);
	struct act_view rt;
	char reason[300];
	size_t i, first = cf->nnodes, n = 0;

	for (i = 0; i < cf->nnodes; i++)
		if (preflight_image(pf, i)->load && n++ == 0)
			first = i;
	if (n == 0)
		return 0;
	i = first;
	act_view(&t->a, &rt);
	if (rt.image_loaded) {
		/* loaded once this generation and still not right */
		utf8_fmt(reason, sizeof(reason), "after loading the archive: "
		    "%s", preflight_result(pf, i, PF_IMAGE)->detail);
		action_fail(&t->a, preflight_image(pf, i)->id[0] ?
		    DIAG_IMAGE_MISMATCH : DIAG_IMAGE_MISSING, i, reason);
		return 1;
	}
	act_preflight(&t->a, pf, PFW_LOAD);
	utf8_fmt(reason, sizeof(reason), "%s on %s%s: loading %s",
	    preflight_image(pf, i)->id[0] ? "another build of the image" :
	    "the image is missing", cf->nodes[i].name, n > 1 ?
	    " and others" : "", cf->nodes[i].image_archive);
	action_event(&t->a, EV_LOAD_IMAGE, reason);
	return 1;
}

/* The preflight on every node (probe_preflight.c); link_only: the fast
 * link's check alone. */
static void
run_preflight(struct teardown *t, int link_only)
{
	const struct act_env *e = t->a.env;
	struct op o = { .node = TRACE_NODE_ALL };

	t->step = TD_PREFLIGHT;
	t->pf = probe_preflight_new(&t->a, link_only);
	/* one step of every node at once in the trace */
	e->trace.step_sent(e->ctx, &o, link_only ? TS_LINK_CHECK :
	    TS_PREFLIGHT);
	t->pf_step = o.step;
	t->pf_trace = o.trace_ms;
	if (probe_preflight_ask(&t->a, t->pf, 1)) {
		t->step = TD_REMOVING;	/* judged once */
		preflight_judged(t);
	}
}

/* Who holds device memory, on every node; none: nothing to ask. */
static void
gpu_check(struct teardown *t)
{
	const struct config *cf = act_cf(&t->a);
	char *cmd = cmd_accel(cf, AQ_PROCS);
	size_t i;

	if (cmd == NULL) {
		action_event(&t->a, EV_TEARDOWN_DONE, "containers removed, "
		    "device memory check skipped: container.accelerator is "
		    "none");
		return;
	}
	t->a.wake_ms = UINT64_MAX;
	t->gpu_sent_ms = mono_ms();
	memset(&t->held, 0, sizeof(t->held));
	memset(&t->unknown, 0, sizeof(t->unknown));
	memset(&t->skipped, 0, sizeof(t->skipped));
	for (i = 0; i < cf->nnodes; i++) {
		act_node_error(&t->a, i, "");
		(void)op_ssh(&t->a.own, i, TAG_GPU, 0, cmd,
		    GPU_CHECK_TIMEOUT_S, TS_GPU_CHECK);
	}
	free(cmd);
	/* every session down: the node-lost report follows from node.c */
}

static void
remove_containers(struct teardown *t)
{
	const struct config *cf = act_cf(&t->a);
	size_t i;

	if (!act_all_reachable(&t->a)) {
		action_event(&t->a, EV_NODES_MISSING,
		    "teardown needs every node");
		return;
	}
	t->a.env->workloads.stop_foreign(t->a.env->ctx);
	t->step = TD_REMOVING;
	for (i = 0; i < cf->nnodes; i++) {
		char *cmd = cmd_teardown(cf, i);
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
	struct act_view rt;

	t->a.wake_ms = UINT64_MAX;
	act_view(&t->a, &rt);
	if (!rt.preflight_passed)
		run_preflight(t, 0);
	else if (act_all_reachable(&t->a))
		run_preflight(t, 1);
	else
		remove_containers(t);	/* which waits for the nodes */
}

static void
teardown_enter(struct action *a)
{
	struct teardown *t = (struct teardown *)a;
	struct act_view rt;

	act_view(a, &rt);
	if (rt.gathering) {
		t->step = TD_HW_WAIT;
		a->wake_ms = mono_ms() + POLL_MS;
		return;
	}
	teardown_begin(t);
}

static void
removed(struct teardown *t, struct op *o, const struct cmd_result *r)
{
	struct ctr_seen gone = { .known = 1, .state = CTR_MISSING,
	    .removed = 1 };

	act_ctr_seen(&t->a, o->node, &gone);
	if (r->exit_code != 0) {
		/* rm -f of a missing container exits 0: this is another */
		char *cmd = cmd_teardown(act_cf(&t->a), o->node);

		action_fail_output(&t->a, o->node, cmd, r,
		    DIAG_UNRECOGNISED_ANSWER);
		free(cmd);
		return;
	}
	if (owner_count(&t->a.own) > 0)
		return;
	t->step = TD_GPU_CHECK;
	t->a.deadline_ms = mono_ms() + GPU_RELEASE_S * 1000;
	gpu_check(t);
}

/* A node's process, asked of the unrelated-workload scan. */
struct node_pid {
	const struct action	*a;
	size_t			 node;
};

/* Memory the unrelated-workload scan attributed to others is not ours. */
static int
foreign_pid(long pid, void *arg)
{
	const struct node_pid *np = arg;

	return np->a->env->workloads.has_pid(np->a->env->ctx, np->node,
	    pid);
}

static void
see(struct round_seen *s, size_t node, const char *msg)
{
	/* the report names the first node, in config order */
	if (s->n++ == 0 || node < s->node) {
		s->node = node;
		utf8_copy(s->msg, sizeof(s->msg), msg);
	}
}

/*
 * Every node answered this round: all released (or skipped where nothing
 * could be read) ends the teardown; memory still held, or an answer tandem
 * could not read, is asked again until the deadline, then diagnosed.
 */
static void
round_over(struct teardown *t)
{
	const struct config *cf = act_cf(&t->a);
	enum accel a = cf->container.accelerator;
	char reason[400], asked[200];
	char *cmd;

	if (t->held.n == 0 && t->unknown.n == 0) {
		if (t->skipped.n)
			utf8_fmt(reason, sizeof(reason), "containers removed, "
			    "%s memory check skipped: %s: %s", accel_word(a, 0),
			    cf->nodes[t->skipped.node].name,
			    t->skipped.msg);
		else
			utf8_fmt(reason, sizeof(reason), "containers removed, "
			    "%s memory released on every node (read from %s)",
			    accel_word(a, 0), accel_tool(a));
		action_event(&t->a, EV_TEARDOWN_DONE, reason);
		return;
	}
	if (mono_ms() > t->a.deadline_ms) {
		if (t->held.n) {
			action_fail(&t->a, DIAG_GPU_NOT_RELEASED, t->held.node,
			    t->held.msg);
			return;
		}
		/* what was asked and what came back: retried, not terminal */
		cmd = cmd_accel(cf, AQ_PROCS);
		utf8_fmt(asked, sizeof(asked), "asked `%s`: %s", cmd,
		    t->unknown.msg);
		free(cmd);
		action_fail(&t->a, ACCEL_COULD_NOT_TELL, t->unknown.node,
		    asked);
		return;
	}
	action_wake(&t->a, action_repoll_ms(t->gpu_sent_ms, POLL_MS));
}

static void
gpu_answered(struct teardown *t, struct op *o, const struct cmd_result *r)
{
	enum accel a = act_cf(&t->a)->container.accelerator;
	struct node_pid np = { &t->a, o->node };
	struct accel_info *ai;
	enum accel_verdict v;
	char msg[300], err[256];

	if (r->error && !act_node_up(&t->a, o->node)) {
		/* the session went under it: the node is waited for */
		action_lost(&t->a, o->node, r->error);
		return;
	}
	if (r->error) {
		/* a timeout with the session up: nothing was read */
		v = AV_UNKNOWN;
		utf8_fmt(msg, sizeof(msg), "%s memory: could not tell: %s",
		    accel_word(a, 0), r->error);
	} else {
		ai = xmalloc(sizeof(*ai));
		accel_parse(a, AQ_PROCS, r->exit_code, r->out, r->outlen,
		    r->err, ai);
		v = accel_held(ai, foreign_pid, &np, msg, sizeof(msg));
		free(ai);
	}
	switch (v) {
	case AV_PASS:
		break;
	case AV_FAIL:
		see(&t->held, o->node, msg);
		utf8_fmt(err, sizeof(err), "%s memory still held: %s",
		    accel_word(a, 0), msg);
		act_node_error(&t->a, o->node, err);
		break;
	case AV_UNKNOWN:
		see(&t->unknown, o->node, msg);
		act_node_error(&t->a, o->node, msg);
		break;
	case AV_NOT_CHECKED:
		see(&t->skipped, o->node, msg);
		break;
	}
	if (owner_count(&t->a.own) > 0)
		return;
	round_over(t);
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
	if (t->step != TD_PREFLIGHT)
		return;		/* judged: what a finished node still ran */
	if (probe_preflight_answer(a, t->pf, o, ans->cmd) &&
	    t->step == TD_PREFLIGHT) {
		t->step = TD_REMOVING;	/* judged once */
		owner_cancel(&a->own);	/* what a finished node still runs */
		preflight_judged(t);
	}
}

static void
teardown_tick(struct action *a, uint64_t now)
{
	struct teardown *t = (struct teardown *)a;
	struct act_view rt;

	if (t->step == TD_HW_WAIT) {
		act_view(a, &rt);
		if (rt.gathering)
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
