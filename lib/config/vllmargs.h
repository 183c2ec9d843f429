/*
 * vllm.args, read in one place: the values tandem takes from it
 * (--gpu-memory-utilization, the parallel sizes), the flags tandem sets
 * itself (checked in config_parse), and the remedy ladder's rewrite of
 * --gpu-memory-utilization (plan.c).
 */
#ifndef TANDEM_VLLMARGS_H
#define TANDEM_VLLMARGS_H

#include "util.h"

struct config;

/*
 * vllm serve's flags and variable for the API key and the served names
 * (vllm/entrypoints/openai/cli_args.py; the key also from VLLM_API_KEY,
 * vllm/envs.py): formats.md section 10.
 */
#define VLLM_API_KEY_FLAG	"--api-key"
#define VLLM_API_KEY_ENV	"VLLM_API_KEY"
#define VLLM_SERVED_FLAG	"--served-model-name"
/* vllm/envs.py: how long the API server waits for its engine cores */
#define VLLM_READY_ENV		"VLLM_ENGINE_READY_TIMEOUT_S"

/*
 * The value of the first "FLAG V", "ALIAS V" or "FLAG=V" in args; NULL
 * when absent (a FLAG that ends the list has no value and is not found).
 */
const char	*vllmargs_value(const struct strv *, const char *flag,
		    const char *alias);
/*
 * The GPUs vLLM asks Ray for: tensor x pipeline parallel size when
 * --tensor-parallel-size (-tp) is given, else fallback. The sizes were
 * checked when the config was read.
 */
int		 vllmargs_gpus(const struct strv *, int fallback);
/*
 * Copies args into out with every --gpu-memory-utilization set to gmu,
 * added at the end when absent; gmu <= 0 copies args unchanged.
 */
void		 vllmargs_with_gmu(const struct strv *args, double gmu,
		    struct strv *out);

/*
 * The API key vLLM wants on /v1 when the config says it: --api-key in
 * vllm.args, else VLLM_API_KEY of the head's container (nodes[].env over
 * container.env, as docker keeps the last -e). A new string, or NULL;
 * vllm.api_key_file is read by the daemon (lib does no I/O).
 */
char		*config_vllm_api_key(const struct config *);
/* Only the containers' VLLM_API_KEY (the head's), or NULL. */
char		*config_vllm_api_key_env(const struct config *);

#endif
