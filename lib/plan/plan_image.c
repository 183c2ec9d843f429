/*
 * The commands behind the image and model checks: is the image archive
 * there, which image it holds, load it, and a fingerprint of the model
 * directory that never reads the weights. Rendered like plan.c's, every
 * value quoted.
 */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "quote.h"

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
	return shell_command_take(&v);
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
 * What the two image stores agree on (imagecheck.h): the classic store's
 * .Id is the config digest, the containerd store's the manifest or index
 * digest (moby daemon/containerd/image_inspect.go: ID = target.Digest);
 * .Created and .RootFS.Layers (the diff IDs) come from the image config
 * in both. "|" and "," because podman prints .Created with spaces.
 */
char *
cmd_image_identity(const struct config *cf)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "image");
	strv_add(&v, "inspect");
	strv_add(&v, "--format");
	strv_add(&v, "{{.Id}}|{{.Created}}|{{range .RootFS.Layers}}{{.}},{{end}}");
	strv_add(&v, cf->container.image);
	return shell_command_take(&v);
}

/* "blobs/sha256/<64 hex>" (docker 25+, containerd) or "<64 hex>.json". */
static int
config_path_ok(const char *p)
{
	size_t i, n = strlen(p);
	const char *hex = p;

	if (strncmp(p, "blobs/sha256/", 13) == 0 && n == 13 + 64)
		hex = p + 13;
	else if (n == 64 + 5 && strcmp(p + 64, ".json") == 0)
		hex = p;
	else
		return 0;
	for (i = 0; i < 64; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' &&
		    hex[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * The archive's image config, which carries the same created date and
 * diff IDs as `image inspect` shows on either store: read before loading,
 * so a node on the containerd store compares what is comparable.
 */
char *
cmd_archive_config(const struct config *cf, size_t node,
    const char *config_path)
{
	static const char *const argv[] = { "tar", "-xOf", NULL };

	if (config_path == NULL || !config_path_ok(config_path))
		return NULL;
	return with_archive(cf, node, argv, config_path);
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
