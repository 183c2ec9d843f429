/*
 * backoff: the wait before the next attempt, doubling with jitter and
 * within the hourly cap (remedy.c, lib/policy/recovery.c). On the monotonic
 * clock: a step of the wall clock neither freezes nor skips it. The retry
 * waits for the read of the nodes' GPU faults that the failure began
 * (hwcheck.c): a fatal one stops the retries instead. At the cap the
 * evidence is kept (evidence.c), and the retry waits for it too.
 */
#include <stdio.h>

#include "act_env.h"

static void
backoff_enter(struct action *a)
{
	const struct act_env *e = a->env;
	struct act_view rt;
	char why[200];

	a->deadline_ms = mono_ms() + e->backoff_ms(e->ctx);
	a->wake_ms = a->deadline_ms;
	/* the hour is full: the retries stop until it allows (issue 33) */
	act_view(a, &rt);
	if (rt.capped) {
		snprintf(why, sizeof(why), "recovery.max_rebuilds_per_hour "
		    "(%d) reached", act_cf(a)->recovery.max_rebuilds_per_hour);
		e->keep_evidence(e->ctx, why);
	}
}

static void
backoff_tick(struct action *a, uint64_t now)
{
	struct act_view rt;

	if (now < a->deadline_ms)
		return;
	act_view(a, &rt);
	if (!rt.gathering)
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
