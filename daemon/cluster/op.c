/*
 * Operations: one SSH command or HTTP request, owned by whoever started it
 * (an action, or the cluster's background work), as tmux's job.c owns a
 * job. The answer comes here first: a cancelled op's is dropped; anyone
 * else's goes to its owner, and the op is freed here once the owner has
 * read it. The owner never frees an op, and cancelling is only forgetting:
 * the transport still answers once, and then the memory goes.
 */
#include <stdlib.h>

#include "cluster_int.h"

void
owner_init(struct owner *w, struct cluster *cl,
    void (*answered)(struct owner *, struct op *, const struct answer *))
{
	TAILQ_INIT(&w->ops);
	w->cl = cl;
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
	struct cluster *cl = w->cl;
	size_t i;

	for (i = 0; i < cl->nowners; i++)
		if (cl->owners[i].w == w)
			break;
	if (i == cl->nowners) {
		if (cl->nowners == OWNERS_MAX)
			fatalx("owners_register: more than %d owners",
			    OWNERS_MAX);
		cl->nowners++;
	}
	cl->owners[i].w = w;
	cl->owners[i].when = when;
}

void
owners_cancel(struct cluster *cl, int when)
{
	size_t i;

	if ((when & OWNERS_SESSIONS) && cl->act != NULL)
		owner_cancel(&cl->act->own);
	for (i = 0; i < cl->nowners; i++)
		if (cl->owners[i].when & when)
			owner_cancel(cl->owners[i].w);
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
	o->cl = w->cl;
	o->node = node;
	o->tag = tag;
	o->flags = flags;
	o->start_ms = mono_ms();
	o->step = -1;
	if (k != TS_COUNT && w->cl->exec.sent != NULL)
		w->cl->exec.sent(w->cl, o, k);
	TAILQ_INSERT_TAIL(&w->ops, o, entry);
	return o;
}

static void
op_answer(struct op *o, const struct answer *a)
{
	struct owner *w = o->owner;

	if (o->cl->exec.answered != NULL)
		o->cl->exec.answered(o->cl, o);
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
	struct cluster *cl = w->cl;
	struct op *o = op_new(w, node, tag, flags, k);

	if (flags & OP_START)
		cl->starts_inflight++;
	if (cl->exec.ssh(cl->exec.ctx, node, cmd, timeout_s, on_cmd, o) == 0)
		return 0;
	/* never sent: nothing will answer it */
	if (flags & OP_START)
		cl->starts_inflight--;
	TAILQ_REMOVE(&w->ops, o, entry);
	o->step = -1;
	free(o);
	return -1;
}

void
op_http(struct owner *w, size_t node, int tag, const char *url,
    const char *body, double timeout_s, enum trace_kind k)
{
	struct cluster *cl = w->cl;
	struct op *o = op_new(w, node, tag, 0, k);

	cl->exec.http(cl->exec.ctx, url, body, timeout_s, on_http, o);
}

int
op_node_up(const struct cluster *cl, size_t node)
{
	return cl->exec.up(cl->exec.ctx, node);
}
