/*
 * The Ray probe's verdicts: whether ray status on the head shows the nodes
 * and GPUs the config expects (the probe cycle and the wait for Ray both
 * read it), and whether it shows a node tandem did not start; and the
 * look at Ray's ports as anyone on the fast link would see them
 * (lib/parse/raysec.c, issue 33).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "act_env.h"
#include "raysec.h"
#include "raystatus.h"

#define RAYX_TIMEOUT_S		40	/* the command's own limit is 30 s */

int
ray_complete(const struct config *cf, const struct cmd_result *r,
    struct ray_seen *seen, char *why, size_t whylen)
{
	struct raystatus rs;
	char err[200];

	if (r->error || r->exit_code != 0) {
		utf8_fmt(why, whylen, "ray status failed: %s", r->error ?
		    r->error : utf8_last_line(r->errlen ? r->err : r->out, err,
		    sizeof(err)));
		seen->known = 0;
		return 0;
	}
	if (raystatus_parse_key(r->out, accel_ray_key(cf->container.
	    accelerator), &rs, err, sizeof(err)) == -1) {
		char said[200];

		/* what was asked, and what came back */
		utf8_fmt(why, whylen, "%s; it printed: %s", err,
		    utf8_last_line(r->out, said, sizeof(said)));
		seen->known = 0;
		return 0;
	}
	seen->known = 1;
	seen->alive = rs.alive_nodes;
	seen->gpus = rs.gpus;
	if (rs.alive_nodes >= cf->ray.expect_nodes &&
	    rs.gpus >= cf->ray.expect_gpus)
		return 1;
	snprintf(why, whylen, "ray status: %d of %d nodes, %g of %d %ss",
	    rs.alive_nodes, cf->ray.expect_nodes, rs.gpus,
	    cf->ray.expect_gpus, accel_ray_key(cf->container.
	    accelerator));
	return 0;
}

/*
 * After ray_complete said no: whether it could not tell (no answer, or an
 * exit 0 it could not read) rather than heard that something is missing.
 */
int
ray_untold(const struct ray_seen *seen, const struct cmd_result *r)
{
	return r->error != NULL || (r->exit_code == 0 && !seen->known);
}

/*
 * Each of our containers is one Ray node. Ray listing more is a node we did
 * not start: a leftover container's raylet that joined the new head. It may
 * join before our worker does, and then counts as ours; vLLM may even place
 * a worker on it. Name it rather than count it.
 */
int
ray_extra(const struct ray_seen *seen, size_t nnodes, char *why,
    size_t whylen)
{
	if (!seen->known || seen->alive <= (int)nnodes)
		return 0;
	snprintf(why, whylen, "ray status: %d nodes, but tandem runs %zu: a "
	    "Ray node it did not start", seen->alive, nnodes);
	return 1;
}

void
ray_ports_ask(struct action *a, struct rayx_look *rx, int worker_tag,
    int head_tag)
{
	const struct config *cf = act_cf(a);
	char *cmd;
	size_t i;

	/* the first node that is not the head */
	for (i = 0; i < cf->nnodes && i == cf->head; i++)
		;
	if (i == cf->nnodes)
		return;
	rx->worker = i;
	if (rx->seen == NULL)
		rx->seen = xcalloc(2, sizeof(*rx->seen));
	memset(rx->seen, 0, 2 * sizeof(*rx->seen));
	cmd = cmd_ray_exposure(cf, NULL);
	if (op_ssh(&a->own, i, worker_tag, 0, cmd, RAYX_TIMEOUT_S,
	    TS_COUNT) == 0) {
		free(cmd);
		cmd = cmd_ray_exposure(cf, "127.0.0.1");
		(void)op_ssh(&a->own, cf->head, head_tag, 0, cmd,
		    RAYX_TIMEOUT_S, TS_COUNT);
	}
	free(cmd);
}

int
ray_ports_read(const struct action *a, struct rayx_look *rx,
    const struct op *o, const struct cmd_result *r, int head)
{
	if (r->error) {
		log_debug("Ray's ports from %s: %s",
		    act_cf(a)->nodes[o->node].name, r->error);
		return 0;	/* no look: the last word stands */
	}
	ray_probe_parse(r->out, r->outlen, &rx->seen[head != 0]);
	return 1;
}

void
ray_ports_judge(const struct action *a, const struct rayx_look *rx,
    struct rayx_seen *x, char *msg, size_t len)
{
	const struct config *cf = act_cf(a);

	x->node = cf->nodes[rx->worker].name;
	/* open: the warning (the runtime says it once); closed: cleared */
	x->msg = ray_exposure_judge(&rx->seen[0], &rx->seen[1],
	    cf->nodes[cf->head].ip, cf->ray.port,
	    cf->ray.auth_token_file != NULL, msg, len) == RAYX_OPEN ? msg : "";
}

void
ray_ports_free(struct rayx_look *rx)
{
	free(rx->seen);
	rx->seen = NULL;
}
