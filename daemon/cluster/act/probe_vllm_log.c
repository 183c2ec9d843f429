/*
 * vLLM's log as the wait after a start reads it (act_wait_vllm.c decides
 * on what it saw): a failure the log names (lib/policy/vllmdiag.c's
 * catalogue), its timed start-up lines into the rebuild's trace
 * (lib/parse/vllmphases.c), and, with Ray, its wait for a placement group
 * judged with the latest ray status (lib/policy/pgwait.c): vLLM's own
 * error comes only after about 2,550 s, later than vllm.ready_timeout_s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "act_env.h"
#include "pgwait.h"
#include "vllmargs.h"
#include "vllmdiag.h"
#include "vllmphases.h"

const struct diag *
vllm_log_failure(const struct action *a, const char *log, char *ex,
    size_t len)
{
	return diag_match_vllm(log, act_cf(a), ex, len);
}

/*
 * vLLM's timed start-up lines in what was read of node's log, into the
 * rebuild's trace: a Ray worker's line names its node by address, and a
 * line from an address no node has is left out.
 */
struct phase_from {
	const struct action	*a;
	size_t			 node;
};

static void
phase_seen(const struct vllm_phase_line *pl, void *arg)
{
	struct phase_from *pf = arg;
	const struct config *cf = act_cf(pf->a);
	size_t i, node = pf->node;

	if (pl->ip[0]) {
		for (i = 0; i < cf->nnodes; i++)
			if (cf->nodes[i].ip &&
			    strcmp(cf->nodes[i].ip, pl->ip) == 0)
				break;
		if (i == cf->nnodes)
			return;
		node = i;
	}
	pf->a->env->trace.phase_seen(pf->a->env->ctx, node, (int)pl->phase,
	    pl->seconds);
}

void
vllm_phases_read(const struct action *a, size_t node, const char *out)
{
	struct phase_from pf = { a, node };

	if (out)
		(void)vllmphases_scan(out, strlen(out), phase_seen, &pf);
}

/*
 * On a sign: when it was first seen, the latest ray status (asked again
 * now, with tag), and pg_verdict on both.
 */
const struct diag *
vllm_pg_check(struct action *a, struct pg_watch *pw, const char *log,
    int tag, char *why, size_t len)
{
	const struct config *cf = act_cf(a);
	struct pg_sign sign;
	enum pg_state st;
	uint64_t now = mono_ms();
	char *cmd;
	int d;

	pg_scan(log, &sign);
	if (!sign.seen) {
		pw->first_ms = 0;	/* none, or a wait that ended */
		return NULL;
	}
	if (pw->first_ms == 0) {
		pw->first_ms = now;
		log_info("vLLM waits for its placement group: %s", sign.line);
	}
	if (!pw->asking) {
		cmd = cmd_ray_status(cf);
		pw->asking = op_ssh(&a->own, cf->head, tag, 0, cmd,
		    cf->probe.timeout_s, TS_COUNT) == 0;
		free(cmd);
	}
	st = pg_verdict(&sign, pw->rs,
	    vllmargs_gpus(&cf->vllm.args, cf->ray.expect_gpus),
	    (double)(now - pw->first_ms) / 1000.0,
	    cf->probe.ray_wait_timeout_s, why, len);
	if ((d = pg_diag(st)) < 0)
		return NULL;
	return diag_get((enum diag_code)d);
}

/* The latest ray status, for the placement-group verdict; none kept. */
void
vllm_pg_ray_answered(const struct action *a, struct pg_watch *pw,
    const struct cmd_result *r)
{
	struct raystatus rs;
	char err[200];

	pw->asking = 0;
	if (r->error || r->exit_code != 0 || raystatus_parse_key(r->out,
	    accel_ray_key(act_cf(a)->container.accelerator), &rs, err,
	    sizeof(err)) != 0)
		return;
	if (pw->rs == NULL)
		pw->rs = xmalloc(sizeof(*pw->rs));
	*pw->rs = rs;
}

void
vllm_pg_free(struct pg_watch *pw)
{
	free(pw->rs);
	pw->rs = NULL;
}
