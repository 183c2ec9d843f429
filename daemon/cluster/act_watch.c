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
 * failure (lib/parse/raysec.c, issue 33).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "raysec.h"

#define CONTAINER_PROBE_MS	30000
#define RAYX_EVERY_MS		300000
#define RAYX_TIMEOUT_S		40	/* the command's own limit is 30 s */

enum { TAG_INSPECT, TAG_RAY, TAG_METRICS, TAG_RAYX_WORKER, TAG_RAYX_HEAD };

/* The first failure of a probe cycle: the one reported. */
struct probe_failure {
	const struct diag	*d;	/* NULL: none yet */
	size_t			 node;
	char			 why[300];
};

struct watch {
	struct action		 a;
	int			 cycle;		/* one runs */
	int			 adopt;		/* it decides the adoption */
	struct probe_failure	 ff;
	int			 answered;	/* a failure this cycle was an answer */
	int			 fails;		/* failed cycles in a row */
	int			 stalled;	/* counted in stalls_total */
	uint64_t		 next_probe_ms;
	struct foreign_scan	 fs;
	struct ray_probe	 rx[2];		/* the worker's, the head's look */
	size_t			 rx_worker;
};

/* The probe's own limits: as long as probe.timeout_s, every stage. */
static const struct vllm_limits probe_limits = {
	.health_max_s = 1e9,
	.generate_min_s = 0,
};

static void
cycle_start(struct watch *w, int adopt)
{
	struct cluster *cl = w->a.cl;
	uint64_t now = mono_ms();
	size_t i;

	w->cycle = 1;
	w->adopt = adopt;
	memset(&w->ff, 0, sizeof(w->ff));
	w->answered = 0;
	/*
	 * Container deaths arrive by docker events; asking every node each
	 * cycle would only repeat that. The inspect stays as a slower safety
	 * net, and runs at once when an events stream has ended.
	 */
	if (adopt || now >= cl->seen.next_inspect_ms) {
		char *cmd;

		cl->seen.next_inspect_ms = now + CONTAINER_PROBE_MS;
		for (i = 0; i < cl->nnodes; i++) {
			cmd = cmd_inspect_running(cl->cf, i);
			(void)op_ssh(&w->a.own, i, TAG_INSPECT, 0, cmd,
			    cl->cf->probe.timeout_s, TS_COUNT);
			free(cmd);
		}
		/* on the same cadence, beside the inspect (workload.c) */
		scan_workloads(cl);
	}
	if (is_ray(cl)) {
		char *cmd = cmd_ray_status(cl->cf);

		(void)op_ssh(&w->a.own, cl->cf->head, TAG_RAY, 0, cmd,
		    cl->cf->probe.timeout_s, TS_COUNT);
		free(cmd);
	}
	vllm_ask(&w->a.own, VLLM_HEALTH, &probe_limits);
	cl->seen.cycle_ms = now;
	vllm_ask_metrics(&w->a.own, TAG_METRICS);
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
 * against 127.0.0.1 (lib/plan/plan_ray.c). Topology ray only: dp starts no
 * Ray.
 */
static void
rayx_start(struct watch *w, uint64_t now)
{
	struct cluster *cl = w->a.cl;
	char *cmd;
	size_t i;

	cl->seen.next_rayx_ms = now + RAYX_EVERY_MS;
	/* the first node that is not the head */
	for (i = 0; i < cl->nnodes && i == cl->cf->head; i++)
		;
	if (i == cl->nnodes)
		return;
	w->rx_worker = i;
	memset(w->rx, 0, sizeof(w->rx));
	cmd = cmd_ray_exposure(cl->cf, NULL);
	if (op_ssh(&w->a.own, i, TAG_RAYX_WORKER, 0, cmd, RAYX_TIMEOUT_S,
	    TS_COUNT) == 0) {
		free(cmd);
		cmd = cmd_ray_exposure(cl->cf, "127.0.0.1");
		(void)op_ssh(&w->a.own, cl->cf->head, TAG_RAYX_HEAD, 0, cmd,
		    RAYX_TIMEOUT_S, TS_COUNT);
	}
	free(cmd);
}

/* Both looks are in (or one could not be asked): warn, or clear. */
static void
rayx_answer(struct watch *w, const struct op *o, const struct cmd_result *r)
{
	struct cluster *cl = w->a.cl;
	struct seen *s = &cl->seen;
	const char *worker = cl->nodes[w->rx_worker].conf->name;
	char msg[sizeof(s->rayx_msg)];

	if (r->error) {
		log_debug("Ray's ports from %s: %s", cl->nodes[o->node].conf->
		    name, r->error);
		return;		/* no look: the last word stands */
	}
	ray_probe_parse(r->out, r->outlen, &w->rx[o->tag == TAG_RAYX_HEAD]);
	if (rayx_pending(w))
		return;
	if (ray_exposure_judge(&w->rx[0], &w->rx[1], cl->cf->nodes[cl->cf->
	    head].ip, cl->cf->ray.port, cl->cf->ray.auth_token_file != NULL,
	    msg, sizeof(msg)) == RAYX_OPEN) {
		if (strcmp(s->rayx_msg, msg) != 0)
			log_warnx("warning: %s: %s (seen from %s)",
			    RAY_WARNING_CODE, msg, worker);
		utf8_copy(s->rayx_node, sizeof(s->rayx_node), worker);
		utf8_copy(s->rayx_msg, sizeof(s->rayx_msg), msg);
	} else if (s->rayx_msg[0]) {
		log_info("Ray's ports are closed to the fast link or want a "
		    "token now: %s cleared", RAY_WARNING_CODE);
		s->rayx_node[0] = s->rayx_msg[0] = '\0';
	}
}

static void
cycle_judge(struct watch *w)
{
	struct cluster *cl = w->a.cl;
	struct probe_failure ff = w->ff;
	char reason[400];

	w->cycle = 0;
	w->next_probe_ms = mono_ms() +
	    (uint64_t)(cl->cf->probe.interval_s * 1000);
	w->a.wake_ms = w->next_probe_ms;
	if (w->adopt) {
		/*
		 * A question that went unanswered (a `ray status` past
		 * probe.timeout_s on a loaded head) is asked again, as while
		 * serving, before a cluster that may serve is torn down; an
		 * answer that says something is missing decides at once.
		 */
		if (ff.d && !w->answered && !recovery_check_degrades(++w->fails,
		    cl->cf->probe.failures_to_degrade, ff.d->id)) {
			log_info("adoption: could not tell (%d of %d): %s; asking "
			    "again", w->fails, cl->cf->probe.failures_to_degrade,
			    ff.why);
			return;
		}
		cl->adopted = 1;
		w->fails = 0;
		if (ff.d == NULL) {
			action_event(&w->a, EV_ADOPT_HEALTHY, "adopted a cluster "
			    "that already serves");
			return;
		}
		utf8_fmt(reason, sizeof(reason), "not adopted: %s", ff.why);
		action_event(&w->a, all_reachable(cl) ? EV_ADOPT_PARTIAL :
		    EV_NODES_MISSING, reason);
		return;
	}
	/* a stall counts once, however many cycles it lasts (paused) */
	if (ff.d && ff.d->id == DIAG_GENERATION_STALLED && !w->stalled)
		cl->cnt.stalls_total++;
	w->stalled = ff.d && ff.d->id == DIAG_GENERATION_STALLED;
	if (ff.d == NULL)
		w->fails = 0;
	else if (recovery_check_degrades(++w->fails,
	    cl->cf->probe.failures_to_degrade, ff.d->id))
		action_check(&w->a, FACT_CHECK_FAILED, ff.d->id, ff.node,
		    ff.why);
	else
		log_info("probe failed (%d of %d): %s", w->fails,
		    cl->cf->probe.failures_to_degrade, ff.why);
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
	if (d && !unanswered)
		w->answered = 1;
	if (d && w->ff.d == NULL) {
		w->ff.d = d;
		w->ff.node = node;
		utf8_fmt(w->ff.why, sizeof(w->ff.why), "%s", why ? why : "");
	}
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
	stall_init(&a->cl->seen.stall);
	/* a new Ray too: looked at with the first cycle */
	a->cl->seen.next_rayx_ms = 0;
}

/*
 * "node2 does not answer at start (ssh: connect to ...: connection
 * refused)": which node and why, for the start line an operator reads
 * first; the reason is bounded as every event's is.
 */
static const char *
missing_nodes(const struct cluster *cl, char *buf, size_t size)
{
	size_t i, n = 0, len = 0;

	buf[0] = '\0';
	for (i = 0; i < cl->nnodes && len < size; i++) {
		const struct node_rt *nd = &cl->nodes[i];

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
	struct cluster *cl = a->cl;
	char why[600];
	size_t i;

	a->quiet = cl->adopted && !w->cycle;
	if (!cl->adopted) {
		/* Adopt what runs: wait for one answer from each node. */
		for (i = 0; i < cl->nnodes; i++)
			if (!cl->nodes[i].reachable && !cl->nodes[i].tried)
				return;
		if (w->cycle || now < w->next_probe_ms)
			return;
		if (!all_reachable(cl)) {
			cl->adopted = 1;
			action_event(a, EV_NODES_MISSING, missing_nodes(cl,
			    why, sizeof(why)));
			return;
		}
		cycle_start(w, 1);
		return;
	}
	if (cl->fsm.halted || cl->fsm.state == ST_ABSENT)
		return;
	if (recovery_attempts_reset(cl->rec.attempt, cl->fsm.state ==
	    ST_SERVING, (double)(now - cl->rec.serving_since_ms) / 1000.0))
		cl->rec.attempt = 0;
	if (!w->cycle && now >= w->next_probe_ms && all_reachable(cl))
		cycle_start(w, 0);
	if (is_ray(cl) && cl->fsm.state != ST_ABSENT && now >=
	    cl->seen.next_rayx_ms && !rayx_pending(w) && all_reachable(cl))
		rayx_start(w, now);
}

static void
watch_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct watch *w = (struct watch *)a;
	struct cluster *cl = a->cl;
	const struct diag *d;
	char why[300];

	why[0] = '\0';
	if (o->tag >= TAG_VLLM && o->tag <= TAG_VLLM + VLLM_GENERATE) {
		if (vllm_probe_verdict(cl, o, ans->http, w->adopt, &d, why,
		    sizeof(why))) {
			vllm_ask(&a->own, (enum vllm_stage)(o->tag - TAG_VLLM +
			    1), &probe_limits);
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
		d = vllm_metrics_verdict(cl, ans->http, why, sizeof(why));
		cycle_result(w, d, cl->cf->head, why);
		return;
	case TAG_FOREIGN:
		foreign_answer(a, &w->fs, o, ans->cmd);
		return;
	case TAG_INSPECT:
	{
		struct ctr_seen seen = { 0 };

		act_timed(a, PR_CONTAINER, o);
		d = inspect_verdict(cl->cf, o->node,
		    a->env->plan_hash(a->env->ctx), ans->cmd, w->adopt, &seen,
		    why, sizeof(why));
		act_ctr_seen(a, o->node, &seen);
	}
		cycle_result(w, d, o->node, why);
		return;
	case TAG_RAY: {
		struct ray_seen seen = { 0 };
		int complete;

		act_timed(a, PR_RAY, o);
		/* a lost head: the ssh layer reports it */
		if (ans->cmd->error && !node_up(cl, cl->cf->head)) {
			cycle_result(w, NULL, NO_NODE, NULL);
			return;
		}
		complete = ray_complete(cl->cf, ans->cmd, &seen, why,
		    sizeof(why));
		act_ray_seen(a, &seen);
		if (!complete) {
			cycle_record(w, diag_get(DIAG_RAY_INCOMPLETE),
			    cl->cf->head, why, ray_untold(&seen, ans->cmd));
			return;
		}
		/* the scan decides about an extra node; nothing else failed */
		if (ray_extra(&seen, cl->nnodes, why, sizeof(why)))
			foreign_scan(a, &w->fs, why);
		cycle_result(w, NULL, NO_NODE, NULL);
		return;
	}
	}
}

static void
watch_free(struct action *a)
{
	foreign_free(&((struct watch *)a)->fs);
}

const struct action_ops act_watch = {
	.size = sizeof(struct watch),
	.enter = watch_enter,
	.answered = watch_answered,
	.tick = watch_tick,
	.free = watch_free,
};
