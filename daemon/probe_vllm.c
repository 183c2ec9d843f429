/*
 * The vLLM probe over HTTP: /health, /v1/models, and now and then a
 * one-token completion, since /health answers 200 while Ray workers are
 * dead. The wait for vLLM in rebuild.c asks the same questions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster_int.h"

static void	on_models(const struct http_result *h, void *arg);
static void	on_generate(const struct http_result *h, void *arg);

int
models_list(const struct cluster *cl, const char *body)
{
	json_t *root = json_loads(body, 0, NULL), *data, *m;
	size_t i;
	int found = 0;

	if (root == NULL)
		return 0;
	data = json_object_get(root, "data");
	json_array_foreach(data, i, m) {
		const char *id = json_string_value(json_object_get(m, "id"));

		if (id && strcmp(id, config_model_id(cl->cf)) == 0)
			found = 1;
	}
	json_decref(root);
	return found;
}

char *
completion_body(const struct cluster *cl)
{
	json_t *b = json_pack("{s:s, s:[{s:s, s:s}], s:i, s:i}", "model",
	    config_model_id(cl->cf), "messages", "role", "user", "content",
	    "ping", "max_tokens", 1, "temperature", 0);
	char *s = json_dumps(b, JSON_COMPACT);

	json_decref(b);
	/* the model id comes from the config, which jansson parsed */
	return s ? s : xstrdup("{}");
}

char *
api_url(const struct cluster *cl, const char *path)
{
	return xprintf("%s%s", cl->cf->vllm.url, path);
}

static void
on_health(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char *url;

	if (!claim(o))
		return;
	observe(cl, PR_HEALTH, o);
	if (h->status != 200) {
		char why[300];

		cl->vllm_healthy = 0;
		utf8_fmt(why, sizeof(why), "/health: %s", h->status ?
		    "not 200" : h->error);
		if (h->status)
			snprintf(why, sizeof(why), "/health answered %ld",
			    h->status);
		free(o);
		probe_done(cl, diag_get(DIAG_VLLM_EXITED), NULL, why);
		return;
	}
	url = api_url(cl, "/v1/models");
	o->start_ms = mono_ms();
	http_request(url, NULL, cl->cf->probe.timeout_s, on_models, o);
	free(url);
}

static void
on_models(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	char *url, *body;

	if (!claim(o))
		return;
	if (h->status != 200 || !models_list(cl, h->body)) {
		char why[300];

		cl->vllm_healthy = 0;
		utf8_fmt(why, sizeof(why), "/v1/models does not list %s",
		    config_model_id(cl->cf));
		free(o);
		probe_done(cl, diag_get(DIAG_VLLM_EXITED), NULL, why);
		return;
	}
	/* /health says 200 while Ray workers are dead: generate a token. */
	if (!o->force_generate && now_s() - cl->last_generate <
	    cl->cf->probe.generate_every_s && cl->generate_ok) {
		cl->vllm_healthy = 1;
		free(o);
		probe_done(cl, NULL, NULL, NULL);
		return;
	}
	url = api_url(cl, "/v1/chat/completions");
	body = completion_body(cl);
	o->start_ms = mono_ms();
	http_request(url, body, cl->cf->probe.timeout_s, on_generate, o);
	free(url);
	free(body);
}

static void
on_generate(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	struct cluster *cl = o->cl;
	json_t *root;
	int ok = 0;

	if (!claim(o))
		return;
	observe(cl, PR_GENERATE, o);
	free(o);
	cl->last_generate = now_s();
	if (h->status == 200 && (root = json_loads(h->body, 0, NULL))) {
		ok = json_array_size(json_object_get(root, "choices")) > 0;
		json_decref(root);
	}
	cl->generate_ok = ok;
	cl->vllm_healthy = ok;
	if (ok)
		probe_done(cl, NULL, NULL, NULL);
	else {
		char why[300];

		utf8_fmt(why, sizeof(why), "one-token completion: %s",
		    h->status ? "HTTP error" : h->error);
		if (h->status)
			snprintf(why, sizeof(why), "one-token completion "
			    "answered HTTP %ld", h->status);
		probe_done(cl, diag_get(DIAG_GENERATION_FAILED), NULL, why);
	}
}

void
probe_vllm(struct cluster *cl, int force_generate)
{
	struct op *o = op_new(cl, cl->cf->head);
	char *url = api_url(cl, "/health");

	o->force_generate = force_generate;
	cl->pending++;
	http_request(url, NULL, cl->cf->probe.timeout_s, on_health, o);
	free(url);
}
