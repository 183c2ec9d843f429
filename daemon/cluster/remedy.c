/*
 * Recovery policy: the hourly cap on rebuilds, the gpu-memory-utilization
 * ladder, the backoff between attempts, and the failure counts /metrics
 * shows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

/* Records the start of a rebuild for the hourly cap. */
void
note_rebuild(struct cluster *cl, double t)
{
	recovery_note_rebuild(cl->rebuilds, &cl->nrebuilds, t);
	cl->rebuild_open = 1;
}

/*
 * A rebuild ended. One that stopped because a node went away is given back
 * to the hourly cap: waiting for a rebooting node is the contract (rule 2),
 * not a failed attempt, and must not leave the daemon waiting an hour once
 * the node is back. generation still counts it: it was started.
 */
void
close_rebuild(struct cluster *cl, enum caction to)
{
	if (!cl->rebuild_open)
		return;
	cl->rebuild_open = 0;
	if (to == A_WAITING_FOR_NODES && cl->nrebuilds > 0) {
		recovery_forgive_last(cl->rebuilds, cl->nrebuilds);
		log_info("rebuild stopped for a missing node: not counted "
		    "against recovery.max_rebuilds_per_hour");
	}
}

int
cluster_rebuilds_last_hour(const struct cluster *cl)
{
	return recovery_rebuilds_last_hour(cl->rebuilds, cl->nrebuilds,
	    now_s());
}

double
cluster_gmu(const struct cluster *cl)
{
	return recovery_gmu(cl->cf->recovery.gmu_steps,
	    cl->cf->recovery.ngmu_steps, cl->gmu_step);
}

void
cluster_reset_remedy(struct cluster *cl)
{
	if (cl->gmu_step != -1) {
		cl->gmu_step = -1;
		state_save(cl);
	}
}

void
count_failure(struct cluster *cl, enum diag_code code)
{
	recovery_count_failure(cl->failures, &cl->nfailures,
	    sizeof(cl->failures) / sizeof(cl->failures[0]), code);
}

/*
 * A failure whose remedy is a lower --gpu-memory-utilization: the next
 * rebuild takes the next step down the ladder.
 */
void
lower_gmu(struct cluster *cl, const struct diag *d)
{
	char reason[400];

	if (d->action == REMEDY_LOWER_GMU && cl->cf->recovery.ngmu_steps) {
		const struct config *cf = cl->cf;
		double cur = recovery_gmu_in_force(cf->recovery.gmu_steps,
		    cf->recovery.ngmu_steps, cl->gmu_step,
		    cf->vllm.gpu_memory_utilization);
		int i = recovery_next_gmu_step(cf->recovery.gmu_steps,
		    cf->recovery.ngmu_steps, cl->gmu_step,
		    cf->vllm.gpu_memory_utilization);

		if (i >= 0) {
			snprintf(reason, sizeof(reason), "remedy: "
			    "--gpu-memory-utilization %g -> %g", cur,
			    cl->cf->recovery.gmu_steps[i]);
			cl->gmu_step = i;
			state_save(cl);
			log_info("%s", reason);
			record_event(cl, sname(cl), sname(cl),
			    action_name(cl->fsm.action), reason);
		}
	}
}

/* Backoff: the next attempt after a doubling delay, within the hourly cap. */
void
schedule_backoff(struct cluster *cl)
{
	double delay;
	int capped;

	cl->attempt++;
	delay = recovery_backoff_s(cl->cf->recovery.backoff_initial_s,
	    cl->cf->recovery.backoff_max_s, cl->attempt,
	    (double)rand() / RAND_MAX);
	cl->next_attempt = recovery_next_attempt(now_s(), delay,
	    cl->rebuilds, cl->nrebuilds,
	    cl->cf->recovery.max_rebuilds_per_hour, &capped);
	if (capped) {
		log_warnx("recovery.max_rebuilds_per_hour (%d) reached;"
		    " next attempt in %.0f s",
		    cl->cf->recovery.max_rebuilds_per_hour,
		    cl->next_attempt - now_s());
	}
	log_info("backoff: attempt %d in %.1f s", cl->attempt,
	    cl->next_attempt - now_s());
}
