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

static const char *
archive(const struct config *cf, size_t node)
{
	return cf->nodes[node].image_archive;
}

char *
cmd_archive_present(const struct config *cf, size_t node)
{
	struct strv v;

	if (archive(cf, node) == NULL)
		return NULL;
	strv_init(&v);
	strv_add(&v, "test");
	strv_add(&v, "-r");
	strv_add(&v, archive(cf, node));
	return finish(&v);
}

/*
 * docker save and podman save both write manifest.json: the tags and the
 * config blob (the image ID) of each image, read without loading anything.
 */
char *
cmd_archive_manifest(const struct config *cf, size_t node)
{
	struct strv v;

	if (archive(cf, node) == NULL)
		return NULL;
	strv_init(&v);
	strv_add(&v, "tar");
	strv_add(&v, "-xOf");
	strv_add(&v, archive(cf, node));
	strv_add(&v, "manifest.json");
	return finish(&v);
}

char *
cmd_image_load(const struct config *cf, size_t node)
{
	struct strv v;

	if (archive(cf, node) == NULL)
		return NULL;
	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "load");
	strv_add(&v, "-i");
	strv_add(&v, archive(cf, node));
	return finish(&v);
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
