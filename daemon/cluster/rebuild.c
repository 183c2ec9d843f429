/*
 * The steps of a rebuild, in order: the preflight before the first one,
 * the teardown and the wait for the GPU memory to be released, the head's
 * container, the workers', vllm serve, and the waits for Ray and for vLLM
 * to be ready, reading vLLM's log meanwhile for a failure it names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

#define POLL_MS			50
#define FALLBACK_POLL_MS	1000	/* /health while the log is awaited */
#define TEARDOWN_TIMEOUT_S	60
#define GPU_RELEASE_S		30
#define START_TIMEOUT_S		120

static void	start_workers(struct cluster *cl);

/*
 * The next poll of a remote command that answered "not yet": POLL_MS after
 * the last one was sent, so a command slower than that is asked again as
 * soon as it answers, never after a sleep of its own.
 */
static uint64_t
repoll_ms(uint64_t sent_ms)
{
	uint64_t took = mono_ms() - sent_ms;

	return took >= POLL_MS ? 0 : POLL_MS - took;
}

/* Output of a failed step ------------------------------------------------- */

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
	if (d && image_load_retry(cl, node, d, ex))
		return;
	if (d) {
		fail_step(cl, d->id, node, ex);
		return;
	}
	utf8_fmt(ex, sizeof(ex), "exit %d: %s", r->exit_code,
	    first_line(r->errlen ? r->err : r->out, line, sizeof(line)));
	fail_step(cl, fallback, node, ex);
}

/* Teardown ---------------------------------------------------------------- */

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
		cl->teardown_step = TEARDOWN_GPU_CHECK;
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

static void
on_preflight(struct preflight *pf, void *arg)
{
	struct cluster *cl = arg;
	char ex[460];		/* the detail and the fix, 200 each */
	size_t i;
	int c;

	/* Freed by the next cron: its sessions are still reporting. */
	cl->preflight = NULL;
	preflight_answered(cl);
	cl->preflight_done = pf;
	if (pf->arg_epoch != cl->epoch || cl->stopping)
		return;
	for (i = 0; i < pf->cf->nnodes; i++)
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = &pf->res[i][c];
			enum diag_code code;

			if (r->ok || r->detail[0] == '-')
				continue;
			utf8_fmt(ex, sizeof(ex), "preflight %s: %s%s%s",
			    preflight_check_name(c), r->detail, r->fix[0] ?
			    "; fix: " : "", r->fix);
			code = preflight_code(pf, i, c);
			if (code == DIAG_NODE_UNREACHABLE) {
				node_missing(cl, i, ex);
				return;
			}
			fail_step(cl, code, i, ex);
			return;
		}
	for (i = 0; i < pf->cf->nnodes && pf->wl; i++)
		if (pf->wl_known[i])
			workloads_seen(cl, i, &pf->wl[i]);
	if (image_load_wanted(cl, pf))
		return;
	cl->preflight_passed = 1;
	log_info("preflight passed on every node");
	start_teardown(cl);
}

void
start_teardown(struct cluster *cl)
{
	size_t i;

	/*
	 * Before the first rebuild, check every node: a missing image or a
	 * foreign container is reported as a diagnosis instead of tearing down
	 * and starting containers that cannot work.
	 */
	if (!cl->preflight_passed && cl->preflight == NULL) {
		/*
		 * On the nodes' own sessions: a second session per node cost
		 * a handshake and a key decoding each, and at 32 nodes on a
		 * loaded head timed out the preflight again and again.
		 */
		struct sshc **s = xcalloc(cl->nnodes, sizeof(*s));

		for (i = 0; i < cl->nnodes; i++)
			s[i] = cl->nodes[i].ssh;
		cl->preflight = preflight_start(cl->loop, cl->cf, s,
		    on_preflight, cl);
		free(s);
		cl->preflight->arg_epoch = cl->epoch;
		preflight_sent(cl);
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
	stop_foreign(cl);
	cl->pending = (int)cl->nnodes;
	for (i = 0; i < cl->nnodes; i++) {
		char *cmd = cmd_teardown(cl->cf, i);

		if (node_exec_step(cl, i, cmd, TEARDOWN_TIMEOUT_S,
		    on_teardown, TS_TEARDOWN) == -1) {
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
	uint64_t sent_ms = o->start_ms;
	char line[200];

	if (!claim(o))
		return;
	cl->pending--;
	/* No nvidia-smi (exit 127): not an NVIDIA node; nothing to check. */
	if (r->exit_code == 0 && gpu_held_by_us(&cl->nodes[o->node], r->out,
	    line, sizeof(line))) {
		cl->teardown_step = TEARDOWN_GPU_HELD;
		utf8_fmt(cl->probe_reason, sizeof(cl->probe_reason),
		    "pid,MiB %s", line);
		utf8_fmt(cl->nodes[o->node].last_error,
		    sizeof(cl->nodes[o->node].last_error),
		    "GPU memory still held: %s", cl->probe_reason);
	}
	free(o);
	if (cl->pending > 0)
		return;
	if (cl->teardown_step == TEARDOWN_GPU_CHECK) {
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
	cl->teardown_step = TEARDOWN_GPU_CHECK;
	poll_after(cl, repoll_ms(sent_ms));
}

void
gpu_check(struct cluster *cl)
{
	char *cmd = cmd_gpu_apps();
	size_t i;

	cl->pending = (int)cl->nnodes;
	cl->next_poll_ms = UINT64_MAX;
	for (i = 0; i < cl->nnodes; i++) {
		cl->nodes[i].last_error[0] = '\0';
		if (node_exec_step(cl, i, cmd, 10, on_gpu_apps,
		    TS_GPU_CHECK) == -1)
			cl->pending--;
	}
	free(cmd);
}

/* Starting containers ----------------------------------------------------- */

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
		log_node(LOG_WARNING, n->conf->name, "node %s: container %s "
		    "died before docker run answered", n->conf->name,
		    n->conf->container_name);
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

/*
 * docker run answered for a node: 0 when its container runs (the ID kept),
 * -1 when the step failed, already reported. The op is freed either way.
 */
static int
container_started(struct op *o, const struct ssh_result *r)
{
	struct cluster *cl = o->cl;
	size_t node = o->node;

	free(o);
	if (r->exit_code != 0) {
		fail_from_output(cl, node, r, DIAG_CONTAINER_DIED);
		return -1;
	}
	if (keep_cid(&cl->nodes[node], r) == -1) {
		died_at_start(cl, node);
		return -1;
	}
	return 0;
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
	if (container_started(o, r) == -1)
		return;
	if (is_ray(cl)) {
		/* Workers join once the head's GCS answers: ask at once. */
		cl->start_step = START_GCS_WAIT;
		cl->deadline_ms = mono_ms() +
		    (uint64_t)(cl->cf->probe.ray_wait_timeout_s * 1000);
		poll_after(cl, 0);
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
	if (container_started(o, r) == -1)
		return;
	if (cl->pending == 0)
		cluster_event(cl, EV_CONTAINERS_UP, "every container started");
}

/*
 * The rebuild's commands: built when its first phase runs and reused by the
 * others. Only a new config (config_loaded) or a new remedy step (the gmu
 * in vllm serve) builds them again.
 */
static const struct plan *
rebuild_plan(struct cluster *cl)
{
	double gmu = cluster_gmu(cl);

	if (cl->plan_built && cl->plan_gmu == gmu)
		return &cl->plan;
	if (cl->plan_built)
		plan_free(&cl->plan);
	plan_rebuild_hashed(cl->cf, gmu, cl->plan_hash, &cl->plan);
	cl->plan_gmu = gmu;
	cl->plan_built = 1;
	return &cl->plan;
}

static void
run_phase(struct cluster *cl, enum phase ph, ssh_exec_fn *cb)
{
	const struct plan *p = rebuild_plan(cl);
	size_t i;
	int n = 0;

	for (i = 0; i < p->n; i++)
		if (p->cmds[i].phase == ph)
			n++;
	cl->pending = n;
	for (i = 0; i < p->n; i++) {
		struct op *o;

		if (p->cmds[i].phase != ph)
			continue;
		o = op_new(cl, p->cmds[i].node);
		log_node(LOG_INFO, cl->nodes[o->node].conf->name, "node %s: %s",
		    cl->nodes[o->node].conf->name, p->cmds[i].shell);
		step_sent(cl, o, ph == PH_HEAD ? TS_RUN_HEAD : ph == PH_WORKERS
		    ? TS_RUN_WORKER : TS_VLLM_SERVE);
		if (sshc_exec(cl->nodes[o->node].ssh, p->cmds[i].shell,
		    START_TIMEOUT_S, cb, o) == -1) {
			free(o);
			cluster_event(cl, EV_NODES_MISSING, "node went away");
			return;
		}
		cl->starts_inflight++;
	}
	if (n == 0 && ph == PH_WORKERS)
		cluster_event(cl, EV_CONTAINERS_UP, "head only");
}

void
start_head(struct cluster *cl)
{
	run_phase(cl, PH_HEAD, on_head_started);
}

static void
start_workers(struct cluster *cl)
{
	cl->start_step = START_WORKERS;
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

void
start_vllm(struct cluster *cl)
{
	run_phase(cl, PH_VLLM, on_vllm_started);
}

/* Waiting for Ray and for vLLM -------------------------------------------- */

static void
on_gcs_poll(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	uint64_t sent_ms = o->start_ms;
	char why[300];

	if (!claim(o))
		return;
	free(o);
	cl->pending = 0;
	/*
	 * Starting Ray, the head's GCS is awaited; in A_WAITING_RAY the step is
	 * back at START_HEAD, and the status must show the whole cluster.
	 */
	if (cl->start_step == START_GCS_WAIT) {
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
		    cl->start_step == START_GCS_WAIT ?
		    "the head's GCS never answered" : cl->probe_reason);
		return;
	}
	poll_after(cl, repoll_ms(sent_ms));
}

void
poll_ray(struct cluster *cl)
{
	char *cmd = cmd_ray_status(cl->cf);

	cl->next_poll_ms = UINT64_MAX;
	cl->pending = 1;
	if (node_exec_step(cl, cl->cf->head, cmd, cl->cf->probe.timeout_s,
	    on_gcs_poll, cl->start_step == START_GCS_WAIT ? TS_GCS_WAIT :
	    TS_RAY_STATUS) == -1) {
		cl->pending = 0;
		poll_after(cl, POLL_MS);
	}
	free(cmd);
}

/*
 * The wait's verdicts: any stage that fails is asked again after POLL_MS;
 * the deadline is the cron's. A completion that answers 200 is enough
 * here; the first probe then looks into it.
 */
static int
ready_answered(struct op *o, enum vllm_stage at, const struct http_result *h,
    int ok)
{
	struct cluster *cl = o->cl;

	if (at == VLLM_GENERATE)
		ok = h->status == 200;
	else if (ok)
		return 1;
	free(o);
	poll_after(cl, POLL_MS);
	if (ok) {
		cl->vllm_healthy = 1;
		cl->generate_ok = 1;
		cl->last_generate = now_s();
		cluster_event(cl, EV_VLLM_READY, "/health, /v1/models and a "
		    "one-token completion answered");
	}
	return 0;
}

static const struct vllm_chain ready_chain = {
	.health_max_s = 2,
	.generate_min_s = 30,
	.answered = ready_answered,
};

/*
 * vLLM's log said its API server started (or cannot say: no such line, no
 * tail): ask /health now. Polling /health every POLL_MS through a model
 * load of minutes would be tandem's own time, a sleep after each refusal.
 */
static void
on_vllm_log_ready(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;

	if (!claim(o))
		return;
	free(o);
	cl->vllm_log_wait = 0;
	if (r->exit_code != 0)
		log_info("vLLM's log did not say it started (exit %d): "
		    "polling /health", r->exit_code);
	poll_after(cl, 0);
}

void
wait_vllm_log(struct cluster *cl)
{
	char *cmd = cmd_vllm_log_ready(cl->cf, cl->cf->head);

	cl->vllm_log_wait = node_exec_step(cl, cl->cf->head, cmd,
	    cl->cf->vllm.ready_timeout_s, on_vllm_log_ready,
	    TS_VLLM_LOG_READY) == 0;
	cl->next_fallback_ms = mono_ms() + FALLBACK_POLL_MS;
	free(cmd);
}

/* vLLM answers /health, then lists the model, then completes a token. */
void
poll_vllm(struct cluster *cl)
{
	/* While the log is awaited, /health is only asked now and then. */
	if (cl->vllm_log_wait && mono_ms() < cl->next_fallback_ms) {
		cl->next_poll_ms = cl->next_fallback_ms;
		return;
	}
	cl->next_fallback_ms = mono_ms() + FALLBACK_POLL_MS;
	cl->next_poll_ms = UINT64_MAX;
	vllm_chain(op_new(cl, cl->cf->head), &ready_chain);
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
	if (o->vllm_gone) {
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
	struct op *o = op_new(cl, node);

	o->vllm_gone = gone;
	step_sent(cl, o, TS_LOG_TAIL);
	if (sshc_exec(cl->nodes[node].ssh, cmd, cl->cf->probe.timeout_s,
	    on_log_tail, o) == -1)
		free(o);
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

void
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
		(void)node_exec_step(cl, i, cmd, cl->cf->probe.timeout_s,
		    on_alive, TS_VLLM_ALIVE);
		free(cmd);
	}
}
