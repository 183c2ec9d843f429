/*
 * The one-token generation that proves vLLM serves (PRODUCT.md section 3,
 * `serving`), as pure request bodies and verdicts on the answers.
 *
 * /v1/completions takes a prompt and needs no chat template, so every
 * model serves it, base models too. /v1/chat/completions renders the
 * messages with the model's chat template; a model without one (a base
 * model, many quantised uploads) gets 400 with "As of transformers v4.44,
 * default chat template is no longer allowed, so you must provide a chat
 * template if the tokenizer does not define one." (vllm/entrypoints/
 * chat_utils.py, apply_hf_chat_template; tests/unit/data/vllm-*). The
 * error body is {"object":"error","message":...,"type":...,"param":...,
 * "code":400} up to vLLM 0.10.0 and {"error":{"message":...,"type":...,
 * "param":...,"code":400}} since 0.10.1 (vllm-project/vllm#22099).
 */
#ifndef TANDEM_VLLMAPI_H
#define TANDEM_VLLMAPI_H

#include <stddef.h>

enum gen_verdict {
	GEN_OK,			/* 200 with a choice */
	GEN_NO_TEMPLATE,	/* chat: 400 naming the chat template */
	GEN_ERROR,		/* vLLM's error answer (message in why) */
	GEN_UNKNOWN,		/* an answer tandem does not understand */
};

/* Which endpoint proved generation: /status says it. */
enum gen_endpoint { GEN_COMPLETIONS, GEN_CHAT };

const char	*gen_endpoint_path(enum gen_endpoint);
/* "completions" / "chat/completions", for /status */
const char	*gen_endpoint_name(enum gen_endpoint);

/*
 * The request bodies: max_tokens 1, temperature 0. The model id is the
 * served name (config_model_id). Returns a new string.
 */
char		*vllm_completion_body(const char *model);
char		*vllm_chat_body(const char *model);

/*
 * The message of vLLM's error body in either shape; 0 and the message,
 * or -1 when the body is neither.
 */
int		 vllm_error_message(const char *body, char *msg, size_t len);

/*
 * vLLM's refusals of who asks or what for, on any /v1 path: 401 from its
 * AuthenticationMiddleware (vllm serve --api-key or VLLM_API_KEY; the
 * body {"error": "Unauthorized"}), and 404 "The model `X` does not
 * exist." for a name it does not serve (--served-model-name); formats.md
 * section 10, tests/unit/data/vllm-api-key/.
 */
enum vllm_refusal {
	VLLM_REFUSED_NOT,	/* anything else */
	VLLM_REFUSED_KEY,	/* 401 */
	VLLM_REFUSED_MODEL,	/* 404, the model does not exist */
};

enum vllm_refusal vllm_refusal(int status, const char *body);

/*
 * /v1/models' answer: 1 when it lists id; 0 when it lists only other
 * names (names gets them, comma-separated, cut to fit); -1 when it is no
 * model list.
 */
int		 vllm_models_lists(const char *body, const char *id,
		    char *names, size_t len);

/*
 * Judges one answer of endpoint e: HTTP status (0 for no answer) and
 * body. why gets what a failure says (vLLM's message, or the status and
 * the first bytes of the body).
 */
enum gen_verdict vllm_gen_verdict(enum gen_endpoint e, int status,
		    const char *body, char *why, size_t whylen);

#endif
