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
	return &cl->plan.plan;
}

static struct config *
env_config(void *ctx)
{
	return ((struct cluster *)ctx)->cf;
}

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
}

static const struct plan *
env_plan(void *ctx)
{
	return cluster_plan(ctx);
}

static uint64_t
env_plan_hash(void *ctx)
{
	return ((struct cluster *)ctx)->plan.hash;
}

static void
env_report(void *ctx, const struct report *r)
{
	cluster_report(ctx, r);
}

static void
env_wake(void *ctx, uint64_t ms)
{
	struct cluster *cl = ctx;

	/*
	 * A tick due before the cron's next run moves the run forward, so a
	 * wait for the GPUs, Ray or vLLM is not rounded up to it. (Within
	 * the cron the timer is not active; the cron sets it again from
	 * wake_ms when it ends.)
	 */
	if (uv_is_active((uv_handle_t *)&cl->cron) &&
	    ms < uv_timer_get_due_in(&cl->cron))
		uv_timer_start(&cl->cron, cron, ms, 0);
}

static int
env_gathering(void *ctx)
{
	return gathering(ctx);
}

static uint64_t
env_backoff_ms(void *ctx)
{
	return schedule_backoff(ctx);
}

static int
env_capped(void *ctx)
{
	return cluster_capped(ctx);
}

static void
env_keep_evidence(void *ctx, const char *why)
{
	evidence_collect(ctx, why);
}

static int
env_rebuilds_last_hour(void *ctx)
{
	return cluster_rebuilds_last_hour(ctx);
}

static const struct diag *
env_diag(void *ctx)
{
	return ((struct cluster *)ctx)->diag;
}

void
runtime_env_init(struct cluster *cl)
{
	cl->env = (struct act_env){
		.ctx = cl,
		.config = env_config,
		.node = env_node,
		.plan = env_plan,
		.plan_hash = env_plan_hash,
		.report = env_report,
		.wake = env_wake,
		.gathering = env_gathering,
		.backoff_ms = env_backoff_ms,
		.capped = env_capped,
		.keep_evidence = env_keep_evidence,
		.rebuilds_last_hour = env_rebuilds_last_hour,
		.diag = env_diag,
	};
}

/* What an action saw of n's container. */
static void
ctr_seen(struct node_rt *n, const struct ctr_seen *c)
{
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

void
runtime_env_apply(struct cluster *cl, const struct report *r)
{
	const char *node = r->node < cl->nnodes ?
	    cl->nodes[r->node].conf->name : NULL;

	switch (r->kind) {
	case REPORT_NOTE:
		set_diag(cl, diag_get(r->diag), node, r->text);
		break;
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
		if (r->ctr && r->ctr->known && r->node < cl->nnodes)
			ctr_seen(&cl->nodes[r->node], r->ctr);
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
