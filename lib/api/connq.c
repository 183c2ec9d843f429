/*
 * The API's connections and deadlines (connq.h). Each queue holds
 * deadlines of one length added in time order, so each stays sorted with
 * a tail insert, and the oldest waiting connection is the first of its
 * queue: every operation is O(1).
 */
#include "connq.h"

size_t
connq_limit_for(uint64_t nofile)
{
	uint64_t keep = CONNQ_FD_RESERVE + CONNQ_SLACK;

	if (nofile < keep + CONNQ_MIN)
		return CONNQ_MIN;
	return nofile - keep < CONNQ_MAX ? (size_t)(nofile - keep) :
	    CONNQ_MAX;
}

void
connq_init(struct connq *q, size_t limit, uint64_t head_ms,
    uint64_t request_ms)
{
	TAILQ_INIT(&q->heads);
	TAILQ_INIT(&q->requests);
	q->n = 0;
	q->limit = limit ? limit : 1;
	q->head_ms = head_ms;
	q->request_ms = request_ms;
	q->evicted = q->head_timeouts = q->request_timeouts = 0;
}

static struct connq_list *
list_of(struct connq *q, const struct connq_ent *e)
{
	return e->phase == CONNQ_HEAD ? &q->heads : &q->requests;
}

/* Out of its queue, to be closed. */
static struct connq_ent *
take(struct connq *q, struct connq_ent *e)
{
	TAILQ_REMOVE(list_of(q, e), e, entry);
	e->phase = CONNQ_CLOSING;
	q->n--;
	return e;
}

struct connq_ent *
connq_add(struct connq *q, struct connq_ent *e, uint64_t now)
{
	struct connq_ent *victim = NULL;

	if (q->n >= q->limit) {
		if ((victim = TAILQ_FIRST(&q->heads)) == NULL)
			victim = TAILQ_FIRST(&q->requests);
		if (victim != NULL) {
			take(q, victim);
			q->evicted++;
		}
	}
	e->phase = CONNQ_HEAD;
	e->deadline = now + q->head_ms;
	TAILQ_INSERT_TAIL(&q->heads, e, entry);
	q->n++;
	return victim;
}

void
connq_head_done(struct connq *q, struct connq_ent *e, uint64_t now)
{
	if (e->phase != CONNQ_HEAD)
		return;
	TAILQ_REMOVE(&q->heads, e, entry);
	e->phase = CONNQ_REQUEST;
	e->deadline = now + q->request_ms;
	TAILQ_INSERT_TAIL(&q->requests, e, entry);
}

void
connq_answered(struct connq *q, struct connq_ent *e, uint64_t now)
{
	if (e->phase == CONNQ_CLOSING)
		return;
	TAILQ_REMOVE(list_of(q, e), e, entry);
	e->phase = CONNQ_HEAD;
	e->deadline = now + q->head_ms;
	TAILQ_INSERT_TAIL(&q->heads, e, entry);
}

void
connq_remove(struct connq *q, struct connq_ent *e)
{
	if (e->phase != CONNQ_CLOSING)
		take(q, e);
}

struct connq_ent *
connq_overdue(struct connq *q, uint64_t now)
{
	struct connq_ent *e = TAILQ_FIRST(&q->heads);
	struct connq_ent *r = TAILQ_FIRST(&q->requests);

	if (e == NULL || (r != NULL && r->deadline < e->deadline))
		e = r;
	if (e == NULL || e->deadline > now)
		return NULL;
	if (e->phase == CONNQ_HEAD)
		q->head_timeouts++;
	else
		q->request_timeouts++;
	return take(q, e);
}

uint64_t
connq_next_deadline(const struct connq *q)
{
	const struct connq_ent *h = TAILQ_FIRST(&q->heads);
	const struct connq_ent *r = TAILQ_FIRST(&q->requests);
	uint64_t t = UINT64_MAX;

	if (h != NULL)
		t = h->deadline;
	if (r != NULL && r->deadline < t)
		t = r->deadline;
	return t;
}
