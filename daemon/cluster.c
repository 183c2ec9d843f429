/*
 * The cluster runtime's centre: the one funnel through which every event
 * reaches the state machine (lib/fsm.c, cluster_event), the work each
 * action starts (enter_action), the cron, and the life cycle: new, start,
 * reload, free. All of it runs on the loop thread; a 100 ms cron (redis'
 * serverCron) gates the polled work by time.
 *
 * The cron is a one-shot timer that sets itself again: every CRON_MS while
 * something waits on it, but while serving with every node up only for the
 * next probe (see cron_delay), so an idle daemon wakes about once a second.
 *
 * Every asynchronous operation carries the epoch of the action that
 * started it. The epoch changes with the action, so a late answer to
 * something an earlier action asked is dropped instead of misread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "hooks.h"

#define CRON_MS			100

#include "recovery.h"
static void	enter_action(struct cluster *cl);
static void	remake_sessions(struct cluster *cl);

/*
 * The next poll of the current action is due in ms. A poll due before the
 * cron's next tick moves the tick forward, so a wait for the GPUs, Ray or
 * vLLM is not rounded up to it. (Within the cron the timer is not active;
 * the cron sets it again from next_poll_ms when it ends.)
 */
void
poll_after(struct cluster *cl, uint64_t ms)
{
	cl->next_poll_ms = mono_ms() + ms;
	if (uv_is_active((uv_handle_t *)&cl->cron) &&
	    ms < uv_timer_get_due_in(&cl->cron))
		uv_timer_start(&cl->cron, cron, ms, 0);
}

struct op *
op_new(struct cluster *cl, size_t node)
{
	struct op *o = xcalloc(1, sizeof(*o));

	o->cl = cl;
	o->node = node;
	o->epoch = cl->epoch;
	o->start_ms = mono_ms();
	o->step = -1;
	return o;
}

/* Every action begins at its first sub-step. */
void
steps_reset(struct cluster *cl)
{
	cl->teardown_step = TEARDOWN_REMOVING;
	cl->start_step = START_HEAD;
	cl->nodes_step = NODES_WAIT;
	cl->probe_mode = PROBE_WATCH;
}

/*
 * cl->cf is new: what was built from the old one goes. The hash of the
 * plan labels every container (adoption compares it at each container
 * probe); the rebuild's plan is built again when a rebuild needs it.
 */
void
config_loaded(struct cluster *cl)
{
	if (cl->plan_built)
		plan_free(&cl->plan);
	cl->plan_built = 0;
	cl->plan_hash = plan_hash(cl->cf);
}

/*
 * Whether the answer still belongs to the current action; a stale one is
 * freed here, so callbacks simply return.
 */
int
claim(struct op *o)
{
	step_answered(o->cl, o);
	if (o->epoch == o->cl->epoch && !o->cl->stopping)
		return 1;
	free(o);
	return 0;
}

int
is_ray(const struct cluster *cl)
{
	return cl->cf->topology == TOPO_RAY;
}

struct node_rt *
head(struct cluster *cl)
{
	return &cl->nodes[cl->cf->head];
}

const char *
sname(const struct cluster *cl)
{
	return state_name(cl->fsm.state, cl->fsm.dp);
}

/* The actions of a rebuild, from the teardown to a serving vLLM. */
static int
rebuilding(enum caction a)
{
	return a == A_TEARDOWN || a == A_LOADING_IMAGE || a == A_STARTING_RAY ||
	    a == A_WAITING_RAY || a == A_STARTING_VLLM || a == A_WAITING_VLLM;
}

/*
 * An event's reason, valid UTF-8, cut at EVENT_REASON_MAX and kept at its
 * own length: 1000 slots of the cap would be 300 kB, touched as the log
 * fills, for reasons mostly a fifth of that.
 */
char *
event_reason(const char *reason)
{
	char buf[EVENT_REASON_MAX];

	utf8_copy(buf, sizeof(buf), reason);
	return xstrdup(buf);
}

void
event_clear(struct event_rec *e)
{
	free(e->reason);
	memset(e, 0, sizeof(*e));
}

void
record_event(struct cluster *cl, const char *from, const char *to,
    const char *action, const char *reason)
{
	struct event_rec *e = &cl->ev[cl->ev_seq % EVENTS_MAX];

	event_clear(e);
	e->seq = ++cl->ev_seq;
	e->time = now_s();
	utf8_copy(e->from, sizeof(e->from), from);
	utf8_copy(e->to, sizeof(e->to), to);
	utf8_copy(e->action, sizeof(e->action), action);
	e->reason = event_reason(reason);
	if (cl->ev_n < EVENTS_MAX)
		cl->ev_n++;
	state_save_events(cl);
}

static void
notify_summary(struct cluster *cl)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s, %s, generation %llu%s%s", sname(cl),
	    action_name(cl->fsm.action), (unsigned long long)cl->generation,
	    cl->diag ? ": " : "", cl->diag ? cl->diag->code : "");
	notify_status(buf);
	log_context(cl->cf->name, sname(cl), action_name(cl->fsm.action),
	    cl->generation);
}

void
set_diag(struct cluster *cl, const struct diag *d, const char *node,
    const char *excerpt)
{
	if (d)
		count_failure(cl, d->id);
	cl->diag = d;
	if (d == NULL) {
		cl->diag_msg[0] = '\0';
		return;
	}
	utf8_fmt(cl->diag_msg, sizeof(cl->diag_msg), "%s%s%s%s%s%s",
	    d->message, node ? " on " : "", node ? node : "",
	    excerpt && *excerpt ? ": " : "", excerpt ? excerpt : "",
	    d->retryable ? "" : " (retries stopped)");
	workloads_explain(cl, d->id, cl->diag_msg, sizeof(cl->diag_msg));
	log_fields(LOG_WARNING, &(struct log_fields){ .node = node,
	    .diagnosis = d->code, .generation = -1, .msg = LOG_DIAGNOSIS },
	    "diagnosis %s: %s; remedy: %s", d->code, cl->diag_msg, d->remedy);
}

void
cluster_event(struct cluster *cl, enum event ev, const char *reason)
{
	enum cstate os = cl->fsm.state;
	enum caction oa = cl->fsm.action;
	const char *old_state = sname(cl);
	double now = now_s();

	if (!fsm_step(&cl->fsm, ev)) {
		log_debug("event %s ignored in %s/%s (%s)", event_name(ev),
		    old_state, action_name(oa), reason);
		return;
	}
	if (fsm_starts_rebuild(oa, cl->fsm.action)) {
		cl->generation++;
		cl->rebuilds_total++;
		cl->image_loaded = 0;	/* a new generation may load again */
		note_rebuild(cl, now);
		trace_open(cl);
		state_save(cl);
	} else if (!rebuilding(cl->fsm.action)) {
		close_rebuild(cl, cl->fsm.action);
		trace_close(cl, action_name(cl->fsm.action));
	}
	/* after the count: the entry names the generation it begins */
	log_fields(LOG_INFO, &(struct log_fields){ .state = sname(cl),
	    .action = action_name(cl->fsm.action),
	    .generation = (long long)cl->generation, .msg = LOG_TRANSITION },
	    "%s/%s -> %s/%s (%s: %s)", old_state, action_name(oa), sname(cl),
	    action_name(cl->fsm.action), event_name(ev), reason);
	if (cl->fsm.state != os) {
		cl->since = now;
		if (cl->fsm.state == ST_DEGRADED && cl->degraded_at == 0)
			cl->degraded_at = now;
		if (cl->fsm.state == ST_SERVING) {
			cl->serving_since = now;
			if (cl->degraded_at > 0)
				hist_observe(&cl->h_recover,
				    hist_recover_bounds, now - cl->degraded_at);
			cl->degraded_at = 0;
			cl->diag = NULL;
			cl->diag_msg[0] = '\0';
		}
	}
	record_event(cl, old_state, sname(cl), action_name(cl->fsm.action),
	    reason);
	/* hooks.on_state: the operator's command hears each change of state */
	if (cl->fsm.state != os)
		hooks_on_state(cl->loop, cl->cf, old_state, sname(cl),
		    action_name(cl->fsm.action), cl->diag ? cl->diag->code :
		    NULL, cl->diag ? cl->diag_msg : NULL, reason,
		    (unsigned long long)cl->generation);
	if (cl->once) {
		/* tandemd --once: the operator at the terminal sees each step */
		printf("tandemd --once: %.0f s: %s/%s (%s)\n", now -
		    cl->once_start, sname(cl), action_name(cl->fsm.action),
		    reason);
		fflush(stdout);
	}
	if (cl->fsm.action != oa) {
		cl->epoch++;
		cl->action_ms = mono_ms();
		cl->pending = 0;
		steps_reset(cl);
		poll_after(cl, 0);
		cl->next_log_ms = cl->action_ms + 1000;
		cl->probe_running = 0;
		cl->probe_fails = 0;
	}
	notify_summary(cl);
	if (cl->once) {
		if (cl->fsm.state == ST_SERVING) {
			cl->exit_code = 0;
			uv_stop(cl->loop);
		} else if (cl->fsm.halted || (cl->fsm.action == A_BACKOFF &&
		    cl->attempt >= 2)) {
			cl->exit_code = 1;
			uv_stop(cl->loop);
		}
	}
	if (cl->fsm.action != oa)
		enter_action(cl);
}

/* Failure of a rebuild step: diagnose, apply a remedy, retry or stop. */
void
fail_step(struct cluster *cl, enum diag_code code, size_t node,
    const char *excerpt)
{
	const struct diag *d = diag_get(code);
	char reason[400];

	set_diag(cl, d, node < cl->nnodes ? cl->nodes[node].conf->name : NULL,
	    excerpt);
	lower_gmu(cl, d);
	utf8_fmt(reason, sizeof(reason), "%s: %s", d->code, cl->diag_msg);
	cluster_event(cl, d->retryable ? EV_STEP_FAILED : EV_FATAL, reason);
}

/*
 * Failure of a built cluster's check, or a container death: the machine
 * says which event it is now (rebuild everything, or fail the step), or
 * that it means nothing.
 */
void
fail_check(struct cluster *cl, enum fact f, enum diag_code code,
    const char *node, const char *excerpt)
{
	char reason[400];
	enum event ev;

	if (!fsm_decide(&cl->fsm, f, &ev))
		return;
	set_diag(cl, diag_get(code), node, excerpt);
	utf8_fmt(reason, sizeof(reason), "%s: %s", diag_code_name(code),
	    cl->diag_msg);
	cluster_event(cl, ev, reason);
}

static void
enter_action(struct cluster *cl)
{
	switch (cl->fsm.action) {
	case A_TEARDOWN:
		start_teardown(cl);
		break;
	case A_LOADING_IMAGE:
		start_image_load(cl);
		break;
	case A_STARTING_RAY:
		start_head(cl);
		break;
	case A_WAITING_RAY:
		cl->deadline_ms = mono_ms() +
		    (uint64_t)(cl->cf->probe.ray_wait_timeout_s * 1000);
		break;
	case A_STARTING_VLLM:
		start_vllm(cl);
		break;
	case A_WAITING_VLLM:
		cl->deadline_ms = mono_ms() +
		    (uint64_t)(cl->cf->vllm.ready_timeout_s * 1000);
		wait_vllm_log(cl);
		break;
	case A_BACKOFF:
		schedule_backoff(cl);
		break;
	case A_IDLE:
	case A_WAITING_FOR_NODES:
	case A_PAUSED:
		cl->next_probe_ms = mono_ms();
		break;
	}
}

static void
cron_run(struct cluster *cl)
{
	uint64_t now = mono_ms();
	size_t i;

	if (cl->preflight_done) {
		preflight_free(cl->preflight_done);
		cl->preflight_done = NULL;
	}
	if (cl->stopping)
		return;
	if (cl->ssh_remake && !rebuilding(cl->fsm.action))
		remake_sessions(cl);
	tend_connections(cl);
	switch (cl->fsm.action) {
	case A_IDLE:
	case A_PAUSED:
		if (!cl->adopted) {
			/* Adopt what runs: wait for one answer from each node. */
			for (i = 0; i < cl->nnodes; i++)
				if (!cl->nodes[i].reachable &&
				    !cl->nodes[i].tried)
					return;
			if (cl->probe_running)
				return;
			if (!all_reachable(cl)) {
				cl->adopted = 1;
				cluster_event(cl, EV_NODES_MISSING,
				    "not every node answers at start");
				return;
			}
			probe_cycle(cl, PROBE_ADOPT);
			return;
		}
		if (cl->fsm.halted || cl->fsm.state == ST_ABSENT)
			return;
		if (recovery_attempts_reset(cl->attempt, cl->fsm.state ==
		    ST_SERVING, now_s() - cl->serving_since))
			cl->attempt = 0;
		if (!cl->probe_running && now >= cl->next_probe_ms &&
		    all_reachable(cl))
			probe_cycle(cl, PROBE_WATCH);
		break;
	case A_WAITING_FOR_NODES:
		if (all_reachable(cl) && cl->nodes_step == NODES_WAIT &&
		    now >= cl->next_poll_ms)
			check_engines(cl);
		break;
	case A_BACKOFF:
		if (now_s() >= cl->next_attempt)
			cluster_event(cl, EV_BACKOFF_DONE, "retrying");
		break;
	case A_TEARDOWN:
		if (cl->teardown_step == TEARDOWN_GPU_CHECK &&
		    cl->pending == 0 && now >= cl->next_poll_ms)
			gpu_check(cl);
		break;
	case A_STARTING_RAY:
		if (cl->start_step == START_GCS_WAIT && cl->pending == 0 &&
		    now >= cl->next_poll_ms)
			poll_ray(cl);
		break;
	case A_WAITING_RAY:
		if (cl->pending == 0 && now >= cl->next_poll_ms)
			poll_ray(cl);
		break;
	case A_STARTING_VLLM:
	case A_LOADING_IMAGE:	/* each command has the action's deadline */
		break;
	case A_WAITING_VLLM:
		if (now > cl->deadline_ms) {
			fail_step(cl, DIAG_STARTUP_TIMEOUT, cl->cf->head, NULL);
			return;
		}
		if (now >= cl->next_poll_ms)
			poll_vllm(cl);
		if (now >= cl->next_log_ms) {
			cl->next_log_ms = now + 1000;
			watch_vllm_start(cl);
		}
		break;
	}
}

/*
 * How long the cron may sleep. Serving or paused with every node up and its
 * events stream open, nothing waits on it but the next probe: it sleeps
 * until then, at most a second. Anything else ticks every CRON_MS.
 */
static uint64_t
cron_delay(struct cluster *cl)
{
	uint64_t now = mono_ms(), d = CRON_MS;
	size_t i;

	if (cl->next_poll_ms > now && cl->next_poll_ms - now < d)
		d = cl->next_poll_ms - now;
	if ((cl->fsm.action != A_IDLE && cl->fsm.action != A_PAUSED) ||
	    !cl->adopted || cl->probe_running || cl->preflight_done)
		return d;
	for (i = 0; i < cl->nnodes; i++)
		if (!cl->nodes[i].reachable || !cl->nodes[i].events_on)
			return d;
	/* due and still not running (halted, or state absent): just tick */
	if (cl->next_probe_ms <= now)
		return CRON_MS;
	d = cl->next_probe_ms - now;
	return d < 1000 ? d : 1000;
}

void
cron(uv_timer_t *t)
{
	struct cluster *cl = t->data;

	cron_run(cl);
	if (!cl->stopping)
		uv_timer_start(&cl->cron, cron, cron_delay(cl), 0);
}

static char *
read_token(const char *path)
{
	char err[ERRLEN], *tok;

	if (httpd_token_read(path, &tok, err, sizeof(err)) == -1)
		log_warnx("%s; POST endpoints answer 403", err);
	return tok;
}

struct cluster *
cluster_new(uv_loop_t *loop, struct config *cf, const char *state_dir,
    int once)
{
	struct cluster *cl = xcalloc(1, sizeof(*cl));

	cl->loop = loop;
	cl->cf = cf;
	config_loaded(cl);
	cl->state_dir = xstrdup(state_dir);
	cl->once = once;
	/* --once succeeds only by serving: a stop or a deadline before is 1 */
	cl->exit_code = once ? 1 : 0;
	cl->once_start = now_s();
	cl->gmu_step = -1;
	cl->preflight_step = -1;
	cl->since = now_s();
	fsm_init(&cl->fsm, cf->topology == TOPO_DP);
	cl->token = read_token(cf->api_token_file);
	if (cf->api_token_file && cl->token == NULL)
		log_warnx("api_token_file %s: unreadable or empty; POST "
		    "endpoints answer 403", cf->api_token_file);
	state_load(cl);
	if (cl->gmu_step >= 0)
		log_info("remedy kept from the state dir: "
		    "--gpu-memory-utilization %g", cluster_gmu(cl));
	make_nodes(cl);
	uv_timer_init(loop, &cl->cron);
	cl->cron.data = cl;
	/* the start-up's own log lines name the cluster in the journal too */
	log_context(cf->name, sname(cl), action_name(cl->fsm.action),
	    cl->generation);
	return cl;
}

void
cluster_start(struct cluster *cl)
{
	size_t i;

	for (i = 0; i < cl->nnodes; i++)
		sshc_connect(cl->nodes[i].ssh);
	uv_timer_start(&cl->cron, cron, CRON_MS, 0);
	notify_summary(cl);
}

/*
 * Whether the preflight still reads cf. The one that finished is freed
 * first: a reload runs from its own loop callback, never inside the
 * preflight's, so its sessions are done reporting.
 */
static void
release_config(struct cluster *cl, struct config *cf)
{
	if (cl->preflight_done) {
		preflight_free(cl->preflight_done);
		cl->preflight_done = NULL;
	}
	if (cl->preflight && cl->preflight->cf == cf) {
		/* the checks go on with the config they began with */
		cl->preflight->cf_owned = cf;
		return;
	}
	config_free(cf);
}

/* Stops a running preflight whose answer no longer applies. */
static void
drop_preflight(struct cluster *cl)
{
	if (cl->preflight) {
		preflight_free(cl->preflight);
		cl->preflight = NULL;
	}
}

/*
 * ssh.* changed: every node gets a new session with the new parameters.
 * The containers stay; a node whose new session fails is missing like any
 * other. Nothing of a rebuild may run on the old sessions meanwhile, so
 * this waits for a quiet action (cron_run calls it again).
 */
static void
remake_sessions(struct cluster *cl)
{
	size_t i;

	if (rebuilding(cl->fsm.action)) {
		cl->ssh_remake = 1;
		log_info("ssh settings changed: the sessions are made again "
		    "once this rebuild ends");
		return;
	}
	cl->ssh_remake = 0;
	/* answers of the old sessions are void; probes start over */
	cl->epoch++;
	cl->pending = 0;
	steps_reset(cl);
	cl->probe_running = 0;
	cl->next_poll_ms = 0;
	drop_preflight(cl);
	for (i = 0; i < cl->nnodes; i++) {
		struct node_rt *n = &cl->nodes[i];

		sshc_free(n->ssh);
		n->ssh = new_session(cl, n);
		n->events_on = 0;
		n->events_retry_ms = 0;
		n->fatal = 0;
		n->next_connect_ms = 0;
		sshc_connect(n->ssh);
	}
	log_info("ssh settings changed: %zu sessions made again (port %d, "
	    "connect_timeout_s %g, keepalive_s %g)", cl->nnodes,
	    cl->cf->ssh.port, cl->cf->ssh.connect_timeout_s,
	    cl->cf->ssh.keepalive_s);
}

/*
 * SIGHUP. One owner per config: the cluster's, or the running preflight's
 * (release_config); a config that only the preflight still reads goes with
 * it. Returns 1 when the cluster is rebuilt for the new config.
 */
int
cluster_reload(struct cluster *cl, const char *file, char *err, size_t errlen)
{
	struct config *nc = conffile_load(file, err, errlen), *old = cl->cf;
	char *tok;
	int ssh_changed;
	size_t i;

	if (nc == NULL)
		return -1;
	/* A token file others can read fails the reload, as it fails a start. */
	if (httpd_token_read(nc->api_token_file, &tok, err, errlen) == -1) {
		config_free(nc);
		return -1;
	}
	free(tok);
	for (i = 0; i < nc->warnings.n; i++)
		log_warnx("%s", nc->warnings.v[i]);
	free(cl->token);
	cl->token = read_token(nc->api_token_file);
	if (config_cluster_changed(old, nc)) {
		/* New nodes or commands: fresh sessions, then a rebuild. */
		cl->epoch++;
		drop_preflight(cl);
		free_nodes(cl);
		cl->cf = nc;
		config_loaded(cl);
		release_config(cl, old);
		fsm_set_dp(&cl->fsm, nc->topology == TOPO_DP);
		cl->preflight_passed = 0;	/* it checked the old cluster */
		cl->ssh_remake = 0;
		cluster_reset_remedy(cl);
		make_nodes(cl);
		for (i = 0; i < cl->nnodes; i++)
			sshc_connect(cl->nodes[i].ssh);
		if (cl->fsm.action == A_TEARDOWN) {
			/*
			 * The machine is already tearing down and sees no
			 * change; the step that ran on the old sessions is
			 * gone with them: start it again.
			 */
			cl->pending = 0;
			steps_reset(cl);
			record_event(cl, sname(cl), sname(cl),
			    action_name(cl->fsm.action),
			    "configuration changed: teardown again");
			enter_action(cl);
		} else
			cluster_event(cl, EV_REBUILD, "configuration changed");
		return 1;
	}
	ssh_changed = config_ssh_changed(old, nc);
	for (i = 0; i < cl->nnodes; i++)
		cl->nodes[i].conf = &nc->nodes[i];
	cl->cf = nc;
	config_loaded(cl);
	release_config(cl, old);
	if (ssh_changed)
		remake_sessions(cl);
	/* A reload is the operator's word that a stopped cluster may retry. */
	for (i = 0; i < cl->nnodes; i++) {
		if (cl->nodes[i].fatal) {
			cl->nodes[i].fatal = 0;
			cl->nodes[i].next_connect_ms = 0;
		}
	}
	if (cl->fsm.halted)
		cluster_event(cl, EV_REBUILD, "reloaded after a stop");
	notify_summary(cl);
	return 0;
}

static void
cluster_closed(uv_handle_t *h)
{
	struct cluster *cl = h->data;
	size_t i;

	if (cl->plan_built)
		plan_free(&cl->plan);
	trace_free(&cl->trace);
	trace_free(&cl->trace_last);
	for (i = 0; i < EVENTS_MAX; i++)
		event_clear(&cl->ev[i]);
	config_free(cl->cf);
	free(cl->state_dir);
	free(cl->token);
	free(cl);
}

/* The memory goes in the close callback: libuv still holds the timer. */
void
cluster_free(struct cluster *cl)
{
	state_flush(cl);
	if (cl->preflight)
		preflight_free(cl->preflight);
	if (cl->preflight_done)
		preflight_free(cl->preflight_done);
	free_nodes(cl);
	uv_close((uv_handle_t *)&cl->cron, cluster_closed);
}
