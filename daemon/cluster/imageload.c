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

static void	on_manifest(const struct ssh_result *r, void *arg);
static void	on_load(const struct ssh_result *r, void *arg);
static void	on_inspect(const struct ssh_result *r, void *arg);

static double
remaining_s(const struct cluster *cl)
{
	uint64_t now = mono_ms();

	return now < cl->deadline_ms ? (double)(cl->deadline_ms - now) /
	    1000 : 0.1;
}

/* Runs the next command of a node's load; a node gone fails the step. */
static int
next(struct cluster *cl, size_t node, char *cmd, ssh_exec_fn *done)
{
	int rc = node_exec(cl, node, cmd, remaining_s(cl), done);

	free(cmd);
	if (rc == -1)
		node_missing(cl, node, "node went away during loading-image");
	return rc;
}

static void
fail_load(struct cluster *cl, size_t node, enum diag_code code,
    const char *what, const struct ssh_result *r)
{
	char ex[300], line[200];

	utf8_fmt(ex, sizeof(ex), "%s%s%s", what, r ? ": " : "", r ?
	    first_line(r->error ? r->error : r->errlen ? r->err : r->out,
	    line, sizeof(line)) : "");
	fail_step(cl, code, node, ex);
}

int
image_load_wanted(struct cluster *cl, const struct preflight *pf)
{
	char reason[300];
	size_t i, first = cl->nnodes, n = 0;

	for (i = 0; i < cl->nnodes; i++)
		if (pf->image[i].load && n++ == 0)
			first = i;
	if (n == 0)
		return 0;
	i = first;
	if (cl->image_loaded) {
		/* loaded once this generation and still not right */
		utf8_fmt(reason, sizeof(reason), "after loading the archive: "
		    "%s", pf->res[i][PF_IMAGE].detail);
		fail_load(cl, i, pf->image[i].id[0] ? DIAG_IMAGE_MISMATCH :
		    DIAG_IMAGE_MISSING, reason, NULL);
		return 1;
	}
	utf8_copy(cl->image_ref, sizeof(cl->image_ref), pf->image_ref);
	for (i = 0; i < cl->nnodes; i++)
		cl->nodes[i].load_image = pf->image[i].load;
	i = first;
	utf8_fmt(reason, sizeof(reason), "%s on %s%s: loading %s",
	    pf->image[i].id[0] ? "another build of the image" :
	    "the image is missing", cl->nodes[i].conf->name, n > 1 ?
	    " and others" : "", cl->nodes[i].conf->image_archive);
	cluster_event(cl, EV_LOAD_IMAGE, reason);
	return 1;
}

/*
 * The image vanished after the preflight (docker rmi while serving): a
 * node with an archive retries once, and the retry's preflight loads it.
 * A second image-missing in the generation that loaded it stops.
 */
int
image_load_retry(struct cluster *cl, size_t node, const struct diag *d,
    const char *excerpt)
{
	char reason[400];

	if (d->id != DIAG_IMAGE_MISSING || node >= cl->nnodes ||
	    cl->nodes[node].conf->image_archive == NULL || cl->image_loaded)
		return 0;
	/* no diagnosis: it would say the retries stopped */
	cl->preflight_passed = 0;
	utf8_fmt(reason, sizeof(reason), "%s on %s: %s; the next try loads %s",
	    d->code, cl->nodes[node].conf->name, excerpt,
	    cl->nodes[node].conf->image_archive);
	log_warnx("%s", reason);
	cluster_event(cl, EV_STEP_FAILED, reason);
	return 1;
}

void
start_image_load(struct cluster *cl)
{
	size_t i;

	cl->image_loaded = 1;
	cl->deadline_ms = mono_ms() + LOAD_TIMEOUT_S * 1000;
	cl->pending = 0;
	for (i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].load_image)
			cl->pending++;
	for (i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].load_image && next(cl, i,
		    cmd_archive_manifest(cl->cf, i), on_manifest) == -1)
			return;
}

static void
on_manifest(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	size_t node = o->node;
	struct node_rt *n = &cl->nodes[node];
	char other[160], ex[300];
	int rc;

	if (!claim(o))
		return;
	free(o);
	if (r->exit_code != 0) {
		fail_load(cl, node, DIAG_IMAGE_MISSING, "cannot read the "
		    "image archive", r);
		return;
	}
	rc = archive_manifest_id(r->out, cl->cf->container.image, n->load_id,
	    sizeof(n->load_id), other, sizeof(other));
	if (rc != 0) {
		utf8_fmt(ex, sizeof(ex), "%s holds %s, not %s",
		    n->conf->image_archive, rc < 0 ? "no docker save manifest" :
		    other, cl->cf->container.image);
		fail_load(cl, node, DIAG_IMAGE_MISSING, ex, NULL);
		return;
	}
	if (cl->image_ref[0] && strcmp(n->load_id, cl->image_ref) != 0) {
		utf8_fmt(ex, sizeof(ex), "%s holds %.12s, the other nodes run "
		    "%.12s: not loaded", n->conf->image_archive, n->load_id,
		    cl->image_ref);
		fail_load(cl, node, DIAG_IMAGE_MISMATCH, ex, NULL);
		return;
	}
	log_info("%s: %s load -i %s", n->conf->name,
	    cl->cf->container.engine, n->conf->image_archive);
	next(cl, node, cmd_image_load(cl->cf, node), on_load);
}

static void
on_load(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	size_t node = o->node;

	if (!claim(o))
		return;
	free(o);
	if (r->exit_code != 0) {
		fail_load(cl, node, DIAG_IMAGE_MISSING, "docker load failed", r);
		return;
	}
	next(cl, node, cmd_image_id(cl->cf), on_inspect);
}

static void
on_inspect(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	size_t node = o->node;
	struct node_rt *n = &cl->nodes[node];
	char id[IMAGE_ID_LEN], created[40], ex[300];

	if (!claim(o))
		return;
	free(o);
	if (r->exit_code != 0 || image_inspect_parse(r->out, id, sizeof(id),
	    created, sizeof(created)) != 0 || strcmp(id, n->load_id) != 0) {
		utf8_fmt(ex, sizeof(ex), "after loading %s, %s is not image "
		    "%.12s", n->conf->image_archive, cl->cf->container.image,
		    n->load_id);
		fail_load(cl, node, DIAG_IMAGE_MISSING, ex, r);
		return;
	}
	log_info("%s: loaded %s %.12s from %s", n->conf->name,
	    cl->cf->container.image, id, n->conf->image_archive);
	n->load_image = 0;
	if (--cl->pending == 0)
		cluster_event(cl, EV_IMAGE_LOADED, "image loaded from the "
		    "archive on every node that lacked it");
}
