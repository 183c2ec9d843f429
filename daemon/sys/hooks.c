/*
 * hooks.on_state and hooks.on_change: run the operator's command (an
 * argument vector, no shell) with the change of state, or the verdict on
 * a change of config, in its environment (lib/api/hookq.h), as
 * keepalived runs its notify scripts. The loop never waits for it: it is
 * spawned with uv_spawn and reaped in its exit callback. At most one runs;
 * changes that come meanwhile queue in lib/api/hookq.c (16, then folded). A
 * command still running after hooks.timeout_s gets SIGTERM, and SIGKILL
 * HOOK_KILL_AFTER_S later, both to its whole process group (it runs in a
 * session of its own, so a shell script's children go with it). Its
 * standard output and error are tandemd's (the journal under systemd).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "hookq.h"
#include "hooks.h"
#include "log.h"

#define HOOK_KILL_AFTER_S	5

extern char **environ;

/* The daemon's one hook runner. */
static struct {
	uv_loop_t		*loop;
	struct hookq		 q;
	struct hookq		 qc;	/* hooks.on_change's, apart */
	struct strv		 cmd;	/* the command now running */
	struct strv		 on_state;	/* those of the latest config */
	struct strv		 on_change;
	double			 timeout_s;
	int			 running;
	int			 killed;	/* SIGTERM, then SIGKILL sent */
	uv_process_t		 proc;
	uv_timer_t		 timer;
	uint64_t		 started_ms;
	struct hook_event	 cur;
} h;

static void start_next(void);

/* What the log says of the event: which hook, and what it was told. */
static const char *
hook_name(void)
{
	return h.cur.change ? "hooks.on_change" : "hooks.on_state";
}

static void
what(char *buf, size_t len)
{
	if (h.cur.change)
		snprintf(buf, len, "change %s: %s -> %s", h.cur.result,
		    h.cur.from, h.cur.to);
	else
		snprintf(buf, len, "%s -> %s", h.cur.old_state,
		    h.cur.new_state);
}

static void
on_closed(uv_handle_t *handle)
{
	(void)handle;
	h.running = 0;
	start_next();
}

static void
hook_exited(uv_process_t *p, int64_t status, int sig)
{
	double took = (double)(mono_ms() - h.started_ms) / 1000.0;
	char w[160];

	uv_timer_stop(&h.timer);
	what(w, sizeof(w));
	if (status == 0 && sig == 0)
		log_info("%s: %s exited 0 in %.1f s (%s)", hook_name(),
		    h.cmd.n ? h.cmd.v[0] : "?", took, w);
	else
		log_warnx("%s: %s %s %d after %.1f s (%s)%s", hook_name(),
		    h.cmd.n ? h.cmd.v[0] : "?", sig ? "killed by signal" :
		    "exited", sig ? sig : (int)status, took, w,
		    h.killed ? ": past hooks.timeout_s" : "");
	uv_close((uv_handle_t *)p, on_closed);
}

/* hooks.timeout_s passed: the group gets SIGTERM, later SIGKILL. */
static void
on_timeout(uv_timer_t *t)
{
	pid_t pgid = h.proc.pid;

	if (h.killed++ == 0) {
		log_warnx("%s: %s still runs after %g s: SIGTERM",
		    hook_name(), h.cmd.v[0], h.timeout_s);
		kill(-pgid, SIGTERM);
		uv_timer_start(t, on_timeout, HOOK_KILL_AFTER_S * 1000, 0);
	} else {
		log_warnx("%s: %s still runs %d s after SIGTERM: SIGKILL",
		    hook_name(), h.cmd.v[0], HOOK_KILL_AFTER_S);
		kill(-pgid, SIGKILL);
	}
}

static void
start_next(void)
{
	uv_process_options_t o;
	uv_stdio_container_t io[3];
	struct strv env;
	char w[160];
	size_t i;
	int rc;

	while (!h.running && ((h.on_change.n > 0 && hookq_pop(&h.qc, &h.cur)) ||
	    (h.on_state.n > 0 && hookq_pop(&h.q, &h.cur)))) {
		const struct strv *cmd = h.cur.change ? &h.on_change :
		    &h.on_state;

		strv_free(&h.cmd);
		strv_init(&h.cmd);
		for (i = 0; i < cmd->n; i++)
			strv_add(&h.cmd, cmd->v[i]);
		hook_env(&h.cur, environ, &env);
		memset(&o, 0, sizeof(o));
		memset(io, 0, sizeof(io));
		io[0].flags = UV_IGNORE;
		io[1].flags = UV_INHERIT_FD;
		io[1].data.fd = 1;
		io[2].flags = UV_INHERIT_FD;
		io[2].data.fd = 2;
		o.file = h.cmd.v[0];
		o.args = h.cmd.v;
		o.env = env.v;
		o.stdio = io;
		o.stdio_count = 3;
		o.exit_cb = hook_exited;
		/* setsid(): a process group of its own, for the kill */
		o.flags = UV_PROCESS_DETACHED;
		h.killed = 0;
		h.started_ms = mono_ms();
		rc = uv_spawn(h.loop, &h.proc, &o);
		strv_free(&env);
		if (rc != 0) {
			what(w, sizeof(w));
			log_warnx("%s: cannot run %s: %s (%s)", hook_name(),
			    h.cmd.v[0], uv_strerror(rc), w);
			/* libuv: the handle is initialised even on failure */
			h.running = 1;
			uv_close((uv_handle_t *)&h.proc, on_closed);
			return;
		}
		h.running = 1;
		uv_timer_start(&h.timer, on_timeout,
		    (uint64_t)(h.timeout_s * 1000), 0);
	}
}

/* The commands and timeout of the latest config (a reload applies). */
static void
take_config(uv_loop_t *loop, const struct config *cf)
{
	size_t i;

	if (h.loop == NULL) {
		h.loop = loop;
		uv_timer_init(loop, &h.timer);
		/* a pending timeout never keeps the loop from ending */
		uv_unref((uv_handle_t *)&h.timer);
		strv_init(&h.cmd);
		strv_init(&h.on_state);
		strv_init(&h.on_change);
	}
	strv_free(&h.on_state);
	strv_init(&h.on_state);
	for (i = 0; i < cf->hooks.on_state.n; i++)
		strv_add(&h.on_state, cf->hooks.on_state.v[i]);
	strv_free(&h.on_change);
	strv_init(&h.on_change);
	for (i = 0; i < cf->hooks.on_change.n; i++)
		strv_add(&h.on_change, cf->hooks.on_change.v[i]);
	h.timeout_s = cf->hooks.timeout_s;
	/* a hook that went with a reload: what waited for it goes too */
	if (h.on_state.n == 0)
		h.q.n = 0;
	if (h.on_change.n == 0)
		h.qc.n = 0;
}

void
hooks_on_state(uv_loop_t *loop, const struct config *cf,
    const char *old_state, const char *new_state, const char *action,
    const char *diagnosis, const char *message, const char *reason,
    unsigned long long generation)
{
	struct hook_event e;

	if (cf->hooks.on_state.n == 0 && h.q.n == 0)
		return;
	take_config(loop, cf);
	if (h.on_state.n == 0)
		return;
	hook_event_set(&e, cf->name, old_state, new_state, action, diagnosis,
	    message, reason, generation, now_s());
	hookq_push(&h.q, &e);
	start_next();
}

void
hooks_on_change(uv_loop_t *loop, const struct config *cf, const char *result,
    const char *from, const char *to, const char *reason,
    unsigned long long generation)
{
	struct hook_event e;

	if (cf->hooks.on_change.n == 0 && h.qc.n == 0)
		return;
	take_config(loop, cf);
	if (h.on_change.n == 0)
		return;
	hook_change_set(&e, cf->name, result, from, to, reason, generation,
	    now_s());
	hookq_push(&h.qc, &e);
	start_next();
}
