/*
 * tandemctl's reads of tandemd's API (tandemctl(1)): status, wait, events
 * and trace, each a table or with --json the document as tandemd sent it.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

static int		 color;	/* the terminal's: ctl_show_color */

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

const char *
ctl_show_str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

json_int_t
ctl_show_int(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* -1 when absent: a tandemd from before the change object */
json_int_t
ctl_show_int_or(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : -1;
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
		printf("config: %s %s (%s)%s%s\n", ctl_show_str(cfg, "running"),
		    ctl_show_str(cfg, "checksum"), ctl_show_str(cfg, "file"),
		    json_is_string(json_object_get(cfg, "message")) ? "\n  " :
		    "", json_is_string(json_object_get(cfg, "message")) ?
		    ctl_show_str(cfg, "message") : "");
	c = json_object_get(st, "change");
	phase = ctl_show_str(c, "phase");
	if (strcmp(phase, "checking") == 0 || strcmp(phase, "switching") == 0)
		printf("change: %s, %s to %s\n", phase, ctl_show_str(c, "from"),
		    ctl_show_str(c, "to"));
	else if (strcmp(phase, "refused") == 0)
		printf("change: %s: %s\n  fix: %s\n", ctl_show_str(c, "result"),
		    ctl_show_str(c, "reason"), ctl_show_str(c, "fix"));
}

static void
print_status(json_t *st)
{
	json_t *nodes = json_object_get(st, "nodes"), *n, *diag, *ray, *vllm;
	json_t *rec;
	size_t i;
	const char *acc = ctl_show_str(st, "accelerator");

	printf("cluster %s: %s%s%s, %s (mode %s, generation %lld, since %s)\n",
	    ctl_show_str(st, "name"), state_color(ctl_show_str(st, "state")),
	    ctl_show_str(st, "state"),
	    col("\033[0m"), ctl_show_str(st, "action"), ctl_show_str(st,
	    "mode"),
	    (long long)json_integer_value(json_object_get(st, "generation")),
	    ctl_show_str(st, "since"));
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
		    ctl_show_str(n, "name"), ctl_show_str(n, "role"),
		    ctl_show_str(n, "ssh_host"),
		    ctl_show_str(n, "ip"), json_is_true(json_object_get(n,
		    "reachable")) ? "yes" : "NO", ctl_show_str(n, "container"),
		    gpus,
		    json_is_string(json_object_get(n, "last_error")) ?
		    ctl_show_str(n, "last_error") : "");
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
	printf("vllm: %s %s, %s\n", ctl_show_str(vllm, "url"),
	    ctl_show_str(vllm, "model"),
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
		printf("awaiting: %s\n", ctl_show_str(json_object_get(rec,
		    "awaiting"), "message"));
	/* after the cap or a halt: how many, which, what to read first */
	if (json_is_object(json_object_get(st, "budget")))
		printf("budget: %s\n", ctl_show_str(json_object_get(st,
		    "budget"),
		    "text"));
	diag = json_object_get(st, "diagnosis");
	if (json_is_object(diag))
		printf("%sdiagnosis %s%s: %s\n  remedy: %s\n", col("\033[1m"),
		    ctl_show_str(diag, "code"), col("\033[0m"),
		    ctl_show_str(diag, "message"),
		    ctl_show_str(diag, "remedy"));
	json_array_foreach(json_object_get(st, "warnings"), i, n)
		printf("warning: %s: %s\n", ctl_show_str(n, "code"),
		    ctl_show_str(n, "message"));
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
	if ((code = ctl_api("GET", path, NULL, &out)) < 0)
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
json_t *
ctl_show_get_status(int quiet_refused)
{
	struct sbuf out;
	json_t *st = NULL;
	long code;

	sbuf_init(&out);
	code = ctl_api("GET", "/status", NULL, &out);
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

int
ctl_show_status(int as_json, int quiet)
{
	json_t *st;
	int serving;

	if (!quiet)
		return show_doc("/status", as_json, print_status, NULL);
	/* -q: for scripts, like systemctl is-active --quiet. */
	if ((st = ctl_show_get_status(0)) == NULL)
		return 1;
	serving = strcmp(ctl_show_str(st, "state"), "serving") == 0;
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

int
ctl_show_wait(const char *want, double timeout_s)
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

		if ((st = ctl_show_get_status(1)) != NULL) {
			const char *state = ctl_show_str(st, "state");
			char line[128];

			last_answer = now;
			snprintf(line, sizeof(line), "%s/%s", state,
			    ctl_show_str(st, "action"));
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
					    "  remedy: %s\n", ctl_show_str(diag,
					    "code"),
					    ctl_show_str(diag, "message"),
					    ctl_show_str(diag, "remedy"));
				else
					fputc('\n', stderr);
				json_decref(st);
				return 1;
			}
			json_decref(st);
		} else {
			/* said once; the deadlines below say the rest */
			ctl_api_quiet();
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
		    ctl_show_str(e, "from"), ctl_show_str(e, "to"),
		    ctl_show_str(e, "action"),
		    ctl_show_str(e, "reason"));
	}
	json_decref(a);
	fflush(stdout);
	return last;
}

int
ctl_show_get_events(long long since, struct sbuf *out)
{
	char path[64];
	long code;

	snprintf(path, sizeof(path), "/events?since=%lld", since);
	if ((code = ctl_api("GET", path, NULL, out)) < 0)
		return -1;
	if (code != 200) {
		fprintf(stderr, "tandemctl: /events answered %ld\n", code);
		return -1;
	}
	return 0;
}

int
ctl_show_events(int follow, int as_json)
{
	long long last = 0;
	struct sbuf out;

	/* Without --follow, --json is the API's own array. */
	do {
		sbuf_init(&out);
		if (ctl_show_get_events(last, &out) == -1) {
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
		printf("  %-14s %10.2f %6s  %s\n", ctl_show_str(p, "phase"),
		    json_number_value(json_object_get(p, "seconds")), share,
		    json_is_string(json_object_get(p, "node")) ?
		    ctl_show_str(p, "node") : "-");
	}
}

static void
print_trace(json_t *t)
{
	json_t *s;
	size_t i;

	if (json_is_true(json_object_get(t, "running")))
		printf("rebuild %lld: running\n", (long long)ctl_show_int(t,
		    "generation"));
	else
		printf("rebuild %lld (%s): %lld ms, tandem's overhead %lld ms, "
		    "waiting on nodes %lld ms\n", (long long)ctl_show_int(t,
		    "generation"), ctl_show_str(t, "outcome"),
		    (long long)ctl_show_int(t,
		    "wall_ms"), (long long)ctl_show_int(t, "overhead_ms"),
		    (long long)ctl_show_int(t, "waiting_ms"));
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
			    (json_integer_value(a) - ctl_show_int(s,
			    "sent_ms")));
		}
		if (json_is_integer(a) && json_is_integer(n))
			snprintf(gap, sizeof(gap), "%lld", (long long)
			    (json_integer_value(n) - json_integer_value(a)));
		printf("%s %7lld %7s %7s %7s  %-14s %s\n",
		    json_is_true(json_object_get(s, "critical")) ? "*" : " ",
		    (long long)ctl_show_int(s, "sent_ms"), ans, wait, gap,
		    ctl_show_str(s, "step"), json_is_string(json_object_get(s,
		    "node")) ? ctl_show_str(s, "node") : "(all)");
	}
	print_phases(json_object_get(t, "vllm_phases"));
}

int
ctl_show_trace(int as_json)
{
	return show_doc("/rebuilds/last", as_json, print_trace,
	    "no rebuild since tandemd started");
}

void
ctl_show_color(int on)
{
	color = on;
}
