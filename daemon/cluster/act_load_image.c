/*
 * loading-image: a node that lacks the image (or holds another build of
 * its tag) loads it from its image_archive before the rebuild goes on.
 * Per node: read the archive's manifest (is the tag there?) and the image
 * config it names (the creation date and the layers' diff IDs: is it the
 * build the other nodes hold?), docker load it, and check the tag now
 * names that build. Images compare by that identity (imagecheck.h), not
 * by ID: on docker's containerd image store the ID is the index digest,
 * in the archive the config digest. An archive without manifest.json (an
 * OCI layout: podman save --format oci-archive, skopeo, docker 25+) is
 * loaded without that check, and the engine's own "Loaded image: REF"
 * says whether the tag came (issue 41 item 7); the tag's build is then
 * compared with the other nodes' after the load. Anything recognised stops with
 * image-missing or image-mismatch (a retry would find the same archive);
 * an answer tandem cannot read is unrecognised-answer, retried.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

/* A docker load of a 20 GB image takes minutes on a slow disk. */
#define LOAD_TIMEOUT_S	1800

enum { TAG_MANIFEST, TAG_CONFIG, TAG_LOAD, TAG_INSPECT };

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

/* What an answer tandem cannot read says: could not tell, retried. */
static void
could_not_tell(struct action *a, size_t node, char *cmd,
    const struct cmd_result *r)
{
	char ex[300];

	diag_unknown_excerpt(ex, sizeof(ex), cmd ? cmd : "?", r->exit_code,
	    r->out, r->err);
	free(cmd);
	action_fail(a, DIAG_UNRECOGNISED_ANSWER, node, ex);
}

static void
on_manifest(struct action *a, size_t node, const struct cmd_result *r)
{
	struct cluster *cl = a->cl;
	struct node_rt *n = &cl->nodes[node];
	char other[160], ex[300], *cmd;
	int rc;

	n->load_oci = 0;
	if (r->exit_code != 0 && archive_no_manifest(r->err)) {
		n->load_oci = 1;
		log_info("%s: %s has no manifest.json (an OCI layout): %s "
		    "load -i %s, then what it says it loaded", n->conf->name,
		    n->conf->image_archive, cl->cf->container.engine,
		    n->conf->image_archive);
		(void)next(a, node, TAG_LOAD, cmd_image_load(cl->cf, node));
		return;
	}
	if (r->exit_code != 0) {
		fail_load(a, node, DIAG_IMAGE_MISSING, "cannot read the "
		    "image archive", r);
		return;
	}
	rc = archive_manifest_config(r->out, cl->cf->container.image,
	    n->load_config, sizeof(n->load_config), other, sizeof(other));
	if (rc != 0) {
		utf8_fmt(ex, sizeof(ex), "%s holds %s, not %s",
		    n->conf->image_archive, rc < 0 ? "no docker save manifest" :
		    other, cl->cf->container.image);
		fail_load(a, node, DIAG_IMAGE_MISSING, ex, NULL);
		return;
	}
	/* the config blob, by the path the manifest gives */
	if ((cmd = cmd_archive_config(cl->cf, node, n->load_config)) == NULL) {
		utf8_fmt(ex, sizeof(ex), "%s's manifest.json names its config "
		    "%s, a path tandem does not read: could not tell",
		    n->conf->image_archive, n->load_config);
		action_fail(a, DIAG_UNRECOGNISED_ANSWER, node, ex);
		return;
	}
	(void)next(a, node, TAG_CONFIG, cmd);
}

/* The archive's image config: the build it holds, against the others'. */
static void
on_config(struct action *a, size_t node, const struct cmd_result *r)
{
	struct cluster *cl = a->cl;
	struct node_rt *n = &cl->nodes[node];
	char ex[300];

	if (r->exit_code != 0) {
		fail_load(a, node, DIAG_IMAGE_MISSING, "cannot read the image "
		    "config in the archive", r);
		return;
	}
	if (image_config_ident(r->out, n->load_config, &n->load_ident) != 0) {
		could_not_tell(a, node, cmd_archive_config(cl->cf, node,
		    n->load_config), r);
		return;
	}
	if (cl->image_ref_set && !image_ident_same(&n->load_ident,
	    &cl->image_ref)) {
		utf8_fmt(ex, sizeof(ex), "%s holds %.12s (%s), the other nodes "
		    "run %.12s (%s): not loaded", n->conf->image_archive,
		    n->load_ident.id, n->load_ident.created, cl->image_ref.id,
		    cl->image_ref.created);
		fail_load(a, node, DIAG_IMAGE_MISMATCH, ex, NULL);
		return;
	}
	log_info("%s: %s load -i %s", n->conf->name,
	    cl->cf->container.engine, n->conf->image_archive);
	next(a, node, TAG_LOAD, cmd_image_load(cl->cf, node));
}

/* After the load: the tag names the archive's build, on either store. */
static void
on_inspect(struct action *a, size_t node, const struct cmd_result *r)
{
	struct cluster *cl = a->cl;
	struct node_rt *n = &cl->nodes[node];
	struct image_ident now;
	char ex[300];

	if (r->exit_code == 0 && image_ident_parse(r->out, &now) != 0) {
		could_not_tell(a, node, cmd_image_identity(cl->cf), r);
		return;
	}
	if (n->load_oci && r->exit_code == 0) {
		/* no archive config to hold it to: the other nodes' build */
		if (cl->image_ref_set && !image_ident_same(&now,
		    &cl->image_ref)) {
			utf8_fmt(ex, sizeof(ex), "after loading %s, %s is %.12s "
			    "(%s), the other nodes run %.12s (%s)",
			    n->conf->image_archive, cl->cf->container.image,
			    now.id, now.created, cl->image_ref.id,
			    cl->image_ref.created);
			fail_load(a, node, DIAG_IMAGE_MISMATCH, ex, NULL);
			return;
		}
		n->load_ident = now;
	}
	if (r->exit_code != 0 || !image_ident_same(&now, &n->load_ident)) {
		utf8_fmt(ex, sizeof(ex), "after loading %s, %s is not its "
		    "image %.12s (%s)", n->conf->image_archive,
		    cl->cf->container.image, n->load_ident.id,
		    n->load_ident.created);
		fail_load(a, node, DIAG_IMAGE_MISSING, ex, r->exit_code ? r :
		    NULL);
		return;
	}
	log_info("%s: loaded %s %.12s from %s", n->conf->name,
	    cl->cf->container.image, now.id, n->conf->image_archive);
	n->load_image = 0;
	if (owner_count(&a->own) == 0)
		action_event(a, EV_IMAGE_LOADED, "image loaded from the "
		    "archive on every node that lacked it");
}

/*
 * An OCI layout's load: whether the engine's words name the tag. Returns 1
 * when it reported (another image loaded, or words it cannot read).
 */
static int
oci_loaded(struct action *a, size_t node, const struct cmd_result *r)
{
	struct cluster *cl = a->cl;
	char other[200], ex[300];
	int rc = image_load_parse(r->out, cl->cf->container.image, other,
	    sizeof(other));

	if (rc == 0)
		return 0;
	if (rc < 0) {
		could_not_tell(a, node, cmd_image_load(cl->cf, node), r);
		return 1;
	}
	utf8_fmt(ex, sizeof(ex), "%s load -i %s loaded %s, not %s",
	    cl->cf->container.engine, cl->nodes[node].conf->image_archive,
	    other, cl->cf->container.image);
	fail_load(a, node, DIAG_IMAGE_MISSING, ex, NULL);
	return 1;
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
	case TAG_CONFIG:
		on_config(a, o->node, r);
		break;
	case TAG_LOAD:
		if (r->exit_code != 0) {
			/* the engine's name: podman's load fails in its words */
			snprintf(what, sizeof(what), "%s load failed",
			    a->cl->cf->container.engine);
			fail_load(a, o->node, DIAG_IMAGE_MISSING, what, r);
			break;
		}
		if (a->cl->nodes[o->node].load_oci && oci_loaded(a, o->node, r))
			break;
		next(a, o->node, TAG_INSPECT, cmd_image_identity(a->cl->cf));
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
