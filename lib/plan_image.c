/*
 * The commands behind the image and model checks: is the image archive
 * there, which image it holds, load it, and a fingerprint of the model
 * directory that never reads the weights. Rendered like plan.c's, every
 * value quoted.
 */
#include <stdlib.h>

#include "plan.h"
#include "quote.h"

static char *
finish(struct strv *v)
{
	char *s = shell_command(v->v);

	strv_free(v);
	return s;
}

/* argv, then the node's image archive, then tail (if any); NULL: none. */
static char *
with_archive(const struct config *cf, size_t node, const char *const *argv,
    const char *tail)
{
	const char *arc = cf->nodes[node].image_archive;
	struct strv v;

	if (arc == NULL)
		return NULL;
	strv_init(&v);
	for (; *argv; argv++)
		strv_add(&v, *argv);
	strv_add(&v, arc);
	if (tail)
		strv_add(&v, tail);
	return finish(&v);
}

char *
cmd_archive_present(const struct config *cf, size_t node)
{
	static const char *const argv[] = { "test", "-r", NULL };

	return with_archive(cf, node, argv, NULL);
}

/*
 * docker save and podman save both write manifest.json: the tags and the
 * config blob (the image ID) of each image, read without loading anything.
 */
char *
cmd_archive_manifest(const struct config *cf, size_t node)
{
	static const char *const argv[] = { "tar", "-xOf", NULL };

	return with_archive(cf, node, argv, "manifest.json");
}

char *
cmd_image_load(const struct config *cf, size_t node)
{
	const char *argv[] = { cf->container.engine, "load", "-i", NULL };

	return with_archive(cf, node, argv, NULL);
}

/*
 * Every file with its size ("f SIZE PATH"), and a checksum of the small
 * JSON files at the top ("c CRC SIZE ./PATH"): config.json, tokenizer and
 * index files differ between revisions; the weights are only sized.
 * Hidden paths (.cache of a hub download) are left out.
 */
char *
cmd_model_fingerprint(const struct config *cf)
{
	char *dir = plan_model_dir(cf);
	struct sbuf b;

	if (dir == NULL)
		return NULL;
	sbuf_init(&b);
	sbuf_add(&b, "cd ");
	shell_quote(&b, dir);
	sbuf_add(&b, " && find . -type f ! -path './.*' -printf 'f %s %P\\n' "
	    "&& find . -maxdepth 1 -type f -name '*.json' -size -1024k "
	    "-exec cksum {} + | sed 's/^/c /'");
	free(dir);
	return sbuf_take(&b);
}
