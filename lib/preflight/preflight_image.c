/*
 * The preflight's image and model checks: the image present (or its
 * archive) and the same build on every node, the model directory present
 * and the same on all nodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight_int.h"
#include "imagecheck.h"
#include "utf8.h"

/*
 * The model's fingerprint: its files and sizes, the small JSON files
 * checksummed. Compared between the nodes in preflight_image_settle_models.
 */
void
preflight_image_model(struct preflight *pf, size_t node,
    const struct cmd_result *r)
{
	struct model_print *m = &pf->model[node];
	char buf[200], line[160];

	if (r->exit_code != 0) {
		/* the shell's cd: "can't cd" (dash), "No such file" (bash) */
		if (!strstr(r->err, "No such file or directory") &&
		    !strstr(r->err, "can't cd")) {
			preflight_set_unknown(pf, node, PF_MODEL,
			    cmd_model_fingerprint(pf->cf), r);
			return;
		}
		utf8_fmt(buf, sizeof(buf), "directory missing: %s",
		    preflight_set_line1(r->err, line, sizeof(line)));
		preflight_set(pf, node, PF_MODEL, 0, buf,
		    "copy the model to the same path on "
		    "every node");
		return;
	}
	model_print_parse(r->out, m);
	if (!model_print_has(m, "config.json")) {
		preflight_set(pf, node, PF_MODEL, 0, "config.json missing",
		    "copy the model to "
		    "the same path on every node");
		return;
	}
	snprintf(buf, sizeof(buf), "%zu files", m->n);
	preflight_set(pf, node, PF_MODEL, 1, buf, NULL);
}

/*
 * The image's identity (cmd_image_identity), settled once every node
 * answered (preflight_image_settle). The engines' words for an image that
 * is not there: docker's "No such image" (20.10 to 29, recorded),
 * podman's "image not known"; any other failure, or an answer not in the format asked
 * for, could not be told.
 */
void
preflight_image_answer(struct preflight *pf, size_t node,
    const struct cmd_result *r)
{
	struct pf_image *im = &pf->image[node];
	char buf[400], line[300];

	im->id[0] = '\0';
	if (r->exit_code == 0 && image_ident_parse(r->out, &im->ident) == 0) {
		utf8_copy(im->id, sizeof(im->id), im->ident.id);
		utf8_copy(im->created, sizeof(im->created), im->ident.created);
		preflight_set(pf, node, PF_IMAGE, 1, "present", NULL);
		return;
	}
	memset(&im->ident, 0, sizeof(im->ident));
	if (r->exit_code != 0 && (strstr(r->err, "No such image") ||
	    strstr(r->err, "image not known"))) {
		utf8_fmt(buf, sizeof(buf), "absent: %s",
		    preflight_set_line1(r->err, line,
		    sizeof(line)));
		preflight_set(pf, node, PF_IMAGE, 0, buf, NULL);
		return;
	}
	preflight_set_unknown(pf, node, PF_IMAGE, cmd_image_identity(pf->cf),
	    r);
}

/*
 * The image on every node against the one they should share (the
 * majority's build, else the head's), compared by what every image store
 * shows alike (image_ident_same: the creation date and the layers' diff
 * IDs): present and the same, absent, or another build of the tag. A node
 * with its archive readable is ok: tandemd loads it (load); without one it
 * fails, "differs" for image-mismatch. A node whose answer could not be
 * told stays as it is.
 */
void
preflight_image_settle(struct preflight *pf)
{
	const struct config *cf = pf->cf;
	struct image_ident *ids = xcalloc(cf->nnodes, sizeof(*ids));
	const struct pf_image *ref;
	char buf[400], fix[200];
	size_t i;

	for (i = 0; i < cf->nnodes; i++)
		ids[i] = pf->image[i].ident;
	pf->image_ref = image_ident_reference(ids, cf->nnodes, cf->head);
	free(ids);
	ref = pf->image_ref < 0 ? NULL : &pf->image[pf->image_ref];
	for (i = 0; i < cf->nnodes; i++) {
		struct pf_image *im = &pf->image[i];
		struct pf_result *r = &pf->res[i][PF_IMAGE];
		const char *arc = cf->nodes[i].image_archive;
		char was[300];

		if (!r->done || r->detail[0] == '-' || (!im->id[0] &&
		    strncmp(r->detail, "absent", 6) != 0))
			continue;
		if (im->id[0] && ref && image_ident_same(&im->ident,
		    &ref->ident)) {
			/* IDs as docker images shows them: 12 hex digits */
			utf8_fmt(buf, sizeof(buf), "present: %s %.12s (%s)",
			    cf->container.image, im->id, im->created);
			preflight_set(pf, i, PF_IMAGE, 1, buf, NULL);
			/* the ID as the engine prints it */
			utf8_fmt(buf, sizeof(buf), "%s%s", strcmp(
			    cf->container.engine, "podman") ? "sha256:" : "",
			    im->id);
			preflight_set_value(pf, i, PF_IMAGE, buf);
			continue;
		}
		if (im->id[0] && ref)
			utf8_fmt(was, sizeof(was), "differs: %.12s (%s) here, "
			    "%.12s (%s) on %s", im->id, im->created, ref->id,
			    ref->created, cf->nodes[pf->image_ref].name);
		else
			utf8_copy(was, sizeof(was), r->detail);
		if (arc && im->archive_ok) {
			im->load = 1;
			utf8_fmt(buf, sizeof(buf), "%s; loadable from %s", was,
			    arc);
			preflight_set(pf, i, PF_IMAGE, 1, buf, NULL);
			preflight_gpu_after_load(pf, i);
			continue;
		}
		utf8_fmt(buf, sizeof(buf), "%s%s%s%s", was, arc ? "; archive "
		    : "", arc ? arc : "", arc ? " not readable" : "");
		if (arc)
			utf8_fmt(fix, sizeof(fix), "%s save -o %s %s on a node "
			    "that has the right build, copy it to %s here",
			    cf->container.engine, arc, cf->container.image,
			    arc);
		else
			utf8_fmt(fix, sizeof(fix), "%s pull %s on %s (or %s "
			    "load -i FILE of a docker save)%s",
			    cf->container.engine, cf->container.image,
			    cf->nodes[i].name, cf->container.engine,
			    im->id[0] ? ", so every node holds one build" :
			    "");
		preflight_set(pf, i, PF_IMAGE, 0, buf, fix);
	}
}

/* The model on every node against the head's (or the first found). */
void
preflight_image_settle_models(struct preflight *pf)
{
	const struct config *cf = pf->cf;
	size_t i, ref = cf->head;
	char names[160], buf[200];

	if (!pf->res[ref][PF_MODEL].ok || pf->model[ref].n == 0)
		for (ref = 0; ref < cf->nnodes; ref++)
			if (pf->res[ref][PF_MODEL].ok && pf->model[ref].n)
				break;
	if (ref == cf->nnodes)
		return;
	for (i = 0; i < cf->nnodes; i++) {
		size_t d;

		if (i == ref || !pf->res[i][PF_MODEL].ok ||
		    pf->model[i].n == 0)
			continue;
		d = model_print_diff(&pf->model[ref], &pf->model[i], names,
		    sizeof(names));
		if (d == 0)
			continue;
		utf8_fmt(buf, sizeof(buf), "differs from %s's in %zu file%s: "
		    "%s", cf->nodes[ref].name, d, d == 1 ? "" : "s", names);
		preflight_set(pf, i, PF_MODEL, 0, buf, "copy the same model to "
		    "every node (rsync -a from the head)");
	}
}
