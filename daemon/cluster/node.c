/*
 * The nodes: one ssh session each, connected and reconnected with a
 * backoff (node_tend_connections, on_ssh_state); the container engine's events
 * stream, which reports a container's death at once (start_events,
 * on_event_line); and the executor that sends the actions' ops over those
 * sessions and libcurl (node_exec_init).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "cluster_int.h"
#include "dockerout.h"

#define EVENTS_OVERLAP_S	2	/* replayed from before a stream's end */
#define EVENTS_REPLAY_MAX_S	60

static void	start_events(struct node_rt *n);

int
node_all_reachable(const struct cluster *cl)
{
	size_t i;

	for (i = 0; i < cl->nnodes; i++)
		if (!cl->nodes[i].reachable)
			return 0;
	return 1;
}

static void
on_gpu_list(const struct cmd_result *r, void *arg)
{
	struct node_rt *n = arg;
	struct accel_info *ai;

	/* no answer (the session went, or is being freed): as it was */
	if (r->error)
		return;
	ai = xmalloc(sizeof(*ai));
	/* -1 (unknown) unless the tool's list was read */
	accel_parse(n->cl->cf->container.accelerator, AQ_LIST, r->exit_code,
	    r->out, r->outlen, r->err, ai);
	n->gpus = ai->answer == AA_READ ? (int)ai->ndev : -1;
	free(ai);
}

/*
 * The device list once per connection (nvidia-smi -L, npu-smi info -l):
 * the node's GPU or NPU count for /status; none asks nothing.
 */
static void
count_gpus(struct node_rt *n)
{
	char *cmd = cmd_accel(n->cl->cf, AQ_LIST);

	if (cmd == NULL)
		return;
	/* through the executor as every command (unowned: the node is its
	 * own listener, and its session's end answers it) */
	(void)n->cl->exec.ssh(n->cl->exec.ctx, n->idx, cmd, 10, on_gpu_list,
	    n);
	free(cmd);
}

/* What a node's session or events stream saw, up to the funnel. */
static void
node_fact(struct node_rt *n, enum fact f, enum diag_code d, const char *text)
{
	struct report r = { .kind = REPORT_CHECK, .fact = f, .diag = d,
	    .node = n->idx, .text = text };

	n->cl->report(n->cl, &r);
}

static void
on_ssh_state(struct sshc *c, int up, const char *why, int fatal, void *arg)
{
	struct node_rt *n = arg;
	struct cluster *cl = n->cl;

	(void)c;
	n->tried = 1;
	if (up) {
		log_node(LOG_INFO, n->conf->name, "node %s: ssh up",
		    n->conf->name);
		n->reachable = 1;
		n->fatal = 0;
		n->connect_delay_s = 0.5;
		n->last_error[0] = '\0';
		n->events_retry_ms = 0;
		start_events(n);
		count_gpus(n);
		return;
	}
	utf8_fmt(n->last_error, sizeof(n->last_error), "%s", why);
	n->events_on = 0;
	n->container = CTR_UNKNOWN;
	if (cl->stopping)
		return;
	n->next_connect_ms = mono_ms() + (uint64_t)(n->connect_delay_s * 1000);
	n->connect_delay_s = fmin(n->connect_delay_s * 2, 2);
	if (fatal) {
		n->fatal = 1;
		n->reachable = 0;
		node_fact(n, FACT_SSH_REFUSED, recovery_ssh_refused_diag(why),
		    why);
		return;
	}
	if (n->reachable) {
		n->reachable = 0;
		log_node(LOG_WARNING, n->conf->name, "node %s: %s", n->conf->name,
		    why);
		node_fact(n, FACT_NODE_LOST, DIAG_NODE_UNREACHABLE, why);
	}
}

static void
on_event_line(const char *line, void *arg)
{
	struct node_rt *n = arg;
	struct cluster *cl = n->cl;
	char action[32], id[80], name[160], reason[400];

	if (docker_event_parse(line, action, sizeof(action), id, sizeof(id),
	    name, sizeof(name)) == -1)
		return;
	if (strcmp(name, n->conf->container_name) != 0)
		return;
	if (strcmp(action, "die") != 0 && strcmp(action, "destroy") != 0)
		return;
	/*
	 * A container can die before `docker run -d` has told us its ID: the
	 * stream and the run answer on separate channels. Keep the ID, so
	 * keep_cid sees that the container it is given is already dead.
	 */
	if (n->cid[0] == '\0') {
		snprintf(n->dead_id, sizeof(n->dead_id), "%s", id);
		return;
	}
	/* Only the death of the container we run counts; and not ours to do. */
	if (strcmp(id, n->cid) != 0)
		return;
	n->container = CTR_EXITED;
	/* a teardown removes it on purpose: no warning */
	if (cl->fsm.action == A_TEARDOWN || cl->stopping)
		return;
	log_node(LOG_WARNING, n->conf->name, "node %s: container %s: %s",
	    n->conf->name, name, action);
	utf8_fmt(reason, sizeof(reason), "container %s (%s)", name, action);
	node_fact(n, FACT_CONTAINER_DIED, DIAG_CONTAINER_DIED, reason);
}

static void
on_events_end(const struct cmd_result *r, void *arg)
{
	struct node_rt *n = arg;

	n->events_on = 0;
	if (n->cl->stopping)
		return;
	/*
	 * The stream ends when the engine stops: look at the containers at the
	 * next probe, and start the stream again shortly, replaying the gap.
	 */
	n->events_end_ms = mono_ms();
	n->events_retry_ms = mono_ms() + 1000;
	n->cl->probe.next_inspect_ms = 0;
	/*
	 * A stream that had been running ends on a live connection: rare, and
	 * a missed death would follow from it, so say it. One that fails at
	 * once (engine down, retried every second) stays a debug line.
	 */
	if (sshc_is_up(n->ssh) && r->elapsed_s >= 2)
		log_node(LOG_INFO, n->conf->name, "node %s: docker events "
		    "ended after %.0f s (exit %d%s%s); starting it again", n->conf->name, r->elapsed_s,
		    r->exit_code, r->error ? ", " : "", r->error ? r->error : "");
	else if (r->exit_code != 0 && n->reachable)
		log_debug("node %s: docker events ended: %s%s", n->conf->name,
		    r->error ? r->error : "", r->errlen ? r->err : "");
}

static void
start_events(struct node_rt *n)
{
	char *cmd;
	double since_s = 0;

	if (n->events_on || !n->reachable || mono_ms() < n->events_retry_ms)
		return;
	/*
	 * A death between the old stream's end and the new one's start is
	 * in neither; the inspect at the next probe may have run before it.
	 * Replay from a little before the end (a repeated event is harmless:
	 * the first one has already moved the cluster on).
	 */
	if (n->events_end_ms)
		since_s = fmin((double)(mono_ms() - n->events_end_ms) / 1000.0 +
		    EVENTS_OVERLAP_S, EVENTS_REPLAY_MAX_S);
	cmd = cmd_events(n->cl->cf, n->idx, since_s);
	if (sshc_stream(n->ssh, cmd, on_event_line, on_events_end, n) == 0)
		n->events_on = 1;
	free(cmd);
}

void
node_tend_connections(struct cluster *cl)
{
	uint64_t now = mono_ms();
	size_t i;

	for (i = 0; i < cl->nnodes; i++) {
		struct node_rt *n = &cl->nodes[i];

		if (n->reachable) {
			start_events(n);
			continue;
		}
		if (n->fatal || sshc_is_connecting(n->ssh) ||
		    now < n->next_connect_ms)
			continue;
		sshc_connect(n->ssh);
	}
}

/*
 * The recheck's fresh login (act_env.h): node_env_init hands it over; how
 * it goes the action reads in its node view (runtime_env.c).
 */
static void
node_login_again(void *ctx, size_t node)
{
	struct node_rt *n = &((struct cluster *)ctx)->nodes[node];

	if (n->reachable || sshc_is_connecting(n->ssh))
		return;
	n->fatal = 0;
	sshc_connect(n->ssh);
}

/*
 * A step found the node unreachable before its session did (a command's
 * channel failed, the preflight could not reach it): the session is made
 * to find out too, or waiting-for-nodes would take it back at once.
 */
void
node_missing(struct cluster *cl, size_t node, const char *why)
{
	struct node_rt *n = &cl->nodes[node];

	if (sshc_is_up(n->ssh))
		sshc_disconnect(n->ssh, why);
}

static int
exec_ssh(void *ctx, size_t node, const char *cmd, double timeout_s,
    cmd_done_fn *done, void *arg)
{
	struct cluster *cl = ctx;

	if (node >= cl->nnodes)
		return -1;
	return sshc_exec(cl->nodes[node].ssh, cmd, timeout_s, done, arg);
}

/*
 * vLLM's AuthenticationMiddleware wants the key on every path under /v1
 * (vllm/entrypoints/openai/api_server.py); /health and /metrics stay
 * open and ignore it. Every request to vllm.url carries it, so a vLLM
 * that guards more paths still answers the probes.
 */
static void
exec_http(void *ctx, const char *url, const char *body, double timeout_s,
    http_done_fn *done, void *arg)
{
	struct cluster *cl = ctx;
	size_t n = strlen(cl->cf->vllm.url);
	char *key = NULL;

	if (strncmp(url, cl->cf->vllm.url, n) == 0 && url[n] == '/')
		key = cluster_vllm_key(cl);
	http_request_key(url, body, key, timeout_s, done, arg);
	free(key);
}

static int
exec_up(void *ctx, size_t node)
{
	struct cluster *cl = ctx;

	return node < cl->nnodes && sshc_is_up(cl->nodes[node].ssh);
}

/* The actions' ops go over the nodes' sessions and libcurl. */
void
node_exec_init(struct cluster *cl)
{
	cl->exec.ssh = exec_ssh;
	cl->exec.http = exec_http;
	cl->exec.up = exec_up;
	cl->exec.ctx = cl;
}

/* The actions' logins go over the same sessions (after runtime_env_init). */
void
node_env_init(struct cluster *cl)
{
	cl->env.login_again = node_login_again;
}

struct sshc *
node_new_session(struct cluster *cl, struct node_rt *n)
{
	struct ssh_params p;

	ssh_params_of(cl->cf, n->idx, &p);
	return sshc_new(cl->loop, &p, on_ssh_state, n);
}

void
node_make_all(struct cluster *cl)
{
	size_t i;

	cl->nnodes = cl->cf->nnodes;
	cl->nodes = xcalloc(cl->nnodes, sizeof(*cl->nodes));
	for (i = 0; i < cl->nnodes; i++) {
		struct node_rt *n = &cl->nodes[i];

		n->idx = i;
		n->cl = cl;
		n->conf = &cl->cf->nodes[i];
		n->gpus = -1;
		n->connect_delay_s = 0.5;
		n->ssh = node_new_session(cl, n);
	}
}

void
node_sessions_renew(struct cluster *cl, int fresh)
{
	size_t i;

	/* what was asked on the old sessions: their answers are void */
	owners_cancel(&cl->exec, OWNERS_SESSIONS);
	if (fresh) {
		node_free_all(cl);
		node_make_all(cl);
	}
	for (i = 0; i < cl->nnodes; i++) {
		struct node_rt *n = &cl->nodes[i];

		if (!fresh) {
			sshc_free(n->ssh);
			n->ssh = node_new_session(cl, n);
			n->events_on = 0;
			n->events_retry_ms = 0;
			n->fatal = 0;
			n->next_connect_ms = 0;
		}
		sshc_connect(n->ssh);
	}
}

void
node_free_all(struct cluster *cl)
{
	size_t i;

	for (i = 0; i < cl->nnodes; i++)
		sshc_free(cl->nodes[i].ssh);
	free(cl->nodes);
	cl->nodes = NULL;
	cl->nnodes = 0;
}
