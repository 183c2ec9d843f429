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

#include "act_env.h"

/* A docker load of a 20 GB image takes minutes on a slow disk. */
#define LOAD_TIMEOUT_S	1800

enum { TAG_MANIFEST, TAG_CONFIG, TAG_LOAD, TAG_INSPECT };

/* A node's load, as far as it went. */
struct node_load {
	int			 load;		/* the preflight wants it here */
	struct image_ident	 ident;		/* the archive's image */
	char			 config[80];	/* its config */
	int			 oci;		/* no manifest.json: the engine says */
};

struct load {
	struct action		 a;
	struct node_load	*n;		/* per node of the config */
	int			 ref_set;	/* the other nodes' build: */
	struct image_ident	 ref;		/* none: any */
};

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
	struct load *l = (struct load *)a;
	const struct config *cf = act_cf(a);
	struct act_node v;
	struct act_view rt;
	size_t i;

	/* what the preflight wanted loaded, as the runtime kept it */
	l->n = xcalloc(cf->nnodes, sizeof(*l->n));
	for (i = 0; i < cf->nnodes; i++) {
		act_node(a, i, &v);
		l->n[i].load = v.load_here;
	}
	act_view(a, &rt);
	l->ref_set = rt.image_ref != NULL;
	if (l->ref_set)
		l->ref = *rt.image_ref;
	/* once per generation */
	act_preflight(a, NULL, PFW_LOADING);
	a->deadline_ms = mono_ms() + LOAD_TIMEOUT_S * 1000;
	a->wake_ms = UINT64_MAX;
	for (i = 0; i < cf->nnodes; i++)
		if (l->n[i].load && next(a, i, TAG_MANIFEST,
		    cmd_archive_manifest(cf, i)) == -1)
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
	struct load *l = (struct load *)a;
	const struct config *cf = act_cf(a);
	const struct node_conf *nc = &cf->nodes[node];
	struct node_load *n = &l->n[node];
	char other[160], ex[300], *cmd;
	int rc;

	n->oci = 0;
	if (r->exit_code != 0 && archive_no_manifest(r->err)) {
		n->oci = 1;
		log_info("%s: %s has no manifest.json (an OCI layout): %s "
		    "load -i %s, then what it says it loaded", nc->name,
		    nc->image_archive, cf->container.engine,
		    nc->image_archive);
		(void)next(a, node, TAG_LOAD, cmd_image_load(cf, node));
		return;
	}
	if (r->exit_code != 0) {
		fail_load(a, node, DIAG_IMAGE_MISSING, "cannot read the "
		    "image archive", r);
		return;
	}
	rc = archive_manifest_config(r->out, cf->container.image,
	    n->config, sizeof(n->config), other, sizeof(other));
	if (rc != 0) {
		utf8_fmt(ex, sizeof(ex), "%s holds %s, not %s",
		    nc->image_archive, rc < 0 ? "no docker save manifest" :
		    other, cf->container.image);
		fail_load(a, node, DIAG_IMAGE_MISSING, ex, NULL);
		return;
	}
	/* the config blob, by the path the manifest gives */
	if ((cmd = cmd_archive_config(cf, node, n->config)) == NULL) {
		utf8_fmt(ex, sizeof(ex), "%s's manifest.json names its config "
		    "%s, a path tandem does not read: could not tell",
		    nc->image_archive, n->config);
		action_fail(a, DIAG_UNRECOGNISED_ANSWER, node, ex);
		return;
	}
	(void)next(a, node, TAG_CONFIG, cmd);
}

/* The archive's image config: the build it holds, against the others'. */
static void
on_config(struct action *a, size_t node, const struct cmd_result *r)
{
	struct load *l = (struct load *)a;
	const struct config *cf = act_cf(a);
	const struct node_conf *nc = &cf->nodes[node];
	struct node_load *n = &l->n[node];
	char ex[300];

	if (r->exit_code != 0) {
		fail_load(a, node, DIAG_IMAGE_MISSING, "cannot read the image "
		    "config in the archive", r);
		return;
	}
	if (image_config_ident(r->out, n->config, &n->ident) != 0) {
		could_not_tell(a, node, cmd_archive_config(cf, node,
		    n->config), r);
		return;
	}
	if (l->ref_set && !image_ident_same(&n->ident,
	    &l->ref)) {
		utf8_fmt(ex, sizeof(ex), "%s holds %.12s (%s), the other nodes "
		    "run %.12s (%s): not loaded", nc->image_archive,
		    n->ident.id, n->ident.created, l->ref.id,
		    l->ref.created);
		fail_load(a, node, DIAG_IMAGE_MISMATCH, ex, NULL);
		return;
	}
	log_info("%s: %s load -i %s", nc->name,
	    cf->container.engine, nc->image_archive);
	next(a, node, TAG_LOAD, cmd_image_load(cf, node));
}

/* After the load: the tag names the archive's build, on either store. */
static void
on_inspect(struct action *a, size_t node, const struct cmd_result *r)
{
	struct load *l = (struct load *)a;
	const struct config *cf = act_cf(a);
	const struct node_conf *nc = &cf->nodes[node];
	struct node_load *n = &l->n[node];
	struct image_ident now;
	char ex[300];

	if (r->exit_code == 0 && image_ident_parse(r->out, &now) != 0) {
		could_not_tell(a, node, cmd_image_identity(cf), r);
		return;
	}
	if (n->oci && r->exit_code == 0) {
		/* no archive config to hold it to: the other nodes' build */
		if (l->ref_set && !image_ident_same(&now,
		    &l->ref)) {
			utf8_fmt(ex, sizeof(ex), "after loading %s, %s is %.12s "
			    "(%s), the other nodes run %.12s (%s)",
			    nc->image_archive, cf->container.image,
			    now.id, now.created, l->ref.id,
			    l->ref.created);
			fail_load(a, node, DIAG_IMAGE_MISMATCH, ex, NULL);
			return;
		}
		n->ident = now;
	}
	if (r->exit_code != 0 || !image_ident_same(&now, &n->ident)) {
		utf8_fmt(ex, sizeof(ex), "after loading %s, %s is not its "
		    "image %.12s (%s)", nc->image_archive,
		    cf->container.image, n->ident.id,
		    n->ident.created);
		fail_load(a, node, DIAG_IMAGE_MISSING, ex, r->exit_code ? r :
		    NULL);
		return;
	}
	log_info("%s: loaded %s %.12s from %s", nc->name,
	    cf->container.image, now.id, nc->image_archive);
	n->load = 0;
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
	const struct config *cf = act_cf(a);
	char other[200], ex[300];
	int rc = image_load_parse(r->out, cf->container.image, other,
	    sizeof(other));

	if (rc == 0)
		return 0;
	if (rc < 0) {
		could_not_tell(a, node, cmd_image_load(cf, node), r);
		return 1;
	}
	utf8_fmt(ex, sizeof(ex), "%s load -i %s loaded %s, not %s",
	    cf->container.engine, cf->nodes[node].image_archive,
	    other, cf->container.image);
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
			    act_cf(a)->container.engine);
			fail_load(a, o->node, DIAG_IMAGE_MISSING, what, r);
			break;
		}
		if (((struct load *)a)->n[o->node].oci &&
		    oci_loaded(a, o->node, r))
			break;
		next(a, o->node, TAG_INSPECT, cmd_image_identity(act_cf(a)));
		break;
	case TAG_INSPECT:
		on_inspect(a, o->node, r);
		break;
	}
}

static void
load_free(struct action *a)
{
	free(((struct load *)a)->n);
}

const struct action_ops act_load_image = {
	.size = sizeof(struct load),
	.enter = load_enter,
	.answered = load_answered,
	.free = load_free,
};
