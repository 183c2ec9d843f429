/*
 * idle and paused: the probe cycle that watches a built cluster (every
 * probe.interval_s: the containers now and then, Ray, and vLLM's chain),
 * and at start the one that decides whether to adopt what already runs.
 * Results arrive in any order; cycle_result is the one place they arrive,
 * and judges the cycle once all are in (relayd's hce.c). A failure
 * degrades the cluster only after probe.failures_to_degrade cycles in a
 * row (keepalived's retry); paused, the state still follows what the
 * probes see, and the machine decides that nothing acts on it. Beside
 * the chain each cycle reads vLLM's own counters (/metrics): a stall,
 * requests with work and no token for probe.stall_s while /health says
 * 200, degrades at once (its verdict took probe.stall_readings readings).
 * Every RAYX_EVERY_MS, and soon after the watch begins, a worker looks
 * at the head's Ray ports as anyone on the fast link would (and the head
 * at its own, for a dashboard bound to localhost): open without Ray's
 * token authentication is the ray-unauthenticated warning, never a
 * failure (issue 33). The probes read what the tools said (probe_*.c);
 * this decides on what they saw.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"

#define CONTAINER_PROBE_MS	30000
#define RAYX_EVERY_MS		300000

enum { TAG_INSPECT, TAG_RAY, TAG_METRICS, TAG_RAYX_WORKER, TAG_RAYX_HEAD };

struct watch {
	struct action		 a;
	int			 cycle;		/* one runs */
	int			 adopt;		/* it decides the adoption */
	struct probe_cycle	 tally;		/* the cycle's results */
	int			 stalled;	/* counted in stalls_total */
	uint64_t		 next_probe_ms;
	struct foreign_scan	 fs;
	struct rayx_look	 rx;		/* at Ray's ports */
};

/* The probe's own limits: as long as probe.timeout_s, every stage. */
static const struct vllm_limits probe_limits = {
	.health_max_s = 1e9,
	.generate_min_s = 0,
};

static void
cycle_start(struct watch *w, int adopt)
{
	const struct config *cf = act_cf(&w->a);
	struct probe_memory *m = w->a.env->memory(w->a.env->ctx);
	uint64_t now = mono_ms();
	size_t i;

	w->cycle = 1;
	w->adopt = adopt;
	probe_cycle_begin(&w->tally);
	/*
	 * Container deaths arrive by docker events; asking every node each
	 * cycle would only repeat that. The inspect stays as a slower safety
	 * net, and runs at once when an events stream has ended.
	 */
	if (adopt || now >= m->next_inspect_ms) {
		char *cmd;

		m->next_inspect_ms = now + CONTAINER_PROBE_MS;
		for (i = 0; i < cf->nnodes; i++) {
			cmd = cmd_inspect_running(cf, i);
			(void)op_ssh(&w->a.own, i, TAG_INSPECT, 0, cmd,
			    cf->probe.timeout_s, TS_COUNT);
			free(cmd);
		}
		/* on the same cadence, beside the inspect (workload.c) */
		w->a.env->workloads.scan(w->a.env->ctx);
	}
	if (config_is_ray(cf)) {
		char *cmd = cmd_ray_status(cf);

		(void)op_ssh(&w->a.own, cf->head, TAG_RAY, 0, cmd,
		    cf->probe.timeout_s, TS_COUNT);
		free(cmd);
	}
	vllm_ask(&w->a, VLLM_HEALTH, &probe_limits);
	m->cycle_ms = now;
	vllm_ask_metrics(&w->a, TAG_METRICS);
}

static int
rayx_tag(int tag)
{
	return tag == TAG_RAYX_WORKER || tag == TAG_RAYX_HEAD;
}

/* Whether only the scan's and Ray's looks are left: the cycle's are in. */
static int
cycle_pending(const struct watch *w)
{
	const struct op *o;

	TAILQ_FOREACH(o, &w->a.own.ops, entry)
		if (o->tag != TAG_FOREIGN && !rayx_tag(o->tag))
			return 1;
	return 0;
}

static int
rayx_pending(const struct watch *w)
{
	const struct op *o;

	TAILQ_FOREACH(o, &w->a.own.ops, entry)
		if (rayx_tag(o->tag))
			return 1;
	return 0;
}

/*
 * From the first worker against the head's nodes[].ip, and on the head
 * against 127.0.0.1 (probe_ray.c). Topology ray only: dp starts no Ray.
 */
static void
rayx_start(struct watch *w, uint64_t now)
{
	w->a.env->memory(w->a.env->ctx)->next_rayx_ms = now + RAYX_EVERY_MS;
	ray_ports_ask(&w->a, &w->rx, TAG_RAYX_WORKER, TAG_RAYX_HEAD);
}

/* Both looks are in (or one could not be asked): warn, or clear. */
static void
rayx_answer(struct watch *w, const struct op *o, const struct cmd_result *r)
{
	struct rayx_seen x;
	char msg[500];

	if (!ray_ports_read(&w->a, &w->rx, o, r, o->tag == TAG_RAYX_HEAD) ||
	    rayx_pending(w))
		return;
	ray_ports_judge(&w->a, &w->rx, &x, msg, sizeof(msg));
	act_rayx_seen(&w->a, &x);
}

static void
cycle_judge(struct watch *w)
{
	const struct config *cf = act_cf(&w->a);
	struct probe_cycle ff = w->tally;	/* as the cycle left it */
	char reason[400];

	w->cycle = 0;
	w->next_probe_ms = mono_ms() +
	    (uint64_t)(cf->probe.interval_s * 1000);
	w->a.wake_ms = w->next_probe_ms;
	if (w->adopt) {
		/*
		 * A question that went unanswered (a `ray status` past
		 * probe.timeout_s on a loaded head) is asked again, as while
		 * serving, before a cluster that may serve is torn down; an
		 * answer that says something is missing decides at once.
		 */
		if (ff.d && !ff.answered && !probe_cycle_degrades(&w->tally,
		    cf)) {
			log_info("adoption: could not tell (%d of %d): %s; asking "
			    "again", w->tally.fails,
			    cf->probe.failures_to_degrade, ff.why);
			return;
		}
		action_report(&w->a, &(struct report){ .kind = REPORT_ADOPTED,
		    .node = NO_NODE });
		w->tally.fails = 0;
		if (ff.d == NULL) {
			action_event(&w->a, EV_ADOPT_HEALTHY, "adopted a cluster "
			    "that already serves");
			return;
		}
		utf8_fmt(reason, sizeof(reason), "not adopted: %s", ff.why);
		action_event(&w->a, act_all_reachable(&w->a) ? EV_ADOPT_PARTIAL :
		    EV_NODES_MISSING, reason);
		return;
	}
	/* a stall counts once, however many cycles it lasts (paused) */
	if (ff.d && ff.d->id == DIAG_GENERATION_STALLED && !w->stalled)
		action_report(&w->a, &(struct report){ .kind = REPORT_STALLED,
		    .node = NO_NODE });
	w->stalled = ff.d && ff.d->id == DIAG_GENERATION_STALLED;
	if (probe_cycle_degrades(&w->tally, cf))
		action_check(&w->a, FACT_CHECK_FAILED, ff.d->id, ff.node,
		    ff.why);
	else if (ff.d)
		log_info("probe failed (%d of %d): %s", w->tally.fails,
		    cf->probe.failures_to_degrade, ff.why);
}

/*
 * One result of the cycle: the first failure is kept; the last judges.
 * unanswered: the failure is that no answer came (a timeout), which says
 * nothing about the cluster.
 */
static void
cycle_record(struct watch *w, const struct diag *d, size_t node,
    const char *why, int unanswered)
{
	probe_cycle_add(&w->tally, d, node, why, unanswered);
	if (!cycle_pending(w))
		cycle_judge(w);
}

static void
cycle_result(struct watch *w, const struct diag *d, size_t node,
    const char *why)
{
	cycle_record(w, d, node, why, 0);
}

static void
watch_enter(struct action *a)
{
	struct watch *w = (struct watch *)a;

	w->next_probe_ms = mono_ms();
	a->wake_ms = w->next_probe_ms;
	/* a new vLLM, or one not watched meanwhile: its counters start over */
	stall_init(&a->env->memory(a->env->ctx)->stall);
	/* a new Ray too: looked at with the first cycle */
	a->env->memory(a->env->ctx)->next_rayx_ms = 0;
}

/*
 * "node2 does not answer at start (ssh: connect to ...: connection
 * refused)": which node and why, for the start line an operator reads
 * first; the reason is bounded as every event's is.
 */
static const char *
missing_nodes(const struct action *a, char *buf, size_t size)
{
	size_t i, n = 0, len = 0;
	struct act_node v;

	buf[0] = '\0';
	for (i = 0; i < act_nnodes(a) && len < size; i++) {
		const struct act_node *nd = &v;

		act_node(a, i, &v);
		if (nd->reachable)
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s%s%s",
		    n++ ? "; " : "", nd->conf->name, nd->last_error[0] ? " (" :
		    "", nd->last_error, nd->last_error[0] ? ")" : "");
	}
	if (len < size)
		snprintf(buf + len, size - len, " %s not answer at start",
		    n == 1 ? "does" : "do");
	return buf;
}

static void
watch_tick(struct action *a, uint64_t now)
{
	struct watch *w = (struct watch *)a;
	const struct act_env *e = a->env;
	struct act_view rt;
	struct act_node v;
	char why[600];
	size_t i;

	act_view(a, &rt);
	a->quiet = rt.adopted && !w->cycle;
	if (!rt.adopted) {
		/* Adopt what runs: wait for one answer from each node. */
		for (i = 0; i < act_nnodes(a); i++) {
			act_node(a, i, &v);
			if (!v.reachable && !v.tried)
				return;
		}
		if (w->cycle || now < w->next_probe_ms)
			return;
		if (!act_all_reachable(a)) {
			action_report(a, &(struct report){ .kind =
			    REPORT_ADOPTED, .node = NO_NODE });
			action_event(a, EV_NODES_MISSING, missing_nodes(a,
			    why, sizeof(why)));
			return;
		}
		cycle_start(w, 1);
		return;
	}
	if (rt.halted || rt.state == ST_ABSENT)
		return;
	e->serving_tick(e->ctx, now);
	if (!w->cycle && now >= w->next_probe_ms && act_all_reachable(a))
		cycle_start(w, 0);
	if (config_is_ray(act_cf(a)) && rt.state != ST_ABSENT && now >=
	    e->memory(e->ctx)->next_rayx_ms && !rayx_pending(w) &&
	    act_all_reachable(a))
		rayx_start(w, now);
}

/* docker inspect on a node: what it saw, and the verdict. */
static void
inspect_answered(struct watch *w, const struct op *o,
    const struct cmd_result *r)
{
	struct action *a = &w->a;
	struct ctr_seen seen = { 0 };
	struct act_view rt;
	const struct diag *d;
	char why[300];

	why[0] = '\0';
	act_timed(a, PR_CONTAINER, o);
	act_view(a, &rt);
	d = inspect_verdict(act_cf(a), o->node, rt.plan_hash, r, w->adopt,
	    &seen, why, sizeof(why));
	act_ctr_seen(a, o->node, &seen);
	cycle_result(w, d, o->node, why);
}

/* ray status on the head: what it saw, and the verdict. */
static void
ray_answered(struct watch *w, const struct op *o, const struct cmd_result *r)
{
	struct action *a = &w->a;
	const struct config *cf = act_cf(a);
	struct ray_seen seen = { 0 };
	char why[300];
	int complete;

	act_timed(a, PR_RAY, o);
	/* a lost head: the ssh layer reports it */
	if (r->error && !act_node_up(a, cf->head)) {
		cycle_result(w, NULL, NO_NODE, NULL);
		return;
	}
	complete = ray_complete(cf, r, &seen, why, sizeof(why));
	act_ray_seen(a, &seen);
	if (!complete) {
		cycle_record(w, diag_get(DIAG_RAY_INCOMPLETE), cf->head, why,
		    ray_untold(&seen, r));
		return;
	}
	/* the scan decides about an extra node; nothing else failed */
	if (ray_extra(&seen, cf->nnodes, why, sizeof(why)))
		foreign_scan(a, &w->fs, why);
	cycle_result(w, NULL, NO_NODE, NULL);
}

static void
watch_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct watch *w = (struct watch *)a;
	const struct diag *d;
	char why[300];

	why[0] = '\0';
	if (o->tag >= TAG_VLLM && o->tag <= TAG_VLLM + VLLM_GENERATE) {
		if (vllm_probe_verdict(a, o, ans->http, w->adopt, &d, why,
		    sizeof(why))) {
			vllm_ask(a, (enum vllm_stage)(o->tag - TAG_VLLM + 1),
			    &probe_limits);
			return;
		}
		cycle_record(w, d, NO_NODE, why, ans->http->timed_out);
		return;
	}
	switch (o->tag) {
	case TAG_RAYX_WORKER:
	case TAG_RAYX_HEAD:
		rayx_answer(w, o, ans->cmd);
		return;
	case TAG_METRICS:
		d = vllm_metrics_verdict(a, ans->http, why, sizeof(why));
		cycle_result(w, d, act_cf(a)->head, why);
		return;
	case TAG_FOREIGN:
		foreign_answer(a, &w->fs, o, ans->cmd);
		return;
	case TAG_INSPECT:
		inspect_answered(w, o, ans->cmd);
		return;
	case TAG_RAY:
		ray_answered(w, o, ans->cmd);
		return;
	}
}

static void
watch_free(struct action *a)
{
	struct watch *w = (struct watch *)a;

	foreign_free(&w->fs);
	ray_ports_free(&w->rx);
}

const struct action_ops act_watch = {
	.size = sizeof(struct watch),
	.enter = watch_enter,
	.answered = watch_answered,
	.tick = watch_tick,
	.free = watch_free,
};
