/*
 * Recovery policy: the hourly cap on rebuilds, the gpu-memory-utilization
 * ladder, the backoff between attempts, and the failure counts /metrics
 * shows. Every time here is the monotonic clock's, in seconds: the cap's
 * window and the backoff are durations, which a step of the wall clock
 * (NTP, an operator's date) must not stretch or shrink.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

static double
mono_s(void)
{
	return (double)mono_ms() / 1000.0;
}

/* Records the start of a rebuild for the hourly cap. */
void
remedy_note_rebuild(struct cluster *cl)
{
	recovery_note_rebuild(cl->rec.rebuilds, &cl->rec.nrebuilds, mono_s());
	cl->rec.rebuild_open = 1;
}

/*
 * A rebuild ended. One that stopped because a node went away is given back
 * to the hourly cap: waiting for a rebooting node is the contract (rule 2),
 * not a failed attempt, and must not leave the daemon waiting an hour once
 * the node is back. generation still counts it: it was started.
 */
void
remedy_close_rebuild(struct cluster *cl, enum caction to)
{
	if (!cl->rec.rebuild_open)
		return;
	cl->rec.rebuild_open = 0;
	if (to == A_WAITING_FOR_NODES && cl->rec.nrebuilds > 0) {
		recovery_forgive_last(cl->rec.rebuilds, cl->rec.nrebuilds);
		log_info("rebuild stopped for a missing node: not counted "
		    "against recovery.max_rebuilds_per_hour");
	}
}

int
cluster_rebuilds_last_hour(const struct cluster *cl)
{
	return recovery_rebuilds_last_hour(cl->rec.rebuilds,
	    cl->rec.nrebuilds, mono_s());
}

/* The backoff waits for the hour: recovery.max_rebuilds_per_hour is reached. */
int
cluster_capped(const struct cluster *cl)
{
	return cl->fsm.action == A_BACKOFF && cluster_rebuilds_last_hour(cl) >=
	    cl->cf->recovery.max_rebuilds_per_hour;
}

double
cluster_gmu(const struct cluster *cl)
{
	return recovery_gmu(cl->cf->recovery.gmu_steps,
	    cl->cf->recovery.ngmu_steps, cl->rec.gmu_step);
}

void
cluster_reset_remedy(struct cluster *cl)
{
	if (cl->rec.gmu_step != -1) {
		cl->rec.gmu_step = -1;
		state_save(cl);
	}
}

void
remedy_count_failure(struct cluster *cl, enum diag_code code)
{
	recovery_count_failure(cl->cnt.failures, &cl->cnt.nfailures,
	    sizeof(cl->cnt.failures) / sizeof(cl->cnt.failures[0]), code);
}

/*
 * A failure whose remedy is a lower --gpu-memory-utilization: the next
 * rebuild takes the next step down the ladder.
 */
void
remedy_lower_gmu(struct cluster *cl, const struct diag *d)
{
	const struct config *cf = cl->cf;
	char reason[400];
	double cur;
	int i;

	/* only a diagnosis that less memory fixes: not kv-cache-no-memory */
	if (!recovery_ladder_applies(d) || cf->recovery.ngmu_steps == 0)
		return;
	cur = recovery_gmu_in_force(cf->recovery.gmu_steps,
	    cf->recovery.ngmu_steps, cl->rec.gmu_step,
	    cf->vllm.gpu_memory_utilization);
	i = recovery_next_gmu_step(cf->recovery.gmu_steps,
	    cf->recovery.ngmu_steps, cl->rec.gmu_step,
	    cf->vllm.gpu_memory_utilization);
	if (i < 0)
		return;
	snprintf(reason, sizeof(reason), "remedy: --gpu-memory-utilization %g "
	    "-> %g", cur, cf->recovery.gmu_steps[i]);
	cl->rec.gmu_step = i;
	state_save(cl);
	log_info("%s", reason);
	history_note(cl, reason);
}

/* Backoff: the next attempt after a doubling delay, within the hourly cap. */
uint64_t
remedy_schedule_backoff(struct cluster *cl)
{
	struct recovery_rt *r = &cl->rec;
	double delay, now = mono_s(), next;
	int capped;

	r->attempt++;
	delay = recovery_backoff_s(cl->cf->recovery.backoff_initial_s,
	    cl->cf->recovery.backoff_max_s, r->attempt,
	    (double)rand() / RAND_MAX);
	next = recovery_next_attempt(now, delay, r->rebuilds, r->nrebuilds,
	    cl->cf->recovery.max_rebuilds_per_hour, &capped);
	if (capped)
		log_warnx("recovery.max_rebuilds_per_hour (%d) reached;"
		    " next attempt in %.0f s",
		    cl->cf->recovery.max_rebuilds_per_hour, next - now);
	log_info("backoff: attempt %d in %.1f s", r->attempt, next - now);
	r->next_attempt_ms = mono_ms() + (uint64_t)((next - now) * 1000);
	return r->next_attempt_ms - mono_ms();
}
