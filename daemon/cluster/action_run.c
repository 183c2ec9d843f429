/*
 * The actions' life, the runtime's side of action.h: the table from the
 * machine's action to its kind, begin and end, and the reap. The machine
 * (cluster.c) begins the action it entered; the action itself sees only
 * its act_env (action.c, act_env.h).
 */
#include <stdlib.h>

#include "cluster_int.h"

/* No default: -Wswitch makes an action without a kind a build error. */
const struct action_ops *
action_kind(enum caction a, int halted)
{
	switch (a) {
	case A_IDLE:			return halted ? &act_recheck :
					    &act_watch;
	case A_PAUSED:			return &act_watch;
	case A_WAITING_FOR_NODES:	return &act_wait_nodes;
	case A_BACKOFF:			return &act_backoff;
	case A_TEARDOWN:		return &act_teardown;
	case A_LOADING_IMAGE:		return &act_load_image;
	case A_STARTING_RAY:		return &act_start;
	case A_WAITING_RAY:		return &act_wait_ray;
	case A_STARTING_VLLM:		return &act_start_vllm;
	case A_WAITING_VLLM:		return &act_wait_vllm;
	}
	return NULL;
}

static void
answered(struct owner *w, struct op *o, const struct answer *ans)
{
	struct action *a = (struct action *)w;

	/* an ended action's ops were cancelled: only a live one hears */
	a->ops->answered(a, o, ans);
}

void
action_end(struct action *a)
{
	owner_cancel(&a->own);
	a->dead = 1;
	a->next_dead = a->cl->dead;
	a->cl->dead = a;
}

void
action_begin(struct cluster *cl)
{
	const struct action_ops *k = action_kind(cl->fsm.action,
	    cl->fsm.halted);
	struct action *a;

	if (cl->act)
		action_end(cl->act);
	a = xcalloc(1, k->size);
	owner_init(&a->own, &cl->exec, answered);
	a->ops = k;
	a->env = &cl->env;
	a->cl = cl;
	a->id = cl->fsm.action;
	a->began_ms = mono_ms();
	a->wake_ms = a->began_ms;
	cl->act = a;
	cl->exec.acting = &a->own;	/* new sessions cancel its ops too */
	k->enter(a);
}

void
action_reap(struct cluster *cl)
{
	struct action *a;

	while ((a = cl->dead) != NULL) {
		cl->dead = a->next_dead;
		if (a->ops->free)
			a->ops->free(a);
		free(a);
	}
}
