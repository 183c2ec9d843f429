/*
 * The preflight as the actions ask it (teardown before a rebuild, the
 * recheck while the retries are stopped): its questions sent on the nodes'
 * own sessions as the action's ops, its answers fed back, through the one
 * driver tandemctl check and a change's check use too
 * (lib/preflight/preflight_run.c). A second session per node cost a
 * handshake and a key decoding each, and at 32 nodes on a loaded head
 * timed out the preflight again and again. What the preflight found is
 * read by the action from struct preflight (preflight.h).
 */
#include "act_env.h"
#include "preflight_run.h"
#include "recovery.h"

#define NOT_CONNECTED	"ssh: not connected (the daemon's session to the " \
			"node is down)"

struct preflight *
probe_preflight_new(struct action *a, int link_only)
{
	struct config *cf = act_cf_shared(a);
	struct preflight *pf;
	struct act_view rt;

	if (link_only)
		return preflight_new_link(cf);
	pf = preflight_new(cf);
	act_view(a, &rt);
	/* free memory for the value the start will ask: the ladder's step */
	preflight_set_gmu(pf, recovery_gmu_in_force(cf->recovery.gmu_steps,
	    cf->recovery.ngmu_steps, rt.gmu_step,
	    cf->vllm.gpu_memory_utilization));
	return pf;
}

/* The driver's send: the action's op on the node's session (pf_cmd.node). */
static int
send_cmd(void *ctx, const struct pf_cmd *c)
{
	struct action *a = ctx;

	return op_ssh(&a->own, c->node, c->tag, 0, c->cmd,
	    preflight_timeout_s(act_cf(a)), TS_COUNT);
}

static struct pf_runner
runner(struct action *a, struct preflight *pf)
{
	return (struct pf_runner){ .pf = pf, .send = send_cmd, .ctx = a };
}

int
probe_preflight_ask(struct action *a, struct preflight *pf, int hw)
{
	const struct act_env *e = a->env;
	struct pf_runner r = runner(a, pf);
	size_t i;

	for (i = 0; i < act_nnodes(a); i++) {
		if (hw && act_node_up(a, i))
			preflight_hw_since(pf, i, e->hw_since(e->ctx, i));
		preflight_run_node(&r, i, act_node_up(a, i), NOT_CONNECTED);
	}
	preflight_run_more(&r);
	return preflight_complete(pf);
}

int
probe_preflight_answer(struct action *a, struct preflight *pf,
    const struct op *o, const struct cmd_result *c)
{
	struct pf_runner r = runner(a, pf);

	preflight_run_answer(&r, o->node, o->tag, c);
	return preflight_complete(pf);
}
