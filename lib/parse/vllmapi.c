#include <jansson.h>
#include <string.h>

#include "utf8.h"
#include "util.h"
#include "vllmapi.h"

const char *
gen_endpoint_path(enum gen_endpoint e)
{
	switch (e) {
	case GEN_COMPLETIONS:
		return "/v1/completions";
	case GEN_CHAT:
		return "/v1/chat/completions";
	}
	return "?";
}

const char *
gen_endpoint_name(enum gen_endpoint e)
{
	switch (e) {
	case GEN_COMPLETIONS:
		return "completions";
	case GEN_CHAT:
		return "chat/completions";
	}
	return "?";
}

static char *
dump(json_t *b)
{
	char *s = b ? json_dumps(b, JSON_COMPACT) : NULL;

	json_decref(b);
	return s ? s : xstrdup("{}");
}

char *
vllm_completion_body(const char *model)
{
	return dump(json_pack("{s:s, s:s, s:i, s:i}", "model", model ? model :
	    "", "prompt", "ping", "max_tokens", 1, "temperature", 0));
}

char *
vllm_chat_body(const char *model)
{
	return dump(json_pack("{s:s, s:[{s:s, s:s}], s:i, s:i}", "model",
	    model ? model : "", "messages", "role", "user", "content", "ping",
	    "max_tokens", 1, "temperature", 0));
}

int
vllm_error_message(const char *body, char *msg, size_t len)
{
	json_t *root = body ? json_loads(body, 0, NULL) : NULL, *e;
	const char *m = NULL;

	if (json_is_object(root)) {
		e = json_object_get(root, "error");
		if (json_is_object(e))		/* vLLM 0.10.1 and later */
			m = json_string_value(json_object_get(e, "message"));
		else if (json_is_string(e))	/* AuthenticationMiddleware */
			m = json_string_value(e);
		else if (json_is_string(json_object_get(root, "message")))
			m = json_string_value(json_object_get(root, "message"));
		else if (json_is_string(json_object_get(root, "detail")))
			m = json_string_value(json_object_get(root, "detail"));
	}
	if (m)
		utf8_copy(msg, len, m);
	json_decref(root);
	return m ? 0 : -1;
}

enum vllm_refusal
vllm_refusal(int status, const char *body)
{
	char msg[300];

	if (status == 401)
		return VLLM_REFUSED_KEY;
	if (status == 404 && vllm_error_message(body, msg, sizeof(msg)) == 0 &&
	    strncmp(msg, "The model ", 10) == 0 && strstr(msg,
	    " does not exist"))
		return VLLM_REFUSED_MODEL;
	return VLLM_REFUSED_NOT;
}

int
vllm_models_lists(const char *body, const char *id, char *names, size_t len)
{
	json_t *root = body ? json_loads(body, 0, NULL) : NULL, *data, *m;
	struct sbuf b;
	size_t i;
	int found = 0, listed = 0;

	data = json_object_get(root, "data");
	if (!json_is_array(data)) {
		json_decref(root);
		return -1;
	}
	sbuf_init(&b);
	json_array_foreach(data, i, m) {
		const char *name = json_string_value(json_object_get(m, "id"));

		if (name == NULL)
			continue;
		if (strcmp(name, id) == 0)
			found = 1;
		sbuf_addf(&b, "%s%s", listed++ ? ", " : "", name);
	}
	if (len)
		utf8_copy(names, len, b.s ? b.s : "");
	sbuf_free(&b);
	json_decref(root);
	return found ? 1 : listed ? 0 : -1;
}

enum gen_verdict
vllm_gen_verdict(enum gen_endpoint e, int status, const char *body, char *why,
    size_t whylen)
{
	json_t *root;
	char msg[300];
	int ok = 0;

	if (whylen)
		why[0] = '\0';
	if (status == 200) {
		if ((root = body ? json_loads(body, 0, NULL) : NULL)) {
			json_t *c = json_array_get(json_object_get(root,
			    "choices"), 0);

			/* completions: choices[0].text; chat: .message */
			ok = json_is_object(c) && (e == GEN_COMPLETIONS ?
			    json_is_string(json_object_get(c, "text")) :
			    json_is_object(json_object_get(c, "message")));
			json_decref(root);
		}
		if (ok)
			return GEN_OK;
		utf8_fmt(why, whylen, "HTTP 200 without a choice: %.120s",
		    body ? body : "");
		return GEN_UNKNOWN;
	}
	if (vllm_error_message(body, msg, sizeof(msg)) == 0) {
		utf8_fmt(why, whylen, "HTTP %d: %s", status, msg);
		if (e == GEN_CHAT && status == 400 && strstr(msg,
		    "chat template"))
			return GEN_NO_TEMPLATE;
		return GEN_ERROR;
	}
	if (status == 0)
		utf8_copy(why, whylen, "no answer");
	else
		utf8_fmt(why, whylen, "HTTP %d: %.120s", status, body ? body :
		    "");
	/* 500 with an empty body is vLLM's engine-dead answer */
	return status >= 500 || status == 0 ? GEN_ERROR : GEN_UNKNOWN;
}
