/*
 * tandemctl: the operator's command line (tandemctl(1)). It behaves like
 * git, systemctl or docker: -h/--help on the program and on every command
 * (usage on standard output, exit 0), the global options before or after
 * the command, --json on every command that prints data.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "plan.h"
#include "version.h"

#define DEFAULT_CONFIG "/etc/tandem/tandem.json"

static const char	*file = DEFAULT_CONFIG;	/* --config, TANDEM_CONFIG */
static const char	*api_url;
static const char	*token_file;
static int		 color;

static size_t
collect(char *p, size_t sz, size_t n, void *u)
{
	sbuf_addn(u, p, sz * n);
	return sz * n;
}

/*
 * One request to the daemon's API. Returns the HTTP status, or -1 with a
 * message naming the API address when the daemon cannot be reached.
 */
static long
api(const char *method, const char *path, const char *token,
    struct sbuf *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char *url = xprintf("%s%s", api_url, path), *auth = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	long code = -1;
	CURLcode rc;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	}
	if (token) {
		auth = xprintf("Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	else
		fprintf(stderr, "tandemctl: tandemd is not running at %s (%s)\n",
		    api_url, rc == CURLE_COULDNT_CONNECT ? "connection refused" :
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(auth);
	return code;
}

static const char *
col(const char *code)
{
	return color ? code : "";
}

static const char *
state_color(const char *state)
{
	if (strcmp(state, "serving") == 0)
		return col("\033[32m");
	if (strcmp(state, "degraded") == 0)
		return col("\033[31m");
	return col("\033[33m");
}

static const char *
jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static void
print_status(json_t *st)
{
	json_t *nodes = json_object_get(st, "nodes"), *n, *diag, *ray, *vllm;
	json_t *rec;
	size_t i;

	printf("cluster %s: %s%s%s, %s (mode %s, generation %lld, since %s)\n",
	    jstr(st, "name"), state_color(jstr(st, "state")), jstr(st, "state"),
	    col("\033[0m"), jstr(st, "action"), jstr(st, "mode"),
	    (long long)json_integer_value(json_object_get(st, "generation")),
	    jstr(st, "since"));
	printf("%-16s %-7s %-18s %-16s %-9s %-9s %-5s %s\n", "NODE", "ROLE",
	    "SSH", "IP", "REACHABLE", "CONTAINER", "GPUS", "LAST ERROR");
	json_array_foreach(nodes, i, n) {
		json_t *g = json_object_get(n, "gpus");
		char gpus[16] = "-";

		if (json_is_integer(g))
			snprintf(gpus, sizeof(gpus), "%lld",
			    (long long)json_integer_value(g));
		printf("%-16s %-7s %-18s %-16s %-9s %-9s %-5s %s\n",
		    jstr(n, "name"), jstr(n, "role"), jstr(n, "ssh_host"),
		    jstr(n, "ip"), json_is_true(json_object_get(n,
		    "reachable")) ? "yes" : "NO", jstr(n, "container"), gpus,
		    json_is_string(json_object_get(n, "last_error")) ?
		    jstr(n, "last_error") : "");
	}
	ray = json_object_get(st, "ray");
	if (json_is_integer(json_object_get(ray, "alive_nodes")))
		printf("ray: %lld/%lld nodes, %g/%lld GPUs\n",
		    (long long)json_integer_value(json_object_get(ray,
		    "alive_nodes")), (long long)json_integer_value(
		    json_object_get(ray, "expect_nodes")), json_number_value(
		    json_object_get(ray, "gpus")), (long long)json_integer_value(
		    json_object_get(ray, "expect_gpus")));
	vllm = json_object_get(st, "vllm");
	printf("vllm: %s %s, %s\n", jstr(vllm, "url"), jstr(vllm, "model"),
	    json_is_true(json_object_get(vllm, "healthy")) ? "healthy" :
	    "not healthy");
	rec = json_object_get(st, "recovery");
	if (json_integer_value(json_object_get(rec, "attempt")) ||
	    json_is_true(json_object_get(rec, "halted")))
		printf("recovery: attempt %lld, next in %.0f s, %lld rebuilds in "
		    "the last hour%s\n", (long long)json_integer_value(
		    json_object_get(rec, "attempt")), json_number_value(
		    json_object_get(rec, "next_attempt_s")),
		    (long long)json_integer_value(json_object_get(rec,
		    "rebuilds_last_hour")), json_is_true(json_object_get(rec,
		    "halted")) ? ", retries stopped" : "");
	diag = json_object_get(st, "diagnosis");
	if (json_is_object(diag))
		printf("%sdiagnosis %s%s: %s\n  remedy: %s\n", col("\033[1m"),
		    jstr(diag, "code"), col("\033[0m"), jstr(diag, "message"),
		    jstr(diag, "remedy"));
}

/* A document of the API on standard output, ending with a newline. */
static void
put_json(const char *s)
{
	size_t n = strlen(s);

	fputs(s, stdout);
	if (n == 0 || s[n - 1] != '\n')
		putchar('\n');
}

/* A JSON value we built; NULL (a string that was not UTF-8) is a failure. */
static int
put_built(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;

	json_decref(j);
	if (s == NULL) {
		fprintf(stderr, "tandemctl: cannot render the JSON output\n");
		return 1;
	}
	put_json(s);
	free(s);
	return 0;
}

static int
ctl_status(int as_json)
{
	struct sbuf out;
	json_t *st;
	long code;

	sbuf_init(&out);
	if ((code = api("GET", "/status", NULL, &out)) < 0)
		return 1;
	if (code != 200 || (st = json_loads(out.s ? out.s : "", 0, NULL)) ==
	    NULL) {
		fprintf(stderr, "tandemctl: /status answered %ld\n", code);
		sbuf_free(&out);
		return 1;
	}
	if (as_json)
		put_json(out.s);
	else
		print_status(st);
	json_decref(st);
	sbuf_free(&out);
	return 0;
}

/*
 * Prints the events of an /events answer: a table, or with as_json one
 * JSON object per line (what --follow --json streams). Returns the last
 * seq printed, or -1 when the answer is not an array of events.
 */
static long long
print_events(const char *body, long long last, int as_json)
{
	json_t *a = json_loads(body, 0, NULL), *e;
	size_t i;

	if (!json_is_array(a)) {
		json_decref(a);
		return -1;
	}
	json_array_foreach(a, i, e) {
		time_t t = (time_t)json_number_value(json_object_get(e, "time"));
		struct tm tm;
		char ts[32], *line;

		last = json_integer_value(json_object_get(e, "seq"));
		if (as_json) {
			line = json_dumps(e, JSON_COMPACT);
			printf("%s\n", line ? line : "{}");
			free(line);
			continue;
		}
		localtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%6lld %s %-9s -> %-9s %-18s %s\n", last, ts,
		    jstr(e, "from"), jstr(e, "to"), jstr(e, "action"),
		    jstr(e, "reason"));
	}
	json_decref(a);
	fflush(stdout);
	return last;
}

static int
get_events(long long since, struct sbuf *out)
{
	char path[64];
	long code;

	snprintf(path, sizeof(path), "/events?since=%lld", since);
	if ((code = api("GET", path, NULL, out)) < 0)
		return -1;
	if (code != 200) {
		fprintf(stderr, "tandemctl: /events answered %ld\n", code);
		return -1;
	}
	return 0;
}

static int
ctl_events(int follow, int as_json)
{
	long long last = 0;
	struct sbuf out;

	/* Without --follow, --json is the API's own array. */
	do {
		sbuf_init(&out);
		if (get_events(last, &out) == -1) {
			sbuf_free(&out);
			return 1;
		}
		if (as_json && !follow)
			put_json(out.s ? out.s : "[]");
		else if ((last = print_events(out.s ? out.s : "[]", last,
		    as_json)) < 0) {
			fprintf(stderr, "tandemctl: /events: not a list of "
			    "events\n");
			sbuf_free(&out);
			return 1;
		}
		sbuf_free(&out);
		if (follow)
			sleep(1);
	} while (follow);
	return 0;
}

/* On stderr, so plan and check output stays the commands and results. */
static void
print_warnings(const struct config *cf)
{
	size_t i;

	for (i = 0; i < cf->warnings.n; i++)
		fprintf(stderr, "tandemctl: warning: %s\n", cf->warnings.v[i]);
}

static json_t *
warnings_json(const struct config *cf)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < cf->warnings.n; i++)
		json_array_append_new(a, json_string(cf->warnings.v[i]));
	return a;
}

static char *
read_token(const char *cfgfile)
{
	const char *path = token_file;
	struct config *cf = NULL;
	char err[ERRLEN], buf[512];
	size_t n;
	FILE *fp;

	if (path == NULL) {
		cf = config_load(cfgfile, err, sizeof(err));
		path = cf ? cf->api_token_file : NULL;
	}
	if (path == NULL || (fp = fopen(path, "r")) == NULL) {
		fprintf(stderr, "tandemctl: no token: pass --token-file or set "
		    "api_token_file in %s\n", cfgfile);
		config_free(cf);
		return NULL;
	}
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	config_free(cf);
	buf[n] = '\0';
	while (n && strchr("\r\n ", buf[n - 1]))
		buf[--n] = '\0';
	return xstrdup(buf);
}

static int
ctl_post(const char *cfgfile, const char *path)
{
	char *token = read_token(cfgfile);
	struct sbuf out;
	json_t *j;
	long code;

	if (token == NULL)
		return 2;
	sbuf_init(&out);
	code = api("POST", path, token, &out);
	free(token);
	if (code < 0) {
		sbuf_free(&out);
		return 1;
	}
	j = json_loads(out.s ? out.s : "", 0, NULL);
	if (code == 202)
		printf("%s\n", jstr(j, "ok"));
	else
		fprintf(stderr, "tandemctl: %s answered %ld: %s\n", path, code,
		    jstr(j, "error"));
	fflush(stdout);
	json_decref(j);
	sbuf_free(&out);
	return code == 202 ? 0 : 1;
}

/* The newest event's seq: a wait follows only what comes after it. */
static int
last_event(long long *seq)
{
	struct sbuf out;
	json_t *a;

	sbuf_init(&out);
	if (get_events(0, &out) == -1) {
		sbuf_free(&out);
		return -1;
	}
	a = json_loads(out.s ? out.s : "", 0, NULL);
	sbuf_free(&out);
	if (!json_is_array(a)) {
		json_decref(a);
		fprintf(stderr, "tandemctl: /events: not a list of events\n");
		return -1;
	}
	*seq = json_integer_value(json_object_get(json_array_get(a,
	    json_array_size(a) - 1), "seq"));
	json_decref(a);
	return 0;
}

/*
 * Where an event leaves the rebuild: 0 serving (done), 1 ended without
 * serving (a failed step backs off, retries stopped leave the action idle,
 * or someone paused), -1 still on its way (teardown, starting, waiting,
 * waiting for a node to come back).
 */
static int
rebuild_end(json_t *e)
{
	const char *to = jstr(e, "to"), *action = jstr(e, "action");

	if (strcmp(to, "serving") == 0)
		return 0;
	if (strcmp(action, "backoff") == 0 || strcmp(action, "idle") == 0 ||
	    strcmp(action, "paused") == 0)
		return 1;
	return -1;
}

/* Why the rebuild ended without serving, from /status. */
static void
print_failure(void)
{
	struct sbuf out;
	json_t *st, *diag;

	sbuf_init(&out);
	st = api("GET", "/status", NULL, &out) == 200 ?
	    json_loads(out.s ? out.s : "", 0, NULL) : NULL;
	diag = json_object_get(st, "diagnosis");
	if (json_is_object(diag))
		fprintf(stderr, "tandemctl: rebuild failed: diagnosis %s: %s\n"
		    "  remedy: %s\n", jstr(diag, "code"), jstr(diag, "message"),
		    jstr(diag, "remedy"));
	else
		fprintf(stderr, "tandemctl: rebuild ended without serving: "
		    "%s/%s\n", jstr(st, "state"), jstr(st, "action"));
	json_decref(st);
	sbuf_free(&out);
}

/*
 * tandemctl rebuild --wait: asks for the rebuild, then follows /events
 * with a line per step until the cluster serves (exit 0) or the rebuild
 * ends in a diagnosis (exit 1), like tandemd --once.
 */
static int
ctl_rebuild_wait(const char *cfgfile, const char *path)
{
	const struct timespec poll = { 0, 500 * 1000 * 1000 };
	uint64_t t0;
	long long seq;
	struct sbuf out;
	json_t *a, *e;
	size_t i;
	int rc, end = -1;

	if (last_event(&seq) == -1)
		return 1;
	if ((rc = ctl_post(cfgfile, path)) != 0)
		return rc;
	t0 = mono_ms();
	while (end < 0) {
		nanosleep(&poll, NULL);
		sbuf_init(&out);
		if (get_events(seq, &out) == -1) {
			sbuf_free(&out);
			return 1;
		}
		a = json_loads(out.s ? out.s : "", 0, NULL);
		sbuf_free(&out);
		if (!json_is_array(a)) {
			json_decref(a);
			fprintf(stderr, "tandemctl: /events: not a list of "
			    "events\n");
			return 1;
		}
		json_array_foreach(a, i, e) {
			seq = json_integer_value(json_object_get(e, "seq"));
			printf("tandemctl rebuild: %.0f s: %s/%s (%s)\n",
			    (double)(mono_ms() - t0) / 1000.0, jstr(e, "to"),
			    jstr(e, "action"), jstr(e, "reason"));
			if ((end = rebuild_end(e)) >= 0)
				break;
		}
		json_decref(a);
		fflush(stdout);
	}
	if (end == 1)
		print_failure();
	return end;
}

static void
on_preflight(struct preflight *pf, void *arg)
{
	(void)pf;
	uv_stop(arg);
}

/* tandemctl check --json: documented in docs/api.md. */
static json_t *
check_json(const struct preflight *pf)
{
	json_t *nodes = json_array(), *checks, *n;
	size_t i;
	int c, ok;

	for (i = 0; i < pf->cf->nnodes; i++) {
		checks = json_array();
		ok = 1;
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = &pf->res[i][c];

			/* "-": not run (no SSH) or not for this node */
			if (json_array_append_new(checks, json_pack(
			    "{s:s, s:b, s:s?, s:s?}", "check",
			    preflight_check_name(c), "ok", r->ok, "detail",
			    strcmp(r->detail, "-") == 0 ? NULL : r->detail,
			    "fix", r->fix[0] ? r->fix : NULL)) == -1) {
				json_decref(checks);
				json_decref(nodes);
				return NULL;
			}
			ok = ok && r->ok;
		}
		n = json_pack("{s:s, s:b, s:o}", "name", pf->cf->nodes[i].name,
		    "ok", ok, "checks", checks);
		if (json_array_append_new(nodes, n) == -1) {
			json_decref(nodes);
			return NULL;
		}
	}
	return json_pack("{s:s, s:b, s:o, s:o}", "name", pf->cf->name, "ok",
	    preflight_ok(pf), "nodes", nodes, "warnings",
	    warnings_json(pf->cf));
}

/* tandemctl check: the preflight table over SSH, in parallel on every node. */
static int
ctl_check(int as_json)
{
	char err[ERRLEN];
	struct config *cf;
	struct preflight *pf;
	struct sbuf out;
	uv_loop_t *loop = uv_default_loop();
	int ok;

	if ((cf = config_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return 2;
	}
	print_warnings(cf);
	log_init(0);
	signal(SIGPIPE, SIG_IGN);
	if (sshc_ssh_init() != 0) {
		fprintf(stderr, "tandemctl: cannot initialise libssh2\n");
		return 1;
	}
	pf = preflight_start(loop, cf, on_preflight, loop);
	uv_run(loop, UV_RUN_DEFAULT);
	ok = preflight_ok(pf);
	if (as_json) {
		if (put_built(check_json(pf)) != 0)
			ok = 0;
	} else {
		sbuf_init(&out);
		preflight_print(pf, &out);
		fputs(out.s, stdout);
		sbuf_free(&out);
	}
	preflight_free(pf);
	uv_run(loop, UV_RUN_NOWAIT);
	config_free(cf);
	return ok ? 0 : 1;
}

/* tandemctl plan --json: documented in docs/api.md. */
static json_t *
plan_json(const struct config *cf, const struct plan *p)
{
	json_t *nodes = json_array(), *cmds, *argv;
	size_t i, j, k;

	for (i = 0; i < cf->nnodes; i++) {
		const struct node_conf *n = &cf->nodes[i];

		cmds = json_array();
		for (j = 0; j < p->n; j++) {
			if (p->cmds[j].node != i)
				continue;
			argv = json_array();
			for (k = 0; k < p->cmds[j].argv.n; k++)
				json_array_append_new(argv, json_string(
				    p->cmds[j].argv.v[k]));
			json_array_append_new(cmds, json_pack("{s:s, s:o, s:s}",
			    "phase", phase_name(p->cmds[j].phase), "argv", argv,
			    "shell", p->cmds[j].shell));
		}
		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:i, "
		    "s:s, s:o}", "name", n->name, "role", n->is_head ? "head" :
		    "worker", "ssh_host", n->ssh_host, "ssh_port", n->ssh_port,
		    "ssh_user", cf->ssh.user, "commands", cmds));
	}
	return json_pack("{s:s, s:s, s:o, s:o}", "name", cf->name, "topology",
	    cf->topology == TOPO_RAY ? "ray" : "dp", "nodes", nodes,
	    "warnings", warnings_json(cf));
}

static int
ctl_plan(int as_json)
{
	char err[ERRLEN];
	struct config *cf;
	struct plan p;
	struct sbuf out;
	int rc = 0;

	if ((cf = config_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return 2;
	}
	print_warnings(cf);
	plan_rebuild(cf, 0, &p);
	if (as_json)
		rc = put_built(plan_json(cf, &p));
	else {
		sbuf_init(&out);
		plan_print(cf, &p, &out);
		fputs(out.s, stdout);
		sbuf_free(&out);
	}
	plan_free(&p);
	config_free(cf);
	return rc;
}

/* Against vLLM itself: vllm.url from the config by default. */
char *
ctl_vllm_url(void)
{
	char err[ERRLEN];
	struct config *cf = config_load(file, err, sizeof(err));
	char *url = xstrdup(cf ? cf->vllm.url : "http://127.0.0.1:8000");

	config_free(cf);
	return url;
}

int
ctl_global(int ch, const char *arg)
{
	switch (ch) {
	case 'c':
		file = arg;
		return 1;
	case CTL_OPT_API:
		api_url = arg;
		return 1;
	case CTL_OPT_TOKEN_FILE:
		token_file = arg;
		return 1;
	default:
		return 0;
	}
}

void
ctl_global_help(FILE *fp)
{
	fprintf(fp,
	    "global options (before or after the command):\n"
	    "  -c, --config FILE    the configuration (default: $TANDEM_CONFIG, "
	    "else\n"
	    "                       " DEFAULT_CONFIG ")\n"
	    "      --api URL        the tandemd API (default: from the "
	    "config's listen)\n"
	    "      --token-file F   the API token (default: the config's "
	    "api_token_file)\n"
	    "  -h, --help           this help\n");
}

/* The flags of the commands that talk to tandemd or read the config. */
struct args {
	int	json;
	int	follow;
	int	reset;
	int	wait;
};

enum { O_JSON = 'j', O_FOLLOW = 'f', O_RESET = 'r', O_WAIT = 'w' };

#define OPT_JSON	{ "json",	no_argument,	NULL, O_JSON }
#define OPT_END		{ NULL, 0, NULL, 0 }

static const struct option opts_json[] = { OPT_JSON, CTL_GLOBAL_OPTIONS,
	OPT_END };
static const struct option opts_events[] = { OPT_JSON,
	{ "follow", no_argument, NULL, O_FOLLOW }, CTL_GLOBAL_OPTIONS, OPT_END };
static const struct option opts_rebuild[] = {
	{ "reset", no_argument, NULL, O_RESET },
	{ "wait", no_argument, NULL, O_WAIT }, CTL_GLOBAL_OPTIONS, OPT_END };
static const struct option opts_none[] = { CTL_GLOBAL_OPTIONS, OPT_END };

static const struct command {
	const char		*name;
	const struct option	*opts;
	const char		*synopsis;	/* its options */
	const char		*what;		/* one line, for tandemctl -h */
	const char		*help;		/* its options, a line each */
} commands[] = {
	{ "status", opts_json, "[--json]",
	    "cluster state, nodes, Ray, vLLM, diagnosis",
	    "      --json           the GET /status document\n" },
	{ "events", opts_events, "[--follow] [--json]",
	    "recent transitions and actions",
	    "      --follow         keep printing new events (every second)\n"
	    "      --json           the GET /events array; with --follow one "
	    "event\n"
	    "                       per line\n" },
	{ "rebuild", opts_rebuild, "[--reset] [--wait]",
	    "tear down and rebuild every node",
	    "      --reset          forget the remedy step: start again from "
	    "the\n"
	    "                       configured --gpu-memory-utilization\n"
	    "      --wait           follow the rebuild, a line per step; exit "
	    "0 once\n"
	    "                       serving, 1 if it ends in a diagnosis\n" },
	{ "pause", opts_none, "", "stop all automatic action", "" },
	{ "resume", opts_none, "", "restart automatic action", "" },
	{ "plan", opts_json, "[--json]",
	    "the commands a rebuild runs, per node (touches no node)",
	    "      --json           the plan as JSON\n" },
	{ "check", opts_json, "[--json]",
	    "preflight on every node over SSH",
	    "      --json           the results as JSON\n" },
	{ "bench", NULL, "[OPTIONS]",
	    "the DGX Spark Ray guide's load test (tandemctl bench -h)", NULL },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *fp)
{
	size_t i;

	fprintf(fp, "usage: tandemctl [OPTIONS] COMMAND [COMMAND OPTIONS]\n"
	    "       tandemctl --version\n\ncommands:\n");
	for (i = 0; i < NCOMMANDS; i++) {
		char left[40];

		snprintf(left, sizeof(left), "%s %s", commands[i].name,
		    commands[i].synopsis);
		fprintf(fp, "  %-27s %s\n", left, commands[i].what);
	}
	fputc('\n', fp);
	ctl_global_help(fp);
	fprintf(fp, "      --version        print the version\n\n"
	    "tandemctl COMMAND --help tells more. Exit status: 0 success, 1 "
	    "failure,\n2 usage or configuration error.\n");
}

/* --help: the whole of it; after a usage error, the synopsis (stderr). */
static void
command_usage(const struct command *c, FILE *fp, int full)
{
	fprintf(fp, "usage: tandemctl %s %s%s[OPTIONS]\n", c->name,
	    c->synopsis, c->synopsis[0] ? " " : "");
	if (!full) {
		fprintf(fp, "tandemctl %s --help tells more.\n", c->name);
		return;
	}
	fprintf(fp, "%s\n\n", c->what);
	if (c->help[0])
		fprintf(fp, "options:\n%s\n", c->help);
	ctl_global_help(fp);
}

/*
 * A command's flags, the global options among them. Returns -1 to go on,
 * else the exit status (0 after --help).
 */
static int
parse(const struct command *c, int argc, char **argv, struct args *a)
{
	int ch;

	memset(a, 0, sizeof(*a));
	optind = 0;	/* glibc: a fresh scan, without the first one's "+" */
	while ((ch = getopt_long(argc, argv, "hc:", c->opts, NULL)) != -1) {
		if (ctl_global(ch, optarg))
			continue;
		switch (ch) {
		case 'h':
			command_usage(c, stdout, 1);
			return 0;
		case O_JSON:
			a->json = 1;
			break;
		case O_FOLLOW:
			a->follow = 1;
			break;
		case O_RESET:
			a->reset = 1;
			break;
		case O_WAIT:
			a->wait = 1;
			break;
		default:
			command_usage(c, stderr, 0);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument: %s\n", argv[0],
		    argv[optind]);
		command_usage(c, stderr, 0);
		return 2;
	}
	return -1;
}

static int
run_cmd(const char *cmd, const struct args *a)
{
	if (strcmp(cmd, "plan") == 0)
		return ctl_plan(a->json);
	if (strcmp(cmd, "check") == 0)
		return ctl_check(a->json);
	if (api_url == NULL) {
		/* The API address comes from the config when it can be read. */
		char err[ERRLEN];
		struct config *cf = config_load(file, err, sizeof(err));

		api_url = cf ? xprintf(strchr(cf->listen_host, ':') ?
		    "http://[%s]:%d" : "http://%s:%d", cf->listen_host,
		    cf->listen_port) : "http://127.0.0.1:9100";
		config_free(cf);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (strcmp(cmd, "status") == 0)
		return ctl_status(a->json);
	if (strcmp(cmd, "events") == 0)
		return ctl_events(a->follow, a->json);
	if (strcmp(cmd, "rebuild") == 0 && a->wait)
		return ctl_rebuild_wait(file, a->reset ? "/rebuild?reset=1" :
		    "/rebuild");
	if (strcmp(cmd, "rebuild") == 0)
		return ctl_post(file, a->reset ? "/rebuild?reset=1" :
		    "/rebuild");
	return ctl_post(file, strcmp(cmd, "pause") == 0 ? "/pause" :
	    "/resume");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		CTL_GLOBAL_OPTIONS,
		{ "version",	no_argument,		NULL, 'V' },
		OPT_END
	};
	const char *term = getenv("TERM");
	const struct command *c = NULL;
	char prog[64];
	struct args a;
	size_t i;
	int ch, rc;

	if (getenv("TANDEM_CONFIG"))
		file = getenv("TANDEM_CONFIG");
	/* "+" stops at the command: its flags are parsed with its own list. */
	while ((ch = getopt_long(argc, argv, "+hc:", opts, NULL)) != -1) {
		if (ctl_global(ch, optarg))
			continue;
		switch (ch) {
		case 'V':
			printf("tandemctl %s\n", TANDEM_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[optind], commands[i].name) == 0)
			c = &commands[i];
	if (c == NULL) {
		fprintf(stderr, "tandemctl: unknown command: %s (tandemctl "
		    "--help lists them)\n", argv[optind]);
		return 2;
	}
	/* getopt's messages then name the command: "tandemctl status: ..." */
	snprintf(prog, sizeof(prog), "tandemctl %s", c->name);
	argv[optind] = prog;
	/* TERM=dumb, like NO_COLOR (no-color.org), turns colour off. */
	color = isatty(1) && getenv("NO_COLOR") == NULL && term &&
	    strcmp(term, "dumb") != 0;
	if (c->opts == NULL) {
		log_init(0);
		return bench_main(argc - optind, argv + optind);
	}
	if ((rc = parse(c, argc - optind, argv + optind, &a)) >= 0)
		return rc;
	return run_cmd(c->name, &a);
}
