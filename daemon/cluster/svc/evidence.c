/*
 * Keep the evidence when retries stop (issue 33 item 3). When a diagnosis
 * no retry fixes stops them (halted), or recovery.max_rebuilds_per_hour
 * makes the backoff wait for the hour, tandem asks every node for what a
 * person would look at first (lib/api/bundle.c's plan: the containers' logs
 * and state, nvidia-smi, the driver's kernel lines; vLLM's log and ray
 * status from the head) before anything is torn down: a teardown and a
 * backoff wait for the answers (gathering). With tandemd's own status,
 * events and last rebuild's trace and a README that says what happened
 * (lib/policy/budget.c), the tar goes to the state dir's bundles/
 * (sys/bundle_store.c) from libuv's thread pool, as state.c writes its
 * files: the disk may be slow, the loop must not wait for it.
 *
 * The questions are the cluster's own (cl->ev.own), not an action's: a
 * halt is the idle action, and tandemctl resume may begin a rebuild while
 * they still run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle_store.h"
#include "cluster_int.h"

#define EVIDENCE_TIMEOUT_S	60

static void
collected_free(struct evidence *e)
{
	bundle_free(&e->b);
	bundle_plan_free(&e->plan);
}

static void
write_work(uv_work_t *req)
{
	struct evidence *e = req->data;

	e->err[0] = '\0';
	if (bundle_store_write(e->name, e->tar.s, e->tar.len, e->err,
	    sizeof(e->err)) == -1 && e->err[0] == '\0')
		snprintf(e->err, sizeof(e->err), "cannot write the bundle");
}

static void
write_done(uv_work_t *req, int status)
{
	struct evidence *e = req->data;

	(void)status;
	if (e->err[0])
		log_warnx("evidence bundle %s: %s", e->name, e->err);
	else {
		snprintf(e->latest, sizeof(e->latest), "%s", e->name);
		log_info("evidence bundle kept: %s (%zu bytes; tandemctl "
		    "bundle)", e->name, e->tar.len);
	}
	sbuf_free(&e->tar);
	e->writing = 0;
}

/* Every file of the bundle: vLLM's log and docker's name the API key. */
static void
add_masked(struct bundle *b, const char *name, const char *data, size_t len,
    int rc, const char *note)
{
	size_t n;
	char *shown = log_mask_n(data, len, &n);
	/* the note quotes a command's stderr: a key there is masked too */
	char *said = note ? log_mask(note) : NULL;

	bundle_add(b, name, shown, n, rc, said);
	free(said);
	free(shown);
}

/* The daemon's own documents, as GET /status, /events, /rebuilds/last. */
static void
add_doc(struct bundle *b, const char *name, json_t *j, const char *none)
{
	char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;

	if (s)
		add_masked(b, name, s, strlen(s), -1, NULL);
	else
		bundle_add(b, name, "", 0, -1, none);
	free(s);
	json_decref(j);
}

/* Every answer is in: the tar, then its write off the loop. */
static void
finish(struct cluster *cl)
{
	struct evidence *e = &cl->ev;
	struct budget_summary *bs = xmalloc(sizeof(*bs));
	char *status, *summary;
	char err[200];

	status = e->status ? e->status(cl) : NULL;
	if (status)
		add_masked(&e->b, BUNDLE_STATUS, status, strlen(status), -1,
		    NULL);
	free(status);
	add_doc(&e->b, BUNDLE_EVENTS, history_json(cl, 0), NULL);
	add_doc(&e->b, BUNDLE_TRACE, cluster_trace_json(cl), "no rebuild "
	    "since tandemd started");
	cluster_budget(cl, bs);
	status = xprintf("%s\n\n%s%s%s", e->why, bs->text, cl->diag ?
	    "\n\nThe last diagnosis: " : "", cl->diag ? cl->diag_msg : "");
	summary = log_mask(status);
	free(status);
	free(bs);
	bundle_name(now_s(), cl->generation, e->name, sizeof(e->name));
	sbuf_init(&e->tar);
	if (bundle_tar(&e->b, summary, (uint64_t)now_s(), BUNDLE_MAX, &e->tar,
	    err, sizeof(err)) == -1) {
		log_warnx("evidence bundle: %s", err);
		sbuf_free(&e->tar);
		collected_free(e);
		free(summary);
		return;
	}
	free(summary);
	collected_free(e);
	e->writing = 1;
	e->req.data = e;
	if (uv_queue_work(cl->loop, &e->req, write_work, write_done) != 0) {
		write_work(&e->req);
		write_done(&e->req, 0);
	}
}

static void
answered(struct owner *w, struct op *o, const struct answer *ans)
{
	struct cluster *cl = container_of(w, struct cluster, ev.own);
	struct evidence *e = &cl->ev;
	const struct cmd_result *r = ans->cmd;
	const struct bundle_item *it;
	char note[160], line[120];

	if (o->tag < 0 || (size_t)o->tag >= e->plan.n)
		return;
	it = &e->plan.v[o->tag];
	note[0] = '\0';
	if (r->error)
		utf8_fmt(note, sizeof(note), "no answer: %s", r->error);
	else if (r->exit_code != 0 && r->errlen)
		utf8_fmt(note, sizeof(note), "stderr: %s", utf8_first_line(
		    r->err, line, sizeof(line)));
	add_masked(&e->b, it->name, r->error ? "" : r->out, r->error ? 0 :
	    r->outlen, r->error ? -1 : r->exit_code, note);
	if (owner_count(&e->own) == 0)
		finish(cl);
}

void
evidence_init(struct cluster *cl, char *(*status)(struct cluster *))
{
	owner_init(&cl->ev.own, &cl->exec, answered);
	/* new sessions: the questions end with the old ones' error, and the
	 * bundle is written whole */
	owners_register(&cl->ev.own, OWNERS_FREE);
	cl->ev.status = status;
}

void
evidence_free(struct cluster *cl)
{
	owner_cancel(&cl->ev.own);
	collected_free(&cl->ev);
}

int
evidence_gathering(const struct cluster *cl)
{
	return hw_busy(cl) || owner_count(&cl->ev.own) > 0;
}

int
evidence_writing(const struct cluster *cl)
{
	return cl->ev.writing;
}

const char *
evidence_latest(const struct cluster *cl)
{
	return cl->ev.latest[0] ? cl->ev.latest : NULL;
}

void
evidence_collect(struct cluster *cl, const char *why)
{
	struct evidence *e = &cl->ev;
	char note[160];
	size_t i;

	if (owner_count(&e->own) > 0 || e->writing || cl->stopping ||
	    cl->once.on)
		return;
	collected_free(e);
	utf8_fmt(e->why, sizeof(e->why), "%s", why);
	/* the driver's lines of the last hour: the failures this is about */
	bundle_plan(cl->cf, now_s() - RECOVERY_HOUR_S, &e->plan);
	log_info("retries stopped (%s): keeping the evidence (%zu files from "
	    "the nodes)", why, e->plan.n);
	for (i = 0; i < e->plan.n; i++) {
		const struct bundle_item *it = &e->plan.v[i];

		if (op_node_up(&cl->exec, it->node) && op_ssh(&e->own,
		    it->node, (int)i, 0, it->cmd, EVIDENCE_TIMEOUT_S,
		    TS_COUNT) == 0)
			continue;
		utf8_fmt(note, sizeof(note), "not asked: %s unreachable",
		    cl->nodes[it->node].conf->name);
		bundle_add(&e->b, it->name, "", 0, -1, note);
	}
	if (owner_count(&e->own) == 0)
		finish(cl);
}

void
cluster_status_doc(struct cluster *cl, char *(*render)(struct cluster *))
{
	cl->ev.status = render;
}

/* The events as lib/policy/budget.c reads them: times and reasons, no copies. */
void
cluster_budget(const struct cluster *cl, struct budget_summary *s)
{
	const struct history *h = &cl->hist;
	struct budget_event *ev = xcalloc(h->n ? h->n : 1, sizeof(*ev));
	uint64_t seq, first = h->seq - h->n + 1;
	size_t n = 0;

	for (seq = first; h->n && seq <= h->seq; seq++) {
		const struct event_rec *r = &h->ev[(seq - 1) % EVENTS_MAX];

		ev[n].time = r->time;
		ev[n++].reason = r->reason;
	}
	budget_summarize(cl->rec.rebuilds, cl->rec.nrebuilds,
	    cl->cf->recovery.max_rebuilds_per_hour, (double)mono_ms() / 1000.0,
	    ev, n, now_s(), evidence_latest(cl), s);
	free(ev);
}

json_t *
cluster_budget_json(const struct cluster *cl)
{
	struct budget_summary *s;
	json_t *j;

	if (!cl->fsm.halted && !cluster_capped(cl))
		return NULL;
	s = xmalloc(sizeof(*s));
	cluster_budget(cl, s);
	j = budget_json(s);
	free(s);
	return j;
}
