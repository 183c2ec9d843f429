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
	cl->rebuilds[cl->nrebuilds % REBUILDS_HISTORY] = t;
	cl->nrebuilds++;
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
		cl->rebuilds[(cl->nrebuilds - 1) % REBUILDS_HISTORY] = 0;
		log_info("rebuild stopped for a missing node: not counted "
		    "against recovery.max_rebuilds_per_hour");
	}
}

int
cluster_rebuilds_last_hour(const struct cluster *cl)
{
	size_t i, n = cl->nrebuilds < REBUILDS_HISTORY ? cl->nrebuilds :
	    REBUILDS_HISTORY;
	double now = now_s();
	int count = 0;

	for (i = 0; i < n; i++)
		if (now - cl->rebuilds[i] < 3600)
			count++;
	return count;
}

static double
oldest_rebuild_last_hour(const struct cluster *cl)
{
	size_t i, n = cl->nrebuilds < REBUILDS_HISTORY ? cl->nrebuilds :
	    REBUILDS_HISTORY;
	double now = now_s(), oldest = now;

	for (i = 0; i < n; i++)
		if (now - cl->rebuilds[i] < 3600 && cl->rebuilds[i] < oldest)
			oldest = cl->rebuilds[i];
	return oldest;
}

double
cluster_gmu(const struct cluster *cl)
{
	if (cl->gmu_step < 0 || (size_t)cl->gmu_step >=
	    cl->cf->recovery.ngmu_steps)
		return 0;
	return cl->cf->recovery.gmu_steps[cl->gmu_step];
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
count_failure(struct cluster *cl, const char *code)
{
	size_t i;

	for (i = 0; i < cl->nfailures; i++)
		if (strcmp(cl->failures[i].reason, code) == 0)
			break;
	if (i == cl->nfailures) {
		if (i == sizeof(cl->failures) / sizeof(cl->failures[0]))
			return;
		utf8_fmt(cl->failures[i].reason,
		    sizeof(cl->failures[i].reason), "%s", code);
		cl->nfailures++;
	}
	cl->failures[i].n++;
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
		double cur = cluster_gmu(cl);
		size_t i;

		if (cur == 0)
			cur = cl->cf->vllm.gpu_memory_utilization > 0 ?
			    cl->cf->vllm.gpu_memory_utilization : 0.9;
		for (i = 0; i < cl->cf->recovery.ngmu_steps; i++)
			if (cl->cf->recovery.gmu_steps[i] < cur - 1e-9)
				break;
		if (i < cl->cf->recovery.ngmu_steps) {
			snprintf(reason, sizeof(reason), "remedy: "
			    "--gpu-memory-utilization %g -> %g", cur,
			    cl->cf->recovery.gmu_steps[i]);
			cl->gmu_step = (int)i;
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

	cl->attempt++;
	delay = cl->cf->recovery.backoff_initial_s *
	    pow(2, cl->attempt - 1);
	delay = fmin(delay, cl->cf->recovery.backoff_max_s);
	/* Jitter keeps many clusters from retrying in step. */
	delay *= 0.75 + 0.5 * ((double)rand() / RAND_MAX);
	cl->next_attempt = now_s() + delay;
	if (cluster_rebuilds_last_hour(cl) >=
	    cl->cf->recovery.max_rebuilds_per_hour) {
		cl->next_attempt = fmax(cl->next_attempt,
		    oldest_rebuild_last_hour(cl) + 3600);
		log_warnx("recovery.max_rebuilds_per_hour (%d) reached;"
		    " next attempt in %.0f s",
		    cl->cf->recovery.max_rebuilds_per_hour,
		    cl->next_attempt - now_s());
	}
	log_info("backoff: attempt %d in %.1f s", cl->attempt,
	    cl->next_attempt - now_s());
}
