/*
 * The container probe: docker inspect on every node, the safety net behind
 * the events stream, and the check at adoption that a running container
 * was built from this config. Its verdict; the probe cycle (act_watch.c)
 * asks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "dockerout.h"

void
observe(struct cluster *cl, enum probe_kind k, const struct op *o)
{
	hist_observe(&cl->cnt.h_probe[k], hist_probe_bounds,
	    (double)(mono_ms() - o->start_ms) / 1000.0);
}

/*
 * "true ID" / "false ID"; exit 1 "No such object" means missing. NULL when
 * the container runs (or the answer never came: the ssh layer reports a
 * lost node), else the diagnosis and why.
 */
const struct diag *
inspect_verdict(struct cluster *cl, size_t node, const struct cmd_result *r,
    int adopt, char *why, size_t len)
{
	struct node_rt *n = &cl->nodes[node];
	char id[80], plan[PLAN_LABEL_MAX];
	const struct diag *d;
	int running;

	if (r->error)
		return NULL;
	if (r->exit_code == 0 && docker_inspect_parse(r->out, &running, id,
	    sizeof(id), plan, sizeof(plan)) == 0) {
		enum plan_match m = plan_label_match(plan, cl->plan.hash);

		n->container = running ? CTR_RUNNING : CTR_EXITED;
		if (!running) {
			utf8_copy(why, len, "container exited");
			return diag_get(DIAG_CONTAINER_DIED);
		}
		if (adopt && m == PLAN_OTHER_CONFIG) {
			/* adopting: built from another config (or by hand) */
			utf8_copy(why, len, "container runs another "
			    "configuration");
			return diag_get(DIAG_CONTAINER_DIED);
		}
		/*
		 * Another tandem's commands hash differently for the same
		 * config: an upgrade alone must not rebuild a serving cluster.
		 */
		if (adopt && m == PLAN_OTHER_FORMAT)
			log_info("node %s: tandem.plan=%s is another tandem "
			    "version's plan format (this one writes %d): "
			    "adopted without comparing; the next rebuild "
			    "relabels", n->conf->name, plan, PLAN_FORMAT);
		utf8_fmt(n->cid, sizeof(n->cid), "%s", id);
		return NULL;
	}
	if ((d = diag_match(r->err, why, len)) != NULL)
		return d;
	n->container = CTR_MISSING;
	utf8_copy(why, len, "container missing");
	return diag_get(DIAG_CONTAINER_DIED);
}
