/*
 * A probe cycle's results, wherever they come from (the container, Ray,
 * vLLM's chain, its /metrics): the first failure is the one the cycle
 * reports; a failure that was an answer, not a timeout, says something of
 * the cluster; and failed cycles in a row degrade it only past
 * probe.failures_to_degrade (keepalived's retry; lib/policy/recovery.c's
 * hysteresis: a dead container and a stall at once). act_watch.c decides
 * what a degrading failure does.
 */
#include <stdio.h>
#include <string.h>

#include "act_env.h"
#include "recovery.h"

void
probe_cycle_begin(struct probe_cycle *t)
{
	t->d = NULL;
	t->node = NO_NODE;
	t->why[0] = '\0';
	t->answered = 0;
}

void
probe_cycle_add(struct probe_cycle *t, const struct diag *d, size_t node,
    const char *why, int unanswered)
{
	if (d && !unanswered)
		t->answered = 1;
	if (d && t->d == NULL) {
		t->d = d;
		t->node = node;
		utf8_fmt(t->why, sizeof(t->why), "%s", why ? why : "");
	}
}

int
probe_cycle_degrades(struct probe_cycle *t, const struct config *cf)
{
	if (t->d == NULL) {
		t->fails = 0;
		return 0;
	}
	return recovery_check_degrades(++t->fails,
	    cf->probe.failures_to_degrade, t->d->id);
}
