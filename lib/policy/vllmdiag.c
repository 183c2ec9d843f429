#include <string.h>

#include "vllmargs.h"
#include "vllmdiag.h"

const struct diag *
diag_match_vllm(const char *text, const struct config *cf, char *excerpt,
    size_t excerptlen)
{
	const struct diag *d = diag_match(text, excerpt, excerptlen);
	const char *model = cf ? cf->vllm.model : NULL;

	if (d && d->id == DIAG_MODEL_MISSING && model && *model != '/' &&
	    *model != '.' && *model != '~' &&
	    strstr(text, "Invalid repository ID or local directory specified"))
		return diag_get(DIAG_MODEL_UNREADABLE);
	if (d && d->id == DIAG_ENGINE_READY_TIMEOUT && cf &&
	    !config_sets_env(cf, VLLM_READY_ENV))
		return diag_get(DIAG_STARTUP_TIMEOUT);
	return d;
}
