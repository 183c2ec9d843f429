/*
 * backoff: the wait before the next attempt, doubling with jitter and
 * within the hourly cap (remedy.c, lib/policy/recovery.c). On the monotonic
 * clock: a step of the wall clock neither freezes nor skips it. The retry
 * waits for the read of the nodes' GPU faults that the failure began
 * (hwcheck.c): a fatal one stops the retries instead. At the cap the
 * evidence is kept (evidence.c), and the retry waits for it too.
 */
#include <stdio.h>

#include "cluster_int.h"

static void
backoff_enter(struct action *a)
{
	char why[200];

	a->deadline_ms = mono_ms() + schedule_backoff(a->cl);
	a->wake_ms = a->deadline_ms;
	/* the hour is full: the retries stop until it allows (issue 33) */
	if (cluster_capped(a->cl)) {
		snprintf(why, sizeof(why), "recovery.max_rebuilds_per_hour "
		    "(%d) reached", a->cl->cf->recovery.max_rebuilds_per_hour);
		evidence_collect(a->cl, why);
	}
}

static void
backoff_tick(struct action *a, uint64_t now)
{
	if (now >= a->deadline_ms && !gathering(a->cl))
		action_event(a, EV_BACKOFF_DONE, "retrying");
}

/* It asks nothing. */
static void
backoff_answered(struct action *a, struct op *o, const struct answer *ans)
{
	(void)a;
	(void)o;
	(void)ans;
}

const struct action_ops act_backoff = {
	.size = sizeof(struct action),
	.enter = backoff_enter,
	.answered = backoff_answered,
	.tick = backoff_tick,
};
