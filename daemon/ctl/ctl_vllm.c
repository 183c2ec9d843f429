/*
 * What tandemctl bench reads of the config to reach vLLM itself: its URL
 * and its API key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "conffile.h"
#include "config.h"
#include "ctl.h"
#include "tokenfile.h"
#include "vllmargs.h"

/* Against vLLM itself: vllm.url from the config by default. */
char *
ctl_vllm_url(const char *cfgfile, int named)
{
	char err[ERRLEN];
	struct config *cf;
	char *url;

	if (!named && access(cfgfile, F_OK) == -1)
		return xstrdup("http://127.0.0.1:8000");
	if ((cf = conffile_load(cfgfile, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return NULL;
	}
	url = xstrdup(cf->vllm.url);
	config_free(cf);
	return url;
}

int
ctl_vllm_key(const char *cfgfile, int named, char **key)
{
	char err[ERRLEN];
	struct config *cf;
	int rc = 0;

	*key = NULL;
	if (!named && access(cfgfile, F_OK) == -1)
		return 0;
	if ((cf = conffile_load(cfgfile, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return -1;
	}
	if ((*key = config_vllm_api_key(cf)) == NULL &&
	    token_file_read(cf->vllm.api_key_file, 0, key, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "tandemctl: %s\n", err);
		rc = -1;
	}
	config_free(cf);
	return rc;
}
