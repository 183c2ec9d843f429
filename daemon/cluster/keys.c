/*
 * The secrets the runtime reads from files: vLLM's API key (vllm.api_key_file,
 * or the config's own) and tandemd's API token (api_token_file), each kept
 * from other users' eyes and masked in whatever tandem shows (log_secret).
 * funnel.c reads them at start and at a reload; the probes and the
 * executor ask cluster_vllm_key here, below the funnel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "tokenfile.h"
#include "vllmargs.h"

char *
keys_read_token(const char *path)
{
	char err[ERRLEN], *tok;

	if (token_file_read(path, 1, &tok, err, sizeof(err)) == -1)
		log_warnx("%s; POST endpoints answer 403", err);
	return tok;
}

/*
 * The key vLLM wants on /v1 (vllm serve --api-key): vllm.api_key_file on
 * this host, kept from other users as api_token_file is, or the config's
 * own (cluster_vllm_key). Every output masks either from here on
 * (log_secret). -1 when the file cannot be read.
 */
int
keys_vllm_read(const struct config *cf, char **key, char *err, size_t len)
{
	char *own = config_vllm_api_key(cf);

	log_secret(own);
	free(own);
	*key = NULL;
	if (len)
		err[0] = '\0';
	if (token_file_read(cf->vllm.api_key_file, 1, key, err, len) == -1)
		return -1;
	/*
	 * token_file_read leaves an unopenable file to its caller (a missing
	 * api_token_file only refuses POSTs); a key file named and unread
	 * would send every probe without its key and end in a
	 * vllm-unauthorized that hides why.
	 */
	if (cf->vllm.api_key_file && *key == NULL) {
		char why[256];

		/* its words name the token's setting (tokenfile.c): say ours */
		snprintf(why, sizeof(why), "%s", len && err[0] ? err : "empty");
		snprintf(err, len, "vllm.api_key_file %s: cannot be read (%s)",
		    cf->vllm.api_key_file, why);
		return -1;
	}
	log_secret(*key);
	return 0;
}

void
keys_vllm_set(struct cluster *cl, char *key)
{
	free(cl->vllm_key_file);
	cl->vllm_key_file = key;
}

char *
cluster_vllm_key(const struct cluster *cl)
{
	char *k = config_vllm_api_key(cl->cf);

	if (k == NULL && cl->cf->vllm.api_key_file && cl->vllm_key_file)
		k = xstrdup(cl->vllm_key_file);
	return k;
}

/*
 * The API token of the config that runs: a change still being checked,
 * refused or rolled back keeps the old one (the POSTs of whoever runs it).
 */
void
keys_token_take(struct cluster *cl, const struct config *nc)
{
	free(cl->token);
	cl->token = keys_read_token(nc->api_token_file);
}
