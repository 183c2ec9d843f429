/*
 * The runtime as an action test reads and sets it (act_harness.h): what
 * the actions see of it, through act_env.h's calls as tandemd fills them;
 * what it kept (the events' ring, the state dir's files, what was seen);
 * and the state it is in before an action begins. The tests go through
 * these, not through struct cluster.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act_harness.h"

const char *
h_events(void)
{
	json_t *a = history_json(H.cl, 0), *e;
	size_t i, l = 0;

	H.events[0] = '\0';
	json_array_foreach(a, i, e) {
		l += (size_t)snprintf(H.events + l, l < sizeof(H.events) ?
		    sizeof(H.events) - l : 0, "%s\n",
		    json_string_value(json_object_get(e, "reason")));
		if (l >= sizeof(H.events))
			break;
	}
	json_decref(a);
	return H.events;
}

void
h_drain(void)
{
	while (evidence_writing(H.cl) || state_writing(H.cl))
		uv_run(H.cl->loop, UV_RUN_ONCE);
}

static char *
h_state_path(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", H.state_dir, name) < 0)
		fail();
	return p;
}

json_t *
h_state_json(const char *name)
{
	char *p = h_state_path(name);
	json_t *j;

	h_drain();
	j = json_load_file(p, 0, NULL);
	free(p);
	return j;
}

int
h_state_has(const char *name)
{
	char *p = h_state_path(name);
	int there;

	h_drain();
	there = access(p, F_OK) == 0;
	free(p);
	return there;
}

void
h_state_remove(const char *name)
{
	char *p = h_state_path(name);

	h_drain();
	unlink(p);
	free(p);
}

void
h_state_put(const char *name, json_t *j)
{
	char *p = h_state_path(name);

	h_drain();
	assert_int_equal(json_dump_file(j, p, JSON_COMPACT), 0);
	free(p);
}

/* What the runtime shows the actions: act_env.h's view and node view, as
   tandemd fills them (runtime_env.c). */

static struct act_view
view(void)
{
	struct act_view v;

	H.cl->env.view(H.cl->env.ctx, &v);
	return v;
}

int
h_preflight_passed(void)
{
	return view().preflight_passed;
}

int
h_adopted(void)
{
	return view().adopted;
}

int
h_gmu_step(void)
{
	return view().gmu_step;
}

struct act_node
h_node(size_t node)
{
	struct act_node v;

	H.cl->env.node(H.cl->env.ctx, node, &v);
	return v;
}

const struct seen *
h_seen(void)
{
	return &H.cl->seen;
}

void
h_set_preflight_passed(int passed)
{
	H.cl->preflight_passed = passed;
}

void
h_set_adopted(int adopted)
{
	H.cl->adopted = adopted;
}

void
h_set_gmu_step(int step)
{
	H.cl->rec.gmu_step = step;
}

void
h_set_reachable(size_t node, int up)
{
	H.cl->nodes[node].reachable = up;
}

void
h_stopped_on(enum diag_code code, const char *node)
{
	H.cl->diag = diag_get(code);
	snprintf(H.cl->diag_node, sizeof(H.cl->diag_node), "%s",
	    node ? node : "");
	H.cl->fsm.halted = 1;
}

int
h_load_here(size_t node)
{
	return h_node(node).load_here;
}

int
h_image_ref(struct image_ident *ref)
{
	struct act_view v = view();

	if (v.image_ref)
		*ref = *v.image_ref;
	return v.image_ref != NULL;
}

uint64_t
h_plan_hash(void)
{
	return view().plan_hash;
}

struct action *
h_act(void)
{
	return H.cl->act;
}

void
h_set_image_load(size_t node, const struct image_ident *ref)
{
	H.cl->nodes[node].load_image = 1;
	H.cl->image_ref = *ref;
	H.cl->image_ref_set = 1;
}

int
h_event(enum event ev)
{
	enum caction oa = H.cl->fsm.action;
	int oh = H.cl->fsm.halted;

	if (!fsm_step(&H.cl->fsm, ev))
		return 0;
	if (H.cl->fsm.action != oa || H.cl->fsm.halted != oh)
		action_begin(H.cl);
	return 1;
}
