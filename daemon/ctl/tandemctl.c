/*
 * tandemctl: the operator's command line (tandemctl(1)): the commands that
 * talk to tandemd's API, plan and check. options.c reads the command line,
 * json.c builds the --json documents, bench.c is the load test.
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conffile.h"
#include "config.h"
#include "ctl.h"
#include "plan.h"
#include "preflight.h"
#include "ssh.h"
#include "tokenfile.h"
#include "version.h"

/* The command line's global options, set once before any command runs. */
static const char	*file;		/* --config, TANDEM_CONFIG */
static int		 file_named;	/* not the default path */
/*
 * The API: over the Unix socket api_sock (the config's api_socket), which
 * only root and group tandem can open and no other user can hold, unless
 * --api names a TCP address (docs/api.md, "How tandemctl reaches the
 * daemon"). The token goes wherever the request goes: to the socket, or
 * to the address the operator named; never to a port tandemctl chose.
 */
static const char	*api_url;
static char		*api_sock;
static const char	*api_why;	/* how api_url was chosen, for errors */
static int		 cfg_denied;	/* the default config: EACCES */
static int		 api_quiet;	/* wait: "not running" said once */
static const char	*token_file;
static int		 color;

static size_t
collect(char *p, size_t sz, size_t n, void *u)
{
	sbuf_addn(u, p, sz * n);
	return sz * n;
}

void
ctl_api_route(CURL *c)
{
	if (api_sock != NULL)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, api_sock);
}

/*
 * Why the socket did not answer. A user who may not read the config nor
 * open the socket is told so, not that tandemd is down (issue 42, item
 * 2): a check script would raise a false alarm.
 */
static void
unreachable(CURL *c, CURLcode rc, const char *errbuf)
{
	long oserr = 0;

	curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &oserr);
	if (rc == CURLE_COULDNT_CONNECT && (oserr == EACCES || cfg_denied))
		fprintf(stderr, "tandemctl: %s %s: permission denied (run as "
		    "root or join group tandem)\n", cfg_denied ?
		    "cannot read" : "cannot open tandemd's socket", cfg_denied ?
		    file : api_sock);
	else if (rc == CURLE_COULDNT_CONNECT)
		fprintf(stderr, "tandemctl: tandemd is not running: nothing "
		    "answers at %s (%s)%s\n", api_sock, oserr ?
		    strerror((int)oserr) : "connection refused",
		    api_why ? api_why : "");
	else
		fprintf(stderr, "tandemctl: tandemd at %s: %s\n", api_sock,
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

/*
 * One request to the daemon's API. Returns the HTTP status, or -1 with a
 * message naming the API address when the daemon cannot be reached.
 */
static long	api_body(const char *, const char *, const char *,
		    const struct sbuf *, struct sbuf *);

static long
api(const char *method, const char *path, const char *token,
    struct sbuf *out)
{
	return api_body(method, path, token, NULL, out);
}

/* As api, with a body to POST (tandemctl apply's file). */
static long
api_body(const char *method, const char *path, const char *token,
    const struct sbuf *body, struct sbuf *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char *url = xprintf("%s%s", api_url, path), *auth = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	long code = -1;
	CURLcode rc;

	curl_easy_setopt(c, CURLOPT_URL, url);
	ctl_api_route(c);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body->s : "");
		if (body)
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			    (curl_off_t)body->len);
	}
	if (token) {
		auth = xprintf("Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	else if (!api_quiet && api_sock != NULL)
		unreachable(c, rc, errbuf);
	else if (!api_quiet)
		fprintf(stderr, "tandemctl: tandemd is not running at %s (%s)%s"
		    "\n", api_url, rc == CURLE_COULDNT_CONNECT ?
		    "connection refused" : errbuf[0] ? errbuf :
		    curl_easy_strerror(rc), api_why ? api_why : "");
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

/*
 * Issue 46: which config runs (the file's, an applied one, the last good
 * one) and why, and a change that is not simply applied.
 */
static void
print_config(json_t *st)
{
	json_t *cfg = json_object_get(st, "config"), *c;
	const char *phase;

	if (json_is_object(cfg))
		printf("config: %s %s (%s)%s%s\n", jstr(cfg, "running"),
		    jstr(cfg, "checksum"), jstr(cfg, "file"),
		    json_is_string(json_object_get(cfg, "message")) ? "\n  " :
		    "", json_is_string(json_object_get(cfg, "message")) ?
		    jstr(cfg, "message") : "");
	c = json_object_get(st, "change");
	phase = jstr(c, "phase");
	if (strcmp(phase, "checking") == 0 || strcmp(phase, "switching") == 0)
		printf("change: %s, %s to %s\n", phase, jstr(c, "from"),
		    jstr(c, "to"));
	else if (strcmp(phase, "refused") == 0)
		printf("change: %s: %s\n  fix: %s\n", jstr(c, "result"),
		    jstr(c, "reason"), jstr(c, "fix"));
}

static void
print_status(json_t *st)
{
	json_t *nodes = json_object_get(st, "nodes"), *n, *diag, *ray, *vllm;
	json_t *rec;
	size_t i;
	const char *acc = jstr(st, "accelerator");

	printf("cluster %s: %s%s%s, %s (mode %s, generation %lld, since %s)\n",
	    jstr(st, "name"), state_color(jstr(st, "state")), jstr(st, "state"),
	    col("\033[0m"), jstr(st, "action"), jstr(st, "mode"),
	    (long long)json_integer_value(json_object_get(st, "generation")),
	    jstr(st, "since"));
	printf("%-16s %-7s %-18s %-16s %-9s %-9s %-5s %s\n", "NODE", "ROLE",
	    "SSH", "IP", "REACHABLE", "CONTAINER", strcmp(acc, "ascend") == 0 ?
	    "NPUS" : strcmp(acc, "none") == 0 ? "DEVS" : "GPUS", "LAST ERROR");
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
	/* stopped: what the recheck waits for, and how long ago it looked */
	if (json_is_object(json_object_get(rec, "awaiting")))
		printf("awaiting: %s\n", jstr(json_object_get(rec,
		    "awaiting"), "message"));
	/* after the cap or a halt: how many, which, what to read first */
	if (json_is_object(json_object_get(st, "budget")))
		printf("budget: %s\n", jstr(json_object_get(st, "budget"),
		    "text"));
	diag = json_object_get(st, "diagnosis");
	if (json_is_object(diag))
		printf("%sdiagnosis %s%s: %s\n  remedy: %s\n", col("\033[1m"),
		    jstr(diag, "code"), col("\033[0m"), jstr(diag, "message"),
		    jstr(diag, "remedy"));
	json_array_foreach(json_object_get(st, "warnings"), i, n)
		printf("warning: %s: %s\n", jstr(n, "code"),
		    jstr(n, "message"));
	print_config(st);
}

/*
 * GET path: the document as it came (as_json), or printed. A 404 is said
 * with gone, when the path has one.
 */
static int
show_doc(const char *path, int as_json, void (*print)(json_t *),
    const char *gone)
{
	struct sbuf out;
	json_t *doc;
	long code;

	sbuf_init(&out);
	if ((code = api("GET", path, NULL, &out)) < 0)
		return 1;
	if (code == 404 && gone) {
		fprintf(stderr, "tandemctl: %s\n", gone);
		sbuf_free(&out);
		return 1;
	}
	if (code != 200 || (doc = json_loads(out.s ? out.s : "", 0, NULL)) ==
	    NULL) {
		fprintf(stderr, "tandemctl: %s answered %ld\n", path, code);
		sbuf_free(&out);
		return 1;
	}
	if (as_json)
		ctl_put_json(out.s);
	else
		print(doc);
	json_decref(doc);
	sbuf_free(&out);
	return 0;
}

/* GET /status as a document; NULL (said on stderr) when it cannot be had. */
static json_t *
get_status(int quiet_refused)
{
	struct sbuf out;
	json_t *st = NULL;
	long code;

	sbuf_init(&out);
	code = api("GET", "/status", NULL, &out);
	if (code == 200)
		st = json_loads(out.s ? out.s : "", 0, NULL);
	if (code >= 0 && (code != 200 || !json_is_object(st)) &&
	    !quiet_refused)
		fprintf(stderr, "tandemctl: /status answered %ld\n", code);
	if (!json_is_object(st)) {
		json_decref(st);
		st = NULL;
	}
	sbuf_free(&out);
	return st;
}

static int
ctl_status(int as_json, int quiet)
{
	json_t *st;
	int serving;

	if (!quiet)
		return show_doc("/status", as_json, print_status, NULL);
	/* -q: for scripts, like systemctl is-active --quiet. */
	if ((st = get_status(0)) == NULL)
		return 1;
	serving = strcmp(jstr(st, "state"), "serving") == 0;
	json_decref(st);
	return serving ? 0 : 1;
}

/* A state's names: dp calls ray-up nodes-up (PRODUCT.md section 3). */
static int
state_valid(const char *s)
{
	static const char *const states[] = { "absent", "ray-up", "nodes-up",
	    "serving", "degraded" };
	size_t i;

	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (strcmp(s, states[i]) == 0)
			return 1;
	return 0;
}

/* Whether the cluster in state is where wait STATE wants it. */
static int
state_reached(const char *want, const char *state)
{
	if (strcmp(want, state) == 0)
		return 1;
	/* ray-up and nodes-up are on the way to serving: serving has them */
	if ((strcmp(want, "ray-up") == 0 || strcmp(want, "nodes-up") == 0) &&
	    strcmp(state, "serving") == 0)
		return 1;
	return 0;
}

/*
 * tandemctl wait STATE [--timeout S]: the deploy-and-wait of PRODUCT.md
 * section 5. Polls GET /status twice a second (it answers in
 * milliseconds), a line per change of state or action. Exit 0 in STATE;
 * 1 at the timeout, when the retries stopped (nothing changes until
 * someone acts), or when tandemd stopped answering for 10 s (a restart
 * under systemd takes about one).
 */
#define WAIT_POLL_MS	500
#define WAIT_UNREACHABLE_MS 10000

static int
ctl_wait(const char *want, double timeout_s)
{
	const struct timespec poll = { 0, WAIT_POLL_MS * 1000 * 1000 };
	uint64_t t0 = mono_ms(), last_answer = t0;
	char seen[128] = "";
	json_t *st, *diag;

	if (!state_valid(want)) {
		fprintf(stderr, "tandemctl wait: %s is not a state (absent, "
		    "ray-up, nodes-up, serving, degraded)\n", want);
		return 2;
	}
	for (;;) {
		uint64_t now = mono_ms();

		if ((st = get_status(1)) != NULL) {
			const char *state = jstr(st, "state");
			char line[128];

			last_answer = now;
			snprintf(line, sizeof(line), "%s/%s", state,
			    jstr(st, "action"));
			if (strcmp(line, seen) != 0) {
				printf("tandemctl wait: %.0f s: %s\n",
				    (double)(now - t0) / 1000.0, line);
				fflush(stdout);
				snprintf(seen, sizeof(seen), "%s", line);
			}
			if (state_reached(want, state)) {
				json_decref(st);
				return 0;
			}
			if (json_is_true(json_object_get(json_object_get(st,
			    "recovery"), "halted"))) {
				diag = json_object_get(st, "diagnosis");
				fprintf(stderr, "tandemctl wait: not %s: the "
				    "retries stopped", want);
				if (json_is_object(diag))
					fprintf(stderr, ": diagnosis %s: %s\n"
					    "  remedy: %s\n", jstr(diag, "code"),
					    jstr(diag, "message"),
					    jstr(diag, "remedy"));
				else
					fputc('\n', stderr);
				json_decref(st);
				return 1;
			}
			json_decref(st);
		} else {
			/* said once; the deadlines below say the rest */
			api_quiet = 1;
			if (now - last_answer >= WAIT_UNREACHABLE_MS) {
				fprintf(stderr, "tandemctl wait: tandemd has "
				    "not answered for %d s\n",
				    WAIT_UNREACHABLE_MS / 1000);
				return 1;
			}
		}
		if (timeout_s > 0 && (double)(now - t0) >= timeout_s * 1000) {
			fprintf(stderr, "tandemctl wait: not %s within %g s: "
			    "%s\n", want, timeout_s, seen[0] ? seen :
			    "no answer from tandemd");
			return 1;
		}
		nanosleep(&poll, NULL);
	}
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
			line = json_dumps(e, JSON_COMPACT | TANDEM_JSON_REALS);
			printf("%s\n", line ? line : "{}");
			free(line);
			continue;
		}
		/* UTC, as /status, the log and the page say every time */
		gmtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
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
			ctl_put_json(out.s ? out.s : "[]");
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

static json_int_t
jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/*
 * The last rebuild's trace: a step a line, in ms from the rebuild's start,
 * "*" on the critical path, and "gap" the time tandem took from the answer
 * to its next step.
 */
/*
 * vLLM's own timing of its start-up, node by node, with each phase's
 * share of the rebuild: what of a recovery was compile, not tandem. The
 * phases overlap (init engine holds compile and graph capture), so the
 * shares do not add up.
 */
static void
print_phases(json_t *a)
{
	json_t *p;
	size_t i;

	if (json_array_size(a) == 0)
		return;
	printf("vLLM's start-up, as its log timed it:\n");
	printf("  %-14s %10s %6s  %s\n", "phase", "seconds", "share", "node");
	json_array_foreach(a, i, p) {
		json_t *sh = json_object_get(p, "share");
		char share[24] = "-";

		if (json_is_number(sh))
			snprintf(share, sizeof(share), "%.0f%%",
			    json_number_value(sh) * 100);
		printf("  %-14s %10.2f %6s  %s\n", jstr(p, "phase"),
		    json_number_value(json_object_get(p, "seconds")), share,
		    json_is_string(json_object_get(p, "node")) ?
		    jstr(p, "node") : "-");
	}
}

static void
print_trace(json_t *t)
{
	json_t *s;
	size_t i;

	if (json_is_true(json_object_get(t, "running")))
		printf("rebuild %lld: running\n", (long long)jint(t,
		    "generation"));
	else
		printf("rebuild %lld (%s): %lld ms, tandem's overhead %lld ms, "
		    "waiting on nodes %lld ms\n", (long long)jint(t,
		    "generation"), jstr(t, "outcome"), (long long)jint(t,
		    "wall_ms"), (long long)jint(t, "overhead_ms"),
		    (long long)jint(t, "waiting_ms"));
	printf("  %7s %7s %7s %7s  %-14s %s\n", "sent", "answer", "wait",
	    "gap", "step", "node");
	json_array_foreach(json_object_get(t, "steps"), i, s) {
		json_t *a = json_object_get(s, "answer_ms");
		json_t *n = json_object_get(s, "next_ms");
		char ans[24] = "-", wait[24] = "-", gap[24] = "-";

		if (json_is_integer(a)) {
			snprintf(ans, sizeof(ans), "%lld", (long long)
			    json_integer_value(a));
			snprintf(wait, sizeof(wait), "%lld", (long long)
			    (json_integer_value(a) - jint(s, "sent_ms")));
		}
		if (json_is_integer(a) && json_is_integer(n))
			snprintf(gap, sizeof(gap), "%lld", (long long)
			    (json_integer_value(n) - json_integer_value(a)));
		printf("%s %7lld %7s %7s %7s  %-14s %s\n",
		    json_is_true(json_object_get(s, "critical")) ? "*" : " ",
		    (long long)jint(s, "sent_ms"), ans, wait, gap,
		    jstr(s, "step"), json_is_string(json_object_get(s,
		    "node")) ? jstr(s, "node") : "(all)");
	}
	print_phases(json_object_get(t, "vllm_phases"));
}

static int
ctl_trace(int as_json)
{
	return show_doc("/rebuilds/last", as_json, print_trace,
	    "no rebuild since tandemd started");
}

/* On stderr, so plan and check output stays the commands and results. */
static void
print_warnings(const struct config *cf)
{
	size_t i;

	for (i = 0; i < cf->warnings.n; i++)
		fprintf(stderr, "tandemctl: warning: %s\n", cf->warnings.v[i]);
}

/* The token as tandemd reads it (token_file_read), to send with a POST. */
static char *
read_token(const char *cfgfile)
{
	const char *path = token_file;
	struct config *cf = NULL;
	char err[ERRLEN];
	char *tok = NULL;

	if (path == NULL) {
		cf = conffile_load(cfgfile, err, sizeof(err));
		path = cf ? cf->api_token_file : NULL;
	}
	if (token_file_read(path, 0, &tok, err, sizeof(err)) == -1)
		fprintf(stderr, "tandemctl: %s\n", err);
	else if (tok == NULL && path != NULL)
		fprintf(stderr, "tandemctl: no token: %s\n", err);
	else if (tok == NULL)
		fprintf(stderr, "tandemctl: no token: pass --token-file or set "
		    "api_token_file in %s\n", cfgfile);
	config_free(cf);
	return tok;
}

/*
 * A POST's answer for the operator: 202's "ok" on stdout, any other its
 * "error" on stderr. 0 for 202, else 1; out is freed.
 */
static int
post_said(const char *path, long code, struct sbuf *out)
{
	json_t *j = json_loads(out->s ? out->s : "", 0, NULL);

	if (code == 202)
		printf("%s\n", jstr(j, "ok"));
	else
		fprintf(stderr, "tandemctl: %s answered %ld: %s\n", path, code,
		    jstr(j, "error"));
	fflush(stdout);
	json_decref(j);
	sbuf_free(out);
	return code == 202 ? 0 : 1;
}

static int
ctl_post(const char *cfgfile, const char *path)
{
	char *token = read_token(cfgfile);
	struct sbuf out;
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
	return post_said(path, code, &out);
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

/* --node NAME must name a node of the config; the message lists them. */
static int
node_known(const struct config *cf, const char *only)
{
	size_t i;

	if (only == NULL)
		return 1;
	for (i = 0; i < cf->nnodes; i++)
		if (strcmp(cf->nodes[i].name, only) == 0)
			return 1;
	fprintf(stderr, "tandemctl: no node named %s in %s; its nodes:", only,
	    file);
	for (i = 0; i < cf->nnodes; i++)
		fprintf(stderr, " %s", cf->nodes[i].name);
	fputc('\n', stderr);
	return 0;
}

/* plan and check: the config, --node checked against it, its warnings. */
static struct config *
load_for(const char *only)
{
	char err[ERRLEN];
	struct config *cf;

	if ((cf = conffile_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return NULL;
	}
	if (!node_known(cf, only)) {
		config_free(cf);
		return NULL;
	}
	print_warnings(cf);
	return cf;
}

/* tandemctl check: the preflight table over SSH, in parallel on every node. */
static int
ctl_check(int as_json, const char *only)
{
	struct config *cf;
	int rc;

	if ((cf = load_for(only)) == NULL)
		return 2;
	rc = ctl_run_check(cf, as_json, only);
	config_free(cf);
	return rc;
}

static int
ctl_plan(int as_json, const char *only)
{
	struct config *cf;
	struct plan p;
	struct sbuf out;
	int rc = 0;

	if ((cf = load_for(only)) == NULL)
		return 2;
	plan_rebuild(cf, 0, &p);
	if (as_json)
		rc = ctl_put_built(ctl_plan_json(cf, &p, only));
	else {
		sbuf_init(&out);
		plan_print(cf, &p, only, &out);
		fputs(out.s, stdout);
		sbuf_free(&out);
	}
	plan_free(&p);
	config_free(cf);
	return rc;
}

/* Against vLLM itself: vllm.url from the config by default. */
char *
ctl_vllm_url(const char *cfgfile, int named)
{
	char err[ERRLEN];
	struct config *cf;
	char *url;

	if (!named && access(cfgfile, F_OK) == -1)
		return xstrdup("http://127.0.0.1:8000");
	if ((cf = conffile_load(cfgfile, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return NULL;
	}
	url = xstrdup(cf->vllm.url);
	config_free(cf);
	return url;
}

int
ctl_vllm_key(const char *cfgfile, int named, char **key)
{
	char err[ERRLEN];
	struct config *cf;
	int rc = 0;

	*key = NULL;
	if (!named && access(cfgfile, F_OK) == -1)
		return 0;
	if ((cf = conffile_load(cfgfile, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return -1;
	}
	if ((*key = config_vllm_api_key(cf)) == NULL &&
	    token_file_read(cf->vllm.api_key_file, 0, key, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "tandemctl: %s\n", err);
		rc = -1;
	}
	config_free(cf);
	return rc;
}

/*
 * tandemctl reload: the unit's ExecReload, so that systemctl reload fails
 * when tandemd keeps its running config. SIGHUP to tandemd, then /status
 * until change.reloads counts it (tandemd counts each one as it handles
 * it), and while the change it began is being checked on the nodes (the
 * old cluster serves meanwhile): 1 when the file was refused or the
 * change's check failed, with why on stderr. A tandemd without the
 * counter only gets the signal.
 */
#define RELOAD_POLL_MS		200
#define RELOAD_TIMEOUT_S	80	/* below the unit's TimeoutStartSec */

/* the wait for a verdict: longer when probe.timeout_s is (api_from_config) */
static double	verdict_s = RELOAD_TIMEOUT_S;

/* -1 when absent: a tandemd from before the change object */
static json_int_t
jint_or(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

static int	wait_verdict(const char *, json_int_t, double);

/*
 * A SIGHUP to another process would end it (HUP's default): the pid must
 * be the one /status says answers (ours), or, without that, a process
 * named tandemd. -1 with why on stderr.
 */
static int
not_tandemd(long pid, json_int_t ours)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (ours > 0) {
		if (ours == pid)
			return 0;
		fprintf(stderr, "tandemctl reload: pid %ld is not tandemd's: "
		    "the tandemd at the API is pid %lld; nothing sent\n", pid,
		    (long long)ours);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = '\0';
	if (strcmp(comm, "tandemd") == 0)
		return 0;
	fprintf(stderr, "tandemctl reload: pid %ld is not tandemd (%s); "
	    "nothing sent\n", pid, comm[0] ? comm : "no such process");
	return -1;
}

static int
ctl_reload(const char *pidarg, double timeout_s)
{
	const char *p = pidarg ? pidarg : getenv("MAINPID");
	json_int_t before, ours = -1;
	json_t *st;
	char *end;
	long pid;

	if (p == NULL || (pid = strtol(p, &end, 10)) <= 1 || *end != '\0') {
		fprintf(stderr, "tandemctl reload: no tandemd process: --pid "
		    "PID, or $MAINPID as systemd sets it\n");
		return 2;
	}
	if (timeout_s <= 0)
		timeout_s = verdict_s;
	/*
	 * No /status (the API unreachable, its socket moved by this very
	 * edit): the reload still goes out, as a plain kill -HUP would send
	 * it, and the verdict is the journal's.
	 */
	before = -1;
	if ((st = get_status(0)) != NULL) {
		before = jint_or(json_object_get(st, "change"), "reloads");
		ours = jint_or(st, "pid");
		json_decref(st);
	} else
		fprintf(stderr, "tandemctl reload: the API does not answer; "
		    "reloading without waiting for the verdict\n");
	if (not_tandemd(pid, ours) == -1)
		return 1;
	if (kill((pid_t)pid, SIGHUP) == -1) {
		fprintf(stderr, "tandemctl reload: kill -HUP %ld: %s\n", pid,
		    strerror(errno));
		return 1;
	}
	if (before < 0)
		return 0;
	return wait_verdict("reload", before, timeout_s);
}

/*
 * /status until change.reloads passes before, and while the change that
 * reload (or apply) began is being checked on the nodes: 1 when it was
 * refused, with why on stderr.
 */
static int
wait_verdict(const char *cmd, json_int_t before, double timeout_s)
{
	const struct timespec poll = { 0, RELOAD_POLL_MS * 1000 * 1000 };
	uint64_t t0 = mono_ms();
	json_int_t now;
	json_t *st, *c;
	int rc;

	if (timeout_s <= 0)
		timeout_s = verdict_s;
	for (;;) {
		nanosleep(&poll, NULL);
		if ((double)(mono_ms() - t0) / 1000.0 > timeout_s) {
			fprintf(stderr, "tandemctl %s: no verdict within %g "
			    "s (tandemctl status says where it is)\n", cmd,
			    timeout_s);
			return 1;
		}
		if ((st = get_status(1)) == NULL)
			continue;
		c = json_object_get(st, "change");
		now = jint_or(c, "reloads");
		if (now <= before || (jint_or(c, "reload") == now &&
		    strcmp(jstr(c, "phase"), "checking") == 0)) {
			json_decref(st);
			continue;
		}
		rc = 0;
		if (!json_is_true(json_object_get(c, "last_reload_ok"))) {
			fprintf(stderr, "tandemctl %s: the file was refused, "
			    "the running config stays (the journal says why)\n",
			    cmd);
			rc = 1;
		} else if (jint_or(c, "reload") == now &&
		    strcmp(jstr(c, "phase"), "refused") == 0) {
			fprintf(stderr, "tandemctl %s: change refused, the "
			    "running config stays: %s\n  fix: %s\n", cmd,
			    jstr(c, "reason"), jstr(c, "fix"));
			rc = 1;
		}
		json_decref(st);
		return rc;
	}
}

/*
 * tandemctl apply FILE and tandemctl rollback: a POST to tandemd (apply's
 * with the file's text, parsed by tandemd as its own file), then its
 * verdict as tandemctl reload waits for it. The file is read here, with
 * the operator's rights: tandemd reads no path it is handed.
 */
static int
ctl_apply(const char *cfgfile, const char *applyfile, int no_rollback,
    double timeout_s)
{
	char *token, *path, *esc, *abs;
	json_int_t before;
	struct sbuf body, out;
	char buf[8192];
	json_t *st;
	CURL *cu;
	FILE *fp;
	size_t n;
	long code;
	int rc;

	sbuf_init(&body);
	if (applyfile) {
		if ((fp = fopen(applyfile, "r")) == NULL) {
			fprintf(stderr, "tandemctl apply: %s: %s\n", applyfile,
			    strerror(errno));
			return 2;
		}
		while ((n = fread(buf, 1, sizeof(buf), fp)) > 0 &&
		    body.len <= CONFFILE_MAX)
			sbuf_addn(&body, buf, n);
		if (ferror(fp) || body.len > CONFFILE_MAX) {
			fprintf(stderr, "tandemctl apply: %s: %s\n", applyfile,
			    ferror(fp) ? strerror(errno) : "larger than 4 MiB; "
			    "not a tandem config");
			fclose(fp);
			sbuf_free(&body);
			return 2;
		}
		fclose(fp);
	}
	if ((token = read_token(cfgfile)) == NULL) {
		sbuf_free(&body);
		return 2;
	}
	if ((st = get_status(0)) == NULL) {
		free(token);
		sbuf_free(&body);
		return 1;
	}
	before = jint_or(json_object_get(st, "change"), "reloads");
	json_decref(st);
	if (applyfile) {
		abs = realpath(applyfile, NULL);
		cu = curl_easy_init();
		esc = cu ? curl_easy_escape(cu, abs ? abs : applyfile, 0) :
		    NULL;
		path = xprintf("/apply?file=%s%s", esc ? esc : "",
		    no_rollback ? "&no_rollback=1" : "");
		curl_free(esc);
		curl_easy_cleanup(cu);
		free(abs);
	} else
		path = xstrdup("/rollback");
	sbuf_init(&out);
	code = api_body("POST", path, token, applyfile ? &body : NULL, &out);
	free(token);
	sbuf_free(&body);
	if (code < 0) {
		free(path);
		sbuf_free(&out);
		return 1;
	}
	rc = post_said(path, code, &out);
	free(path);
	if (rc != 0)
		return 1;
	if (before < 0)
		return 0;
	return wait_verdict(applyfile ? "apply" : "rollback", before,
	    timeout_s);
}

/*
 * The API's socket, from the config's api_socket. A config that was named
 * (--config, $TANDEM_CONFIG) or that exists must load: a typo in it is
 * said, never papered over with the default. Only when the default config
 * is absent, or this user may not read the config (not root, not in group
 * tandem), does the default socket stand in, and a failure says so.
 */
static int
api_from_config(void)
{
	char err[ERRLEN];
	struct config *cf;

	api_url = "http://localhost";
	if (access(file, R_OK) == -1 && ((errno == ENOENT && !file_named) ||
	    errno == EACCES)) {
		cfg_denied = errno == EACCES;
		api_sock = xstrdup(CTL_DEFAULT_SOCKET);
		api_why = cfg_denied ? NULL : "; no " CTL_DEFAULT_CONFIG ": the "
		    "default socket (--api URL or --config FILE names another)";
		return 0;
	}
	if ((cf = conffile_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return -1;
	}
	api_sock = xstrdup(cf->api_socket);
	verdict_s = preflight_verdict_timeout_s(cf, RELOAD_TIMEOUT_S);
	config_free(cf);
	return 0;
}

static int
run_cmd(const char *cmd, const struct ctl_args *a)
{
	if (strcmp(cmd, "plan") == 0)
		return ctl_plan(a->json, a->node);
	if (strcmp(cmd, "check") == 0)
		return ctl_check(a->json, a->node);
	if (api_url == NULL && api_from_config() == -1)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (strcmp(cmd, "status") == 0)
		return ctl_status(a->json, a->quiet);
	if (strcmp(cmd, "wait") == 0)
		return ctl_wait(a->arg, a->timeout_s);
	if (strcmp(cmd, "reload") == 0)
		return ctl_reload(a->pid, a->timeout_s);
	if (strcmp(cmd, "apply") == 0)
		return ctl_apply(file, a->arg, a->no_rollback, a->timeout_s);
	if (strcmp(cmd, "rollback") == 0)
		return ctl_apply(file, NULL, 0, a->timeout_s);
	if (strcmp(cmd, "events") == 0)
		return ctl_events(a->follow, a->json);
	if (strcmp(cmd, "trace") == 0)
		return ctl_trace(a->json);
	if (strcmp(cmd, "bundle") == 0) {
		char *token = read_token(file);
		int rc = token ? ctl_bundle(api_url, token, a->output) : 2;

		free(token);
		return rc;
	}
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
	const char *term = getenv("TERM");
	struct ctl_args a;
	int rc;

	if ((rc = ctl_parse(argc, argv, &a)) >= 0)
		return rc;
	/* TERM=dumb, like NO_COLOR (no-color.org), turns colour off. */
	color = isatty(1) && getenv("NO_COLOR") == NULL && term &&
	    strcmp(term, "dumb") != 0;
	if (strcmp(a.cmd, "bench") == 0) {
		log_init(0);
		return bench_main(a.argc, a.argv, &a);
	}
	if (strcmp(a.cmd, "init") == 0)
		return init_main(a.argc, a.argv, &a);
	file = a.config;
	file_named = a.config_named;
	api_url = a.api_url;
	token_file = a.token_file;
	return run_cmd(a.cmd, &a);
}
