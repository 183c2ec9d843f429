/*
 * Which diagnosis vLLM's output is, given the config: the catalogue
 * (lib/parse/diagnose.c) knows the texts, this knows what the config
 * makes of them.
 */
#ifndef TANDEM_VLLMDIAG_H
#define TANDEM_VLLMDIAG_H

#include <stddef.h>

#include "config.h"
#include "diagnose.h"

/*
 * diag_match on vLLM's own output, which needs the config (NULL: as
 * diag_match). "Invalid repository ID or local directory specified" is
 * vLLM's text for any failure to read a model's config (vllm/
 * transformers_utils/config.py): for a local vllm.model (it begins with /
 * . or ~) that is a missing model, no retry helps; for a hub ID it is as
 * likely a hub outage or a network fault, and a retry may pass
 * (model-unreadable). vLLM's engine-ready TimeoutError stops retries only
 * when the config set VLLM_ENGINE_READY_TIMEOUT_S; with tandem's own value
 * (vllm.ready_timeout_s) the load outlasted tandem's wait too, which is
 * startup-timeout, retried.
 */
const struct diag	*diag_match_vllm(const char *text,
			    const struct config *, char *excerpt,
			    size_t excerptlen);

#endif
