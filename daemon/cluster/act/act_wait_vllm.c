/*
 * waiting-vllm: vllm serve runs; wait until vLLM answers /health, lists
 * the model and completes a token, within vllm.ready_timeout_s. vLLM's own
 * log line "Application startup complete" ends the wait for its API
 * server (tail -F over SSH), with /health asked now and then meanwhile;
 * and once a second the log is read for a failure it names, long before
 * any timeout would (and, with Ray, whether vllm serve still runs). With
 * Ray, the log's signs that vLLM waits for its placement group are judged
 * with the latest ray status: vLLM's own error comes only after about
 * 2,550 s, later than vllm.ready_timeout_s. The log is read by its probe
 * (probe_vllm_log.c); this decides on what it saw.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"

#define POLL_MS			50
#define FALLBACK_POLL_MS	1000	/* /health while the log is awaited */
#define WATCH_MS		1000	/* the log read for a failure */

enum { TAG_LOG_READY, TAG_TAIL, TAG_TAIL_GONE, TAG_ALIVE, TAG_PG_RAY,
    TAG_PHASES };

struct wait_vllm {
	struct action		 a;
	int			 log_wait;	/* the log line is awaited */
	uint64_t		 next_fallback_ms; /* its /health meanwhile */
	uint64_t		 next_watch_ms;
	int			 asking;	/* the chain is asked */
	struct foreign_scan	 fs;
	/* the last completion that did not pass, for the timeout's excerpt */
	char			 gen_why[300];
	/* vLLM's wait for its placement group, in this start */
	struct pg_watch		 pg;
	/* vLLM's timed start-up lines asked once it started; ready waits */
	int			 phases_asked;
	int			 phases_asking;
	int			 ready;		/* vLLM passed; the phases come */
};

/*
 * The wait's limits: /health often and briefly; a first completion may be
 * slow (CUDA graphs, the first batch).
 */
static const struct vllm_limits ready_limits = {
	.health_max_s = 2,
	.generate_min_s = 30,
};

static void
wait_vllm_enter(struct action *a)
{
	struct wait_vllm *w = (struct wait_vllm *)a;
	const struct config *cf = act_cf(a);
	char *cmd = cmd_vllm_log_ready(cf, cf->head);
	uint64_t now = mono_ms();

	a->deadline_ms = now + (uint64_t)(cf->vllm.ready_timeout_s * 1000);
	w->log_wait = op_ssh(&a->own, cf->head, TAG_LOG_READY, 0, cmd,
	    cf->vllm.ready_timeout_s, TS_VLLM_LOG_READY) == 0;
	free(cmd);
	w->next_fallback_ms = now + FALLBACK_POLL_MS;
	w->next_watch_ms = now + WATCH_MS;
	a->wake_ms = now;
}

/* vLLM answers /health, then lists the model, then completes a token. */
static void
ask_vllm(struct wait_vllm *w, uint64_t now)
{
	/* While the log is awaited, /health is only asked now and then. */
	if (w->log_wait && now < w->next_fallback_ms) {
		w->a.wake_ms = w->next_fallback_ms;
		return;
	}
	w->next_fallback_ms = now + FALLBACK_POLL_MS;
	w->a.wake_ms = UINT64_MAX;
	w->asking = 1;
	vllm_ask(&w->a, VLLM_HEALTH, &ready_limits);
}

static void
tail_log(struct wait_vllm *w, size_t node, int gone)
{
	const struct config *cf = act_cf(&w->a);
	char *cmd = cmd_log_tail(cf, node);

	(void)op_ssh(&w->a.own, node, gone ? TAG_TAIL_GONE : TAG_TAIL, 0, cmd,
	    cf->probe.timeout_s, TS_LOG_TAIL);
	free(cmd);
}

/* The log says why a start-up failed long before any timeout would. */
static void
watch_start(struct wait_vllm *w)
{
	const struct config *cf = act_cf(&w->a);
	size_t i;

	for (i = 0; i < cf->nnodes; i++) {
		char *cmd;

		if (config_is_ray(cf) && i != cf->head)
			continue;
		tail_log(w, i, 0);
		if (!config_is_ray(cf))
			continue;	/* dp: the container ends with vllm */
		cmd = cmd_vllm_alive(cf, i);
		(void)op_ssh(&w->a.own, i, TAG_ALIVE, 0, cmd,
		    cf->probe.timeout_s, TS_VLLM_ALIVE);
		free(cmd);
	}
}

static void
wait_vllm_tick(struct action *a, uint64_t now)
{
	struct wait_vllm *w = (struct wait_vllm *)a;

	if (now > a->deadline_ms) {
		action_fail(a, DIAG_STARTUP_TIMEOUT, act_cf(a)->head,
		    w->gen_why[0] ? w->gen_why : NULL);
		return;
	}
	if (!w->asking && now >= a->wake_ms)
		ask_vllm(w, now);
	if (!w->fs.running && now >= w->next_watch_ms) {
		w->next_watch_ms = now + WATCH_MS;
		watch_start(w);
	}
}

static void ready(struct wait_vllm *);

/*
 * vLLM's log said it started: its timed start-up lines are all written,
 * on every node whose log tandem can read (the head's, which holds the
 * Ray workers' too; in topology dp each node's own).
 */
static void
ask_phases(struct wait_vllm *w)
{
	const struct config *cf = act_cf(&w->a);
	size_t i;

	w->phases_asked = 1;
	for (i = 0; i < cf->nnodes; i++) {
		char *cmd;

		if (config_is_ray(cf) && i != cf->head)
			continue;
		cmd = cmd_vllm_phases(cf, i);
		if (op_ssh(&w->a.own, i, TAG_PHASES, 0, cmd,
		    cf->probe.timeout_s, TS_VLLM_PHASES) == 0)
			w->phases_asking++;
		free(cmd);
	}
}

/*
 * The wait's verdicts: any stage that fails is asked again after POLL_MS.
 * A completion passes with a choice (/v1/completions: every model, base
 * models too). One that vLLM refused, or whose answer tandem could not
 * tell, is asked again too, and the last one's why is what a timeout
 * says.
 */
static void
chain_answered(struct wait_vllm *w, enum vllm_stage at,
    const struct http_result *h)
{
	const struct config *cf = act_cf(&w->a);
	const struct diag *d;
	char why[300];
	int ok;

	/* a refusal is an answer: vLLM is up and will not serve tandem */
	if ((d = vllm_refused(&w->a, at, h, why, sizeof(why))) != NULL) {
		w->asking = 0;
		action_fail(&w->a, d->id, cf->head, why);
		return;
	}
	if (at == VLLM_GENERATE) {
		ok = vllm_gen_judge(cf, h, why, sizeof(why)) == GEN_OK;
		if (ok) {
			struct vllm_seen v = { .healthy = -1,
			    .gen_endpoint = VLLM_GEN_ENDPOINT };

			act_vllm_seen(&w->a, &v);
		}
		if (!ok && strcmp(why, w->gen_why) != 0) {
			log_info("vLLM not ready yet: %s", why);
			utf8_copy(w->gen_why, sizeof(w->gen_why), why);
		}
	} else if (vllm_passes(cf, at, h)) {
		vllm_ask(&w->a, at + 1, &ready_limits);
		return;
	} else
		ok = 0;
	w->asking = 0;
	action_wake(&w->a, POLL_MS);
	if (!ok)
		return;
	w->ready = 1;
	/* the chain may pass (/health asked meanwhile) before the log said so */
	if (!w->phases_asked)
		ask_phases(w);
	if (w->phases_asking)
		return;		/* one answer away: the rebuild's phases */
	ready(w);
}

static void
ready(struct wait_vllm *w)
{
	struct probe_memory *m = w->a.env->memory(w->a.env->ctx);
	struct vllm_seen v = { .healthy = 1 };

	act_vllm_seen(&w->a, &v);
	m->generate_ok = 1;
	m->generate_ms = mono_ms();
	action_event(&w->a, EV_VLLM_READY, "/health, /v1/models and a "
	    "one-token completion answered");
}

/*
 * vLLM's log shows no failure tandem knows: does it wait for its placement
 * group too long, or for GPUs Ray lacks? Returns 1 when it reported.
 */
static int
pg_check(struct wait_vllm *w, const char *log)
{
	const struct diag *d;
	char why[300];

	d = vllm_pg_check(&w->a, &w->pg, log, TAG_PG_RAY, why, sizeof(why));
	if (d == NULL)
		return 0;
	action_fail(&w->a, d->id, act_cf(&w->a)->head, why);
	return 1;
}

/* The diagnosis in force is a stale Ray node too (the last rebuild's). */
static int
was_stale(const struct action *a)
{
	struct act_view rt;

	act_view(a, &rt);
	return rt.diag && rt.diag->id == DIAG_STALE_RAY_NODE;
}

static void
tail_answered(struct wait_vllm *w, const struct op *o,
    const struct cmd_result *r)
{
	const struct config *cf = act_cf(&w->a);
	const struct diag *d;
	char ex[300], line[300];

	if (r->exit_code == 0)
		vllm_phases_read(&w->a, o->node, r->out);
	if (r->exit_code == 0 && (d = vllm_log_failure(&w->a, r->out, ex,
	    sizeof(ex)))) {
		if (d->id == DIAG_STALE_RAY_NODE && was_stale(&w->a)) {
			/* once more right after a full rebuild: look around */
			foreign_scan(&w->a, &w->fs, ex);
			return;
		}
		action_fail(&w->a, d->id, o->node, ex);
		return;
	}
	if (o->tag == TAG_TAIL && r->exit_code == 0 && config_is_ray(cf) &&
	    pg_check(w, r->out))
		return;
	/* vllm is gone and the log names nothing we know */
	if (o->tag == TAG_TAIL_GONE)
		action_fail(&w->a, DIAG_VLLM_EXITED, o->node, r->exit_code == 0 ?
		    utf8_last_line(r->out, line, sizeof(line)) : "no log");
}

static void
wait_vllm_answered(struct action *a, struct op *o, const struct answer *ans)
{
	struct wait_vllm *w = (struct wait_vllm *)a;
	const struct cmd_result *r = ans->cmd;

	if (o->tag >= TAG_VLLM && o->tag <= TAG_VLLM + VLLM_GENERATE) {
		chain_answered(w, (enum vllm_stage)(o->tag - TAG_VLLM),
		    ans->http);
		return;
	}
	switch (o->tag) {
	case TAG_FOREIGN:
		foreign_answer(a, &w->fs, o, r);
		break;
	case TAG_LOG_READY:
		/*
		 * vLLM's log said its API server started (or cannot say: no
		 * such line, no tail): ask /health now. Polling /health every
		 * POLL_MS through a model load of minutes would be tandem's
		 * own time, a sleep after each refusal.
		 */
		w->log_wait = 0;
		if (r->exit_code == 0 && !w->phases_asked)
			ask_phases(w);
		if (r->exit_code != 0)
			log_info("vLLM's log did not say it started (exit %d): "
			    "polling /health", r->exit_code);
		if (!w->asking)
			action_wake(a, 0);
		break;
	case TAG_TAIL:
	case TAG_TAIL_GONE:
		tail_answered(w, o, r);
		break;
	case TAG_PG_RAY:
		vllm_pg_ray_answered(a, &w->pg, r);
		break;
	case TAG_PHASES:
		if (r->exit_code == 0)
			vllm_phases_read(a, o->node, r->out);
		if (w->phases_asking > 0 && --w->phases_asking == 0 &&
		    w->ready)
			ready(w);
		break;
	case TAG_ALIVE:
		/* pkill -0 exits 1 when no process matched: vllm serve is gone */
		if (r->exit_code == 1 && !r->error)
			tail_log(w, o->node, 1);
		break;
	}
}

static void
wait_vllm_free(struct action *a)
{
	struct wait_vllm *w = (struct wait_vllm *)a;

	foreign_free(&w->fs);
	vllm_pg_free(&w->pg);
}

const struct action_ops act_wait_vllm = {
	.size = sizeof(struct wait_vllm),
	.enter = wait_vllm_enter,
	.answered = wait_vllm_answered,
	.tick = wait_vllm_tick,
	.free = wait_vllm_free,
};
