/*
 * The cluster runtime's centre: the one funnel through which every event
 * reaches the state machine (lib/policy/fsm.c) and every report of an action
 * arrives (cluster_report), the cron, and the life cycle: new, start, a
 * new config's rebuild or sessions (reload.c reads and sorts the config),
 * free. What each action does is its own file (act_*.c, action.h).
 * All of it runs on the loop thread; a 100 ms cron (redis' serverCron)
 * gives the current action its tick.
 *
 * The cron is a one-shot timer that sets itself again: every CRON_MS while
 * something waits on it, but while serving with every node up only for the
 * next probe (see cron_delay), so an idle daemon wakes about once a second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "hooks.h"

#define CRON_MS			100
#define QUIET_CRON_MS		1000


/*
 * cl->cf is new: what was built from the old one goes. The hash of the
 * plan labels every container (adoption compares it at each container
 * probe); the rebuild's plan is built again when a rebuild needs it.
 */
void
cluster_config_loaded(struct cluster *cl)
{
	if (cl->plan.built)
		plan_free(&cl->plan.plan);
	cl->plan.built = 0;
	cl->plan.hash = plan_hash(cl->cf);
	/* sized for the old nodes: the next preflight finds them again */
	free(cl->plan.rdma);
	cl->plan.rdma = NULL;
}

static const char *
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

/* The executor's hooks (op.c's; hook_arg is the cluster): an op sent may
 * be a step of the trace (tracing_step_sent), its answer stamps it, and a
 * start's answer may end the stop's wait. */
static void
op_answered(void *cl, struct op *o)
{
	tracing_step_answered(cl, o);
	stop_op_answered(cl, o);
}

void
cluster_notify(struct cluster *cl)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s, %s, generation %llu%s%s", sname(cl),
	    action_name(cl->fsm.action), (unsigned long long)cl->generation,
	    cl->diag ? ": " : "", cl->diag ? cl->diag->code : "");
	notify_status(buf);
	log_context(cl->cf->name, sname(cl), action_name(cl->fsm.action),
	    cl->generation);
}

static void
set_diag(struct cluster *cl, const struct diag *d, const char *node,
    const char *excerpt)
{
	if (d)
		remedy_count_failure(cl, d->id);
	cl->diag = d;
	/* whose it is: a fatal Xid's recheck waits for that node's reboot */
	utf8_copy(cl->diag_node, sizeof(cl->diag_node), d && node ? node : "");
	if (d == NULL) {
		cl->diag_msg[0] = '\0';
		return;
	}
	/* the node named once (lib/parse/diagnose.c) */
	diag_format(d, node, excerpt, cl->diag_msg, sizeof(cl->diag_msg));
	workload_explain(cl, d->id, cl->diag_msg, sizeof(cl->diag_msg));
	log_fields(LOG_WARNING, &(struct log_fields){ .node = node,
	    .diagnosis = d->code, .generation = -1, .msg = LOG_DIAGNOSIS },
	    "diagnosis %s: %s; remedy: %s", d->code, cl->diag_msg, d->remedy);
}

/* A transition's bookkeeping: generation, the hourly cap, the trace. */
static void
rebuild_bookkeeping(struct cluster *cl, enum caction from)
{
	if (fsm_starts_rebuild(from, cl->fsm.action)) {
		cl->generation++;
		cl->cnt.rebuilds_total++;
		cl->image_loaded = 0;	/* a new generation may load again */
		remedy_note_rebuild(cl);
		tracing_rebuild_begins(cl);
		state_save(cl);
	} else if (!rebuilding(cl->fsm.action)) {
		remedy_close_rebuild(cl, cl->fsm.action);
		tracing_rebuild_ends(cl, action_name(cl->fsm.action));
	}
}

static void
state_changed(struct cluster *cl)
{
	uint64_t now = mono_ms();

	cl->since = now_s();
	if (cl->fsm.state == ST_DEGRADED && cl->rec.degraded_at_ms == 0)
		cl->rec.degraded_at_ms = now;
	if (cl->fsm.state != ST_SERVING)
		return;
	cl->rec.serving_since_ms = now;
	if (cl->rec.degraded_at_ms > 0)
		hist_observe(&cl->cnt.h_recover, hist_recover_bounds,
		    (double)(now - cl->rec.degraded_at_ms) / 1000.0);
	cl->rec.degraded_at_ms = 0;
	cl->diag = NULL;
	cl->diag_msg[0] = '\0';
}

/* tandemd --once: the operator at the terminal sees each step, and the
 * loop stops once the cluster serves or cannot. */
static void
once_step(struct cluster *cl, const char *reason)
{
	printf("tandemd --once: %.0f s: %s/%s (%s)\n", (double)(mono_ms() -
	    cl->once.start_ms) / 1000.0, sname(cl), action_name(cl->fsm.action),
	    reason);
	fflush(stdout);
	if (cl->fsm.state == ST_SERVING) {
		cl->once.exit_code = 0;
		uv_stop(cl->loop);
	} else if (cl->fsm.halted || (cl->fsm.action == A_BACKOFF &&
	    cl->rec.attempt >= 2)) {
		cl->once.exit_code = 1;
		uv_stop(cl->loop);
	}
}

void
cluster_event(struct cluster *cl, enum event ev, const char *reason)
{
	enum cstate os = cl->fsm.state;
	enum caction oa = cl->fsm.action;
	const char *old_state = sname(cl);
	int was_halted = cl->fsm.halted;

	if (!fsm_step(&cl->fsm, ev)) {
		log_debug("event %s ignored in %s/%s (%s)", event_name(ev),
		    old_state, action_name(oa), reason);
		return;
	}
	rebuild_bookkeeping(cl, oa);
	/* after the count: the entry names the generation it begins */
	log_fields(LOG_INFO, &(struct log_fields){ .state = sname(cl),
	    .action = action_name(cl->fsm.action),
	    .generation = (long long)cl->generation, .msg = LOG_TRANSITION },
	    "%s/%s -> %s/%s (%s: %s)", old_state, action_name(oa), sname(cl),
	    action_name(cl->fsm.action), event_name(ev), reason);
	if (cl->fsm.state != os)
		state_changed(cl);
	/* the last config that served, kept for a rollback (change.c) */
	if (cl->fsm.state != os && (cl->fsm.state == ST_SERVING ||
	    os == ST_SERVING))
		change_served(cl);
	history_record(cl, old_state, sname(cl), action_name(cl->fsm.action),
	    reason);
	/* hooks.on_state: the operator's command hears each change of state */
	if (cl->fsm.state != os)
		hooks_on_state(cl->loop, cl->cf, old_state, sname(cl),
		    action_name(cl->fsm.action), cl->diag ? cl->diag->code :
		    NULL, cl->diag ? cl->diag_msg : NULL, reason,
		    (unsigned long long)cl->generation);
	cluster_notify(cl);
	if (cl->once.on)
		once_step(cl, reason);
	/* the retries stopped: keep the evidence before anything goes */
	if (cl->fsm.halted && !was_halted)
		evidence_collect(cl, reason);
	/* last: the new action may report, and so come back here; a stop
	 * while idle makes idle the recheck (act_recheck.c) */
	if (cl->fsm.action != oa || cl->fsm.halted != was_halted)
		action_begin(cl);
}

/* Failure of a rebuild step: diagnose, apply a remedy, retry or stop. */
static void
fail_step(struct cluster *cl, enum diag_code code, size_t node,
    const char *excerpt)
{
	const struct diag *d = diag_get(code);
	char reason[400];

	set_diag(cl, d, node < cl->nnodes ? cl->nodes[node].conf->name : NULL,
	    excerpt);
	/* before the retry: was it the hardware? (hwcheck.c) */
	if (d->retryable)
		hw_after_failure(cl, code);
	remedy_lower_gmu(cl, d);
	utf8_fmt(reason, sizeof(reason), "%s: %s", d->code, cl->diag_msg);
	cluster_event(cl, d->retryable ? EV_STEP_FAILED : EV_FATAL, reason);
}

/*
 * Failure of a built cluster's check, or a container death: the machine
 * says which event it is now (rebuild everything, or fail the step), or
 * that it means nothing.
 */
void
cluster_fact(struct cluster *cl, enum fact f, enum diag_code code,
    const char *node, const char *excerpt)
{
	char reason[400];
	enum event ev;

	/*
	 * A node's session lost or refused (node.c): the diagnosis stands
	 * whatever the machine makes of it, since /status says why the node
	 * is missing even while nothing moves.
	 */
	if (f == FACT_NODE_LOST || f == FACT_SSH_REFUSED) {
		/* the recheck's login, refused again: the stop says so already */
		if (f == FACT_SSH_REFUSED && cl->fsm.halted &&
		    cl->diag == diag_get(code))
			return;
		set_diag(cl, diag_get(code), node, excerpt);
		if (f == FACT_SSH_REFUSED)
			utf8_fmt(reason, sizeof(reason), "%s: %s",
			    cl->diag->code, excerpt);
		else
			utf8_fmt(reason, sizeof(reason), "node %s unreachable: "
			    "%s", node, excerpt);
		if (fsm_decide(&cl->fsm, f, &ev))
			cluster_event(cl, ev, reason);
		return;
	}
	if (!fsm_decide(&cl->fsm, f, &ev))
		return;
	set_diag(cl, diag_get(code), node, excerpt);
	hw_after_failure(cl, code);
	utf8_fmt(reason, sizeof(reason), "%s: %s", diag_code_name(code),
	    cl->diag_msg);
	cluster_event(cl, ev, reason);
}

/*
 * A step found a node unreachable (its session dropped under a command, or
 * the preflight could not reach it): the cluster waits for the node, as for
 * one that stopped answering a probe, instead of failing the step into a
 * backoff (PRODUCT.md section 3, rule 2).
 */
static void
node_lost(struct cluster *cl, size_t node, const char *why)
{
	char reason[400];

	set_diag(cl, diag_get(DIAG_NODE_UNREACHABLE),
	    cl->nodes[node].conf->name, why);
	snprintf(reason, sizeof(reason), "node %s unreachable: %s",
	    cl->nodes[node].conf->name, why);
	cluster_event(cl, EV_NODES_MISSING, reason);
	node_missing(cl, node, why);
}

void
cluster_report(struct cluster *cl, const struct report *r)
{
	const char *node = r->node < cl->nnodes ?
	    cl->nodes[r->node].conf->name : NULL;

	switch (r->kind) {
	case REPORT_EVENT:
		cluster_event(cl, r->ev, r->text);
		break;
	case REPORT_FAILED:
		fail_step(cl, r->diag, r->node, r->text);
		break;
	case REPORT_NODE_LOST:
		node_lost(cl, r->node, r->text);
		break;
	case REPORT_CHECK:
		cluster_fact(cl, r->fact, r->diag, node, r->text);
		break;
	case REPORT_NOTE:
		set_diag(cl, diag_get(r->diag), node, r->text);
		break;
	case REPORT_NODE_ERROR:
	case REPORT_SEEN:
	case REPORT_TIMED:
	case REPORT_PREFLIGHT:
	case REPORT_ADOPTED:
	case REPORT_STALLED:
		runtime_env_apply(cl, r);	/* runtime_env.c */
		break;
	}
}

/*
 * POST /resume (tandemctl resume). Paused: automatic action again. After
 * the retries stopped (halted) or at the hourly cap, the operator's "I
 * fixed it": the hour's rebuilds are given back, what the nodes' kernel
 * logs said until now is dealt with (hwcheck.c), and a rebuild starts at
 * once. Otherwise there is nothing to resume. Returns what it did.
 */
const char *
cluster_resume(struct cluster *cl)
{
	char reason[400];

	if (cl->fsm.action == A_PAUSED) {
		cluster_event(cl, EV_RESUME, "POST /resume");
		return "resumed";
	}
	if (!cl->fsm.halted && !cluster_capped(cl))
		return "automatic action already runs: nothing to resume";
	utf8_fmt(reason, sizeof(reason), "tandemctl resume after %s: the "
	    "hour's rebuilds given back, rebuilding now", cl->fsm.halted ?
	    (cl->diag ? cl->diag->code : "a stop") : "the hourly cap");
	recovery_forgive_all(cl->rec.rebuilds, cl->rec.nrebuilds);
	cl->rec.attempt = 0;
	hw_resume(cl);
	cluster_event(cl, EV_REBUILD, reason);
	return "resumed: rebuilding";
}

static void
cron_run(struct cluster *cl)
{
	uint64_t now = mono_ms();

	action_reap(cl);
	if (cl->stopping)
		return;
	if (cl->ssh_remake && !rebuilding(cl->fsm.action))
		cluster_remake_sessions(cl);
	node_tend_connections(cl);
	change_tick(cl);
	if (cl->act->ops->tick)
		cl->act->ops->tick(cl->act, now);
}

/*
 * How long the cron may sleep: until the action's next tick, at most
 * CRON_MS; while the action only waits for its next probe with every node
 * up and its events stream open, at most a second.
 */
static uint64_t
cron_delay(struct cluster *cl)
{
	uint64_t now = mono_ms(), max = CRON_MS;
	struct action *a = cl->act;
	size_t i;

	if (a->quiet && cl->dead == NULL) {
		max = QUIET_CRON_MS;
		for (i = 0; i < cl->nnodes; i++)
			if (!cl->nodes[i].reachable || !cl->nodes[i].events_on)
				max = CRON_MS;
	}
	/* a wake already due was the tick's to act on; it did, or waits */
	if (a->wake_ms <= now)
		return max;
	return a->wake_ms - now < max ? a->wake_ms - now : max;
}

/*
 * An action's next tick is due in ms: a tick due before the cron's next
 * run moves the run forward, so a wait for the GPUs, Ray or vLLM is not
 * rounded up to it. (Within the cron the timer is not active; the cron
 * sets it again from wake_ms when it ends.)
 */
static void
cron_wake(void *ctx, uint64_t ms)
{
	struct cluster *cl = ctx;

	if (uv_is_active((uv_handle_t *)&cl->cron) &&
	    ms < uv_timer_get_due_in(&cl->cron))
		uv_timer_start(&cl->cron, cluster_cron, ms, 0);
}

void
cluster_cron(uv_timer_t *t)
{
	struct cluster *cl = t->data;

	cron_run(cl);
	if (!cl->stopping)
		uv_timer_start(&cl->cron, cluster_cron, cron_delay(cl), 0);
}

struct cluster *
cluster_new(uv_loop_t *loop, struct config *cf, const char *state_dir,
    int once)
{
	struct cluster *cl = xcalloc(1, sizeof(*cl));
	struct config *good;

	cl->loop = loop;
	cl->cf = cf;
	cl->chg.own_path = xstrdup(cf->path ? cf->path : "");
	cluster_config_loaded(cl);
	cl->state_dir = xstrdup(state_dir);
	cl->once.on = once;
	/* --once succeeds only by serving: a stop or a deadline before is 1 */
	cl->once.exit_code = once ? 1 : 0;
	cl->once.start_ms = mono_ms();
	cl->rec.gmu_step = -1;
	cl->since = now_s();
	/* the config loaded at start is the first successful load */
	cl->cnt.reload_ok = 1;
	cl->cnt.reload_ok_at = cl->since;
	hw_init(cl);	/* its part of state.json, before it is read */
	state_load(cl);
	history_restore(cl);
	change_load(cl);
	/* the file's text was rolled back before the restart: not again */
	if ((good = change_start_config(cl)) != NULL) {
		config_free(cf);
		cl->cf = cf = good;
		cluster_config_loaded(cl);
		state_load_remedy(cl);
	}
	fsm_init(&cl->fsm, cf->topology == TOPO_DP);
	cl->token = keys_read_token(cf->api_token_file);
	if (cf->api_token_file && cl->token == NULL)
		log_warnx("api_token_file %s: unreadable or empty; POST "
		    "endpoints answer 403", cf->api_token_file);
	{
		char err[ERRLEN], *key;

		/* vLLM's 401 then names what is missing (vllm-unauthorized) */
		if (keys_vllm_read(cf, &key, err, sizeof(err)) == -1)
			log_warnx("%s; the probes go without vLLM's API key",
			    err);
		keys_vllm_set(cl, key);
	}
	if (cl->rec.gmu_step >= 0)
		log_info("remedy kept from the state dir: "
		    "--gpu-memory-utilization %g", cluster_gmu(cl));
	node_exec_init(cl);
	runtime_env_init(cl);
	node_env_init(cl);		/* the recheck's logins */
	cl->env.wake = cron_wake;	/* an action's tick moves the cron */
	cl->report = cluster_report;	/* node.c and hwcheck.c tell it here */
	cl->exec.sent = tracing_step_sent;
	cl->exec.answered = op_answered;
	cl->exec.hook_arg = cl;
	owner_init(&cl->bg, &cl->exec, workload_bg_answered);
	owners_register(&cl->bg, OWNERS_SESSIONS | OWNERS_FREE);
	change_init(cl, cluster_apply_change, cluster_rollback_to);
	evidence_init(cl, NULL);
	node_make_all(cl);
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
	action_begin(cl);
	uv_timer_start(&cl->cron, cluster_cron, CRON_MS, 0);
	cluster_notify(cl);
}

/*
 * ssh.* changed: every node gets a new session with the new parameters.
 * The containers stay; a node whose new session fails is missing like any
 * other. Nothing of a rebuild may run on the old sessions meanwhile, so
 * this waits for a quiet action (cron_run calls it again).
 */
void
cluster_remake_sessions(struct cluster *cl)
{
	if (rebuilding(cl->fsm.action)) {
		cl->ssh_remake = 1;
		log_info("ssh settings changed: the sessions are made again "
		    "once this rebuild ends");
		return;
	}
	cl->ssh_remake = 0;
	node_sessions_renew(cl, 0);
	log_info("ssh settings changed: %zu sessions made again (port %d, "
	    "connect_timeout_s %g, keepalive_s %g)", cl->nnodes,
	    cl->cf->ssh.port, cl->cf->ssh.connect_timeout_s,
	    cl->cf->ssh.keepalive_s);
	/* the action asks again on the new ones (a backoff asks nothing,
	 * and entering it again would count an attempt) */
	if (cl->fsm.action != A_BACKOFF)
		action_begin(cl);
}

/*
 * New nodes or commands: fresh sessions, then a rebuild. nc replaces
 * cl->cf (its reference is the cluster's now).
 */
void
cluster_rebuild_for(struct cluster *cl, struct config *nc)
{
	struct config *old = cl->cf;

	change_switching(cl, old, nc);
	cl->cf = nc;
	cluster_config_loaded(cl);
	fsm_set_dp(&cl->fsm, nc->topology == TOPO_DP);
	cl->preflight_passed = 0;	/* it checked the old cluster */
	cl->ssh_remake = 0;
	cluster_reset_remedy(cl);
	/* the old sessions go while their config still lives */
	node_sessions_renew(cl, 1);
	config_free(old);
	if (cl->fsm.action == A_TEARDOWN) {
		/*
		 * The machine is already tearing down and sees no
		 * change; the step that ran on the old sessions is
		 * gone with them: start it again.
		 */
		history_note(cl, "configuration changed: teardown again");
		action_begin(cl);
	} else {
		enum caction was = cl->fsm.action;

		cluster_event(cl, EV_REBUILD, "configuration changed");
		/* paused: no rebuild, but the probes start over on
		 * the new nodes */
		if (cl->fsm.action == was)
			action_begin(cl);
	}
}

void
cluster_apply_change(struct cluster *cl, struct config *nc, char *key)
{
	keys_token_take(cl, nc);
	keys_vllm_set(cl, key);
	cluster_rebuild_for(cl, nc);
	cluster_notify(cl);
}

int
cluster_rollback_to(struct cluster *cl, struct config *nc, char *err,
    size_t errlen)
{
	char *key;

	if (keys_vllm_read(nc, &key, err, errlen) == -1) {
		config_free(nc);
		return -1;
	}
	cluster_apply_change(cl, nc, key);
	return 0;
}

static void
cluster_closed(uv_handle_t *h)
{
	struct cluster *cl = h->data;

	if (cl->plan.built)
		plan_free(&cl->plan.plan);
	free(cl->plan.rdma);
	hw_free(cl);
	evidence_free(cl);
	trace_free(&cl->trace);
	trace_free(&cl->trace_last);
	history_free(cl);
	config_free(cl->cf);
	free(cl->state_dir);
	free(cl->token);
	free(cl->vllm_key_file);
	free(cl);
}

/*
 * The memory goes in the close callback: libuv still holds the timer, and
 * the sessions answer the ops still running as they go (op.c frees those).
 */
void
cluster_free(struct cluster *cl)
{
	if (cl->fsm.state == ST_SERVING)
		change_served(cl);
	/* at exit, outside uv_run: the writes in flight and waiting finish */
	while (state_writing(cl) || evidence_writing(cl))
		uv_run(cl->loop, UV_RUN_ONCE);
	if (cl->act) {
		action_end(cl->act);
		cl->act = NULL;
		cl->exec.acting = NULL;
	}
	owners_cancel(&cl->exec, OWNERS_FREE);
	change_free(cl);
	node_free_all(cl);
	action_reap(cl);
	uv_close((uv_handle_t *)&cl->cron, cluster_closed);
}
