/*
 * SIGTERM: cluster_stop keeps the cluster serving, or removes it
 * (systemd.on_stop teardown) once the container starts still in flight
 * have answered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

static void	on_stop_deadline(uv_timer_t *t);

struct stopper {
	struct cluster	*cl;
	void		(*done)(void *);
	void		*arg;
	int		 pending;
	int		 waiting;	/* for starts in flight */
	uv_timer_t	 deadline;
	int		 finished;
};

/*
 * How long a stop with on_stop teardown waits for a container start in
 * flight before it removes the containers anyway, and then for the
 * removal: within systemd's TimeoutStopSec=60 together.
 */
#define STOP_STARTS_S		20
#define STOP_TEARDOWN_S		35

static void
stopper_closed(uv_handle_t *h)
{
	free(h->data);
}

static void
stopper_finish(struct stopper *s)
{
	if (s->finished)
		return;
	s->finished = 1;
	uv_timer_stop(&s->deadline);
	s->done(s->arg);
	if (s->pending == 0)
		uv_close((uv_handle_t *)&s->deadline, stopper_closed);
}

static void
on_stop_teardown(const struct cmd_result *r, void *arg)
{
	struct stopper *s = arg;

	(void)r;
	s->pending--;
	if (s->finished) {
		if (s->pending == 0)
			uv_close((uv_handle_t *)&s->deadline, stopper_closed);
		return;
	}
	if (s->pending == 0)
		stopper_finish(s);
}

static void
stop_teardown(struct stopper *s)
{
	struct cluster *cl = s->cl;
	size_t i;

	s->waiting = 0;
	cl->stopper = NULL;
	for (i = 0; i < cl->nnodes; i++) {
		char *cmd = cmd_teardown(cl->cf, i);

		/* the executor's (node.c), unowned: the stop outlives the
		 * action and its ops, and counts the answers itself */
		if (cl->exec.ssh(cl->exec.ctx, i, cmd, 30, on_stop_teardown,
		    s) == 0)
			s->pending++;
		free(cmd);
	}
	log_info("on_stop teardown: removing containers on %d nodes",
	    s->pending);
	if (s->pending == 0)
		stopper_finish(s);
	else
		uv_timer_start(&s->deadline, on_stop_deadline,
		    STOP_TEARDOWN_S * 1000, 0);
}

static void
on_stop_deadline(uv_timer_t *t)
{
	struct stopper *s = t->data;

	if (s->waiting) {
		log_warnx("teardown on stop: %d container starts still in "
		    "flight after %d s; removing anyway",
		    s->cl->exec.starts_inflight, STOP_STARTS_S);
		stop_teardown(s);
		return;
	}
	log_warnx("teardown on stop: deadline passed");
	stopper_finish(s);
}

/*
 * A docker run (or exec -d) answered (op.c has counted it). A teardown on
 * stop sent while one is in flight on another channel could reach the node
 * first, and the container would be created after its removal: the stop
 * waits for them.
 */
void
stop_op_answered(struct cluster *cl, const struct op *o)
{
	if (!(o->flags & OP_START))
		return;
	if (cl->stopper && cl->stopper->waiting &&
	    cl->exec.starts_inflight == 0)
		stop_teardown(cl->stopper);
}

/* SIGTERM: keep the cluster serving, or remove it (systemd.on_stop). */
void
cluster_stop(struct cluster *cl, void (*done)(void *), void *arg)
{
	struct stopper *s;

	cl->stopping = 1;
	uv_timer_stop(&cl->cron);
	if (!cl->cf->systemd.on_stop_teardown) {
		done(arg);
		return;
	}
	s = xcalloc(1, sizeof(*s));
	s->cl = cl;
	s->done = done;
	s->arg = arg;
	uv_timer_init(cl->loop, &s->deadline);
	s->deadline.data = s;
	if (cl->exec.starts_inflight > 0) {
		log_info("on_stop teardown: waiting for %d container starts in "
		    "flight", cl->exec.starts_inflight);
		s->waiting = 1;
		cl->stopper = s;
		uv_timer_start(&s->deadline, on_stop_deadline,
		    STOP_STARTS_S * 1000, 0);
		return;
	}
	stop_teardown(s);
}
