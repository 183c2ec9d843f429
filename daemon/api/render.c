/*
 * What GET /status and GET /metrics say: the cluster's read-only view
 * (cluster.h) as the JSON document and the Prometheus text of docs/api.md.
 * httpd.c serves them; the status page embeds the first.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accel.h"
#include "cluster.h"
#include "metrics.h"
#include "api.h"
#include "log.h"
#include "utf8.h"
#include "version.h"

/*
 * Node text is made valid UTF-8 when it is stored; should some slip
 * through, json_string's NULL would drop the whole document, so it is
 * mended here rather than trusted.
 */
static json_t *
jstr_or_null(const char *s)
{
	json_t *j;
	char *t;
	size_t n;

	if (s == NULL || *s == '\0')
		return json_null();
	if ((j = json_string(s)))
		return j;
	n = strlen(s) * 3 + 1;
	t = xmalloc(n);
	utf8_copy(t, n, s);
	j = json_string(t);
	free(t);
	return j ? j : json_null();
}

static const char *
ctr_name(enum ctr_state s)
{
	switch (s) {
	case CTR_UNKNOWN:	return "unknown";
	case CTR_RUNNING:	return "running";
	case CTR_EXITED:	return "exited";
	case CTR_MISSING:	return "missing";
	}
	return "unknown";
}

char *
render_status(struct cluster *c)
{
	struct cluster_view view;
	const struct cluster_view *cl = &view;
	json_t *root, *nodes, *diag, *budget;
	char since[32];
	time_t t;
	struct tm tm;
	size_t i;
	char *s;
	double next = 0;

	cluster_view(c, &view);
	t = (time_t)cl->since;
	gmtime_r(&t, &tm);
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	nodes = json_array();
	for (i = 0; i < cl->nnodes; i++) {
		struct node_view nv, *n = &nv;
		int alive;

		cluster_node_view(c, i, &nv);
		alive = cl->ray_known && n->container == CTR_RUNNING &&
		    cl->ray_alive >= cl->cf->ray.expect_nodes;

		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:s, "
		    "s:b, s:s, s:o, s:o, s:o}", "name", n->conf->name, "role",
		    n->conf->is_head ? "head" : "worker", "ssh_host",
		    n->conf->ssh_host, "ip", n->conf->ip, "reachable",
		    n->reachable, "container", ctr_name(n->container),
		    "ray_alive", cl->cf->topology == TOPO_RAY && cl->ray_known ?
		    json_boolean(alive) : json_null(), "gpus", n->gpus >= 0 ?
		    json_integer(n->gpus) : json_null(), "last_error",
		    jstr_or_null(n->last_error)));
	}
	if (cl->diag)
		diag = json_pack("{s:s, s:s, s:s}", "code", cl->diag->code,
		    "message", cl->diag_msg, "remedy", cl->diag->remedy);
	else
		diag = json_null();
	if (cl->fsm.action == A_BACKOFF)
		next = cl->next_attempt - now_s();
	root = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o, "
	    "s:{s:o, s:i, s:o, s:i}, s:{s:s, s:s, s:b, s:o, s:o}, "
	    "s:{s:i, s:f, s:i, s:b}}",
	    "name", cl->cf->name,
	    "state", state_name(cl->fsm.state, cl->fsm.dp),
	    "action", action_name(cl->fsm.action),
	    "mode", cl->fsm.action == A_PAUSED ? "paused" : "auto",
	    "since", since,
	    "generation", (json_int_t)cl->generation,
	    "diagnosis", diag,
	    "nodes", nodes,
	    "ray",
	    "alive_nodes", cl->ray_known ? json_integer(cl->ray_alive) :
	    json_null(),
	    "expect_nodes", cl->cf->topology == TOPO_RAY ?
	    cl->cf->ray.expect_nodes : (int)cl->nnodes,
	    "gpus", cl->ray_known ? json_real(cl->ray_gpus) : json_null(),
	    "expect_gpus", cl->cf->ray.expect_gpus,
	    "vllm",
	    "url", cl->cf->vllm.url,
	    "model", config_model_id(cl->cf),
	    "healthy", cl->fsm.state == ST_SERVING && cl->vllm_healthy,
	    "gpu_memory_utilization", cluster_gmu(c) > 0 ?
	    json_real(cluster_gmu(c)) : cl->cf->vllm.gpu_memory_utilization > 0
	    ? json_real(cl->cf->vllm.gpu_memory_utilization) : json_null(),
	    "generation_endpoint", jstr_or_null(cl->gen_endpoint),
	    "recovery",
	    "attempt", cl->attempt,
	    "next_attempt_s", next > 0 ? next : 0.0,
	    "rebuilds_last_hour", cluster_rebuilds_last_hour(c),
	    "halted", cl->fsm.halted);
	json_object_set_new(root, "warnings", cluster_warnings_json(c));
	/* whose devices nodes[].gpus counts: GPUs, or NPU chips */
	json_object_set_new(root, "accelerator", json_string(accel_name(
	    cl->cf->container.accelerator)));
	/* after a stop or at the hourly cap: what happened, what to read */
	budget = cluster_budget_json(c);
	json_object_set_new(root, "budget", budget ? budget : json_null());
	json_object_set_new(json_object_get(root, "recovery"), "bundle",
	    jstr_or_null(evidence_latest(c)));
	/* stopped: what the recheck waits for (act_recheck.c) */
	json_object_set_new(json_object_get(root, "recovery"), "awaiting",
	    cluster_awaiting_json(c));
	json_object_set_new(root, "change", cluster_change_json(c));
	json_object_set_new(root, "config", cluster_config_json(c));
	/* tandemctl reload --pid checks its signal goes to this process */
	json_object_set_new(root, "pid", json_integer((json_int_t)getpid()));
	s = json_dumps(root, JSON_INDENT(2) | TANDEM_JSON_REALS);
	json_decref(root);
	return s;
}

/*
 * When this process started, for process_start_time_seconds (the name
 * Prometheus' client libraries use, from /proc/self/stat there): recorded
 * before main runs, since the unit's ProcSubset=pid hides /proc/stat and
 * its boot time.
 */
static double started_at;

static void __attribute__((constructor))
record_start(void)
{
	started_at = now_s();
}

/*
 * tandem_warnings{code}: the entries of /status warnings by code. The
 * codes tandem knows are always there (0 when none), so an alert on them
 * does not mistake "no series" for "no warning"; a code added later shows
 * as soon as it is raised.
 */
static void
render_warnings(struct sbuf *b, const struct cluster *c)
{
	static const char *const known[] = { "foreign-workload",
	    "ssh-max-sessions", "ray-unauthenticated", "gpu-ecc" };
	json_t *w = cluster_warnings_json(c), *e, *count = json_object();
	const char *code;
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		json_object_set_new(count, known[i], json_integer(0));
	json_array_foreach(w, i, e) {
		code = json_string_value(json_object_get(e, "code"));
		if (code == NULL)
			continue;
		json_object_set_new(count, code, json_integer(
		    json_integer_value(json_object_get(count, code)) + 1));
	}
	metrics_header(b, "tandem_warnings", "gauge",
	    "Warnings in /status (things that do not stop serving), by code.");
	json_object_foreach(count, code, e) {
		sbuf_add(b, "tandem_warnings{code=\"");
		metrics_escape(b, code);
		sbuf_addf(b, "\"} %lld\n", (long long)json_integer_value(e));
	}
	json_decref(count);
	json_decref(w);
}

/*
 * Ray's nodes and GPUs, expected and alive. Alive only once ray status
 * answered (absent, not 0, before: 0 would read as "every node lost");
 * none of them in topology dp, which has no Ray.
 */
static void
render_ray(struct sbuf *b, const struct cluster_view *cl)
{
	if (cl->cf->topology != TOPO_RAY)
		return;
	metrics_header(b, "tandem_ray_nodes_expected", "gauge",
	    "Nodes ray status must show (ray.expect_nodes).");
	sbuf_addf(b, "tandem_ray_nodes_expected %d\n", cl->cf->ray.expect_nodes);
	metrics_header(b, "tandem_ray_gpus_expected", "gauge",
	    "GPUs ray status must show (ray.expect_gpus).");
	sbuf_addf(b, "tandem_ray_gpus_expected %d\n", cl->cf->ray.expect_gpus);
	if (!cl->ray_known)
		return;
	metrics_header(b, "tandem_ray_nodes_alive", "gauge",
	    "Active nodes in the last ray status.");
	sbuf_addf(b, "tandem_ray_nodes_alive %d\n", cl->ray_alive);
	metrics_header(b, "tandem_ray_gpus_alive", "gauge",
	    "GPUs in the last ray status.");
	sbuf_addf(b, "tandem_ray_gpus_alive %g\n", cl->ray_gpus);
}

char *
render_metrics(struct cluster *c)
{
	static const enum cstate states[] = { ST_ABSENT, ST_UP, ST_SERVING,
	    ST_DEGRADED };
	static const char *const probes[] = { "container", "ray", "health",
	    "generate" };
	struct cluster_view view;
	const struct cluster_view *cl = &view;
	struct node_view n;
	struct sbuf b;
	size_t i;
	double gmu;
	uint64_t applied, refused, rolled_back;

	cluster_view(c, &view);
	sbuf_init(&b);
	metrics_header(&b, "tandem_build_info", "gauge",
	    "1, with the version of tandemd as a label.");
	sbuf_addf(&b, "tandem_build_info{version=\"");
	metrics_escape(&b, TANDEM_VERSION);
	sbuf_add(&b, "\"} 1\n");
	metrics_header(&b, "process_start_time_seconds", "gauge",
	    "Start time of the process since unix epoch in seconds.");
	sbuf_addf(&b, "process_start_time_seconds %.3f\n", started_at);
	metrics_header(&b, "tandem_state", "gauge",
	    "1 for the cluster's current state.");
	/*
	 * No series carries the cluster's name: the scrape's target labels
	 * say which daemon it is (contrib/prometheus/prometheus.yml sets
	 * cluster there), the same on every series.
	 */
	for (i = 0; i < 4; i++) {
		sbuf_addf(&b, "tandem_state{state=\"%s\"} %d\n",
		    state_name(states[i], cl->fsm.dp),
		    cl->fsm.state == states[i]);
	}
	metrics_header(&b, "tandem_action", "gauge",
	    "1 for what the daemon is doing now.");
	for (i = A_IDLE; i <= A_PAUSED; i++) {
		sbuf_addf(&b, "tandem_action{action=\"%s\"} %d\n",
		    action_name((enum caction)i), cl->fsm.action == i);
	}
	metrics_header(&b, "tandem_rebuilds_total", "counter",
	    "Rebuilds started by this daemon process.");
	sbuf_addf(&b, "tandem_rebuilds_total %llu\n",
	    (unsigned long long)cl->rebuilds_total);
	metrics_header(&b, "tandem_generation", "gauge",
	    "Rebuilds started, kept across daemon restarts.");
	sbuf_addf(&b, "tandem_generation %llu\n",
	    (unsigned long long)cl->generation);
	render_warnings(&b, c);
	metrics_header(&b, "tandem_recovery_halted", "gauge",
	    "1 when the retries stopped: a diagnosis that needs a person.");
	sbuf_addf(&b, "tandem_recovery_halted %d\n", cl->fsm.halted ? 1 : 0);
	metrics_header(&b, "tandem_rebuild_failures_total", "counter",
	    "Failed rebuild steps and checks, by diagnosis.");
	for (i = 0; i < cl->nfailures; i++) {
		sbuf_add(&b, "tandem_rebuild_failures_total{reason=\"");
		metrics_escape(&b, cl->failures[i].reason);
		sbuf_addf(&b, "\"} %llu\n",
		    (unsigned long long)cl->failures[i].n);
	}
	metrics_header(&b, "tandem_node_up", "gauge",
	    "1 when the node answers SSH.");
	for (i = 0; i < cl->nnodes; i++) {
		cluster_node_view(c, i, &n);
		sbuf_add(&b, "tandem_node_up{node=\"");
		metrics_escape(&b, n.conf->name);
		sbuf_addf(&b, "\"} %d\n", n.reachable);
	}
	metrics_header(&b, "tandem_ssh_commands_total", "counter",
	    "Commands run over SSH, by node.");
	for (i = 0; i < cl->nnodes; i++) {
		cluster_node_view(c, i, &n);
		sbuf_add(&b, "tandem_ssh_commands_total{node=\"");
		metrics_escape(&b, n.conf->name);
		sbuf_addf(&b, "\"} %llu\n", (unsigned long long)n.execs);
	}
	render_ray(&b, cl);
	metrics_render_stalls(&b, cl->stalls_total);
	metrics_render_xid(&b, cl->xid, cl->nxid);
	metrics_header(&b, "tandem_vllm_healthy", "gauge",
	    "1 when vLLM answered /health, /v1/models and a completion.");
	sbuf_addf(&b, "tandem_vllm_healthy %d\n", cl->fsm.state == ST_SERVING &&
	    cl->vllm_healthy);
	metrics_header(&b, "tandem_config_last_reload_successful", "gauge",
	    "1 when the last load of the configuration (start or reload) "
	    "succeeded.");
	sbuf_addf(&b, "tandem_config_last_reload_successful %d\n",
	    cl->reload_ok);
	metrics_header(&b, "tandem_config_last_reload_success_timestamp_seconds",
	    "gauge", "When the configuration was last loaded successfully "
	    "(Unix time).");
	sbuf_addf(&b, "tandem_config_last_reload_success_timestamp_seconds "
	    "%.3f\n", cl->reload_ok_at);
	cluster_change_counts(c, &applied, &refused, &rolled_back);
	metrics_header(&b, "tandem_config_changes_total", "counter",
	    "Changes of the image, model, flags, env or volumes, by result.");
	sbuf_addf(&b, "tandem_config_changes_total{result=\"applied\"} %llu\n"
	    "tandem_config_changes_total{result=\"refused\"} %llu\n"
	    "tandem_config_changes_total{result=\"rolled_back\"} %llu\n",
	    (unsigned long long)applied, (unsigned long long)refused,
	    (unsigned long long)rolled_back);
	metrics_header(&b, "tandem_state_since_timestamp_seconds", "gauge",
	    "When the current state began (Unix time).");
	sbuf_addf(&b, "tandem_state_since_timestamp_seconds %.3f\n", cl->since);
	gmu = cluster_gmu(c) > 0 ? cluster_gmu(c) :
	    cl->cf->vllm.gpu_memory_utilization;
	if (gmu > 0) {
		metrics_header(&b, "tandem_gpu_memory_utilization", "gauge",
		    "The --gpu-memory-utilization vLLM is started with: the "
		    "remedy step in use, else the configured value.");
		sbuf_addf(&b, "tandem_gpu_memory_utilization %g\n", gmu);
	}
	metrics_header(&b, "tandem_probe_duration_seconds", "histogram",
	    "Duration of probes, by probe.");
	for (i = 0; i < 4; i++) {
		char lbl[64];

		snprintf(lbl, sizeof(lbl), "probe=\"%s\"", probes[i]);
		hist_render(&b, "tandem_probe_duration_seconds", lbl,
		    &cl->h_probe[i], hist_probe_bounds);
	}
	metrics_header(&b, "tandem_time_to_recover_seconds", "histogram",
	    "Time from degraded back to serving.");
	hist_render(&b, "tandem_time_to_recover_seconds", NULL, cl->h_recover,
	    hist_recover_bounds);
	trace_hist_render(&b, cl->h_step);
	trace_phases_render(&b, cl->trace_last);
	return sbuf_take(&b);
}

