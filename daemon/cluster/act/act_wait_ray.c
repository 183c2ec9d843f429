/*
 * waiting-ray: ray status on the head until it shows ray.expect_nodes
 * nodes and ray.expect_gpus GPUs, within probe.ray_wait_timeout_s. A Ray
 * node tandem did not start is named (foreign.c) rather than counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"

#define POLL_MS		50

struct wait_ray {
	struct action		 a;
	uint64_t		 sent_ms;
	char			 why[300];	/* what the last status lacked */
	struct foreign_scan	 fs;
};

static void
ask_ray(struct wait_ray *w)
{
	const struct config *cf = act_cf(&w->a);
	char *cmd = cmd_ray_status(cf);

	w->sent_ms = mono_ms();
	w->a.wake_ms = UINT64_MAX;
	if (op_ssh(&w->a.own, cf->head, 0, 0, cmd, cf->probe.timeout_s,
	    TS_RAY_STATUS) == -1)
		action_wake(&w->a, POLL_MS);
	free(cmd);
}

static void
wait_ray_enter(struct action *a)
{
	a->deadline_ms = mono_ms() +
	    (uint64_t)(act_cf(a)->probe.ray_wait_timeout_s * 1000);
	ask_ray((struct wait_ray *)a);
}

static void
wait_ray_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct wait_ray *w = (struct wait_ray *)a;
	const struct config *cf = act_cf(a);
	struct ray_seen seen = { 0 };
	char why[300], reason[200];
	int complete;

	if (o->tag == TAG_FOREIGN) {
		foreign_answer(a, &w->fs, o, ans->cmd);
		return;
	}
	complete = ray_complete(cf, ans->cmd, &seen, why, sizeof(why));
	act_ray_seen(a, &seen);
	if (complete) {
		if (ray_extra(&seen, cf->nnodes, why, sizeof(why))) {
			foreign_scan(a, &w->fs, why);
			return;
		}
		snprintf(reason, sizeof(reason), "ray status: %d nodes, %g "
		    "GPUs", seen.alive, seen.gpus);
		action_event(a, EV_RAY_READY, reason);
		return;
	}
	utf8_fmt(w->why, sizeof(w->why), "%s", why);
	if (mono_ms() > a->deadline_ms) {
		action_fail(a, DIAG_RAY_INCOMPLETE, cf->head, w->why);
		return;
	}
	action_wake(a, action_repoll_ms(w->sent_ms, POLL_MS));
}

static void
wait_ray_tick(struct action *a, uint64_t now)
{
	struct wait_ray *w = (struct wait_ray *)a;

	if (!w->fs.running && owner_count(&a->own) == 0 && now >= a->wake_ms)
		ask_ray(w);
}

static void
wait_ray_free(struct action *a)
{
	foreign_free(&((struct wait_ray *)a)->fs);
}

const struct action_ops act_wait_ray = {
	.size = sizeof(struct wait_ray),
	.enter = wait_ray_enter,
	.answered = wait_ray_answered,
	.tick = wait_ray_tick,
	.free = wait_ray_free,
};
