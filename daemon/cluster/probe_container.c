/*
 * The container probe: docker inspect on every node, the safety net behind
 * the events stream, and the check at adoption that a running container
 * was built from this config.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "dockerout.h"

#define SCAN_TIMEOUT_S	30

/* "true ID" / "false ID"; exit 1 "No such object" means missing. */
static void
on_inspect(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	struct node_rt *n = &cl->nodes[o->node];
	char id[80], plan[PLAN_LABEL_MAX], ex[300];
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
		enum plan_match m = plan_label_match(plan, cl->plan_hash);

		n->container = running ? CTR_RUNNING : CTR_EXITED;
		if (n->container == CTR_RUNNING && cl->probe_mode == PROBE_ADOPT &&
		    m == PLAN_OTHER_CONFIG) {
			/* adopting: built from another config (or by hand) */
			probe_done(cl, diag_get(DIAG_CONTAINER_DIED),
			    n->conf->name,
			    "container runs another configuration");
			return;
		}
		/*
		 * Another tandem's commands hash differently for the same
		 * config: an upgrade alone must not rebuild a serving cluster.
		 */
		if (n->container == CTR_RUNNING && cl->probe_mode == PROBE_ADOPT &&
		    m == PLAN_OTHER_FORMAT)
			log_info("node %s: tandem.plan=%s is another tandem "
			    "version's plan format (this one writes %d): "
			    "adopted without comparing; the next rebuild "
			    "relabels", n->conf->name, plan, PLAN_FORMAT);
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

/*
 * The unrelated-workload scan's answer: warnings whatever the action, never
 * a probe failure (an unanswered scan keeps the last warnings).
 */
static void
on_scan(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct workloads wl;

	if (!r->error && !o->cl->stopping) {
		workloads_parse(r->out, r->outlen, o->cl->cf->name, &wl);
		workloads_seen(o->cl, o->node, &wl);
	}
	free(o);
}

void
probe_containers(struct cluster *cl)
{
	char *cmd, *scan = cmd_workloads(cl->cf);
	size_t i;

	for (i = 0; i < cl->nnodes; i++) {
		cmd = cmd_inspect_running(cl->cf, i);
		if (node_exec(cl, i, cmd, cl->cf->probe.timeout_s,
		    on_inspect) == 0)
			cl->pending++;
		free(cmd);
		/*
		 * On the same cadence, beside the inspect rather than in its
		 * command: the scan runs the engine a few times, and must not
		 * make the probe's own answer late under probe.timeout_s.
		 */
		node_exec(cl, i, scan, SCAN_TIMEOUT_S, on_scan);
	}
	free(scan);
}
