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

/*
 * The scan after the inspect's line (cmd_inspect_workloads): the warnings
 * it gives are kept whatever the action, and never fail the probe. Returns
 * the inspect's own output, a new string.
 */
static char *
split_scan(struct cluster *cl, size_t node, const struct ssh_result *r)
{
	const char *mark = strstr(r->out, WORKLOADS_MARK "\n");
	struct workloads wl;

	if (mark == NULL)
		return xstrdup(r->out);
	workloads_parse(mark, r->outlen - (size_t)(mark - r->out),
	    cl->cf->name, &wl);
	workloads_seen(cl, node, &wl);
	return xprintf("%.*s", (int)(mark - r->out), r->out);
}

/* "true ID" / "false ID"; exit 1 "No such object" means missing. */
static void
on_inspect(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	struct node_rt *n = &cl->nodes[o->node];
	char id[80], plan[40], want[40], ex[300];
	size_t node = o->node;
	char *out;
	int running, parsed;

	if (!claim(o)) {
		if (!r->error && !cl->stopping)
			free(split_scan(cl, node, r));
		return;
	}
	observe(cl, PR_CONTAINER, o);
	if (r->error) {
		free(o);
		probe_done(cl, NULL, NULL, NULL);	/* the ssh layer reports */
		return;
	}
	out = split_scan(cl, node, r);
	free(o);
	parsed = r->exit_code == 0 && docker_inspect_parse(out, &running, id,
	    sizeof(id), plan, sizeof(plan)) == 0;
	free(out);
	if (parsed) {
		n->container = running ? CTR_RUNNING : CTR_EXITED;
		snprintf(want, sizeof(want), "%016llx",
		    (unsigned long long)cl->plan_hash);
		if (n->container == CTR_RUNNING && cl->probe_mode == PROBE_ADOPT &&
		    strcmp(plan, want) != 0) {
			/* adopting: built from another config (or by hand) */
			probe_done(cl, diag_get(DIAG_CONTAINER_DIED),
			    n->conf->name,
			    "container runs another configuration");
			return;
		}
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

void
probe_containers(struct cluster *cl)
{
	char *cmd;
	size_t i;

	for (i = 0; i < cl->nnodes; i++) {
		cmd = cmd_inspect_workloads(cl->cf, i);
		if (node_exec(cl, i, cmd, cl->cf->probe.timeout_s,
		    on_inspect) == 0)
			cl->pending++;
		free(cmd);
	}
}
