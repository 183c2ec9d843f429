/*
 * The Ray probe: ray status on the head, and whether it shows the nodes and
 * GPUs the config expects (also read by the wait for Ray in rebuild.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "raystatus.h"

int
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

/*
 * Each of our containers is one Ray node. Ray listing more is a node we did
 * not start: a leftover container's raylet that joined the new head. It may
 * join before our worker does, and then counts as ours; vLLM may even place
 * a worker on it. Name it rather than count it.
 */
int
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

void
probe_ray(struct cluster *cl)
{
	char *cmd = cmd_ray_status(cl->cf);

	if (node_exec(cl, cl->cf->head, cmd, cl->cf->probe.timeout_s,
	    on_ray_probe) == 0)
		cl->pending++;
	free(cmd);
}
