/*
 * Hardware faults are not retries (issue 33 item 2). After every failure,
 * before the retry, each node is asked what its accelerators said: the
 * GPU driver's Xid lines in the kernel log since the node's cursor and
 * the GPUs' ECC counts (NVIDIA), or npu-smi's health column (Ascend).
 * lib/policy/hwfault.c judges: a fatal class (the GPU fell off the bus, an
 * uncontained ECC error, ...) is gpu-xid and stops the retries instead of
 * burning the hourly cap; an application fault (Xid 13, 43, ...) is an
 * event and the retry goes on; uncorrectable ECC counts are a warning; a
 * log tandem may not read is said to be unread, never taken for clean.
 * The preflight reads the same lines (lib/preflight/preflight.c) and hands them
 * here (hw_preflight_seen) for the counts, events and cursors.
 *
 * The reads are the cluster's own ops (cl->hw.own), not an action's: a
 * failure is followed by a backoff or at once by a teardown, and both wait
 * for the read (hw_busy) before they go on, so that a fatal finding stops
 * the retries before the next attempt and before anything is torn down.
 *
 * The cursors are wall-clock times, unlike every other time of the
 * runtime (remedy.c): they are compared with the times the kernel log
 * prints, which are the nodes' wall clocks (journalctl --since @T, dmesg's
 * ISO times). A node whose clock runs far from tandemd's host may be read
 * from a little too early (the lines already counted are in seen) or too
 * late; the nodes of a multi-node vLLM keep NTP time for NCCL anyway.
 * tandemctl resume, the operator's "I fixed it", moves every cursor to
 * now; a fatal line stays ahead of its node's cursor until then, so a
 * restarted tandemd finds it again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "cluster_int.h"

#define HW_TIMEOUT_S	20

enum { HW_KLOG, HW_ECC, HW_NPU };

/* What one node answered to this read. */
struct hw_answers {
	struct xid_scan		*scan;
	struct gpu_ecc_list	*ecc;
	struct accel_info	*npu;
	int			 asked;
};

static void
answers_free(struct hwcheck *h)
{
	size_t i;

	for (i = 0; i < h->nat; i++) {
		free(h->at[i].scan);
		free(h->at[i].ecc);
		free(h->at[i].npu);
	}
	free(h->at);
	h->at = NULL;
	h->nat = 0;
}

void
hw_free(struct cluster *cl)
{
	owner_cancel(&cl->hw.own);
	answers_free(&cl->hw);
	free(cl->hw.cur);
	cl->hw.cur = NULL;
	cl->hw.ncur = 0;
}

int
hw_busy(const struct cluster *cl)
{
	return owner_count(&cl->hw.own) > 0;
}

static struct hw_cursor *
cursor(struct cluster *cl, const char *node)
{
	struct hwcheck *h = &cl->hw;
	struct hw_cursor *c;
	size_t i;

	for (i = 0; i < h->ncur; i++)
		if (strcmp(h->cur[i].node, node) == 0)
			return &h->cur[i];
	h->cur = xrealloc(h->cur, (h->ncur + 1) * sizeof(*h->cur));
	c = &h->cur[h->ncur++];
	memset(c, 0, sizeof(*c));
	utf8_copy(c->node, sizeof(c->node), node);
	return c;
}

double
hw_since(struct cluster *cl, size_t node)
{
	struct hw_cursor *c = cursor(cl, cl->nodes[node].conf->name);

	c->asked = now_s();
	return c->since;
}

static void
note(struct cluster *cl, const char *what)
{
	log_warnx("%s", what);
	history_note(cl, what);
}

/*
 * One node's Xid lines: each new one counted in tandem_gpu_xid_total and,
 * when it is not the fatal finding itself, told in the events. The cursor
 * moves to when they were asked, unless a fatal line stands: that one is
 * read again until tandemctl resume.
 */
static void
xid_lines(struct cluster *cl, size_t node, const struct xid_scan *sc,
    const struct gpu_ecc_list *ecc, int fatal)
{
	const char *name = cl->nodes[node].conf->name;
	struct hw_cursor *c = cursor(cl, name);
	char what[420], line[440];
	size_t i;

	for (i = 0; i < sc->n; i++) {
		const struct xid_event *e = &sc->ev[i];

		if (!xid_seen_add(&c->seen, e))
			continue;
		metrics_count_xid(cl->cnt.xid, &cl->cnt.nxid, XID_COUNTS_MAX,
		    name, e->code);
		if (e->cls == XID_FATAL)
			continue;
		xid_describe(e, name, ecc ? gpu_ecc_index(ecc, e->pci) : -1,
		    what, sizeof(what));
		utf8_fmt(line, sizeof(line), "%s (%s): noted, %s", what,
		    xid_class_name(e->cls), e->cls == XID_APP ? "a rebuild "
		    "fixes it" : "not a reason to stop");
		note(cl, line);
	}
	if (sc->dropped)
		log_warnx("node %s: %zu more Xid lines than tandem keeps "
		    "(%d)", name, sc->dropped, XID_EVENTS_MAX);
	if (!sc->unreadable && !fatal && c->asked > 0) {
		c->since = c->asked;
		state_save(cl);
	}
}

/*
 * The node's verdict: its warnings kept for /status, what could not be
 * read said once in the log, and the first fatal finding, or NULL.
 */
static const struct hw_finding *
judge_node(struct cluster *cl, size_t node, const struct hw_report *rep)
{
	struct node_rt *n = &cl->nodes[node];
	const struct hw_finding *fatal = hw_fatal(rep);
	size_t i;

	memset(&n->hw_warn, 0, sizeof(n->hw_warn));
	for (i = 0; i < rep->n; i++) {
		const struct hw_finding *f = &rep->f[i];

		if (f->cls == HW_WARN && n->hw_warn.cls == HW_OK) {
			n->hw_warn = *f;
			log_warnx("warning: %s: %s", f->warning, f->msg);
		}
		if (f->cls == HW_UNREAD)
			log_warnx("%s", f->msg);
	}
	return fatal;
}

void
hw_preflight_seen(struct cluster *cl, const struct preflight *pf)
{
	const struct gpu_ecc_list *ecc;
	const struct xid_scan *sc;
	struct hw_report *rep;
	size_t i;

	if (cl->cf->container.accelerator == ACCEL_ASCEND) {
		/*
		 * npu-smi's Warning and Alarm: warnings in /status; its
		 * Critical failed the preflight's devices check already.
		 */
		const struct accel_info *npu;

		rep = xmalloc(sizeof(*rep));
		for (i = 0; i < cl->nnodes; i++) {
			if ((npu = preflight_npu(pf, i)) == NULL ||
			    npu->answer != AA_READ)
				continue;
			hw_judge_ascend(cl->nodes[i].conf->name, npu, rep);
			(void)judge_node(cl, i, rep);
		}
		free(rep);
		return;
	}
	if (cl->cf->container.accelerator != ACCEL_NVIDIA)
		return;
	rep = xmalloc(sizeof(*rep));
	for (i = 0; i < cl->nnodes; i++) {
		if ((sc = preflight_xid(pf, i, &ecc)) == NULL)
			continue;
		hw_judge_nvidia(cl->nodes[i].conf->name, sc, NULL, ecc, rep);
		/* a fatal one is the preflight's own failure (devices column) */
		xid_lines(cl, i, sc, ecc, judge_node(cl, i, rep) != NULL);
	}
	free(rep);
}

/* Every node answered: notes and warnings, then the first fatal stops. */
static void
judge(struct cluster *cl)
{
	struct hwcheck *h = &cl->hw;
	const struct hw_finding *f, *first = NULL;
	struct hw_report *rep = xmalloc(sizeof(*rep));
	struct hw_finding keep;
	size_t i, at = NO_NODE;

	for (i = 0; i < h->nat && i < cl->nnodes; i++) {
		struct hw_answers *a = &h->at[i];
		const char *name = cl->nodes[i].conf->name;

		if (!a->asked)
			continue;
		if (a->npu)
			hw_judge_ascend(name, a->npu, rep);
		else
			hw_judge_nvidia(name, a->scan, NULL, a->ecc, rep);
		f = judge_node(cl, i, rep);
		if (a->scan)
			xid_lines(cl, i, a->scan, a->ecc, f != NULL);
		if (f && first == NULL) {
			keep = *f;
			first = &keep;
			at = i;
		}
	}
	free(rep);
	answers_free(h);
	if (first) {
		struct report r = { .kind = REPORT_FAILED, .diag = DIAG_GPU_XID,
		    .node = at, .text = first->msg };

		cl->report(cl, &r);	/* the funnel's door (cluster_new) */
	}
}

static void
answered(struct owner *w, struct op *o, const struct answer *ans)
{
	struct cluster *cl = container_of(w, struct cluster, hw.own);
	struct hwcheck *h = &cl->hw;
	const struct cmd_result *r = ans->cmd;
	struct hw_answers *a;
	char err[100];

	if (o->node >= h->nat)
		return;
	a = &h->at[o->node];
	switch (o->tag) {
	case HW_KLOG:
		a->scan = xmalloc(sizeof(*a->scan));
		if (r->error) {
			/* no answer: unread, said so */
			xid_scan(NULL, 0, 0, a->scan);
			utf8_fmt(a->scan->why, sizeof(a->scan->why), "%s",
			    r->error);
		} else
			xid_scan(r->out, r->outlen, cursor(cl,
			    cl->nodes[o->node].conf->name)->since, a->scan);
		break;
	case HW_ECC:
		a->ecc = xcalloc(1, sizeof(*a->ecc));
		if (r->error || r->exit_code != 0 || gpu_ecc_parse(r->out,
		    r->outlen, a->ecc, err, sizeof(err)) != 0)
			a->ecc->n = 0;
		break;
	case HW_NPU:
		a->npu = xmalloc(sizeof(*a->npu));
		accel_parse(ACCEL_ASCEND, AQ_MEMORY, r->error ? -1 :
		    r->exit_code, r->error ? "" : r->out, r->error ? 0 :
		    r->outlen, r->error ? r->error : r->err, a->npu);
		break;
	}
	if (owner_count(&h->own) == 0)
		judge(cl);
}

static json_t	*cursors_json(const struct cluster *);
static void	 cursors_load(struct cluster *, json_t *);

/* Where each node's kernel log is read from, kept in state.json. */
static const struct state_part cursors_part = {
	.key = "kernel_log_since", .save = cursors_json, .load = cursors_load,
};

void
hw_init(struct cluster *cl)
{
	state_add_part(cl, &cursors_part);
	owner_init(&cl->hw.own, &cl->exec, answered);
	/* a read on the old sessions says nothing of the new ones */
	owners_register(&cl->hw.own, OWNERS_SESSIONS | OWNERS_FREE);
}

/*
 * Not after a failure that says nothing about the hardware, or that is
 * the hardware's own verdict.
 */
static int
worth_reading(enum diag_code code)
{
	switch (code) {
	case DIAG_GPU_XID:
	case DIAG_NODE_UNREACHABLE:
	case DIAG_HOST_KEY:
	case DIAG_SSH_AUTH:
	case DIAG_RAY_TOKEN_MISSING:
		return 0;
	default:
		return 1;
	}
}

void
hw_after_failure(struct cluster *cl, enum diag_code code)
{
	struct hwcheck *h = &cl->hw;
	enum accel acc = cl->cf->container.accelerator;
	char *klog, *ecc = NULL, *npu = NULL;
	size_t i;

	if (acc == ACCEL_NONE || hw_busy(cl) || !worth_reading(code) ||
	    cl->stopping)
		return;
	answers_free(h);
	h->nat = cl->nnodes;
	h->at = xcalloc(h->nat, sizeof(*h->at));
	if (acc == ACCEL_NVIDIA)
		ecc = cmd_gpu_ecc();
	else
		npu = cmd_accel(cl->cf, AQ_MEMORY);
	for (i = 0; i < cl->nnodes; i++) {
		if (!op_node_up(&cl->exec, i))
			continue;
		if (acc == ACCEL_NVIDIA) {
			klog = cmd_kernel_xid(hw_since(cl, i));
			h->at[i].asked = op_ssh(&h->own, i, HW_KLOG, 0, klog,
			    HW_TIMEOUT_S, TS_COUNT) == 0;
			free(klog);
			if (h->at[i].asked)
				(void)op_ssh(&h->own, i, HW_ECC, 0, ecc,
				    HW_TIMEOUT_S, TS_COUNT);
		} else
			h->at[i].asked = op_ssh(&h->own, i, HW_NPU, 0, npu,
			    HW_TIMEOUT_S, TS_COUNT) == 0;
	}
	free(ecc);
	free(npu);
	if (!hw_busy(cl))
		answers_free(h);
	else
		log_info("reading the nodes' GPU faults before the retry "
		    "(kernel log, %s)", acc == ACCEL_NVIDIA ? "ECC counts" :
		    "npu-smi health");
}

void
hw_resume(struct cluster *cl)
{
	double now = now_s();
	size_t i;

	for (i = 0; i < cl->nnodes; i++)
		cursor(cl, cl->nodes[i].conf->name)->since = now;
	for (i = 0; i < cl->nnodes; i++)
		memset(&cl->nodes[i].hw_warn, 0, sizeof(cl->nodes[i].hw_warn));
	state_save(cl);
}

/* state.json's "kernel_log_since": {"node": Unix time, ...}. */
static json_t *
cursors_json(const struct cluster *cl)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; i < cl->hw.ncur; i++)
		if (cl->hw.cur[i].since > 0)
			json_object_set_new(o, cl->hw.cur[i].node,
			    json_real(cl->hw.cur[i].since));
	return o;
}

static void
cursors_load(struct cluster *cl, json_t *o)
{
	const char *name;
	json_t *v;

	json_object_foreach(o, name, v)
		if (json_is_number(v) && json_number_value(v) > 0)
			cursor(cl, name)->since = json_number_value(v);
}
