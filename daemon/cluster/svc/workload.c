/*
 * Unrelated workloads on the nodes (workload.h): what the preflight and the
 * container probe's scan saw, kept per node; the warnings /status, /metrics
 * and tandemctl show (these, an sshd that allows tandem fewer channels
 * than it uses, a GPU's ECC counts and Ray's ports open without a token);
 * the note a lack-of-memory diagnosis gets; and the opt-in
 * stop of the ones container.stop_foreign names, before a start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "cluster_int.h"
#include "raysec.h"

/* A workload of this node that was not in its last scan. */
static int
is_new(const struct workloads *old, const struct workload *w)
{
	size_t i;

	for (i = 0; i < old->n; i++)
		if (old->w[i].kind == w->kind && old->w[i].pid == w->pid &&
		    strcmp(old->w[i].name, w->name) == 0)
			return 0;
	return 1;
}

void
workload_seen(struct cluster *cl, size_t node, const struct workloads *wl)
{
	struct node_rt *n = &cl->nodes[node];
	char msg[300];
	size_t i;

	for (i = 0; i < wl->n; i++)
		if (!n->wl_known || is_new(&n->wl, &wl->w[i])) {
			workload_message(&wl->w[i], n->conf->name, msg,
			    sizeof(msg));
			log_warnx("warning: foreign-workload: %s", msg);
		}
	n->wl = *wl;
	n->wl_known = 1;
}

/* Channels open when the node's sshd refused one lately; 0: none. */
static size_t
refused_at(const struct node_rt *n)
{
	return n->ssh ? sshc_channels_refused(n->ssh) : 0;
}

static void
warning(json_t *a, const char *code, const char *node, const char *msg)
{
	json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "code", code,
	    "node", node, "message", msg));
}

json_t *
cluster_warnings_json(const struct cluster *cl)
{
	json_t *a = json_array();
	char msg[300];
	size_t i, j, held;

	for (i = 0; i < cl->nnodes; i++) {
		const struct node_rt *n = &cl->nodes[i];

		for (j = 0; j < n->wl.n; j++) {
			workload_message(&n->wl.w[j], n->conf->name, msg,
			    sizeof(msg));
			warning(a, "foreign-workload", n->conf->name, msg);
		}
		if (n->wl.more) {
			snprintf(msg, sizeof(msg), "%zu more unrelated "
			    "workloads on %s", n->wl.more, n->conf->name);
			warning(a, "foreign-workload", n->conf->name, msg);
		}
		if ((held = refused_at(n)) > 0) {
			snprintf(msg, sizeof(msg), "sshd on %s refused a "
			    "channel with %zu open in the last 10 minutes "
			    "(MaxSessions): tandem's checks there wait their "
			    "turn, and time out if none comes; set MaxSessions "
			    "10 or more in its sshd_config", n->conf->name,
			    held);
			warning(a, "ssh-max-sessions", n->conf->name, msg);
		}
		/* hwcheck.c: uncorrectable ECC counts, an NPU's health */
		if (n->hw_warn.cls == HW_WARN)
			warning(a, n->hw_warn.warning, n->conf->name,
			    n->hw_warn.msg);
	}
	/* act_watch.c: the head's Ray ports open without a token */
	if (cl->seen.rayx_msg[0])
		warning(a, RAY_WARNING_CODE, cl->seen.rayx_node,
		    cl->seen.rayx_msg);
	return a;
}

/*
 * vLLM found too little free memory: name the unrelated workloads that
 * hold some before the ladder steps --gpu-memory-utilization down.
 */
void
workload_explain(const struct cluster *cl, enum diag_code code, char *msg,
    size_t len)
{
	struct sbuf b;
	char one[300];
	size_t i, j;

	if (code != DIAG_GPU_MEMORY_LOW && code != DIAG_CUDA_OOM &&
	    code != DIAG_KV_CACHE_TOO_SMALL)
		return;
	sbuf_init(&b);
	for (i = 0; i < cl->nnodes; i++)
		for (j = 0; j < cl->nodes[i].wl.n; j++) {
			const struct workload *w = &cl->nodes[i].wl.w[j];

			if (w->mib <= 0 && w->kind == WL_CONTAINER)
				continue;
			workload_message(w, cl->nodes[i].conf->name, one,
			    sizeof(one));
			sbuf_addf(&b, "%s%s", b.len ? "; " : "", one);
		}
	if (b.len) {
		size_t l = strlen(msg);

		utf8_fmt(msg + l, len - l, "; unrelated workloads hold %s "
		    "memory: %s (stop them, or dedicate the node to tandem)",
		    accel_word(cl->cf->container.accelerator, 0), b.s);
	}
	sbuf_free(&b);
}

#define SCAN_TIMEOUT_S	30

/* The background owner's answers: the scan's, and stop_foreign's. */
void
workload_bg_answered(struct owner *w, struct op *o, const struct answer *a)
{
	struct cluster *cl = container_of(w, struct cluster, bg);
	const struct cmd_result *r = a->cmd;
	char line[200];
	struct workloads wl;

	if (o->tag == BG_SCAN) {
		/* the unrelated-workload scan: warnings, never a failure */
		if (!r->error && !cl->stopping) {
			workloads_parse(r->out, r->outlen, cl->cf->name, &wl);
			workload_seen(cl, o->node, &wl);
		}
		return;
	}
	/* container.stop_foreign's docker stop */
	if (r->error || r->exit_code != 0)
		log_warnx("node %s: stopping unrelated containers failed: %s",
		    cl->nodes[o->node].conf->name, utf8_first_line(r->error ?
		    r->error : r->err, line, sizeof(line)));
}

/*
 * The scan of every node's unrelated workloads, beside the container
 * probe's inspect rather than in its command: the scan runs the engine a
 * few times, and must not make the probe's own answer late under
 * probe.timeout_s. Its answers are warnings whatever the action, never a
 * probe failure (cluster.c's background owner reads them; an unanswered
 * scan keeps the last warnings).
 */
void
workload_scan(struct cluster *cl)
{
	char *cmd = cmd_workloads(cl->cf);
	size_t i;

	for (i = 0; i < cl->nnodes; i++)
		(void)op_ssh(&cl->bg, i, BG_SCAN, 0, cmd, SCAN_TIMEOUT_S,
		    TS_COUNT);
	free(cmd);
}

/*
 * container.stop_foreign: before a start, stop the unrelated running
 * containers whose whole name matches one of its patterns. Only those:
 * nothing else is touched, and nothing at all without the key. The teardown
 * that follows waits for their GPU memory with ours.
 */
void
workload_stop_foreign(struct cluster *cl)
{
	const struct strv *pat = &cl->cf->container.stop_foreign;
	size_t i, j;

	for (i = 0; pat->n && i < cl->nnodes; i++) {
		struct node_rt *n = &cl->nodes[i];
		struct strv names;
		char *cmd, reason[300];
		size_t k = 0;

		strv_init(&names);
		/* the stopped leave the warnings; their memory is not ours to
		 * ignore any longer: the teardown waits for it */
		for (j = 0; j < n->wl.n; j++)
			if (n->wl.w[j].kind == WL_CONTAINER &&
			    workload_stop_match(pat, n->wl.w[j].name))
				strv_add(&names, n->wl.w[j].name);
			else
				n->wl.w[k++] = n->wl.w[j];
		n->wl.n = k;
		if (names.n) {
			cmd = cmd_stop_containers(cl->cf, &names);
			utf8_fmt(reason, sizeof(reason), "container.stop_foreign "
			    "on %s: %s", n->conf->name, cmd);
			log_info("%s", reason);
			history_note(cl, reason);
			if (op_ssh(&cl->bg, i, BG_STOP, 0, cmd, 60,
			    TS_COUNT) == -1)
				log_warnx("node %s: cannot stop unrelated "
				    "containers now", n->conf->name);
			free(cmd);
		}
		strv_free(&names);
	}
}

/* Whether pid is a GPU process of an unrelated workload on the node. */
int
workload_pid(const struct node_rt *n, long pid)
{
	size_t i, j;

	for (i = 0; i < n->wl.n; i++)
		for (j = 0; j < n->wl.w[i].npids; j++)
			if (n->wl.w[i].pids[j] == pid)
				return 1;
	return 0;
}
