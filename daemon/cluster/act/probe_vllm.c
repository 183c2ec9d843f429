/*
 * vLLM's readiness chain over HTTP (act_env.h): /health, /v1/models,
 * and a one-token completion, since /health answers 200 while Ray workers
 * are dead. The completion is asked of /v1/completions, which every model
 * serves: /v1/chat/completions needs a chat template, and a base model
 * has none (vLLM answers 400, lib/parse/vllmapi.h). The questions and what
 * passes; the probe's verdict on each stage. The wait for vLLM
 * (act_wait_vllm.c) asks the same chain with its own limits and verdicts.
 * Beside the chain the probe reads vLLM's own counters (GET /metrics):
 * requests with work and no new token for probe.stall_s is a stall that
 * /health does not show (lib/policy/stall.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "act_env.h"
#include "vllmmetrics.h"

static int
models_list(const struct config *cf, const char *body)
{
	return vllm_models_lists(body, config_model_id(cf), NULL, 0) == 1;
}

/* What the chain showed: the runtime keeps it for /status. */
static void
healthy(struct action *a, int ok, const char *endpoint)
{
	struct vllm_seen v = { .healthy = ok, .gen_endpoint = endpoint };

	act_vllm_seen(a, &v);
}

const struct diag *
vllm_refused(struct action *a, enum vllm_stage at,
    const struct http_result *h, char *why, size_t len)
{
	const char *id = config_model_id(act_cf(a));
	char names[200], *key;

	if (at == VLLM_HEALTH || h->status == 0)
		return NULL;
	switch (vllm_refusal((int)h->status, h->body)) {
	case VLLM_REFUSED_KEY:
		key = a->env->vllm_key(a->env->ctx);
		utf8_fmt(why, len, "%s answered 401 Unauthorized to %s",
		    at == VLLM_MODELS ? "GET /v1/models" : "POST "
		    "/v1/completions", key ? "the key tandem sent" :
		    "tandem, which has no key");
		free(key);
		return diag_get(DIAG_VLLM_UNAUTHORIZED);
	case VLLM_REFUSED_MODEL:
		utf8_fmt(why, len, "/v1/completions answered 404: the model "
		    "`%s` does not exist", id);
		return diag_get(DIAG_VLLM_MODEL_NAME);
	case VLLM_REFUSED_NOT:
		break;
	}
	if (at == VLLM_MODELS && h->status == 200 &&
	    vllm_models_lists(h->body, id, names, sizeof(names)) == 0) {
		utf8_fmt(why, len, "/v1/models lists %s; tandem asks for %s",
		    names, id);
		return diag_get(DIAG_VLLM_MODEL_NAME);
	}
	return NULL;
}

void
vllm_ask(struct action *a, enum vllm_stage at, const struct vllm_limits *lim)
{
	const struct config *cf = act_cf(a);
	double t = cf->probe.timeout_s;
	char *url, *body = NULL;
	enum trace_kind k;

	if (at == VLLM_HEALTH) {
		url = xprintf("%s/health", cf->vllm.url);
		t = fmin(t, lim->health_max_s);
		k = TS_VLLM_HEALTH;
	} else if (at == VLLM_MODELS) {
		url = xprintf("%s/v1/models", cf->vllm.url);
		k = TS_VLLM_MODELS;
	} else {
		url = xprintf("%s%s", cf->vllm.url,
		    gen_endpoint_path(GEN_COMPLETIONS));
		body = vllm_completion_body(config_model_id(cf));
		t = fmax(t, lim->generate_min_s);
		k = TS_VLLM_GENERATE;
	}
	/* a rebuild's wait is traced; a probe's stamps nothing (no trace) */
	op_http(&a->own, cf->head, TAG_VLLM + (int)at, url, body, t, k);
	free(url);
	free(body);
}

enum gen_verdict
vllm_gen_judge(const struct config *cf, const struct http_result *h,
    char *why, size_t len)
{
	char said[300], asked[300];
	enum gen_verdict v;

	if (len)
		why[0] = '\0';
	if (h->status == 0) {
		utf8_fmt(why, len, "one-token completion: %s", h->error ?
		    h->error : "no answer");
		return GEN_ERROR;
	}
	v = vllm_gen_verdict(GEN_COMPLETIONS, (int)h->status, h->body, said,
	    sizeof(said));
	switch (v) {
	case GEN_OK:
		break;
	case GEN_UNKNOWN:
		/* an answer vLLM's API does not give: could not tell */
		utf8_fmt(asked, sizeof(asked), "POST %s%s", cf->vllm.url,
		    gen_endpoint_path(GEN_COMPLETIONS));
		diag_unknown_excerpt(why, len, asked, -1, said, NULL);
		break;
	case GEN_NO_TEMPLATE:
	case GEN_ERROR:
		utf8_fmt(why, len, "one-token completion answered %s", said);
		break;
	}
	return v;
}

int
vllm_passes(const struct config *cf, enum vllm_stage at,
    const struct http_result *h)
{
	int ok = h->status == 200;

	if (ok && at == VLLM_MODELS)
		ok = models_list(cf, h->body);
	if (ok && at == VLLM_GENERATE)
		ok = vllm_gen_verdict(GEN_COMPLETIONS, (int)h->status,
		    h->body, NULL, 0) == GEN_OK;
	return ok;
}

int
vllm_probe_verdict(struct action *a, const struct op *o,
    const struct http_result *h, int force, const struct diag **d, char *why,
    size_t len)
{
	enum vllm_stage at = (enum vllm_stage)(o->tag - TAG_VLLM);
	const struct config *cf = act_cf(a);
	struct probe_memory *s = a->env->memory(a->env->ctx);
	int ok = at == VLLM_GENERATE ? 0 : vllm_passes(cf, at, h);
	enum gen_verdict v;
	uint64_t now = mono_ms();

	*d = NULL;
	switch (at) {
	case VLLM_HEALTH:
		act_timed(a, PR_HEALTH, o);
		if (ok)
			return 1;
		if (h->status)
			snprintf(why, len, "/health answered %ld", h->status);
		else
			utf8_fmt(why, len, "/health: %s", h->error);
		break;
	case VLLM_MODELS:
		if (!ok && (*d = vllm_refused(a, at, h, why, len)) != NULL) {
			healthy(a, 0, NULL);
			return 0;
		}
		if (!ok) {
			utf8_fmt(why, len, "/v1/models does not list %s",
			    config_model_id(cf));
			break;
		}
		/* /health says 200 while Ray workers are dead: generate a token. */
		if (!force && s->generate_ok && s->generate_ms > 0 && now -
		    s->generate_ms < (uint64_t)(cf->probe.generate_every_s *
		    1000)) {
			healthy(a, 1, NULL);
			return 0;
		}
		return 1;
	case VLLM_GENERATE:
		act_timed(a, PR_GENERATE, o);
		v = vllm_gen_judge(cf, h, why, len);
		ok = v == GEN_OK;
		/* the endpoint proved generation (a vouched one proved none) */
		if (ok)
			healthy(a, -1, VLLM_GEN_ENDPOINT);
		/*
		 * Under real traffic tandem's one-token completion waits its
		 * turn like any other request, and may time out while the
		 * engine works flat out. A reading of vLLM's counters in this
		 * cycle that saw new tokens vouches for it: the engine is
		 * saturated, not dead (a dead one stops the counters, and the
		 * stall check says so).
		 */
		if (!ok && h->timed_out && stall_tokens_since(&s->stall,
		    (double)s->cycle_ms / 1000.0)) {
			log_info("the one-token completion timed out after %.0f s "
			    "behind real traffic; vLLM's /metrics shows tokens "
			    "coming: not a failure", h->elapsed_s);
			v = GEN_OK;
			ok = 1;
		}
		s->generate_ms = now;
		s->generate_ok = ok;
		healthy(a, ok, NULL);
		if (ok)
			return 0;
		if ((*d = vllm_refused(a, at, h, why, len)) != NULL)
			return 0;
		*d = diag_get(v == GEN_UNKNOWN ? DIAG_UNRECOGNISED_ANSWER :
		    DIAG_GENERATION_FAILED);
		return 0;
	}
	healthy(a, 0, NULL);
	*d = diag_get(DIAG_VLLM_EXITED);
	return 0;
}

void
vllm_ask_metrics(struct action *a, int tag)
{
	const struct config *cf = act_cf(a);
	char *url = xprintf("%s/metrics", cf->vllm.url);

	op_http(&a->own, cf->head, tag, url, NULL, cf->probe.timeout_s,
	    TS_COUNT);
	free(url);
}

/*
 * One reading of vLLM's counters into the stall detector. An answer
 * without them (no vLLM, or vllm serve --disable-log-stats) is no verdict
 * and turns the check off until they come, said once; /health and the
 * completion still judge vLLM.
 */
const struct diag *
vllm_metrics_verdict(struct action *a, const struct http_result *h,
    char *why, size_t len)
{
	const struct config *cf = act_cf(a);
	struct probe_memory *s = a->env->memory(a->env->ctx);
	struct vllm_reading *rd = xmalloc(sizeof(*rd));
	struct stall_report rep;
	enum stall_verdict v;
	char err[200];

	why[0] = '\0';
	if (h->status == 0)
		utf8_fmt(err, sizeof(err), "%s", h->error ? h->error :
		    "no answer");
	else if (h->status != 200)
		snprintf(err, sizeof(err), "answered HTTP %ld", h->status);
	if (h->status == 200 && vllm_metrics_parse(h->body, h->bodylen, rd,
	    err, sizeof(err)) == 0) {
		if (s->metrics_unread)
			log_info("vLLM's /metrics has its counters again: the "
			    "stall check is on");
		s->metrics_unread = 0;
		v = stall_feed(&s->stall, rd, (double)mono_ms() / 1000.0,
		    cf->probe.stall_s, cf->probe.stall_readings, &rep);
		free(rd);
		if (rep.reset)
			log_info("vLLM's token counters went back (a restart): "
			    "the stall check starts over");
		if (v == STALL_SUSPECT)
			log_debug("stall suspect: engine %s, %.0f pending, no "
			    "token for %.0f s", rep.engine, rep.pending,
			    rep.quiet_s);
		if (v != STALL_STALLED)
			return NULL;
		stall_describe(&rep, why, len);
		return diag_get(DIAG_GENERATION_STALLED);
	}
	free(rd);
	if (!s->metrics_unread)
		log_warnx("vLLM's /metrics: %s: the stall check is off until "
		    "it reads vLLM's counters (vllm serve without "
		    "--disable-log-stats)", err);
	s->metrics_unread = 1;
	return NULL;
}
