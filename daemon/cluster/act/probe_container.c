/*
 * The container probe: docker inspect on every node, the safety net behind
 * the events stream, and the check at adoption that a running container
 * was built from this config. Its verdict; the probe cycle (act_watch.c)
 * asks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"
#include "dockerout.h"

/*
 * "true ID PLAN" / "false ID PLAN"; "No such object" means missing. NULL when
 * the container runs (or the answer never came: the ssh layer reports a
 * lost node), else the diagnosis and why.
 */
const struct diag *
inspect_verdict(const struct config *cf, size_t node, uint64_t plan_hash,
    const struct cmd_result *r, int adopt, struct ctr_seen *seen, char *why,
    size_t len)
{
	const struct node_conf *n = &cf->nodes[node];
	char id[80], plan[PLAN_LABEL_MAX];
	const struct diag *d;
	char *cmd;
	int running;

	if (r->error)
		return NULL;
	if (r->exit_code == 0 && docker_inspect_parse(r->out, &running, id,
	    sizeof(id), plan, sizeof(plan)) == 0) {
		enum plan_match m = plan_label_match(plan, plan_hash);

		seen->known = 1;
		seen->state = running ? CTR_RUNNING : CTR_EXITED;
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
			    "relabels", n->name, plan, PLAN_FORMAT);
		utf8_fmt(seen->cid, sizeof(seen->cid), "%s", id);
		return NULL;
	}
	if ((d = diag_match(r->err, why, len)) != NULL)
		return d;
	/*
	 * The engines' words for a container that is not there: "No such
	 * object" (docker 20.10 to 28), "no such object" (docker 29, podman
	 * 4: inspect-missing in tests/unit/data). Any other answer says
	 * nothing about the container: could not tell.
	 */
	if (r->exit_code != 0 && (strstr(r->err, "No such object") ||
	    strstr(r->err, "no such object"))) {
		seen->known = 1;
		seen->state = CTR_MISSING;
		utf8_copy(why, len, "container missing");
		return diag_get(DIAG_CONTAINER_DIED);
	}
	cmd = cmd_inspect_running(cf, node);
	diag_unknown_excerpt(why, len, cmd, r->exit_code, r->out, r->err);
	free(cmd);
	return diag_get(DIAG_UNRECOGNISED_ANSWER);
}
