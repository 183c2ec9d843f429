#include <stdio.h>
#include <string.h>

#include "hookq.h"
#include "utf8.h"

static void
put(char *dst, size_t len, const char *s)
{
	utf8_copy(dst, len, s ? s : "");
}

void
hook_event_set(struct hook_event *e, const char *cluster,
    const char *old_state, const char *new_state, const char *action,
    const char *diagnosis, const char *message, const char *reason,
    unsigned long long generation, double time)
{
	memset(e, 0, sizeof(*e));
	put(e->cluster, sizeof(e->cluster), cluster);
	put(e->old_state, sizeof(e->old_state), old_state);
	put(e->new_state, sizeof(e->new_state), new_state);
	put(e->action, sizeof(e->action), action);
	put(e->diagnosis, sizeof(e->diagnosis), diagnosis);
	put(e->message, sizeof(e->message), message);
	put(e->reason, sizeof(e->reason), reason);
	e->generation = generation;
	e->time = time;
}

void
hook_change_set(struct hook_event *e, const char *cluster, const char *result,
    const char *from, const char *to, const char *reason,
    unsigned long long generation, double time)
{
	memset(e, 0, sizeof(*e));
	e->change = 1;
	put(e->cluster, sizeof(e->cluster), cluster);
	put(e->result, sizeof(e->result), result);
	put(e->from, sizeof(e->from), from);
	put(e->to, sizeof(e->to), to);
	put(e->reason, sizeof(e->reason), reason);
	e->generation = generation;
	e->time = time;
}

void
hookq_push(struct hookq *q, const struct hook_event *e)
{
	struct hook_event *last;
	char old[sizeof(e->old_state)];
	unsigned folded;

	if (q->n < HOOKQ_MAX) {
		q->ev[(q->head + q->n) % HOOKQ_MAX] = *e;
		q->n++;
		return;
	}
	/* Full: the newest waiting change now ends where e ends. */
	last = &q->ev[(q->head + q->n - 1) % HOOKQ_MAX];
	memcpy(old, last->old_state, sizeof(old));
	folded = last->coalesced + 1 + e->coalesced;
	*last = *e;
	memcpy(last->old_state, old, sizeof(old));
	last->coalesced = folded;
	q->coalesced_total++;
}

int
hookq_pop(struct hookq *q, struct hook_event *out)
{
	if (q->n == 0)
		return 0;
	*out = q->ev[q->head];
	q->head = (q->head + 1) % HOOKQ_MAX;
	q->n--;
	return 1;
}

void
hook_env(const struct hook_event *e, char *const *env, struct strv *out)
{
	strv_init(out);
	for (; env && *env; env++)
		if (strncmp(*env, "TANDEM_", 7) != 0)
			strv_add(out, *env);
	strv_addf(out, "TANDEM_CLUSTER=%s", e->cluster);
	if (e->change) {
		strv_addf(out, "TANDEM_CHANGE_RESULT=%s", e->result);
		strv_addf(out, "TANDEM_CHANGE_FROM=%s", e->from);
		strv_addf(out, "TANDEM_CHANGE_TO=%s", e->to);
		strv_addf(out, "TANDEM_CHANGE_REASON=%s", e->reason);
		strv_addf(out, "TANDEM_GENERATION=%llu", e->generation);
		strv_addf(out, "TANDEM_TIME=%.3f", e->time);
		strv_addf(out, "TANDEM_COALESCED=%u", e->coalesced);
		return;
	}
	strv_addf(out, "TANDEM_OLD_STATE=%s", e->old_state);
	strv_addf(out, "TANDEM_NEW_STATE=%s", e->new_state);
	strv_addf(out, "TANDEM_ACTION=%s", e->action);
	strv_addf(out, "TANDEM_DIAGNOSIS=%s", e->diagnosis);
	strv_addf(out, "TANDEM_DIAGNOSIS_MESSAGE=%s", e->message);
	strv_addf(out, "TANDEM_REASON=%s", e->reason);
	strv_addf(out, "TANDEM_GENERATION=%llu", e->generation);
	strv_addf(out, "TANDEM_TIME=%.3f", e->time);
	strv_addf(out, "TANDEM_COALESCED=%u", e->coalesced);
}
