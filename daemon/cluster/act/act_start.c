/*
 * The starts of a rebuild, each a phase of the plan (lib/plan/plan.c) run on
 * all its nodes at once. starting-ray: the head's container, then (Ray)
 * the wait until its GCS answers, then every worker's; in topology dp the
 * containers run the engines themselves. starting-vllm: vllm serve in the
 * head's container. A start still in flight when the daemon stops is
 * waited for (OP_START, stop.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"

#define START_TIMEOUT_S		120
#define POLL_MS			50

enum start_step {
	ST_HEAD,		/* docker run of the head */
	ST_GCS_WAIT,		/* ray: until the head's GCS answers */
	ST_WORKERS,		/* docker run of every worker */
};

enum { TAG_RUN, TAG_GCS };

struct start {
	struct action	 a;
	enum start_step	 step;
	uint64_t	 sent_ms;	/* the last GCS question */
};

/* Runs the plan's commands of phase ph; the number sent, -1 when a node
 * went away (reported). */
static int
run_phase(struct action *a, enum phase ph)
{
	const struct config *cf = act_cf(a);
	const struct plan *p = a->env->plan(a->env->ctx);
	size_t i;
	int n = 0;

	for (i = 0; i < p->n; i++) {
		const struct cmd *c = &p->cmds[i];

		if (c->phase != ph)
			continue;
		log_node(LOG_INFO, cf->nodes[c->node].name, "node %s: %s",
		    cf->nodes[c->node].name, c->shown);
		if (op_ssh(&a->own, c->node, TAG_RUN, OP_START, c->shell,
		    START_TIMEOUT_S, ph == PH_HEAD ? TS_RUN_HEAD : ph ==
		    PH_WORKERS ? TS_RUN_WORKER : TS_VLLM_SERVE) == -1) {
			action_event(a, EV_NODES_MISSING, "node went away");
			return -1;
		}
		n++;
	}
	return n;
}

/* The plan's command of phase ph on node: what a failure names. */
static const char *
phase_cmd(struct action *a, size_t node, enum phase ph)
{
	const struct plan *p = a->env->plan(a->env->ctx);
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->cmds[i].phase == ph && p->cmds[i].node == node)
			return p->cmds[i].shown;
	return NULL;
}

/*
 * docker run answered with the container's ID: the runtime keeps it.
 * -1: the events stream already reported this container dead.
 */
static int
keep_cid(struct action *a, size_t node, const struct cmd_result *r)
{
	struct ctr_seen seen = { .known = 1, .state = CTR_RUNNING,
	    .started = 1 };
	struct act_node n;
	char line[200];

	utf8_first_line(r->out, line, sizeof(line));
	utf8_fmt(seen.cid, sizeof(seen.cid), "%s", line);
	act_ctr_seen(a, node, &seen);
	act_node(a, node, &n);
	return n.container == CTR_EXITED ? -1 : 0;
}

/*
 * docker run answered for a node: 0 when its container runs (the ID
 * kept), -1 when the step failed, already reported. A failed run whose
 * words tandem does not know says nothing about a container: could not
 * tell.
 */
static int
container_started(struct action *a, size_t node, enum phase ph,
    const struct cmd_result *r)
{
	char reason[300];

	if (r->exit_code != 0) {
		action_fail_output(a, node, phase_cmd(a, node, ph), r,
		    DIAG_UNRECOGNISED_ANSWER);
		return -1;
	}
	if (keep_cid(a, node, r) == -1) {
		snprintf(reason, sizeof(reason), "container %s (die) before "
		    "docker run answered",
		    act_cf(a)->nodes[node].container_name);
		action_fail(a, DIAG_CONTAINER_DIED, node, reason);
		return -1;
	}
	return 0;
}

static void
start_workers(struct start *s)
{
	int n;

	s->step = ST_WORKERS;
	if ((n = run_phase(&s->a, PH_WORKERS)) == 0)
		action_event(&s->a, EV_CONTAINERS_UP, "head only");
}

static void
start_enter(struct action *a)
{
	a->wake_ms = UINT64_MAX;
	(void)run_phase(a, PH_HEAD);
}

static void
ask_gcs(struct start *s)
{
	const struct config *cf = act_cf(&s->a);
	char *cmd = cmd_ray_status(cf);

	s->sent_ms = mono_ms();
	s->a.wake_ms = UINT64_MAX;
	if (op_ssh(&s->a.own, cf->head, TAG_GCS, 0, cmd,
	    cf->probe.timeout_s, TS_GCS_WAIT) == -1)
		action_wake(&s->a, POLL_MS);
	free(cmd);
}

static void
starting_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct start *s = (struct start *)a;
	const struct config *cf = act_cf(a);
	const struct cmd_result *r = ans->cmd;

	if (o->tag == TAG_GCS) {
		/* Any status report means the GCS answers. */
		if (r->exit_code == 0) {
			start_workers(s);
			return;
		}
		if (mono_ms() > a->deadline_ms) {
			action_fail(a, DIAG_RAY_INCOMPLETE, cf->head,
			    "the head's GCS never answered");
			return;
		}
		action_wake(a, action_repoll_ms(s->sent_ms, POLL_MS));
		return;
	}
	if (container_started(a, o->node, s->step == ST_HEAD ? PH_HEAD :
	    PH_WORKERS, r) == -1)
		return;
	if (s->step == ST_HEAD) {
		if (!config_is_ray(cf)) {
			start_workers(s);
			return;
		}
		/* Workers join once the head's GCS answers: ask at once. */
		s->step = ST_GCS_WAIT;
		a->deadline_ms = mono_ms() +
		    (uint64_t)(cf->probe.ray_wait_timeout_s * 1000);
		ask_gcs(s);
		return;
	}
	if (owner_count(&a->own) == 0)
		action_event(a, EV_CONTAINERS_UP, "every container started");
}

static void
start_tick(struct action *a, uint64_t now)
{
	struct start *s = (struct start *)a;

	if (s->step == ST_GCS_WAIT && owner_count(&a->own) == 0 &&
	    now >= a->wake_ms)
		ask_gcs(s);
}

const struct action_ops act_start = {
	.size = sizeof(struct start),
	.enter = start_enter,
	.answered = starting_answered,
	.tick = start_tick,
};

/* starting-vllm */

static void
start_vllm_enter(struct action *a)
{
	a->wake_ms = UINT64_MAX;
	(void)run_phase(a, PH_VLLM);
}

/*
 * docker exec -d answered: vllm serve launched, or the container it runs
 * in is gone (the engine's words, recorded for docker 20.10 and 28: "is
 * not running", "No such container"), or an answer tandem could not tell.
 */
static void
start_vllm_answered(struct action *a, struct op *o, const struct answer *ans)
{
	const struct cmd_result *r = ans->cmd;
	char line[300];

	if (r->exit_code != 0 && !r->error && (strstr(r->err, " is not "
	    "running") || strstr(r->err, "No such container"))) {
		action_fail(a, DIAG_CONTAINER_DIED, o->node,
		    utf8_first_line(r->err, line, sizeof(line)));
		return;
	}
	if (r->exit_code != 0) {
		action_fail_output(a, o->node, phase_cmd(a, o->node,
		    PH_VLLM), r, DIAG_UNRECOGNISED_ANSWER);
		return;
	}
	action_event(a, EV_VLLM_STARTED, "vllm serve launched");
}

const struct action_ops act_start_vllm = {
	.size = sizeof(struct action),
	.enter = start_vllm_enter,
	.answered = start_vllm_answered,
};
