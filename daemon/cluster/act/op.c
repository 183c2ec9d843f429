/*
 * Operations: one SSH command or HTTP request, owned by whoever started it
 * (an action, or the cluster's standing work), as tmux's job.c owns a
 * job. The answer comes here first: a cancelled op's is dropped; anyone
 * else's goes to its owner, and the op is freed here once the owner has
 * read it. The owner never frees an op, and cancelling is only forgetting:
 * the transport still answers once, and then the memory goes.
 *
 * The actions' executor port, below them: all it keeps (the standing
 * owners, the current action's own, the starts in flight) is in struct
 * exec (op.h), and whoever listens (the trace, the stop) hears through
 * the exec's hooks. It sees neither the actions nor struct cluster.
 */
#include <stdlib.h>

#include "op.h"
#include "util.h"

void
owner_init(struct owner *w, struct exec *e,
    void (*answered)(struct owner *, struct op *, const struct answer *))
{
	TAILQ_INIT(&w->ops);
	w->exec = e;
	w->answered = answered;
}

void
owner_cancel(struct owner *w)
{
	struct op *o;

	while ((o = TAILQ_FIRST(&w->ops)) != NULL) {
		TAILQ_REMOVE(&w->ops, o, entry);
		o->owner = NULL;
	}
}

void
owners_register(struct owner *w, int when)
{
	struct exec *e = w->exec;
	size_t i;

	for (i = 0; i < e->nowners; i++)
		if (e->owners[i].w == w)
			break;
	if (i == e->nowners) {
		if (e->nowners == OWNERS_MAX)
			fatalx("owners_register: more than %d owners",
			    OWNERS_MAX);
		e->nowners++;
	}
	e->owners[i].w = w;
	e->owners[i].when = when;
}

void
owners_cancel(struct exec *e, int when)
{
	size_t i;

	if ((when & OWNERS_SESSIONS) && e->acting != NULL)
		owner_cancel(e->acting);
	for (i = 0; i < e->nowners; i++)
		if (e->owners[i].when & when)
			owner_cancel(e->owners[i].w);
}

size_t
owner_count(const struct owner *w)
{
	const struct op *o;
	size_t n = 0;

	TAILQ_FOREACH(o, &w->ops, entry)
		n++;
	return n;
}

static struct op *
op_new(struct owner *w, size_t node, int tag, int flags, enum trace_kind k)
{
	struct op *o = xcalloc(1, sizeof(*o));

	o->owner = w;
	o->exec = w->exec;
	o->node = node;
	o->tag = tag;
	o->flags = flags;
	o->start_ms = mono_ms();
	o->step = -1;
	if (k != TS_COUNT && w->exec->sent != NULL)
		w->exec->sent(w->exec->hook_arg, o, k);
	TAILQ_INSERT_TAIL(&w->ops, o, entry);
	return o;
}

static void
op_answer(struct op *o, const struct answer *a)
{
	struct owner *w = o->owner;
	struct exec *e = o->exec;

	if ((o->flags & OP_START) && e->starts_inflight > 0)
		e->starts_inflight--;
	if (e->answered != NULL)
		e->answered(e->hook_arg, o);
	if (w != NULL) {
		TAILQ_REMOVE(&w->ops, o, entry);
		w->answered(w, o, a);
	}
	free(o);
}

static void
on_cmd(const struct cmd_result *r, void *arg)
{
	struct answer a = { .cmd = r };

	op_answer(arg, &a);
}

static void
on_http(const struct http_result *h, void *arg)
{
	struct answer a = { .http = h };

	op_answer(arg, &a);
}

int
op_ssh(struct owner *w, size_t node, int tag, int flags, const char *cmd,
    double timeout_s, enum trace_kind k)
{
	struct exec *e = w->exec;
	struct op *o = op_new(w, node, tag, flags, k);

	if (flags & OP_START)
		e->starts_inflight++;
	if (e->ssh(e->ctx, node, cmd, timeout_s, on_cmd, o) == 0)
		return 0;
	/* never sent: nothing will answer it */
	if (flags & OP_START)
		e->starts_inflight--;
	TAILQ_REMOVE(&w->ops, o, entry);
	o->step = -1;
	free(o);
	return -1;
}

void
op_http(struct owner *w, size_t node, int tag, const char *url,
    const char *body, double timeout_s, enum trace_kind k)
{
	struct exec *e = w->exec;
	struct op *o = op_new(w, node, tag, 0, k);

	e->http(e->ctx, url, body, timeout_s, on_http, o);
}

int
op_node_up(const struct exec *e, size_t node)
{
	return e->up(e->ctx, node);
}
