/*
 * The runtime's side of act_env.h (issue 44): what an action sees of the
 * cluster, filled from struct cluster, and what an action saw applied to
 * it. The plan provider is here too, so that the actions' unit tests build
 * the rebuild's commands with the code tandemd runs.
 */
#include <stdlib.h>
#include <string.h>

#include "act_env.h"
#include "cluster_int.h"
#include "raysec.h"

/*
 * The start's NCCL_IB_GID_INDEX and NCCL_IB_HCA are each node's own, read
 * by the preflight before this rebuild (a reboot can move the index): a
 * change builds the commands again. A preflight of another config (a
 * reload meanwhile) says nothing about this one's nodes.
 */
void
cluster_rdma_seen(struct cluster *cl, const struct preflight *pf)
{
	const struct rdma_state *st;
	struct rdma_state *v;
	size_t i, n = cl->cf->nnodes;

	if (preflight_config(pf) != cl->cf)
		return;
	v = xcalloc(n, sizeof(*v));
	for (i = 0; i < n; i++)
		if ((st = preflight_rdma(pf, i)) != NULL)
			v[i] = *st;
		else
			v[i].v = RDMA_NONE;
	if (cl->plan.rdma && memcmp(cl->plan.rdma, v, n * sizeof(*v)) == 0) {
		free(v);
		return;
	}
	free(cl->plan.rdma);
	cl->plan.rdma = v;
	if (cl->plan.built)
		plan_free(&cl->plan.plan);
	cl->plan.built = 0;
}

/*
 * The rebuild's commands: built when its first phase runs and reused by the
 * others. Only a new config (config_loaded) or a new remedy step (the gmu
 * in vllm serve) builds them again.
 */
const struct plan *
cluster_plan(struct cluster *cl)
{
	double gmu = cluster_gmu(cl);

	if (cl->plan.built && cl->plan.gmu == gmu)
		return &cl->plan.plan;
	if (cl->plan.built)
		plan_free(&cl->plan.plan);
	plan_rebuild_rdma(cl->cf, gmu, cl->plan.hash, cl->plan.rdma,
	    &cl->plan.plan);
	cl->plan.gmu = gmu;
	cl->plan.built = 1;
	if (cl->plan.on_built)
		cl->plan.on_built(cl);	/* change_built */
	return &cl->plan.plan;
}

static struct config *
env_config(void *ctx)
{
	return ((struct cluster *)ctx)->cf;
}

/*
 * The node's login as node.c's session left it: a refusal stops the
 * session's retries (fatal), and its last error says why.
 */
static void
env_node(void *ctx, size_t i, struct act_node *v)
{
	const struct node_rt *n = &((struct cluster *)ctx)->nodes[i];

	v->conf = n->conf;
	v->reachable = n->reachable;
	v->tried = n->tried;
	v->container = n->container;
	v->cid = n->cid;
	v->last_error = n->last_error;
	v->logging_in = n->ssh != NULL && sshc_is_connecting(n->ssh);
	v->login_failed = n->last_error[0] ? n->last_error :
	    "ssh: not connected";
	v->refused = n->fatal;
	v->load_here = n->load_image;
}

/* The index of the diagnosis's node (set_diag); NO_NODE when none. */
static size_t
diag_node(const struct cluster *cl)
{
	size_t i;

	for (i = 0; cl->diag_node[0] && i < cl->nnodes; i++)
		if (strcmp(cl->nodes[i].conf->name, cl->diag_node) == 0)
			return i;
	return NO_NODE;
}

/* Plain reads of the cluster, each taken now (act_env.h's act_view). */
static void
env_view(void *ctx, struct act_view *v)
{
	const struct cluster *cl = ctx;

	v->state = cl->fsm.state;
	v->halted = cl->fsm.halted;
	v->adopted = cl->adopted;
	v->gathering = evidence_gathering(cl);
	v->capped = cluster_capped(cl);
	v->rebuilds_last_hour = cluster_rebuilds_last_hour(cl);
	v->diag = cl->diag;
	v->diag_node = diag_node(cl);
	v->gmu_step = cl->rec.gmu_step;
	v->preflight_passed = cl->preflight_passed;
	v->image_loaded = cl->image_loaded;
	v->plan_hash = cl->plan.hash;
	v->image_ref = cl->image_ref_set ? &cl->image_ref : NULL;
}

static const struct plan *
env_plan(void *ctx)
{
	return cluster_plan(ctx);
}

static void
env_report(void *ctx, const struct action *from, const struct report *r)
{
	struct cluster *cl = ctx;

	/* an ended action has no say: its ops were cancelled, it cannot ask */
	if (from->dead || from != cl->act) {
		log_warnx("report from an ended action %s ignored: %s",
		    action_name(from->id), r->text ? r->text : "");
		return;
	}
	cl->report(cl, r);	/* the funnel's door (cluster_report) */
}

/* No cron here: cluster_new sets the one that moves it (cron_wake). */
static void
env_wake(void *ctx, uint64_t ms)
{
	(void)ctx;
	(void)ms;
}

static struct probe_memory *
env_memory(void *ctx)
{
	return &((struct cluster *)ctx)->probe;
}

static char *
env_vllm_key(void *ctx)
{
	return cluster_vllm_key(ctx);
}

static uint64_t
env_backoff_ms(void *ctx)
{
	return remedy_schedule_backoff(ctx);
}

static void
env_keep_evidence(void *ctx, const char *why)
{
	evidence_collect(ctx, why);
}

static void
env_serving_tick(void *ctx, uint64_t now)
{
	struct cluster *cl = ctx;

	if (recovery_attempts_reset(cl->rec.attempt, cl->fsm.state ==
	    ST_SERVING, (double)(now - cl->rec.serving_since_ms) / 1000.0))
		cl->rec.attempt = 0;
}

static double
env_hw_since(void *ctx, size_t node)
{
	return hw_klog_since(ctx, node);
}

static void
env_phase_seen(void *ctx, size_t node, int phase, double seconds)
{
	struct cluster *cl = ctx;

	if (cl->trace.start_ms != 0 && cl->trace.end_ms == 0)
		trace_phase_seen(&cl->trace, node, phase, seconds);
}

static void
env_scan_workloads(void *ctx)
{
	workload_scan(ctx);
}

static void
env_stop_foreign(void *ctx)
{
	workload_stop_foreign(ctx);
}

static int
env_workload_pid(void *ctx, size_t node, long pid)
{
	return workload_has_pid(&((struct cluster *)ctx)->nodes[node], pid);
}

void
runtime_env_init(struct cluster *cl)
{
	cl->env = (struct act_env){
		.ctx = cl,
		.config = env_config,
		.node = env_node,
		.view = env_view,
		.plan = env_plan,
		.report = env_report,
		.wake = env_wake,
		.memory = env_memory,
		.vllm_key = env_vllm_key,
		.backoff_ms = env_backoff_ms,
		.keep_evidence = env_keep_evidence,
		.serving_tick = env_serving_tick,
		/* login_again: node_env_init */
		.hw_since = env_hw_since,
		.trace = {
			.phase_seen = env_phase_seen,
			.step_sent = tracing_step_sent,
			.step_answered = tracing_step_answered,
		},
		.workloads = {
			.scan = env_scan_workloads,
			.stop_foreign = env_stop_foreign,
			.has_pid = env_workload_pid,
		},
	};
}

/* What an action saw of n's container. */
static void
ctr_seen(struct node_rt *n, const struct ctr_seen *c)
{
	if (c->removed) {
		n->container = CTR_MISSING;
		n->cid[0] = '\0';
		n->dead_id[0] = '\0';
		return;
	}
	if (c->cid[0])
		utf8_copy(n->cid, sizeof(n->cid), c->cid);
	if (!c->started) {
		n->container = c->state;
		return;
	}
	/* the events stream may have reported it dead before run answered */
	if (n->dead_id[0] && strcmp(n->dead_id, n->cid) == 0) {
		n->dead_id[0] = '\0';
		n->container = CTR_EXITED;
		log_node(LOG_WARNING, n->conf->name, "node %s: container %s "
		    "died before docker run answered", n->conf->name,
		    n->conf->container_name);
		return;
	}
	n->dead_id[0] = '\0';
	n->container = c->state;
}

/* Ray's ports as the fast link sees them: the warning, said once. */
static void
rayx_seen(struct cluster *cl, const struct rayx_seen *x)
{
	struct seen *s = &cl->seen;

	if (x->msg && x->msg[0]) {
		if (strcmp(s->rayx_msg, x->msg) != 0)
			log_warnx("warning: %s: %s (seen from %s)",
			    RAY_WARNING_CODE, x->msg, x->node);
		utf8_copy(s->rayx_node, sizeof(s->rayx_node), x->node);
		utf8_copy(s->rayx_msg, sizeof(s->rayx_msg), x->msg);
	} else if (s->rayx_msg[0]) {
		log_info("Ray's ports are closed to the fast link or want a "
		    "token now: %s cleared", RAY_WARNING_CODE);
		s->rayx_node[0] = s->rayx_msg[0] = '\0';
	}
}

/* What the preflight found, kept (enum pf_what). */
static void
preflight_seen(struct cluster *cl, const struct preflight *pf,
    enum pf_what w)
{
	const struct workloads *wl;
	size_t i;

	switch (w) {
	case PFW_FOUND:
		/* before a refusal too: what holds the memory it names is
		   flagged */
		for (i = 0; i < cl->nnodes; i++)
			if ((wl = preflight_workloads(pf, i)) != NULL)
				workload_seen(cl, i, wl);
		hw_preflight_seen(cl, pf);
		break;
	case PFW_RDMA:
		cluster_rdma_seen(cl, pf);
		break;
	case PFW_LOAD:
		/* loading-image's work: which build, on which nodes */
		cl->image_ref_set = preflight_image_ref(pf) != NULL;
		if (cl->image_ref_set)
			cl->image_ref = *preflight_image_ref(pf);
		for (i = 0; i < cl->nnodes; i++)
			cl->nodes[i].load_image = preflight_image(pf, i)->load;
		break;
	case PFW_PASSED:
		cl->preflight_passed = 1;
		break;
	case PFW_AGAIN:
		cl->preflight_passed = 0;
		break;
	case PFW_LOADING:
		/* once a generation (a new one may load again); the nodes to
		   load are the action's now */
		cl->image_loaded = 1;
		for (i = 0; i < cl->nnodes; i++)
			cl->nodes[i].load_image = 0;
		break;
	}
}

void
runtime_env_apply(struct cluster *cl, const struct report *r)
{
	switch (r->kind) {
	case REPORT_NODE_ERROR:
		if (r->node < cl->nnodes)
			utf8_copy(cl->nodes[r->node].last_error,
			    sizeof(cl->nodes[r->node].last_error),
			    r->text ? r->text : "");
		break;
	case REPORT_SEEN:
		if (r->ray) {
			cl->seen.ray_known = r->ray->known;
			if (r->ray->known) {
				cl->seen.ray_alive = r->ray->alive;
				cl->seen.ray_gpus = r->ray->gpus;
			}
		}
		if (r->vllm) {
			if (r->vllm->healthy >= 0)
				cl->seen.vllm_healthy = r->vllm->healthy;
			if (r->vllm->gen_endpoint)
				cl->seen.gen_endpoint = r->vllm->gen_endpoint;
		}
		if (r->rayx)
			rayx_seen(cl, r->rayx);
		if (r->ctr && r->ctr->known && r->node < cl->nnodes)
			ctr_seen(&cl->nodes[r->node], r->ctr);
		break;
	case REPORT_PREFLIGHT:
		preflight_seen(cl, r->pf, r->pf_what);
		break;
	case REPORT_ADOPTED:
		cl->adopted = 1;
		break;
	case REPORT_STALLED:
		cl->cnt.stalls_total++;
		break;
	case REPORT_TIMED:
		if (r->probe >= 0 && r->probe < PR_COUNT)
			hist_observe(&cl->cnt.h_probe[r->probe],
			    hist_probe_bounds, r->took_s);
		break;
	default:
		break;
	}
}
