/*
 * loading-image: a node that lacks the image (or holds another build of
 * its tag) loads it from its image_archive before the rebuild goes on.
 * Per node: read the archive's manifest (is the tag there, with the ID the
 * others have?), docker load it, and check the tag now names that ID.
 * Anything else stops with image-missing or image-mismatch: a retry would
 * find the same archive.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

/* A docker load of a 20 GB image takes minutes on a slow disk. */
#define LOAD_TIMEOUT_S	1800

enum { TAG_MANIFEST, TAG_LOAD, TAG_INSPECT };

static double
remaining_s(const struct action *a)
{
	uint64_t now = mono_ms();

	return now < a->deadline_ms ? (double)(a->deadline_ms - now) /
	    1000 : 0.1;
}

/* Runs the next command of a node's load; a node gone is waited for. */
static int
next(struct action *a, size_t node, int tag, char *cmd)
{
	int rc = op_ssh(&a->own, node, tag, 0, cmd, remaining_s(a), TS_COUNT);

	free(cmd);
	if (rc == -1)
		action_lost(a, node, "node went away during loading-image");
	return rc;
}

static void
fail_load(struct action *a, size_t node, enum diag_code code,
    const char *what, const struct cmd_result *r)
{
	char ex[300], line[200];

	utf8_fmt(ex, sizeof(ex), "%s%s%s", what, r ? ": " : "", r ?
	    utf8_first_line(r->error ? r->error : r->errlen ? r->err : r->out,
	    line, sizeof(line)) : "");
	action_fail(a, code, node, ex);
}

/*
 * The preflight found nodes without the image, or with another build, and
 * an archive readable there: loading-image, once per generation. Returns 1
 * when it reported (the load, or that loading once did not help).
 */
int
image_load_wanted(struct action *a, const struct preflight *pf)
{
	struct cluster *cl = a->cl;
	char reason[300];
	size_t i, first = cl->nnodes, n = 0;

	for (i = 0; i < cl->nnodes; i++)
		if (preflight_image(pf, i)->load && n++ == 0)
			first = i;
	if (n == 0)
		return 0;
	i = first;
	if (cl->image_loaded) {
		/* loaded once this generation and still not right */
		utf8_fmt(reason, sizeof(reason), "after loading the archive: "
		    "%s", preflight_result(pf, i, PF_IMAGE)->detail);
		fail_load(a, i, preflight_image(pf, i)->id[0] ?
		    DIAG_IMAGE_MISMATCH : DIAG_IMAGE_MISSING, reason, NULL);
		return 1;
	}
	utf8_copy(cl->image_ref, sizeof(cl->image_ref),
	    preflight_image_ref(pf));
	for (i = 0; i < cl->nnodes; i++)
		cl->nodes[i].load_image = preflight_image(pf, i)->load;
	i = first;
	utf8_fmt(reason, sizeof(reason), "%s on %s%s: loading %s",
	    preflight_image(pf, i)->id[0] ? "another build of the image" :
	    "the image is missing", cl->nodes[i].conf->name, n > 1 ?
	    " and others" : "", cl->nodes[i].conf->image_archive);
	action_event(a, EV_LOAD_IMAGE, reason);
	return 1;
}

static void
load_enter(struct action *a)
{
	struct cluster *cl = a->cl;
	size_t i;

	cl->image_loaded = 1;
	a->deadline_ms = mono_ms() + LOAD_TIMEOUT_S * 1000;
	a->wake_ms = UINT64_MAX;
	for (i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].load_image && next(a, i, TAG_MANIFEST,
		    cmd_archive_manifest(cl->cf, i)) == -1)
			return;
}

static void
on_manifest(struct action *a, size_t node, const struct cmd_result *r)
{
	struct cluster *cl = a->cl;
	struct node_rt *n = &cl->nodes[node];
	char other[160], ex[300];
	int rc;

	if (r->exit_code != 0) {
		fail_load(a, node, DIAG_IMAGE_MISSING, "cannot read the "
		    "image archive", r);
		return;
	}
	rc = archive_manifest_id(r->out, cl->cf->container.image, n->load_id,
	    sizeof(n->load_id), other, sizeof(other));
	if (rc != 0) {
		utf8_fmt(ex, sizeof(ex), "%s holds %s, not %s",
		    n->conf->image_archive, rc < 0 ? "no docker save manifest" :
		    other, cl->cf->container.image);
		fail_load(a, node, DIAG_IMAGE_MISSING, ex, NULL);
		return;
	}
	if (cl->image_ref[0] && strcmp(n->load_id, cl->image_ref) != 0) {
		utf8_fmt(ex, sizeof(ex), "%s holds %.12s, the other nodes run "
		    "%.12s: not loaded", n->conf->image_archive, n->load_id,
		    cl->image_ref);
		fail_load(a, node, DIAG_IMAGE_MISMATCH, ex, NULL);
		return;
	}
	log_info("%s: %s load -i %s", n->conf->name,
	    cl->cf->container.engine, n->conf->image_archive);
	next(a, node, TAG_LOAD, cmd_image_load(cl->cf, node));
}

static void
on_inspect(struct action *a, size_t node, const struct cmd_result *r)
{
	struct cluster *cl = a->cl;
	struct node_rt *n = &cl->nodes[node];
	char id[IMAGE_ID_LEN], created[40], ex[300];

	if (r->exit_code != 0 || image_inspect_parse(r->out, id, sizeof(id),
	    created, sizeof(created)) != 0 || strcmp(id, n->load_id) != 0) {
		utf8_fmt(ex, sizeof(ex), "after loading %s, %s is not image "
		    "%.12s", n->conf->image_archive, cl->cf->container.image,
		    n->load_id);
		fail_load(a, node, DIAG_IMAGE_MISSING, ex, r);
		return;
	}
	log_info("%s: loaded %s %.12s from %s", n->conf->name,
	    cl->cf->container.image, id, n->conf->image_archive);
	n->load_image = 0;
	if (owner_count(&a->own) == 0)
		action_event(a, EV_IMAGE_LOADED, "image loaded from the "
		    "archive on every node that lacked it");
}

static void
load_answered(struct action *a, struct op *o, const struct answer *ans)
{
	const struct cmd_result *r = ans->cmd;
	char what[64];

	switch (o->tag) {
	case TAG_MANIFEST:
		on_manifest(a, o->node, r);
		break;
	case TAG_LOAD:
		if (r->exit_code != 0) {
			/* the engine's name: podman's load fails in its words */
			snprintf(what, sizeof(what), "%s load failed",
			    a->cl->cf->container.engine);
			fail_load(a, o->node, DIAG_IMAGE_MISSING, what, r);
			break;
		}
		next(a, o->node, TAG_INSPECT, cmd_image_id(a->cl->cf));
		break;
	case TAG_INSPECT:
		on_inspect(a, o->node, r);
		break;
	}
}

const struct action_ops act_load_image = {
	.size = sizeof(struct action),
	.enter = load_enter,
	.answered = load_answered,
};
