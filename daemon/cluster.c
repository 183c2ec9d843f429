/*
 * The cluster runtime: it feeds events to the state machine (lib/fsm.c) and
 * starts the work each action names. All of it runs on the loop thread; a
 * 100 ms cron (redis' serverCron) gates the polled work by time.
 *
 * The cron is a one-shot timer that sets itself again: every CRON_MS while
 * something waits on it, but while serving with every node up only for the
 * next probe (see cron_delay), so an idle daemon wakes about once a second.
 *
 * Every asynchronous operation carries the epoch of the action that
 * started it. The epoch changes with the action, so a late answer to
 * something an earlier action asked is dropped instead of misread.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dockerout.h"
#include "plan.h"
#include "quote.h"
#include "raystatus.h"
#include "recovery.h"
#include "tandemd.h"

#define CRON_MS			100
#define POLL_MS			50
#define CONTAINER_PROBE_MS	30000
#define EVENTS_OVERLAP_S	2	/* replayed from before a stream's end */
#define EVENTS_REPLAY_MAX_S	60
#define TEARDOWN_TIMEOUT_S	60
#define GPU_RELEASE_S		30
#define START_TIMEOUT_S		120

struct op {
	struct cluster	*cl;
	size_t		 node;
	uint64_t	 epoch;
	int		 kind;
	void		*ctx;
	uint64_t	 start_ms;
};

static void	enter_action(struct cluster *);
static void	cron(uv_timer_t *);
static void	fail_step(struct cluster *, enum diag_code, size_t node,
		    const char *excerpt);
static void	remake_sessions(struct cluster *);
static void	start_answered(struct cluster *);

/*
 * The next poll of the current action is due in ms. A poll due before the
 * cron's next tick moves the tick forward, so a wait for the GPUs, Ray or
 * vLLM is not rounded up to it. (Within the cron the timer is not active;
 * the cron sets it again from next_poll_ms when it ends.)
 */
static void
poll_after(struct cluster *cl, uint64_t ms)
{
	cl->next_poll_ms = mono_ms() + ms;
	if (uv_is_active((uv_handle_t *)&cl->cron) &&
	    ms < uv_timer_get_due_in(&cl->cron))
		uv_timer_start(&cl->cron, cron, ms, 0);
}

static struct op *
op_new(struct cluster *cl, size_t node, int kind)
{
	struct op *o = xcalloc(1, sizeof(*o));

	o->cl = cl;
	o->node = node;
	o->epoch = cl->epoch;
	o->kind = kind;
	o->start_ms = mono_ms();
	return o;
}

/*
 * Whether the answer still belongs to the current action; a stale one is
 * freed here, so callbacks simply return.
 */
static int
claim(struct op *o)
{
	if (o->epoch == o->cl->epoch && !o->cl->stopping)
		return 1;
	free(o);
	return 0;
}

/* Runs cmd on a node for the current action; -1 when the node is down. */
static int
node_exec(struct cluster *cl, size_t node, int kind, const char *cmd,
    double timeout_s, ssh_exec_fn *done)
{
	struct op *o = op_new(cl, node, kind);

	if (sshc_exec(cl->nodes[node].ssh, cmd, timeout_s, done, o) == 0)
		return 0;
	free(o);
	return -1;
}

static int
is_ray(const struct cluster *cl)
{
	return cl->cf->topology == TOPO_RAY;
}

static struct node_rt *
head(struct cluster *cl)
{
	return &cl->nodes[cl->cf->head];
}

static const char *
sname(const struct cluster *cl)
{
	return state_name(cl->fsm.state, cl->fsm.dp);
}

/* Records the start of a rebuild for the hourly cap. */
static void
note_rebuild(struct cluster *cl, double t)
{
	recovery_note_rebuild(cl->rebuilds, &cl->nrebuilds, t);
	cl->rebuild_open = 1;
}

/* The actions of a rebuild, from the teardown to a serving vLLM. */
static int
rebuilding(enum caction a)
{
	return a == A_TEARDOWN || a == A_STARTING_RAY || a == A_WAITING_RAY ||
	    a == A_STARTING_VLLM || a == A_WAITING_VLLM;
}

/*
 * A rebuild ended. One that stopped because a node went away is given back
 * to the hourly cap: waiting for a rebooting node is the contract (rule 2),
 * not a failed attempt, and must not leave the daemon waiting an hour once
 * the node is back. generation still counts it: it was started.
 */
static void
close_rebuild(struct cluster *cl, enum caction to)
{
	if (!cl->rebuild_open)
		return;
	cl->rebuild_open = 0;
	if (to == A_WAITING_FOR_NODES && cl->nrebuilds > 0) {
		recovery_forgive_last(cl->rebuilds, cl->nrebuilds);
		log_info("rebuild stopped for a missing node: not counted "
		    "against recovery.max_rebuilds_per_hour");
	}
}

int
cluster_rebuilds_last_hour(const struct cluster *cl)
{
	return recovery_rebuilds_last_hour(cl->rebuilds, cl->nrebuilds,
	    now_s());
}

double
cluster_gmu(const struct cluster *cl)
{
	return recovery_gmu(cl->cf->recovery.gmu_steps,
	    cl->cf->recovery.ngmu_steps, cl->gmu_step);
}

void
cluster_reset_remedy(struct cluster *cl)
{
	if (cl->gmu_step != -1) {
		cl->gmu_step = -1;
		state_save(cl);
	}
}

static void
record_event(struct cluster *cl, const char *from, const char *to,
    const char *action, const char *reason)
{
	struct event_rec *e = &cl->ev[cl->ev_seq % EVENTS_MAX];

	memset(e, 0, sizeof(*e));
	e->seq = ++cl->ev_seq;
	e->time = now_s();
	utf8_copy(e->from, sizeof(e->from), from);
	utf8_copy(e->to, sizeof(e->to), to);
	utf8_copy(e->action, sizeof(e->action), action);
	utf8_copy(e->reason, sizeof(e->reason), reason);
	if (cl->ev_n < EVENTS_MAX)
		cl->ev_n++;
	state_save_events(cl);
}

static void
notify_summary(struct cluster *cl)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s, %s, generation %llu%s%s", sname(cl),
	    action_name(cl->fsm.action), (unsigned long long)cl->generation,
	    cl->diag ? ": " : "", cl->diag ? cl->diag->code : "");
	notify_status(buf);
}

static void
count_failure(struct cluster *cl, enum diag_code code)
{
	recovery_count_failure(cl->failures, &cl->nfailures,
	    sizeof(cl->failures) / sizeof(cl->failures[0]), code);
}

static void
set_diag(struct cluster *cl, const struct diag *d, const char *node,
    const char *excerpt)
{
	if (d)
		count_failure(cl, d->id);
	cl->diag = d;
	if (d == NULL) {
		cl->diag_msg[0] = '\0';
		return;
	}
	utf8_fmt(cl->diag_msg, sizeof(cl->diag_msg), "%s%s%s%s%s%s",
	    d->message, node ? " on " : "", node ? node : "",
	    excerpt && *excerpt ? ": " : "", excerpt ? excerpt : "",
	    d->retryable ? "" : " (retries stopped)");
	log_warnx("diagnosis %s: %s; remedy: %s", d->code, cl->diag_msg,
	    d->remedy);
}

void
cluster_event(struct cluster *cl, enum event ev, const char *reason)
{
	enum cstate os = cl->fsm.state;
	enum caction oa = cl->fsm.action;
	const char *old_state = sname(cl);
	double now = now_s();

	if (!fsm_step(&cl->fsm, ev)) {
		log_debug("event %s ignored in %s/%s (%s)", event_name(ev),
		    old_state, action_name(oa), reason);
		return;
	}
	log_info("%s/%s -> %s/%s (%s: %s)", old_state, action_name(oa),
	    sname(cl), action_name(cl->fsm.action), event_name(ev), reason);
	if (fsm_starts_rebuild(oa, cl->fsm.action)) {
		cl->generation++;
		cl->rebuilds_total++;
		note_rebuild(cl, now);
		state_save(cl);
	} else if (!rebuilding(cl->fsm.action))
		close_rebuild(cl, cl->fsm.action);
	if (cl->fsm.state != os) {
		cl->since = now;
		if (cl->fsm.state == ST_DEGRADED && cl->degraded_at == 0)
			cl->degraded_at = now;
		if (cl->fsm.state == ST_SERVING) {
			cl->serving_since = now;
			if (cl->degraded_at > 0)
				hist_observe(&cl->h_recover,
				    hist_recover_bounds, now - cl->degraded_at);
			cl->degraded_at = 0;
			cl->diag = NULL;
			cl->diag_msg[0] = '\0';
		}
	}
	record_event(cl, old_state, sname(cl), action_name(cl->fsm.action),
	    reason);
	if (cl->once) {
		/* tandemd --once: the operator at the terminal sees each step */
		printf("tandemd --once: %.0f s: %s/%s (%s)\n", now -
		    cl->once_start, sname(cl), action_name(cl->fsm.action),
		    reason);
		fflush(stdout);
	}
	if (cl->fsm.action != oa) {
		cl->epoch++;
		cl->action_ms = mono_ms();
		cl->pending = 0;
		cl->phase = 0;
		poll_after(cl, 0);
		cl->next_log_ms = cl->action_ms + 1000;
		cl->probe_running = 0;
		cl->probe_fails = 0;
	}
	notify_summary(cl);
	if (cl->fsm.state == ST_SERVING && !cl->ready_sent) {
		notify_ready();
		cl->ready_sent = 1;
	}
	if (cl->once) {
		if (cl->fsm.state == ST_SERVING) {
			cl->exit_code = 0;
			uv_stop(cl->loop);
		} else if (cl->fsm.halted || (cl->fsm.action == A_BACKOFF &&
		    cl->attempt >= 2)) {
			cl->exit_code = 1;
			uv_stop(cl->loop);
		}
	}
	if (cl->fsm.action != oa)
		enter_action(cl);
}

/* Failure of a rebuild step: diagnose, apply a remedy, retry or stop. */
static void
fail_step(struct cluster *cl, enum diag_code code, size_t node,
    const char *excerpt)
{
	const struct diag *d = diag_get(code);
	char reason[400];

	set_diag(cl, d, node < cl->nnodes ? cl->nodes[node].conf->name : NULL,
	    excerpt);
	if (d->action == REMEDY_LOWER_GMU && cl->cf->recovery.ngmu_steps) {
		const struct config *cf = cl->cf;
		double cur = recovery_gmu_in_force(cf->recovery.gmu_steps,
		    cf->recovery.ngmu_steps, cl->gmu_step,
		    cf->vllm.gpu_memory_utilization);
		int i = recovery_next_gmu_step(cf->recovery.gmu_steps,
		    cf->recovery.ngmu_steps, cl->gmu_step,
		    cf->vllm.gpu_memory_utilization);

		if (i >= 0) {
			snprintf(reason, sizeof(reason), "remedy: "
			    "--gpu-memory-utilization %g -> %g", cur,
			    cl->cf->recovery.gmu_steps[i]);
			cl->gmu_step = i;
			state_save(cl);
			log_info("%s", reason);
			record_event(cl, sname(cl), sname(cl),
			    action_name(cl->fsm.action), reason);
		}
	}
	utf8_fmt(reason, sizeof(reason), "%s: %s", d->code, cl->diag_msg);
	cluster_event(cl, d->retryable ? EV_STEP_FAILED : EV_FATAL, reason);
}

/*
 * Failure of a built cluster's check, or a container death: the machine
 * says which event it is now (rebuild everything, or fail the step), or
 * that it means nothing.
 */
static void
fail_check(struct cluster *cl, enum fact f, enum diag_code code,
    const char *node, const char *excerpt)
{
	char reason[400];
	enum event ev;

	if (!fsm_decide(&cl->fsm, f, &ev))
		return;
	set_diag(cl, diag_get(code), node, excerpt);
	utf8_fmt(reason, sizeof(reason), "%s: %s", diag_code_name(code),
	    cl->diag_msg);
	cluster_event(cl, ev, reason);
}

/* Node connections -------------------------------------------------------- */

static void	start_events(struct node_rt *);

static int
all_reachable(const struct cluster *cl)
{
	size_t i;

	for (i = 0; i < cl->nnodes; i++)
		if (!cl->nodes[i].reachable)
			return 0;
	return 1;
}

static void
on_gpu_list(const struct ssh_result *r, void *arg)
{
	struct node_rt *n = arg;
	const char *p;
	int count = 0;

	if (r->exit_code != 0)
		return;
	for (p = r->out; (p = strstr(p, "GPU ")); p += 4)
		count++;
	n->gpus = count;
}

/* nvidia-smi -L once per connection: the node's GPU count for /status. */
static void
count_gpus(struct node_rt *n)
{
	(void)sshc_exec(n->ssh, "nvidia-smi -L", 10, on_gpu_list, n);
}

static void
on_ssh_state(struct sshc *c, int up, const char *why, int fatal, void *arg)
{
	struct node_rt *n = arg;
	struct cluster *cl = n->cl;
	char reason[400];
	enum event ev;

	(void)c;
	n->tried = 1;
	if (up) {
		log_info("node %s: ssh up", n->conf->name);
		n->reachable = 1;
		n->fatal = 0;
		n->connect_delay_s = 0.5;
		n->last_error[0] = '\0';
		n->events_retry_ms = 0;
		start_events(n);
		count_gpus(n);
		return;
	}
	utf8_fmt(n->last_error, sizeof(n->last_error), "%s", why);
	n->events_on = 0;
	n->container = CTR_UNKNOWN;
	if (cl->stopping)
		return;
	n->next_connect_ms = mono_ms() + (uint64_t)(n->connect_delay_s * 1000);
	n->connect_delay_s = fmin(n->connect_delay_s * 2, 2);
	if (fatal) {
		n->fatal = 1;
		set_diag(cl, diag_get(recovery_ssh_refused_diag(why)),
		    n->conf->name, why);
		utf8_fmt(reason, sizeof(reason), "%s: %s", cl->diag->code, why);
		n->reachable = 0;
		if (fsm_decide(&cl->fsm, FACT_SSH_REFUSED, &ev))
			cluster_event(cl, ev, reason);
		return;
	}
	if (n->reachable) {
		n->reachable = 0;
		log_warnx("node %s: %s", n->conf->name, why);
		set_diag(cl, diag_get(DIAG_NODE_UNREACHABLE), n->conf->name,
		    why);
		utf8_fmt(reason, sizeof(reason), "node %s unreachable: %s",
		    n->conf->name, why);
		if (fsm_decide(&cl->fsm, FACT_NODE_LOST, &ev))
			cluster_event(cl, ev, reason);
	}
}

static void
on_event_line(const char *line, void *arg)
{
	struct node_rt *n = arg;
	struct cluster *cl = n->cl;
	char action[32], id[80], name[160], reason[400];

	if (docker_event_parse(line, action, sizeof(action), id, sizeof(id),
	    name, sizeof(name)) == -1)
		return;
	if (strcmp(name, n->conf->container_name) != 0)
		return;
	if (strcmp(action, "die") != 0 && strcmp(action, "destroy") != 0)
		return;
	/*
	 * A container can die before `docker run -d` has told us its ID: the
	 * stream and the run answer on separate channels. Keep the ID, so
	 * keep_cid sees that the container it is given is already dead.
	 */
	if (n->cid[0] == '\0') {
		snprintf(n->dead_id, sizeof(n->dead_id), "%s", id);
		return;
	}
	/* Only the death of the container we run counts; and not ours to do. */
	if (strcmp(id, n->cid) != 0)
		return;
	n->container = CTR_EXITED;
	/* a teardown removes it on purpose: no warning */
	if (cl->fsm.action == A_TEARDOWN || cl->stopping)
		return;
	log_warnx("node %s: container %s: %s", n->conf->name, name, action);
	utf8_fmt(reason, sizeof(reason), "container %s (%s)", name, action);
	fail_check(cl, FACT_CONTAINER_DIED, DIAG_CONTAINER_DIED,
	    n->conf->name, reason);
}

static void
on_events_end(const struct ssh_result *r, void *arg)
{
	struct node_rt *n = arg;

	n->events_on = 0;
	if (n->cl->stopping)
		return;
	/*
	 * The stream ends when the engine stops: look at the containers at the
	 * next probe, and start the stream again shortly, replaying the gap.
	 */
	n->events_end_ms = mono_ms();
	n->events_retry_ms = mono_ms() + 1000;
	n->cl->next_container_probe_ms = 0;
	/*
	 * A stream that had been running ends on a live connection: rare, and
	 * a missed death would follow from it, so say it. One that fails at
	 * once (engine down, retried every second) stays a debug line.
	 */
	if (sshc_is_up(n->ssh) && r->elapsed_s >= 2)
		log_info("node %s: docker events ended after %.0f s (exit %d%s%s);"
		    " starting it again", n->conf->name, r->elapsed_s,
		    r->exit_code, r->error ? ", " : "", r->error ? r->error : "");
	else if (r->exit_code != 0 && n->reachable)
		log_debug("node %s: docker events ended: %s%s", n->conf->name,
		    r->error ? r->error : "", r->errlen ? r->err : "");
}

static void
start_events(struct node_rt *n)
{
	char *cmd;
	double since_s = 0;

	if (n->events_on || !n->reachable || mono_ms() < n->events_retry_ms)
		return;
	/*
	 * A death between the old stream's end and the new one's start is
	 * in neither; the inspect at the next probe may have run before it.
	 * Replay from a little before the end (a repeated event is harmless:
	 * the first one has already moved the cluster on).
	 */
	if (n->events_end_ms)
		since_s = fmin((double)(mono_ms() - n->events_end_ms) / 1000.0 +
		    EVENTS_OVERLAP_S, EVENTS_REPLAY_MAX_S);
	cmd = cmd_events(n->cl->cf, n->idx, since_s);
	if (sshc_stream(n->ssh, cmd, on_event_line, on_events_end, n) == 0)
		n->events_on = 1;
	free(cmd);
}

static void
tend_connections(struct cluster *cl)
{
	uint64_t now = mono_ms();
	size_t i;

	for (i = 0; i < cl->nnodes; i++) {
		struct node_rt *n = &cl->nodes[i];

		if (n->reachable) {
			start_events(n);
			continue;
		}
		if (n->fatal || sshc_is_connecting(n->ssh) ||
		    now < n->next_connect_ms)
			continue;
		sshc_connect(n->ssh);
	}
}

/*
 * A step found a node unreachable (its session dropped under a command, or
 * the preflight could not reach it): the cluster waits for the node, as for
 * one that stopped answering a probe, instead of failing the step into a
 * backoff (PRODUCT.md section 3, rule 2). Our own session is made to find
 * out too, or waiting-for-nodes would take it back at once.
 */
static void
node_missing(struct cluster *cl, size_t node, const char *why)
{
	struct node_rt *n = &cl->nodes[node];
	char reason[400];

	set_diag(cl, diag_get(DIAG_NODE_UNREACHABLE), n->conf->name, why);
	snprintf(reason, sizeof(reason), "node %s unreachable: %s",
	    n->conf->name, why);
	cluster_event(cl, EV_NODES_MISSING, reason);
	if (sshc_is_up(n->ssh))
		sshc_disconnect(n->ssh, why);
}

/* Output helpers ------------------------------------------------------------ */

static const char *
first_line(const char *s, char *buf, size_t len)
{
	const char *e;
	size_t n;

	while (*s == '\n' || *s == ' ')
		s++;
	e = strchr(s, '\n');
	n = e ? (size_t)(e - s) : strlen(s);
	utf8_copyn(buf, len, s, n);
	return buf;
}

static const char *
last_line(const char *s, char *buf, size_t len)
{
	const char *end = s + strlen(s), *b;
	size_t n;

	while (end > s && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	for (b = end; b > s && b[-1] != '\n'; b--)
		;
	n = (size_t)(end - b);
	utf8_copyn(buf, len, b, n);
	return buf;
}

/*
 * A failed remote command: find its signature in stderr (or stdout) and
 * fail the step with it; unknown failures keep their first line.
 */
static void
fail_from_output(struct cluster *cl, size_t node, const struct ssh_result *r,
    enum diag_code fallback)
{
	char ex[300], line[300];
	const struct diag *d;

	if (r->error && !sshc_is_up(cl->nodes[node].ssh)) {
		node_missing(cl, node, r->error);
		return;
	}
	if (r->error) {
		fail_step(cl, DIAG_NODE_UNREACHABLE, node, r->error);
		return;
	}
	d = diag_match(r->err, ex, sizeof(ex));
	if (d == NULL)
		d = diag_match(r->out, ex, sizeof(ex));
	if (d) {
		fail_step(cl, d->id, node, ex);
		return;
	}
	utf8_fmt(ex, sizeof(ex), "exit %d: %s", r->exit_code,
	    first_line(r->errlen ? r->err : r->out, line, sizeof(line)));
	fail_step(cl, fallback, node, ex);
}

/* Teardown ------------------------------------------------------------------ */

static void	gpu_check(struct cluster *);

static void
on_teardown(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;

	if (!claim(o))
		return;
	cl->pending--;
	cl->nodes[o->node].container = CTR_MISSING;
	cl->nodes[o->node].cid[0] = '\0';
	cl->nodes[o->node].dead_id[0] = '\0';
	if (r->exit_code != 0) {
		fail_from_output(cl, o->node, r, DIAG_CONTAINER_DIED);
		free(o);
		return;
	}
	free(o);
	if (cl->pending == 0) {
		cl->phase = 1;
		cl->deadline_ms = mono_ms() + GPU_RELEASE_S * 1000;
		gpu_check(cl);
	}
}

/* Which diagnosis a failed preflight check becomes. */
static enum diag_code
preflight_code(const struct preflight *pf, size_t node, int check)
{
	return recovery_preflight_diag((enum pf_check)check,
	    pf->res[node][check].detail);
}

static void	start_teardown(struct cluster *);

static void
on_preflight(struct preflight *pf, void *arg)
{
	struct cluster *cl = arg;
	char ex[300];
	size_t i;
	int c;

	/* Freed by the next cron: its sessions are still reporting. */
	cl->preflight = NULL;
	cl->preflight_done = pf;
	if (pf->arg_epoch != cl->epoch || cl->stopping)
		return;
	for (i = 0; i < pf->cf->nnodes; i++)
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = &pf->res[i][c];
			enum diag_code code;

			if (r->ok || r->detail[0] == '-')
				continue;
			utf8_fmt(ex, sizeof(ex), "preflight %s: %s",
			    preflight_check_name(c), r->detail);
			code = preflight_code(pf, i, c);
			if (code == DIAG_NODE_UNREACHABLE) {
				node_missing(cl, i, ex);
				return;
			}
			fail_step(cl, code, i, ex);
			return;
		}
	cl->preflight_passed = 1;
	log_info("preflight passed on every node");
	start_teardown(cl);
}

static void
start_teardown(struct cluster *cl)
{
	size_t i;

	/*
	 * Before the first rebuild, check every node: a missing image or a
	 * foreign container is reported as a diagnosis instead of tearing down
	 * and starting containers that cannot work.
	 */
	if (!cl->preflight_passed && cl->preflight == NULL) {
		cl->preflight = preflight_start(cl->loop, cl->cf, on_preflight,
		    cl);
		cl->preflight->arg_epoch = cl->epoch;
		return;
	}
	if (cl->preflight) {
		/* still running for an earlier try: its answer serves this one */
		cl->preflight->arg_epoch = cl->epoch;
		return;
	}
	if (!all_reachable(cl)) {
		cluster_event(cl, EV_NODES_MISSING, "teardown needs every node");
		return;
	}
	cl->pending = (int)cl->nnodes;
	for (i = 0; i < cl->nnodes; i++) {
		char *cmd = cmd_teardown(cl->cf, i);

		if (node_exec(cl, i, 0, cmd, TEARDOWN_TIMEOUT_S,
		    on_teardown) == -1) {
			free(cmd);
			cluster_event(cl, EV_NODES_MISSING, "node went away");
			return;
		}
		free(cmd);
	}
}

static void
on_gpu_apps(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char line[200];

	if (!claim(o))
		return;
	cl->pending--;
	/* No nvidia-smi (exit 127): not an NVIDIA node; nothing to check. */
	if (r->exit_code == 0 && r->outlen > 0 && strspn(r->out, " \n") !=
	    r->outlen) {
		cl->phase = 2;	/* something still holds GPU memory */
		utf8_fmt(cl->probe_reason, sizeof(cl->probe_reason),
		    "pid,MiB %s", first_line(r->out, line, sizeof(line)));
		cl->diag_msg[0] = '\0';
		utf8_fmt(cl->nodes[o->node].last_error,
		    sizeof(cl->nodes[o->node].last_error),
		    "GPU memory still held: %s", cl->probe_reason);
	}
	free(o);
	if (cl->pending > 0)
		return;
	if (cl->phase == 1) {
		cluster_event(cl, EV_TEARDOWN_DONE, "containers removed, GPU "
		    "memory released on every node");
		return;
	}
	if (mono_ms() > cl->deadline_ms) {
		size_t i;

		for (i = 0; i < cl->nnodes; i++)
			if (strncmp(cl->nodes[i].last_error, "GPU memory", 10)
			    == 0)
				break;
		fail_step(cl, DIAG_GPU_NOT_RELEASED, i, cl->probe_reason);
		return;
	}
	cl->phase = 1;
	poll_after(cl, POLL_MS);
}

static void
gpu_check(struct cluster *cl)
{
	char *cmd = cmd_gpu_apps();
	size_t i;

	cl->pending = (int)cl->nnodes;
	cl->next_poll_ms = UINT64_MAX;
	for (i = 0; i < cl->nnodes; i++) {
		cl->nodes[i].last_error[0] = '\0';
		if (node_exec(cl, i, 0, cmd, 10, on_gpu_apps) == -1)
			cl->pending--;
	}
	free(cmd);
}

/* Starting containers --------------------------------------------------------- */

static void	start_workers(struct cluster *);

/* -1: the events stream already reported this container dead. */
static int
keep_cid(struct node_rt *n, const struct ssh_result *r)
{
	char line[200];

	first_line(r->out, line, sizeof(line));
	utf8_fmt(n->cid, sizeof(n->cid), "%s", line);
	if (n->dead_id[0] && strcmp(n->dead_id, n->cid) == 0) {
		n->dead_id[0] = '\0';
		n->container = CTR_EXITED;
		log_warnx("node %s: container %s died before docker run "
		    "answered", n->conf->name, n->conf->container_name);
		return -1;
	}
	n->dead_id[0] = '\0';
	n->container = CTR_RUNNING;
	return 0;
}

static void
died_at_start(struct cluster *cl, size_t node)
{
	char reason[300];

	snprintf(reason, sizeof(reason), "container %s (die) before docker "
	    "run answered", cl->nodes[node].conf->container_name);
	fail_step(cl, DIAG_CONTAINER_DIED, node, reason);
}

static void
on_head_started(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;

	start_answered(cl);
	if (!claim(o))
		return;
	cl->pending = 0;
	if (r->exit_code != 0) {
		fail_from_output(cl, o->node, r, DIAG_CONTAINER_DIED);
		free(o);
		return;
	}
	if (keep_cid(&cl->nodes[o->node], r) == -1) {
		died_at_start(cl, o->node);
		free(o);
		return;
	}
	free(o);
	if (is_ray(cl)) {
		/* Workers join once the head's GCS answers. */
		cl->phase = 1;
		cl->deadline_ms = mono_ms() +
		    (uint64_t)(cl->cf->probe.ray_wait_timeout_s * 1000);
		poll_after(cl, 200);
	} else
		start_workers(cl);
}

static void
on_worker_started(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;

	start_answered(cl);
	if (!claim(o))
		return;
	cl->pending--;
	if (r->exit_code != 0) {
		fail_from_output(cl, o->node, r, DIAG_CONTAINER_DIED);
		free(o);
		return;
	}
	if (keep_cid(&cl->nodes[o->node], r) == -1) {
		died_at_start(cl, o->node);
		free(o);
		return;
	}
	free(o);
	if (cl->pending == 0)
		cluster_event(cl, EV_CONTAINERS_UP, "every container started");
}

static void
run_phase(struct cluster *cl, enum phase ph, ssh_exec_fn *cb)
{
	struct plan p;
	size_t i;
	int n = 0;

	plan_rebuild(cl->cf, cluster_gmu(cl), &p);
	for (i = 0; i < p.n; i++)
		if (p.cmds[i].phase == ph)
			n++;
	cl->pending = n;
	for (i = 0; i < p.n; i++) {
		struct op *o;

		if (p.cmds[i].phase != ph)
			continue;
		o = op_new(cl, p.cmds[i].node, 0);
		log_info("node %s: %s", cl->nodes[o->node].conf->name,
		    p.cmds[i].shell);
		if (sshc_exec(cl->nodes[o->node].ssh, p.cmds[i].shell,
		    START_TIMEOUT_S, cb, o) == -1) {
			free(o);
			plan_free(&p);
			cluster_event(cl, EV_NODES_MISSING, "node went away");
			return;
		}
		cl->starts_inflight++;
	}
	plan_free(&p);
	if (n == 0 && ph == PH_WORKERS)
		cluster_event(cl, EV_CONTAINERS_UP, "head only");
}

static void
start_workers(struct cluster *cl)
{
	cl->phase = 2;
	run_phase(cl, PH_WORKERS, on_worker_started);
}

static void
on_vllm_started(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;

	start_answered(cl);
	if (!claim(o))
		return;
	if (r->exit_code != 0) {
		fail_from_output(cl, o->node, r, DIAG_VLLM_EXITED);
		free(o);
		return;
	}
	free(o);
	cluster_event(cl, EV_VLLM_STARTED, "vllm serve launched");
}

/* Probes ------------------------------------------------------------------ */

static void	probe_done(struct cluster *, const struct diag *,
		    const char *node, const char *why);

static void
observe(struct cluster *cl, enum probe_kind k, struct op *o)
{
	hist_observe(&cl->h_probe[k], hist_probe_bounds,
	    (double)(mono_ms() - o->start_ms) / 1000.0);
}

/* "true ID" / "false ID"; exit 1 "No such object" means missing. */
static void
on_inspect(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	struct node_rt *n = &cl->nodes[o->node];
	char id[80], plan[40], want[40], ex[300];
	int running;

	if (!claim(o))
		return;
	observe(cl, PR_CONTAINER, o);
	free(o);
	if (r->error) {
		probe_done(cl, NULL, NULL, NULL);	/* the ssh layer reports */
		return;
	}
	if (r->exit_code == 0 && docker_inspect_parse(r->out, &running, id,
	    sizeof(id), plan, sizeof(plan)) == 0) {
		n->container = running ? CTR_RUNNING : CTR_EXITED;
		snprintf(want, sizeof(want), "%016llx",
		    (unsigned long long)plan_hash(cl->cf));
		if (n->container == CTR_RUNNING && cl->phase == 10 &&
		    strcmp(plan, want) != 0) {
			/* adopting: built from another config (or by hand) */
			probe_done(cl, diag_get(DIAG_CONTAINER_DIED),
			    n->conf->name,
			    "container runs another configuration");
			return;
		}
		if (n->container == CTR_RUNNING) {
			utf8_fmt(n->cid, sizeof(n->cid), "%s", id);
			probe_done(cl, NULL, NULL, NULL);
			return;
		}
		probe_done(cl, diag_get(DIAG_CONTAINER_DIED), n->conf->name,
		    "container exited");
		return;
	}
	if (diag_match(r->err, ex, sizeof(ex))) {
		probe_done(cl, diag_match(r->err, NULL, 0), n->conf->name,
		    ex);
		return;
	}
	n->container = CTR_MISSING;
	probe_done(cl, diag_get(DIAG_CONTAINER_DIED), n->conf->name,
	    "container missing");
}

static int
ray_complete(struct cluster *cl, const struct ssh_result *r, char *why,
    size_t whylen)
{
	struct raystatus rs;
	char err[200];

	if (r->error || r->exit_code != 0) {
		utf8_fmt(why, whylen, "ray status failed: %s", r->error ?
		    r->error : last_line(r->errlen ? r->err : r->out, err,
		    sizeof(err)));
		cl->ray_known = 0;
		return 0;
	}
	if (raystatus_parse(r->out, &rs, err, sizeof(err)) == -1) {
		utf8_fmt(why, whylen, "%s", err);
		cl->ray_known = 0;
		return 0;
	}
	cl->ray_known = 1;
	cl->ray_alive = rs.alive_nodes;
	cl->ray_gpus = rs.gpus;
	if (rs.alive_nodes >= cl->cf->ray.expect_nodes &&
	    rs.gpus >= cl->cf->ray.expect_gpus)
		return 1;
	snprintf(why, whylen, "ray status: %d of %d nodes, %g of %d GPUs",
	    rs.alive_nodes, cl->cf->ray.expect_nodes, rs.gpus,
	    cl->cf->ray.expect_gpus);
	return 0;
}

static void	scan_foreign(struct cluster *, const char *);

/*
 * Each of our containers is one Ray node. Ray listing more is a node we did
 * not start: a leftover container's raylet that joined the new head. It may
 * join before our worker does, and then counts as ours; vLLM may even place
 * a worker on it. Name it rather than count it.
 */
static int
ray_extra(struct cluster *cl, char *why, size_t whylen)
{
	if (!cl->ray_known || cl->ray_alive <= (int)cl->nnodes)
		return 0;
	snprintf(why, whylen, "ray status: %d nodes, but tandem runs %zu: a "
	    "Ray node it did not start", cl->ray_alive, cl->nnodes);
	return 1;
}

static void
on_ray_probe(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char why[300];

	if (!claim(o))
		return;
	observe(cl, PR_RAY, o);
	free(o);
	if (r->error && !sshc_is_up(head(cl)->ssh)) {
		probe_done(cl, NULL, NULL, NULL);
		return;
	}
	if (!ray_complete(cl, r, why, sizeof(why))) {
		probe_done(cl, diag_get(DIAG_RAY_INCOMPLETE),
		    head(cl)->conf->name, why);
		return;
	}
	/* the scan decides about an extra node; nothing else failed here */
	if (ray_extra(cl, why, sizeof(why)))
		scan_foreign(cl, why);
	probe_done(cl, NULL, NULL, NULL);
}

static int
models_list(const struct cluster *cl, const char *body)
{
	json_t *root = json_loads(body, 0, NULL), *data, *m;
	size_t i;
	int found = 0;

	if (root == NULL)
		return 0;
	data = json_object_get(root, "data");
	json_array_foreach(data, i, m) {
		const char *id = json_string_value(json_object_get(m, "id"));

		if (id && strcmp(id, config_model_id(cl->cf)) == 0)
			found = 1;
	}
	json_decref(root);
	return found;
}

static char *
completion_body(const struct cluster *cl)
{
	json_t *b = json_pack("{s:s, s:[{s:s, s:s}], s:i, s:i}", "model",
	    config_model_id(cl->cf), "messages", "role", "user", "content",
	    "ping", "max_tokens", 1, "temperature", 0);
	char *s = json_dumps(b, JSON_COMPACT);

	json_decref(b);
	/* the model id comes from the config, which jansson parsed */
	return s ? s : xstrdup("{}");
}

static char *
api_url(const struct cluster *cl, const char *path)
{
	return xprintf("%s%s", cl->cf->vllm.url, path);
}

static void	on_models(const struct http_result *, void *);
static void	on_generate(const struct http_result *, void *);

static void
on_health(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char *url;

	if (!claim(o))
		return;
	observe(cl, PR_HEALTH, o);
	if (h->status != 200) {
		char why[300];

		cl->vllm_healthy = 0;
		utf8_fmt(why, sizeof(why), "/health: %s", h->status ?
		    "not 200" : h->error);
		if (h->status)
			snprintf(why, sizeof(why), "/health answered %ld",
			    h->status);
		free(o);
		probe_done(cl, diag_get(DIAG_VLLM_EXITED), NULL, why);
		return;
	}
	url = api_url(cl, "/v1/models");
	o->start_ms = mono_ms();
	http_request(url, NULL, cl->cf->probe.timeout_s, on_models, o);
	free(url);
}

static void
on_models(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char *url, *body;

	if (!claim(o))
		return;
	if (h->status != 200 || !models_list(cl, h->body)) {
		char why[300];

		cl->vllm_healthy = 0;
		utf8_fmt(why, sizeof(why), "/v1/models does not list %s",
		    config_model_id(cl->cf));
		free(o);
		probe_done(cl, diag_get(DIAG_VLLM_EXITED), NULL, why);
		return;
	}
	/* /health says 200 while Ray workers are dead: generate a token. */
	if (o->kind == 0 && now_s() - cl->last_generate <
	    cl->cf->probe.generate_every_s && cl->generate_ok) {
		cl->vllm_healthy = 1;
		free(o);
		probe_done(cl, NULL, NULL, NULL);
		return;
	}
	url = api_url(cl, "/v1/chat/completions");
	body = completion_body(cl);
	o->start_ms = mono_ms();
	http_request(url, body, cl->cf->probe.timeout_s, on_generate, o);
	free(url);
	free(body);
}

static void
on_generate(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	json_t *root;
	int ok = 0;

	if (!claim(o))
		return;
	observe(cl, PR_GENERATE, o);
	free(o);
	cl->last_generate = now_s();
	if (h->status == 200 && (root = json_loads(h->body, 0, NULL))) {
		ok = json_array_size(json_object_get(root, "choices")) > 0;
		json_decref(root);
	}
	cl->generate_ok = ok;
	cl->vllm_healthy = ok;
	if (ok)
		probe_done(cl, NULL, NULL, NULL);
	else {
		char why[300];

		utf8_fmt(why, sizeof(why), "one-token completion: %s",
		    h->status ? "HTTP error" : h->error);
		if (h->status)
			snprintf(why, sizeof(why), "one-token completion "
			    "answered HTTP %ld", h->status);
		probe_done(cl, diag_get(DIAG_GENERATION_FAILED), NULL, why);
	}
}

static void
probe_vllm(struct cluster *cl, int force_generate)
{
	struct op *o = op_new(cl, cl->cf->head, force_generate);
	char *url = api_url(cl, "/health");

	cl->pending++;
	http_request(url, NULL, cl->cf->probe.timeout_s, on_health, o);
	free(url);
}

static void
probe_containers(struct cluster *cl)
{
	char *cmd;
	size_t i;

	for (i = 0; i < cl->nnodes; i++) {
		cmd = cmd_inspect_running(cl->cf, i);
		if (node_exec(cl, i, PR_CONTAINER, cmd, cl->cf->probe.timeout_s,
		    on_inspect) == 0)
			cl->pending++;
		free(cmd);
	}
}

/*
 * One probe cycle: every container, Ray, and vLLM. Results arrive in any
 * order; probe_done collects them and judges the cycle once all are in.
 */
static void
probe_cycle(struct cluster *cl, int adopt)
{
	char *cmd;

	cl->probe_running = 1;
	cl->probe_reason[0] = '\0';
	memset(&cl->first_failure, 0, sizeof(cl->first_failure));
	cl->pending = 0;
	cl->phase = adopt ? 10 : 0;
	/*
	 * Container deaths arrive by docker events; asking every node each
	 * cycle would only repeat that. The inspect stays as a slower safety
	 * net, and runs at once when an events stream has ended.
	 */
	if (adopt || mono_ms() >= cl->next_container_probe_ms) {
		cl->next_container_probe_ms = mono_ms() + CONTAINER_PROBE_MS;
		probe_containers(cl);
	}
	if (is_ray(cl)) {
		cmd = cmd_ray_status(cl->cf);
		if (node_exec(cl, cl->cf->head, PR_RAY, cmd,
		    cl->cf->probe.timeout_s, on_ray_probe) == 0)
			cl->pending++;
		free(cmd);
	}
	probe_vllm(cl, adopt);
}

static void
probe_done(struct cluster *cl, const struct diag *d, const char *node,
    const char *why)
{
	struct probe_failure *ff = &cl->first_failure;
	int adopt = cl->phase == 10;

	if (d && ff->d == NULL) {
		ff->d = d;
		utf8_fmt(ff->node, sizeof(ff->node), "%s", node ? node : "");
		utf8_fmt(ff->why, sizeof(ff->why), "%s", why ? why : "");
	}
	if (--cl->pending > 0)
		return;
	cl->probe_running = 0;
	cl->next_probe_ms = mono_ms() +
	    (uint64_t)(cl->cf->probe.interval_s * 1000);
	if (adopt) {
		cl->adopted = 1;
		if (ff->d == NULL)
			cluster_event(cl, EV_ADOPT_HEALTHY, "adopted a cluster "
			    "that already serves");
		else {
			char reason[400];

			utf8_fmt(reason, sizeof(reason), "not adopted: %s",
			    ff->why);
			cluster_event(cl, all_reachable(cl) ? EV_ADOPT_PARTIAL :
			    EV_NODES_MISSING, reason);
		}
	} else if (ff->d == NULL)
		cl->probe_fails = 0;
	else if (recovery_check_degrades(++cl->probe_fails,
	    cl->cf->probe.failures_to_degrade, ff->d->id))
		fail_check(cl, FACT_CHECK_FAILED, ff->d->id,
		    ff->node[0] ? ff->node : NULL, ff->why);
	else
		log_info("probe failed (%d of %d): %s", cl->probe_fails,
		    cl->cf->probe.failures_to_degrade, ff->why);
	memset(ff, 0, sizeof(*ff));
}

/* Waiting for Ray and for vLLM -------------------------------------------- */

static void
on_gcs_poll(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char why[300];

	if (!claim(o))
		return;
	free(o);
	cl->pending = 0;
	if (cl->phase == 1) {
		/* Any status report means the GCS answers. */
		if (r->exit_code == 0) {
			start_workers(cl);
			return;
		}
	} else if (ray_complete(cl, r, why, sizeof(why))) {
		char reason[200];

		if (ray_extra(cl, why, sizeof(why))) {
			scan_foreign(cl, why);
			return;
		}
		snprintf(reason, sizeof(reason), "ray status: %d nodes, %g "
		    "GPUs", cl->ray_alive, cl->ray_gpus);
		cluster_event(cl, EV_RAY_READY, reason);
		return;
	} else
		utf8_fmt(cl->probe_reason, sizeof(cl->probe_reason), "%s", why);
	if (mono_ms() > cl->deadline_ms) {
		fail_step(cl, DIAG_RAY_INCOMPLETE, cl->cf->head,
		    cl->phase == 1 ? "the head's GCS never answered" :
		    cl->probe_reason);
		return;
	}
	poll_after(cl, POLL_MS);
}

static void
poll_ray(struct cluster *cl)
{
	char *cmd = cmd_ray_status(cl->cf);

	cl->next_poll_ms = UINT64_MAX;
	cl->pending = 1;
	if (node_exec(cl, cl->cf->head, PR_RAY, cmd, cl->cf->probe.timeout_s,
	    on_gcs_poll) == -1) {
		cl->pending = 0;
		poll_after(cl, POLL_MS);
	}
	free(cmd);
}

static void
on_ready_generate(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;

	if (!claim(o))
		return;
	free(o);
	poll_after(cl, POLL_MS);
	if (h->status == 200) {
		cl->vllm_healthy = 1;
		cl->generate_ok = 1;
		cl->last_generate = now_s();
		cluster_event(cl, EV_VLLM_READY, "/health, /v1/models and a "
		    "one-token completion answered");
	}
}

static void
on_ready_models(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char *url, *body;

	if (!claim(o))
		return;
	if (h->status != 200 || !models_list(cl, h->body)) {
		free(o);
		poll_after(cl, POLL_MS);
		return;
	}
	url = api_url(cl, "/v1/chat/completions");
	body = completion_body(cl);
	http_request(url, body, fmax(cl->cf->probe.timeout_s, 30),
	    on_ready_generate, o);
	free(url);
	free(body);
}

static void
on_ready_health(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char *url;

	if (!claim(o))
		return;
	if (h->status != 200) {
		free(o);
		poll_after(cl, POLL_MS);
		return;
	}
	url = api_url(cl, "/v1/models");
	http_request(url, NULL, cl->cf->probe.timeout_s, on_ready_models, o);
	free(url);
}

/*
 * The stale node came back right after a full rebuild: something other
 * than our containers runs Ray with a node's IP. Name it.
 */
struct foreign_scan {
	struct cluster	*cl;
	uint64_t	 epoch;
	int		 pending;
	struct sbuf	 found;
	char		 excerpt[300];
};

static void
on_foreign_ps(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct foreign_scan *fs = o->ctx;
	struct cluster *cl = o->cl;
	const char *p = r->out, *nl;

	/* lines "NAME LABEL"; ours carry tandem.cluster=<name> */
	for (; r->exit_code == 0 && *p; p = nl + 1) {
		char name[160] = "", label[80] = "";

		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		if (sscanf(p, "%159s %79s", name, label) >= 1 && name[0] &&
		    strcmp(label, cl->cf->name) != 0)
			sbuf_addf(&fs->found, "%s%s on %s", fs->found.len ?
			    ", " : "", name, cl->nodes[o->node].conf->name);
		if (*nl == '\0')
			break;
	}
	free(o);
	if (--fs->pending > 0)
		return;
	if (fs->epoch == cl->epoch && !cl->stopping) {
		if (fs->found.len)
			fail_step(cl, DIAG_FOREIGN_CONTAINER, cl->cf->head,
			    fs->found.s);
		else
			fail_step(cl, DIAG_STALE_RAY_NODE, cl->cf->head,
			    fs->excerpt);
	}
	sbuf_free(&fs->found);
	free(fs);
}

static void
scan_foreign(struct cluster *cl, const char *excerpt)
{
	struct foreign_scan *fs = xcalloc(1, sizeof(*fs));
	struct strv v;
	char *cmd;
	size_t i;

	fs->cl = cl;
	fs->epoch = cl->epoch;
	sbuf_init(&fs->found);
	utf8_fmt(fs->excerpt, sizeof(fs->excerpt), "%s", excerpt);
	strv_init(&v);
	strv_add(&v, cl->cf->container.engine);
	strv_add(&v, "ps");
	strv_add(&v, "--format");
	strv_add(&v, "{{.Names}} {{.Label \"tandem.cluster\"}}");
	cmd = shell_command(v.v);
	strv_free(&v);
	fs->pending = 1;
	for (i = 0; i < cl->nnodes; i++) {
		struct op *o = op_new(cl, i, 0);

		o->ctx = fs;
		fs->pending++;
		if (sshc_exec(cl->nodes[i].ssh, cmd, cl->cf->probe.timeout_s,
		    on_foreign_ps, o) == -1) {
			free(o);
			fs->pending--;
		}
	}
	free(cmd);
	if (--fs->pending == 0) {
		fail_step(cl, DIAG_STALE_RAY_NODE, cl->cf->head, excerpt);
		sbuf_free(&fs->found);
		free(fs);
	}
}

/* The log says why a start-up failed long before any timeout would. */
static void
on_log_tail(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	const struct diag *d;
	char ex[300], line[300];

	if (!claim(o))
		return;
	if (r->exit_code == 0 && (d = diag_match(r->out, ex, sizeof(ex)))) {
		size_t node = o->node;

		free(o);
		if (d->id == DIAG_STALE_RAY_NODE && cl->diag &&
		    cl->diag->id == DIAG_STALE_RAY_NODE) {
			/* once more right after a full rebuild: look around */
			cl->next_log_ms = UINT64_MAX;
			scan_foreign(cl, ex);
			return;
		}
		fail_step(cl, d->id, node, ex);
		return;
	}
	if (o->kind == 1) {
		/* vllm is gone and the log names nothing we know */
		size_t node = o->node;

		free(o);
		fail_step(cl, DIAG_VLLM_EXITED, node, r->exit_code == 0 ?
		    last_line(r->out, line, sizeof(line)) : "no log");
		return;
	}
	free(o);
}

static void
tail_log(struct cluster *cl, size_t node, int gone)
{
	char *cmd = cmd_log_tail(cl->cf, node);

	(void)node_exec(cl, node, gone, cmd, cl->cf->probe.timeout_s,
	    on_log_tail);
	free(cmd);
}

static void
on_alive(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;

	if (!claim(o))
		return;
	/* pkill -0 exits 1 when no process matched: vllm serve is gone. */
	if (r->exit_code == 1 && !r->error)
		tail_log(cl, o->node, 1);
	free(o);
}

static void
watch_vllm_start(struct cluster *cl)
{
	size_t i;

	for (i = 0; i < cl->nnodes; i++) {
		char *cmd;

		if (is_ray(cl) && i != cl->cf->head)
			continue;
		tail_log(cl, i, 0);
		if (!is_ray(cl))
			continue;	/* dp: the container ends with vllm */
		cmd = cmd_vllm_alive(cl->cf, i);
		(void)node_exec(cl, i, 0, cmd, cl->cf->probe.timeout_s,
		    on_alive);
		free(cmd);
	}
}

/* Waiting for nodes to come back: every node answers, engine included. */
static void
on_engine(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char ex[300];

	if (!claim(o))
		return;
	if (r->exit_code != 0) {
		cl->phase = 2;	/* not yet */
		utf8_fmt(cl->nodes[o->node].last_error,
		    sizeof(cl->nodes[o->node].last_error), "engine: %s",
		    first_line(r->error ? r->error : r->err, ex, sizeof(ex)));
		if (diag_match(r->err, ex, sizeof(ex)))
			set_diag(cl, diag_match(r->err, NULL, 0),
			    cl->nodes[o->node].conf->name, ex);
	} else
		cl->nodes[o->node].last_error[0] = '\0';
	free(o);
	if (--cl->pending > 0)
		return;
	if (cl->phase == 1 && all_reachable(cl))
		cluster_event(cl, EV_NODES_BACK, "every node and engine answers");
	else {
		cl->phase = 0;
		poll_after(cl, 1000);
	}
}

static void
check_engines(struct cluster *cl)
{
	char *cmd = cmd_engine_info(cl->cf);
	size_t i;

	cl->phase = 1;
	cl->pending = (int)cl->nnodes;
	cl->next_poll_ms = UINT64_MAX;
	for (i = 0; i < cl->nnodes; i++) {
		if (node_exec(cl, i, 0, cmd, cl->cf->probe.timeout_s,
		    on_engine) == -1) {
			cl->pending = 0;
			cl->phase = 0;
			poll_after(cl, 1000);
			break;
		}
	}
	free(cmd);
}

/* Actions ------------------------------------------------------------------- */

static void
enter_action(struct cluster *cl)
{
	double delay;
	int capped;

	switch (cl->fsm.action) {
	case A_TEARDOWN:
		start_teardown(cl);
		break;
	case A_STARTING_RAY:
		run_phase(cl, PH_HEAD, on_head_started);
		break;
	case A_WAITING_RAY:
		cl->deadline_ms = mono_ms() +
		    (uint64_t)(cl->cf->probe.ray_wait_timeout_s * 1000);
		break;
	case A_STARTING_VLLM:
		run_phase(cl, PH_VLLM, on_vllm_started);
		break;
	case A_WAITING_VLLM:
		cl->deadline_ms = mono_ms() +
		    (uint64_t)(cl->cf->vllm.ready_timeout_s * 1000);
		cl->next_extend_ms = 0;
		break;
	case A_BACKOFF:
		cl->attempt++;
		delay = recovery_backoff_s(cl->cf->recovery.backoff_initial_s,
		    cl->cf->recovery.backoff_max_s, cl->attempt,
		    (double)rand() / RAND_MAX);
		cl->next_attempt = recovery_next_attempt(now_s(), delay,
		    cl->rebuilds, cl->nrebuilds,
		    cl->cf->recovery.max_rebuilds_per_hour, &capped);
		if (capped) {
			log_warnx("recovery.max_rebuilds_per_hour (%d) reached;"
			    " next attempt in %.0f s",
			    cl->cf->recovery.max_rebuilds_per_hour,
			    cl->next_attempt - now_s());
		}
		log_info("backoff: attempt %d in %.1f s", cl->attempt,
		    cl->next_attempt - now_s());
		break;
	case A_IDLE:
	case A_WAITING_FOR_NODES:
	case A_PAUSED:
		cl->next_probe_ms = mono_ms();
		break;
	}
}

static void
cron_run(struct cluster *cl)
{
	uint64_t now = mono_ms();
	size_t i;

	if (cl->preflight_done) {
		preflight_free(cl->preflight_done);
		cl->preflight_done = NULL;
	}
	if (cl->stopping)
		return;
	if (cl->ssh_remake && !rebuilding(cl->fsm.action))
		remake_sessions(cl);
	tend_connections(cl);
	switch (cl->fsm.action) {
	case A_IDLE:
	case A_PAUSED:
		if (!cl->adopted) {
			/* Adopt what runs: wait for one answer from each node. */
			for (i = 0; i < cl->nnodes; i++)
				if (!cl->nodes[i].reachable &&
				    !cl->nodes[i].tried)
					return;
			if (cl->probe_running)
				return;
			if (!all_reachable(cl)) {
				cl->adopted = 1;
				cluster_event(cl, EV_NODES_MISSING,
				    "not every node answers at start");
				return;
			}
			probe_cycle(cl, 1);
			return;
		}
		if (cl->fsm.halted || cl->fsm.state == ST_ABSENT)
			return;
		if (recovery_attempts_reset(cl->attempt, cl->fsm.state ==
		    ST_SERVING, now_s() - cl->serving_since))
			cl->attempt = 0;
		if (!cl->probe_running && now >= cl->next_probe_ms &&
		    all_reachable(cl))
			probe_cycle(cl, 0);
		break;
	case A_WAITING_FOR_NODES:
		if (all_reachable(cl) && cl->phase == 0 &&
		    now >= cl->next_poll_ms)
			check_engines(cl);
		break;
	case A_BACKOFF:
		if (now_s() >= cl->next_attempt)
			cluster_event(cl, EV_BACKOFF_DONE, "retrying");
		break;
	case A_TEARDOWN:
		if (cl->phase == 1 && cl->pending == 0 &&
		    now >= cl->next_poll_ms)
			gpu_check(cl);
		break;
	case A_STARTING_RAY:
		if (cl->phase == 1 && cl->pending == 0 &&
		    now >= cl->next_poll_ms)
			poll_ray(cl);
		break;
	case A_WAITING_RAY:
		if (cl->pending == 0 && now >= cl->next_poll_ms) {
			cl->phase = 2;
			poll_ray(cl);
		}
		break;
	case A_STARTING_VLLM:
		break;
	case A_WAITING_VLLM:
		if (now > cl->deadline_ms) {
			fail_step(cl, DIAG_STARTUP_TIMEOUT, cl->cf->head, NULL);
			return;
		}
		if (cl->cf->systemd.ready_when_serving && !cl->ready_sent &&
		    now >= cl->next_extend_ms) {
			notify_extend(30);
			cl->next_extend_ms = now + 10000;
		}
		if (now >= cl->next_poll_ms) {
			struct op *o = op_new(cl, cl->cf->head, 0);
			char *url = api_url(cl, "/health");

			cl->next_poll_ms = UINT64_MAX;
			http_request(url, NULL, fmin(cl->cf->probe.timeout_s, 2),
			    on_ready_health, o);
			free(url);
		}
		if (now >= cl->next_log_ms) {
			cl->next_log_ms = now + 1000;
			watch_vllm_start(cl);
		}
		break;
	}
}

/*
 * How long the cron may sleep. Serving or paused with every node up and its
 * events stream open, nothing waits on it but the next probe: it sleeps
 * until then, at most a second. Anything else ticks every CRON_MS.
 */
static uint64_t
cron_delay(struct cluster *cl)
{
	uint64_t now = mono_ms(), d = CRON_MS;
	size_t i;

	if (cl->next_poll_ms > now && cl->next_poll_ms - now < d)
		d = cl->next_poll_ms - now;
	if ((cl->fsm.action != A_IDLE && cl->fsm.action != A_PAUSED) ||
	    !cl->adopted || cl->probe_running || cl->preflight_done)
		return d;
	for (i = 0; i < cl->nnodes; i++)
		if (!cl->nodes[i].reachable || !cl->nodes[i].events_on)
			return d;
	/* due and still not running (halted, or state absent): just tick */
	if (cl->next_probe_ms <= now)
		return CRON_MS;
	d = cl->next_probe_ms - now;
	return d < 1000 ? d : 1000;
}

static void
cron(uv_timer_t *t)
{
	struct cluster *cl = t->data;

	cron_run(cl);
	if (!cl->stopping)
		uv_timer_start(&cl->cron, cron, cron_delay(cl), 0);
}

/* Life cycle ---------------------------------------------------------------- */

static struct sshc *
new_session(struct cluster *cl, struct node_rt *n)
{
	struct ssh_params p;

	p.host = n->conf->ssh_host;
	p.port = n->conf->ssh_port;
	p.user = cl->cf->ssh.user;
	p.identity_file = cl->cf->ssh.identity_file;
	p.known_hosts_file = cl->cf->ssh.known_hosts_file;
	p.connect_timeout_s = cl->cf->ssh.connect_timeout_s;
	p.keepalive_s = cl->cf->ssh.keepalive_s;
	return sshc_new(cl->loop, &p, on_ssh_state, n);
}

static void
make_nodes(struct cluster *cl)
{
	size_t i;

	cl->nnodes = cl->cf->nnodes;
	cl->nodes = xcalloc(cl->nnodes, sizeof(*cl->nodes));
	for (i = 0; i < cl->nnodes; i++) {
		struct node_rt *n = &cl->nodes[i];

		n->idx = i;
		n->cl = cl;
		n->conf = &cl->cf->nodes[i];
		n->gpus = -1;
		n->connect_delay_s = 0.5;
		n->ssh = new_session(cl, n);
	}
}

static void
free_nodes(struct cluster *cl)
{
	size_t i;

	for (i = 0; i < cl->nnodes; i++)
		sshc_free(cl->nodes[i].ssh);
	free(cl->nodes);
	cl->nodes = NULL;
	cl->nnodes = 0;
}

static char *
read_token(const char *path)
{
	char err[ERRLEN], *tok;

	if (httpd_token_read(path, &tok, err, sizeof(err)) == -1)
		log_warnx("%s; POST endpoints answer 403", err);
	return tok;
}

struct cluster *
cluster_new(uv_loop_t *loop, struct config *cf, const char *state_dir,
    int once)
{
	struct cluster *cl = xcalloc(1, sizeof(*cl));

	cl->loop = loop;
	cl->cf = cf;
	cl->state_dir = xstrdup(state_dir);
	cl->once = once;
	/* --once succeeds only by serving: a stop or a deadline before is 1 */
	cl->exit_code = once ? 1 : 0;
	cl->once_start = now_s();
	cl->gmu_step = -1;
	cl->since = now_s();
	fsm_init(&cl->fsm, cf->topology == TOPO_DP);
	cl->token = read_token(cf->api_token_file);
	if (cf->api_token_file && cl->token == NULL)
		log_warnx("api_token_file %s: unreadable or empty; POST "
		    "endpoints answer 403", cf->api_token_file);
	state_load(cl);
	make_nodes(cl);
	uv_timer_init(loop, &cl->cron);
	cl->cron.data = cl;
	return cl;
}

void
cluster_start(struct cluster *cl)
{
	size_t i;

	for (i = 0; i < cl->nnodes; i++)
		sshc_connect(cl->nodes[i].ssh);
	uv_timer_start(&cl->cron, cron, CRON_MS, 0);
	notify_summary(cl);
}

/*
 * Whether the preflight still reads cf. The one that finished is freed
 * first: a reload runs from its own loop callback, never inside the
 * preflight's, so its sessions are done reporting.
 */
static void
release_config(struct cluster *cl, struct config *cf)
{
	if (cl->preflight_done) {
		preflight_free(cl->preflight_done);
		cl->preflight_done = NULL;
	}
	if (cl->preflight && cl->preflight->cf == cf) {
		/* the checks go on with the config they began with */
		cl->preflight->cf_owned = cf;
		return;
	}
	config_free(cf);
}

/* Stops a running preflight whose answer no longer applies. */
static void
drop_preflight(struct cluster *cl)
{
	if (cl->preflight) {
		preflight_free(cl->preflight);
		cl->preflight = NULL;
	}
}

/*
 * ssh.* changed: every node gets a new session with the new parameters.
 * The containers stay; a node whose new session fails is missing like any
 * other. Nothing of a rebuild may run on the old sessions meanwhile, so
 * this waits for a quiet action (cron_run calls it again).
 */
static void
remake_sessions(struct cluster *cl)
{
	size_t i;

	if (rebuilding(cl->fsm.action)) {
		cl->ssh_remake = 1;
		log_info("ssh settings changed: the sessions are made again "
		    "once this rebuild ends");
		return;
	}
	cl->ssh_remake = 0;
	/* answers of the old sessions are void; probes start over */
	cl->epoch++;
	cl->pending = 0;
	cl->phase = 0;
	cl->probe_running = 0;
	cl->next_poll_ms = 0;
	drop_preflight(cl);
	for (i = 0; i < cl->nnodes; i++) {
		struct node_rt *n = &cl->nodes[i];

		sshc_free(n->ssh);
		n->ssh = new_session(cl, n);
		n->events_on = 0;
		n->events_retry_ms = 0;
		n->fatal = 0;
		n->next_connect_ms = 0;
		sshc_connect(n->ssh);
	}
	log_info("ssh settings changed: %zu sessions made again (port %d, "
	    "connect_timeout_s %g, keepalive_s %g)", cl->nnodes,
	    cl->cf->ssh.port, cl->cf->ssh.connect_timeout_s,
	    cl->cf->ssh.keepalive_s);
}

/*
 * SIGHUP. One owner per config: the cluster's, or the running preflight's
 * (release_config); a config that only the preflight still reads goes with
 * it. Returns 1 when the cluster is rebuilt for the new config.
 */
int
cluster_reload(struct cluster *cl, const char *file, char *err, size_t errlen)
{
	struct config *nc = config_load(file, err, errlen), *old = cl->cf;
	char *tok;
	int ssh_changed;
	size_t i;

	if (nc == NULL)
		return -1;
	/* A token file others can read fails the reload, as it fails a start. */
	if (httpd_token_read(nc->api_token_file, &tok, err, errlen) == -1) {
		config_free(nc);
		return -1;
	}
	free(tok);
	for (i = 0; i < nc->warnings.n; i++)
		log_warnx("%s", nc->warnings.v[i]);
	free(cl->token);
	cl->token = read_token(nc->api_token_file);
	if (config_cluster_changed(old, nc)) {
		/* New nodes or commands: fresh sessions, then a rebuild. */
		cl->epoch++;
		drop_preflight(cl);
		free_nodes(cl);
		cl->cf = nc;
		release_config(cl, old);
		fsm_set_dp(&cl->fsm, nc->topology == TOPO_DP);
		cl->preflight_passed = 0;	/* it checked the old cluster */
		cl->ssh_remake = 0;
		cluster_reset_remedy(cl);
		make_nodes(cl);
		for (i = 0; i < cl->nnodes; i++)
			sshc_connect(cl->nodes[i].ssh);
		if (cl->fsm.action == A_TEARDOWN) {
			/*
			 * The machine is already tearing down and sees no
			 * change; the step that ran on the old sessions is
			 * gone with them: start it again.
			 */
			cl->pending = 0;
			cl->phase = 0;
			record_event(cl, sname(cl), sname(cl),
			    action_name(cl->fsm.action),
			    "configuration changed: teardown again");
			enter_action(cl);
		} else
			cluster_event(cl, EV_REBUILD, "configuration changed");
		return 1;
	}
	ssh_changed = config_ssh_changed(old, nc);
	for (i = 0; i < cl->nnodes; i++)
		cl->nodes[i].conf = &nc->nodes[i];
	cl->cf = nc;
	release_config(cl, old);
	if (ssh_changed)
		remake_sessions(cl);
	/* A reload is the operator's word that a stopped cluster may retry. */
	for (i = 0; i < cl->nnodes; i++) {
		if (cl->nodes[i].fatal) {
			cl->nodes[i].fatal = 0;
			cl->nodes[i].next_connect_ms = 0;
		}
	}
	if (cl->fsm.halted)
		cluster_event(cl, EV_REBUILD, "reloaded after a stop");
	notify_summary(cl);
	return 0;
}

struct stopper {
	struct cluster	*cl;
	void		(*done)(void *);
	void		*arg;
	int		 pending;
	int		 waiting;	/* for starts in flight */
	uv_timer_t	 deadline;
	int		 finished;
};

/*
 * How long a stop with on_stop teardown waits for a container start in
 * flight before it removes the containers anyway, and then for the
 * removal: within systemd's TimeoutStopSec=60 together.
 */
#define STOP_STARTS_S		20
#define STOP_TEARDOWN_S		35

static void
stopper_closed(uv_handle_t *h)
{
	free(h->data);
}

static void
stopper_finish(struct stopper *s)
{
	if (s->finished)
		return;
	s->finished = 1;
	uv_timer_stop(&s->deadline);
	s->done(s->arg);
	if (s->pending == 0)
		uv_close((uv_handle_t *)&s->deadline, stopper_closed);
}

static void
on_stop_teardown(const struct ssh_result *r, void *arg)
{
	struct stopper *s = arg;

	(void)r;
	s->pending--;
	if (s->finished) {
		if (s->pending == 0)
			uv_close((uv_handle_t *)&s->deadline, stopper_closed);
		return;
	}
	if (s->pending == 0)
		stopper_finish(s);
}

static void	on_stop_deadline(uv_timer_t *);

static void
stop_teardown(struct stopper *s)
{
	struct cluster *cl = s->cl;
	size_t i;

	s->waiting = 0;
	cl->stopper = NULL;
	for (i = 0; i < cl->nnodes; i++) {
		char *cmd = cmd_teardown(cl->cf, i);

		if (sshc_exec(cl->nodes[i].ssh, cmd, 30, on_stop_teardown, s) == 0)
			s->pending++;
		free(cmd);
	}
	log_info("on_stop teardown: removing containers on %d nodes",
	    s->pending);
	if (s->pending == 0)
		stopper_finish(s);
	else
		uv_timer_start(&s->deadline, on_stop_deadline,
		    STOP_TEARDOWN_S * 1000, 0);
}

static void
on_stop_deadline(uv_timer_t *t)
{
	struct stopper *s = t->data;

	if (s->waiting) {
		log_warnx("teardown on stop: %d container starts still in "
		    "flight after %d s; removing anyway", s->cl->starts_inflight,
		    STOP_STARTS_S);
		stop_teardown(s);
		return;
	}
	log_warnx("teardown on stop: deadline passed");
	stopper_finish(s);
}

/*
 * A docker run (or exec -d) answered. A teardown on stop sent while one is
 * in flight on another channel could reach the node first, and the
 * container would be created after its removal: the stop waits for them.
 */
static void
start_answered(struct cluster *cl)
{
	if (cl->starts_inflight > 0)
		cl->starts_inflight--;
	if (cl->stopper && cl->stopper->waiting && cl->starts_inflight == 0)
		stop_teardown(cl->stopper);
}

/* SIGTERM: keep the cluster serving, or remove it (systemd.on_stop). */
void
cluster_stop(struct cluster *cl, void (*done)(void *), void *arg)
{
	struct stopper *s;

	cl->stopping = 1;
	uv_timer_stop(&cl->cron);
	if (!cl->cf->systemd.on_stop_teardown) {
		done(arg);
		return;
	}
	s = xcalloc(1, sizeof(*s));
	s->cl = cl;
	s->done = done;
	s->arg = arg;
	uv_timer_init(cl->loop, &s->deadline);
	s->deadline.data = s;
	if (cl->starts_inflight > 0) {
		log_info("on_stop teardown: waiting for %d container starts in "
		    "flight", cl->starts_inflight);
		s->waiting = 1;
		cl->stopper = s;
		uv_timer_start(&s->deadline, on_stop_deadline,
		    STOP_STARTS_S * 1000, 0);
		return;
	}
	stop_teardown(s);
}

static void
cluster_closed(uv_handle_t *h)
{
	struct cluster *cl = h->data;

	config_free(cl->cf);
	free(cl->state_dir);
	free(cl->token);
	free(cl);
}

/* The memory goes in the close callback: libuv still holds the timer. */
void
cluster_free(struct cluster *cl)
{
	state_flush(cl);
	if (cl->preflight)
		preflight_free(cl->preflight);
	if (cl->preflight_done)
		preflight_free(cl->preflight_done);
	free_nodes(cl);
	uv_close((uv_handle_t *)&cl->cron, cluster_closed);
}
