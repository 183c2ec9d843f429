/*
 * Read-only access to the cluster for tandemd.c and httpd.c, which see
 * struct cluster only as an opaque type (cluster.h).
 */
#include "cluster_int.h"

void
cluster_view(const struct cluster *cl, struct cluster_view *v)
{
	v->cf = cl->cf;
	v->fsm = cl->fsm;
	v->since = cl->since;
	v->generation = cl->generation;
	v->nnodes = cl->nnodes;
	v->ray_known = cl->seen.ray_known;
	v->ray_alive = cl->seen.ray_alive;
	v->ray_gpus = cl->seen.ray_gpus;
	v->vllm_healthy = cl->seen.vllm_healthy;
	v->gen_endpoint = cl->seen.gen_endpoint;
	v->diag = cl->diag;
	v->diag_msg = cl->diag_msg;
	v->attempt = cl->rec.attempt;
	/* the wall-clock time of the next attempt, for people */
	v->next_attempt = now_s() + (cl->rec.next_attempt_ms > mono_ms() ?
	    (double)(cl->rec.next_attempt_ms - mono_ms()) / 1000.0 : 0);
	v->rebuilds_total = cl->cnt.rebuilds_total;
	v->failures = cl->cnt.failures;
	v->nfailures = cl->cnt.nfailures;
	v->h_probe = cl->cnt.h_probe;
	v->h_recover = &cl->cnt.h_recover;
	v->h_step = &cl->cnt.h_step;
	v->trace_last = &cl->trace_last;
	v->stalls_total = cl->cnt.stalls_total;
	v->reload_ok = cl->cnt.reload_ok;
	v->reload_ok_at = cl->cnt.reload_ok_at;
	v->xid = cl->cnt.xid;
	v->nxid = cl->cnt.nxid;
}

void
cluster_node_view(const struct cluster *cl, size_t i, struct node_view *v)
{
	const struct node_rt *n = &cl->nodes[i];

	v->conf = n->conf;
	v->reachable = n->reachable;
	v->container = n->container;
	v->gpus = n->gpus;
	v->last_error = n->last_error;
	v->execs = sshc_execs(n->ssh);
}

const struct fsm *
cluster_fsm(const struct cluster *cl)
{
	return &cl->fsm;
}

const struct config *
cluster_config(const struct cluster *cl)
{
	return cl->cf;
}

uv_loop_t *
cluster_loop(const struct cluster *cl)
{
	return cl->loop;
}

const char *
cluster_token(const struct cluster *cl)
{
	return cl->token;
}

json_t *
cluster_awaiting_json(const struct cluster *cl)
{
	if (!cl->fsm.halted)
		return json_null();
	if (cl->act && !cl->act->dead && cl->act->ops == &act_recheck)
		return recheck_awaiting_json(cl->act);
	/* paused while stopped: nothing acts, nothing is checked */
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:f, s:i, s:s}", "code",
	    cl->diag ? cl->diag->code : "", "check", json_null(), "node",
	    json_null(), "finding", json_null(), "checked_s", json_null(),
	    "every_s", cl->cf->recovery.recheck_s, "checks", 0, "message",
	    "paused: nothing is checked until tandemctl resume");
}

const char *
cluster_diag_msg(const struct cluster *cl)
{
	return cl->diag ? cl->diag_msg : NULL;
}

int
cluster_once(const struct cluster *cl)
{
	return cl->once.on;
}

int
cluster_exit_code(const struct cluster *cl)
{
	return cl->once.exit_code;
}

void
cluster_set_exit_code(struct cluster *cl, int code)
{
	cl->once.exit_code = code;
}
