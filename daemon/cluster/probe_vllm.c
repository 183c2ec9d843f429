/*
 * The vLLM probe over HTTP: /health, /v1/models, and now and then a
 * one-token completion, since /health answers 200 while Ray workers are
 * dead. The wait for vLLM in rebuild.c asks the same questions through
 * the same chain (vllm_chain), with its own timeouts and verdicts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster_int.h"

static int
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

static char *
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

static char *
api_url(const struct cluster *cl, const char *path)
{
	return xprintf("%s%s", cl->cf->vllm.url, path);
}

static void	on_chain_answer(const struct http_result *h, void *arg);

static void
chain_ask(struct op *o, enum vllm_stage at)
{
	struct cluster *cl = o->cl;
	double t = cl->cf->probe.timeout_s;
	char *url, *body = NULL;

	o->vllm_stage = at;
	o->start_ms = mono_ms();
	if (at == VLLM_HEALTH) {
		url = api_url(cl, "/health");
		t = fmin(t, o->chain->health_max_s);
	} else if (at == VLLM_MODELS)
		url = api_url(cl, "/v1/models");
	else {
		url = api_url(cl, "/v1/chat/completions");
		body = completion_body(cl);
		t = fmax(t, o->chain->generate_min_s);
	}
	/* a rebuild's wait is traced; a probe's stamps nothing (no trace) */
	step_sent(cl, o, at == VLLM_HEALTH ? TS_VLLM_HEALTH : at ==
	    VLLM_MODELS ? TS_VLLM_MODELS : TS_VLLM_GENERATE);
	http_request(url, body, t, on_chain_answer, o);
	free(url);
	free(body);
}

/* One answer of the chain: judged here, acted on by the chain's owner. */
static void
on_chain_answer(const struct http_result *h, void *arg)
{
	struct op *o = arg;
	enum vllm_stage at = o->vllm_stage;
	json_t *root;
	int ok = h->status == 200;

	if (!claim(o))
		return;
	if (ok && at == VLLM_MODELS)
		ok = models_list(o->cl, h->body);
	if (ok && at == VLLM_GENERATE) {
		ok = 0;
		if ((root = json_loads(h->body, 0, NULL))) {
			ok = json_array_size(json_object_get(root,
			    "choices")) > 0;
			json_decref(root);
		}
	}
	if (o->chain->answered(o, at, h, ok) && at != VLLM_GENERATE)
		chain_ask(o, at + 1);
}

void
vllm_chain(struct op *o, const struct vllm_chain *c)
{
	o->chain = c;
	chain_ask(o, VLLM_HEALTH);
}

/* The probe's verdicts: the first stage that fails names the cycle's fault. */
static int
probe_answered(struct op *o, enum vllm_stage at, const struct http_result *h,
    int ok)
{
	struct cluster *cl = o->cl;
	char why[300];

	switch (at) {
	case VLLM_HEALTH:
		observe(cl, PR_HEALTH, o);
		if (ok)
			return 1;
		utf8_fmt(why, sizeof(why), "/health: %s", h->status ?
		    "not 200" : h->error);
		if (h->status)
			snprintf(why, sizeof(why), "/health answered %ld",
			    h->status);
		break;
	case VLLM_MODELS:
		if (!ok) {
			utf8_fmt(why, sizeof(why), "/v1/models does not list "
			    "%s", config_model_id(cl->cf));
			break;
		}
		/* /health says 200 while Ray workers are dead: generate a token. */
		if (!o->force_generate && now_s() - cl->last_generate <
		    cl->cf->probe.generate_every_s && cl->generate_ok) {
			cl->vllm_healthy = 1;
			free(o);
			probe_done(cl, NULL, NULL, NULL);
			return 0;
		}
		return 1;
	case VLLM_GENERATE:
		observe(cl, PR_GENERATE, o);
		free(o);
		cl->last_generate = now_s();
		cl->generate_ok = ok;
		cl->vllm_healthy = ok;
		if (ok) {
			probe_done(cl, NULL, NULL, NULL);
			return 0;
		}
		utf8_fmt(why, sizeof(why), "one-token completion: %s",
		    h->status ? "HTTP error" : h->error);
		if (h->status)
			snprintf(why, sizeof(why), "one-token completion "
			    "answered HTTP %ld", h->status);
		probe_done(cl, diag_get(DIAG_GENERATION_FAILED), NULL, why);
		return 0;
	}
	cl->vllm_healthy = 0;
	free(o);
	probe_done(cl, diag_get(DIAG_VLLM_EXITED), NULL, why);
	return 0;
}

static const struct vllm_chain probe_chain = {
	.health_max_s = INFINITY,
	.generate_min_s = 0,
	.answered = probe_answered,
};

void
probe_vllm(struct cluster *cl, int force_generate)
{
	struct op *o = op_new(cl, cl->cf->head);

	o->force_generate = force_generate;
	cl->pending++;
	vllm_chain(o, &probe_chain);
}
