/*
 * The probe cycle of a built cluster: every container, Ray, and vLLM.
 * Results arrive in any order; probe_done is the one place they arrive,
 * and judges the cycle once all are in (relayd's hce.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

#define CONTAINER_PROBE_MS	30000

void
observe(struct cluster *cl, enum probe_kind k, struct op *o)
{
	hist_observe(&cl->h_probe[k], hist_probe_bounds,
	    (double)(mono_ms() - o->start_ms) / 1000.0);
}

/*
 * One probe cycle: every container, Ray, and vLLM. Results arrive in any
 * order; probe_done collects them and judges the cycle once all are in.
 */
void
probe_cycle(struct cluster *cl, enum probe_mode mode)
{
	cl->probe_running = 1;
	cl->probe_reason[0] = '\0';
	memset(&cl->first_failure, 0, sizeof(cl->first_failure));
	cl->pending = 0;
	cl->probe_mode = mode;
	/*
	 * Container deaths arrive by docker events; asking every node each
	 * cycle would only repeat that. The inspect stays as a slower safety
	 * net, and runs at once when an events stream has ended.
	 */
	if (mode == PROBE_ADOPT || mono_ms() >= cl->next_container_probe_ms) {
		cl->next_container_probe_ms = mono_ms() + CONTAINER_PROBE_MS;
		probe_containers(cl);
	}
	if (is_ray(cl))
		probe_ray(cl);
	probe_vllm(cl, mode == PROBE_ADOPT);
}

void
probe_done(struct cluster *cl, const struct diag *d, const char *node,
    const char *why)
{
	struct probe_failure *ff = &cl->first_failure;
	int adopt = cl->probe_mode == PROBE_ADOPT;

	if (d && ff->d == NULL) {
		ff->d = d;
		utf8_fmt(ff->node, sizeof(ff->node), "%s", node ? node : "");
		utf8_fmt(ff->why, sizeof(ff->why), "%s", why ? why : "");
	}
	if (--cl->pending > 0)
		return;
	cl->probe_running = 0;
	cl->next_probe_ms = mono_ms() +
	    (uint64_t)(cl->cf->probe.interval_s * 1000);
	if (adopt) {
		cl->adopted = 1;
		if (ff->d == NULL)
			cluster_event(cl, EV_ADOPT_HEALTHY, "adopted a cluster "
			    "that already serves");
		else {
			char reason[400];

			utf8_fmt(reason, sizeof(reason), "not adopted: %s",
			    ff->why);
			cluster_event(cl, all_reachable(cl) ? EV_ADOPT_PARTIAL :
			    EV_NODES_MISSING, reason);
		}
	} else if (ff->d == NULL)
		cl->probe_fails = 0;
	else if (recovery_check_degrades(++cl->probe_fails,
	    cl->cf->probe.failures_to_degrade, ff->d->id))
		fail_check(cl, FACT_CHECK_FAILED, ff->d->id,
		    ff->node[0] ? ff->node : NULL, ff->why);
	else
		log_info("probe failed (%d of %d): %s", cl->probe_fails,
		    cl->cf->probe.failures_to_degrade, ff->why);
	memset(ff, 0, sizeof(*ff));
}
