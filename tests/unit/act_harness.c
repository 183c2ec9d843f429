/*
 * What the actions' unit tests put in place of the rest of tandemd;
 * act_harness.h says what each test gets. The actions and the runtime's
 * services beside them (remedy, hwcheck, evidence, workload, history,
 * state, keys, stop, tracing) are linked as tandemd links them, and the
 * actions see the runtime through act_env.h as tandemd fills it
 * (runtime_env.c, with the runtime's own plan code). No name of the
 * runtime is defined here (issue 44). What the harness sets instead, at
 * run time on the cluster it builds:
 *  - the executor (cl->exec: ssh, http, up), the test answering;
 *  - the funnel (cl->report: h_report, funnel.c's cluster_report in
 *    small): a verdict is recorded, the machine (lib/policy/fsm.c) takes
 *    its event, and a new action begins; a note keeps the diagnosis, and
 *    what was seen goes to runtime_env_apply as in tandemd;
 *  - node.c's fresh login for the recheck (act_env's login_again,
 *    node_env_init's in tandemd), which leaves the node's fatal and
 *    last_error as node.c's session does for the node view to read;
 *  - /status's text for the evidence bundle (api/render.c's).
 * What it defines at link time is its clock and its log, not fakes of the
 * runtime: mono_ms and now_s are the clock the test moves (sys/clock.c's
 * names), log_* and fatalx a log that prints with HARNESS_LOG set
 * (sys/log.c's names, the masks as tandemd masks).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act_harness.h"
#include "secret.h"
#include "slurp.h"
#include "vllmargs.h"

struct harness	 H;
uint64_t	 h_now_ms = 1000000;
double		 h_wall_s = 1.7e9;

/* sys/clock.c, sys/log.c */

uint64_t
mono_ms(void)
{
	return h_now_ms;
}

double
now_s(void)
{
	return h_wall_s;
}

void log_init(int v) { (void)v; }
void log_context(const char *a, const char *b, const char *c,
    unsigned long long g) { (void)a; (void)b; (void)c; (void)g; }

static void
vlog(const char *fmt, va_list ap)
{
	if (getenv("HARNESS_LOG")) {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

#define LOGFN(name, decl, ...) \
void name decl { va_list ap; __VA_ARGS__; va_start(ap, fmt); vlog(fmt, ap); \
	va_end(ap); }
LOGFN(log_info, (const char *fmt, ...))
LOGFN(log_warnx, (const char *fmt, ...))
LOGFN(log_debug, (const char *fmt, ...))
LOGFN(log_node, (int prio, const char *node, const char *fmt, ...),
    (void)prio, (void)node)
LOGFN(log_fields, (int prio, const struct log_fields *f, const char *fmt, ...),
    (void)prio, (void)f)

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	abort();
}

/* api/render.c's GET /status, for the evidence bundle */
static char *
h_status(struct cluster *cl)
{
	return strdup(cl->fsm.halted ? "{\"halted\": true}" :
	    "{\"halted\": false}");
}

/* funnel.c's hooks on the executor: tracing_step_sent, and op_answered's
   two calls, the harness counting the starts answered too. */
static void
h_answered(void *cl, struct op *o)
{
	tracing_step_answered(cl, o);
	stop_op_answered(cl, o);
	if (o->flags & OP_START)
		H.starts_answered++;
}

/* node.c's, for the funnel: the node's session finds out it is gone. */
static void
h_node_gone(struct cluster *cl, size_t node)
{
	cl->nodes[node].reachable = 0;
	H.down[node] = 1;
}

/*
 * node.c's login (act_env.h, node_env_init's): one ends at once, up,
 * unless the test has it refused. What it leaves is what node.c's session
 * leaves, which the node view reads (runtime_env.c): a refusal stops the
 * retries (fatal), and the last error says why.
 */
static void
h_login_again(void *ctx, size_t node)
{
	struct node_rt *n = &((struct cluster *)ctx)->nodes[node];

	if (!H.down[node])
		return;
	H.logins[node]++;
	H.down[node] = H.refused[node];
	n->fatal = H.refused[node];
	snprintf(n->last_error, sizeof(n->last_error), "%s", H.refused[node] ?
	    "host key of 10.0.0.2:22 (ed25519 SHA256:abc) is not in "
	    "/etc/tandem/known_hosts" : "ssh: connection refused");
}

/* log.c's masks: the harness's log is its own; the key masks as tandemd's. */
char *
log_mask_n(const char *text, size_t len, size_t *outlen)
{
	return secret_masked_n(text, len, NULL, outlen);
}

char *
log_mask(const char *text)
{
	return secret_masked(text ? text : "", NULL);
}

/* keys.c hands the log each secret it read; this log keeps none */
void
log_secret(const char *s)
{
	(void)s;
}

/* The diagnosis the funnel keeps (funnel.c's set_diag, in small). */
static void
h_keep_diag(struct cluster *cl, const struct diag *d, const char *node,
    const char *excerpt)
{
	(void)node;
	(void)excerpt;
	cl->diag = d;
	snprintf(H.last_diag, sizeof(H.last_diag), "%s", d ? d->code : "");
}

/* The funnel (funnel.c's cluster_report, in small): the one function
   the actions reach the runtime by that is not the runtime's own. */
static void
h_report(struct cluster *cl, const struct report *r)
{
	enum caction oa = cl->fsm.action;
	int oh = cl->fsm.halted;
	enum event ev = EV_PAUSE;
	int step = 1;
	size_t i;

	/* what was seen or noted is the runtime's; no verdict to record */
	if (r->kind == REPORT_NOTE || r->kind == REPORT_NODE_ERROR ||
	    r->kind == REPORT_SEEN || r->kind == REPORT_TIMED ||
	    r->kind == REPORT_PREFLIGHT || r->kind == REPORT_ADOPTED ||
	    r->kind == REPORT_STALLED) {
		H.nnotes++;
		if (r->kind == REPORT_NOTE)	/* as cluster_report does */
			h_keep_diag(cl, diag_get(r->diag), r->node < cl->nnodes ?
			    cl->nodes[r->node].conf->name : NULL, r->text);
		else
			runtime_env_apply(cl, r);
		return;
	}
	i = H.nreports < H_MAX_REPORTS ? H.nreports++ : H_MAX_REPORTS - 1;
	H.reports[i] = *r;
	free(H.texts[i]);
	H.texts[i] = strdup(r->text ? r->text : "");
	H.reports[i].text = H.texts[i];
	switch (r->kind) {
	case REPORT_EVENT:
		ev = r->ev;
		break;
	case REPORT_FAILED:
		h_keep_diag(cl, diag_get(r->diag), NULL, r->text);
		ev = diag_get(r->diag)->retryable ? EV_STEP_FAILED : EV_FATAL;
		break;
	case REPORT_NODE_LOST:
		ev = EV_NODES_MISSING;
		h_node_gone(cl, r->node);
		break;
	case REPORT_CHECK:
		step = fsm_decide(&cl->fsm, r->fact, &ev);
		if (step)
			h_keep_diag(cl, diag_get(r->diag), NULL, r->text);
		break;
	default:
		break;
	}
	if (step && fsm_step(&cl->fsm, ev) && (cl->fsm.action != oa ||
	    cl->fsm.halted != oh))
		action_begin(cl);
}

/* The fake executor. */

static struct asked *
ask(void)
{
	assert_true(H.nasked < H_MAX_ASKED);
	return &H.asked[H.nasked++];
}

static int
fake_ssh(void *ctx, size_t node, const char *cmd, double timeout_s,
    cmd_done_fn *done, void *arg)
{
	struct asked *a;

	(void)ctx;
	if (H.down[node])
		return -1;
	a = ask();
	memset(a, 0, sizeof(*a));
	a->node = node;
	a->cmd = strdup(cmd);
	a->timeout_s = timeout_s;
	a->done = done;
	a->arg = arg;
	return 0;
}

static void
fake_http(void *ctx, const char *url, const char *body, double timeout_s,
    http_done_fn *done, void *arg)
{
	struct asked *a = ask();

	(void)ctx;
	memset(a, 0, sizeof(*a));
	a->http = 1;
	a->node = NO_NODE;
	a->cmd = strdup(url);
	a->body = body ? strdup(body) : NULL;
	a->timeout_s = timeout_s;
	a->hdone = done;
	a->arg = arg;
}

static int
fake_up(void *ctx, size_t node)
{
	(void)ctx;
	return !H.down[node];
}

static void
bg_answered(struct owner *w, struct op *o, const struct answer *a)
{
	(void)w;
	(void)o;
	(void)a;
}

/* What state.c wrote, and the dir: nothing of a test outlives it. */
static void
h_remove_state_dir(void)
{
	DIR *d = opendir(H.state_dir);
	struct dirent *e;
	char path[PATH_MAX];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", H.state_dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(H.state_dir);
}


void
h_setup(const char *json)
{
	char err[ERRLEN];
	struct cluster *cl;
	struct config *cf = config_parse(json, "test.json", err, sizeof(err));
	size_t i;

	if (cf == NULL)
		fail_msg("config: %s", err);
	memset(&H, 0, sizeof(H));
	snprintf(H.state_dir, sizeof(H.state_dir), "/tmp/tandem-act-XXXXXX");
	cl = H.cl = calloc(1, sizeof(*cl));
	cl->cf = H.cf = cf;
	cl->nnodes = cf->nnodes;
	cl->nodes = calloc(cf->nnodes, sizeof(*cl->nodes));
	for (i = 0; i < cf->nnodes; i++) {
		cl->nodes[i].idx = i;
		cl->nodes[i].cl = cl;
		cl->nodes[i].conf = &cf->nodes[i];
		cl->nodes[i].reachable = 1;
		cl->nodes[i].tried = 1;
		cl->nodes[i].gpus = -1;
	}
	/* libuv's thread pool writes the evidence bundle (evidence.c) */
	cl->loop = uv_default_loop();
	/* state.c writes state.json and events.json there (history.c) */
	if (mkdtemp(H.state_dir) == NULL)
		fail_msg("mkdtemp %s", H.state_dir);
	cl->state_dir = strdup(H.state_dir);
	cl->exec.ssh = fake_ssh;
	cl->exec.http = fake_http;
	cl->exec.up = fake_up;
	cl->exec.sent = tracing_step_sent;
	cl->exec.answered = h_answered;
	cl->exec.hook_arg = cl;
	cl->report = h_report;	/* hwcheck.c's door to the funnel */
	runtime_env_init(cl);
	cl->env.login_again = h_login_again;
	owner_init(&cl->bg, &cl->exec, bg_answered);
	hw_init(cl);
	evidence_init(cl, h_status);
	fsm_init(&cl->fsm, cf->topology == TOPO_DP);
	cl->plan.hash = plan_hash(cf);
	cl->rec.gmu_step = -1;
	cl->adopted = 1;
	cl->preflight_passed = 1;
}

void
h_setup_file(const char *path)
{
	char *json = slurp(path);

	h_setup(json);
	free(json);
}

void
h_teardown(void)
{
	struct cluster *cl = H.cl;
	size_t i;

	/* what is still unanswered is answered as the sessions do at exit */
	if (cl->act) {
		action_end(cl->act);
		cl->act = NULL;
		cl->exec.acting = NULL;
	}
	owner_cancel(&cl->bg);
	owner_cancel(&cl->hw.own);
	owner_cancel(&cl->ev.own);
	for (i = 0; i < H.nasked; i++)
		if (!H.asked[i].answered)
			h_fail(&H.asked[i], "shutting down");
	for (i = 0; i < H.nasked; i++) {
		free(H.asked[i].cmd);
		free(H.asked[i].body);
	}
	h_drain();
	h_remove_state_dir();
	free(cl->state_dir);
	history_free(cl);
	for (i = 0; i < H_MAX_REPORTS; i++)
		free(H.texts[i]);
	action_reap(cl);
	hw_free(cl);
	evidence_free(cl);
	if (cl->plan.built)
		plan_free(&cl->plan.plan);
	free(cl->plan.rdma);
	cl->plan.rdma = NULL;
	trace_free(&cl->trace);
	trace_free(&cl->trace_last);
	free(cl->nodes);
	config_free(cl->cf);
	free(cl);
	memset(&H, 0, sizeof(H));
}

void
h_enter(enum cstate s, enum caction a)
{
	H.cl->fsm.state = s;
	H.cl->fsm.action = a;
	action_begin(H.cl);
}

void
h_tick(uint64_t ms)
{
	struct cluster *cl = H.cl;

	h_now_ms += ms;
	h_wall_s += (double)ms / 1000.0;
	action_reap(cl);
	if (cl->act && cl->act->ops->tick)
		cl->act->ops->tick(cl->act, h_now_ms);
}

static int
holds(const struct asked *a, size_t node, const char *needle)
{
	return !a->answered && (node == NO_NODE || a->node == node) &&
	    (needle == NULL || strstr(a->cmd, needle) != NULL);
}

struct asked *
h_find(size_t node, const char *needle)
{
	size_t i;

	for (i = 0; i < H.nasked; i++)
		if (holds(&H.asked[i], node, needle))
			return &H.asked[i];
	fail_msg("nothing asked on node %zu holds \"%s\"", node,
	    needle ? needle : "");
	return NULL;
}

size_t
h_count(const char *needle)
{
	size_t i, n = 0;

	for (i = 0; i < H.nasked; i++)
		n += holds(&H.asked[i], NO_NODE, needle);
	return n;
}

static void
deliver(struct asked *a, int exit_code, const char *out, const char *err,
    const char *error)
{
	struct cmd_result r = { .exit_code = exit_code, .out = out ? out : "",
	    .outlen = out ? strlen(out) : 0, .err = err ? err : "",
	    .errlen = err ? strlen(err) : 0, .error = error };

	assert_false(a->answered);
	a->answered = 1;
	if (a->http) {
		struct http_result h = { .status = 0, .body = "",
		    .error = error ? error : "no answer" };

		a->hdone(&h, a->arg);
		return;
	}
	a->done(&r, a->arg);
}

void
h_answer(struct asked *a, int exit_code, const char *out, const char *err)
{
	deliver(a, exit_code, out, err, NULL);
}

void
h_fail(struct asked *a, const char *error)
{
	deliver(a, -1, NULL, NULL, error);
}

void
h_http(struct asked *a, long status, const char *body)
{
	struct http_result h = { .status = status, .body = body ? body : "",
	    .bodylen = body ? strlen(body) : 0 };

	assert_true(a->http);
	assert_false(a->answered);
	a->answered = 1;
	a->hdone(&h, a->arg);
}

void
h_http_timeout(struct asked *a)
{
	struct http_result h = { .status = 0, .body = "", .error =
	    "Operation timed out", .timed_out = 1, .elapsed_s = a->timeout_s };

	assert_true(a->http);
	assert_false(a->answered);
	a->answered = 1;
	a->hdone(&h, a->arg);
}

void
h_answer_all(const char *needle, int exit_code, const char *out,
    const char *err)
{
	size_t i;

	for (i = 0; i < H.nasked; i++)
		if (holds(&H.asked[i], NO_NODE, needle))
			h_answer(&H.asked[i], exit_code, out, err);
}

char *
h_data(const char *path)
{
	char *p, *s;

	if (asprintf(&p, "tests/unit/data/%s", path) < 0)
		fail();
	s = slurp(p);
	if (s == NULL)
		fail_msg("cannot read %s", p);
	free(p);
	return s;
}

enum caction
h_action(void)
{
	return H.cl->fsm.action;
}

int
h_halted(void)
{
	return H.cl->fsm.halted;
}

enum cstate
h_state(void)
{
	return H.cl->fsm.state;
}

const struct report *
h_last(void)
{
	assert_true(H.nreports > 0);
	return &H.reports[H.nreports - 1];
}

int
h_reported(enum report_kind k, int what)
{
	size_t i;

	for (i = 0; i < H.nreports; i++)
		if (H.reports[i].kind == k && (k == REPORT_EVENT ?
		    (int)H.reports[i].ev == what : (k == REPORT_FAILED ||
		    k == REPORT_CHECK) ? (int)H.reports[i].diag == what : 1))
			return 1;
	return 0;
}
