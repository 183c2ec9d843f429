#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"
#include "vllmargs.h"

#define GMU	"--gpu-memory-utilization"

/*
 * The next "FLAG V", "ALIAS V" or "FLAG=V" at or after *i: sets *i to its
 * index and *span to the arguments it takes (2 or 1), returns V.
 */
static const char *
next_flag(const struct strv *a, size_t *i, size_t *span, const char *flag,
    const char *alias)
{
	size_t n = strlen(flag);

	for (; *i < a->n; (*i)++) {
		const char *s = a->v[*i];

		if ((strcmp(s, flag) == 0 || (alias && strcmp(s, alias) == 0))
		    && *i + 1 < a->n) {
			*span = 2;
			return a->v[*i + 1];
		}
		if (strncmp(s, flag, n) == 0 && s[n] == '=') {
			*span = 1;
			return s + n + 1;
		}
	}
	return NULL;
}

const char *
vllmargs_value(const struct strv *a, const char *flag, const char *alias)
{
	size_t i = 0, span;

	return next_flag(a, &i, &span, flag, alias);
}

/* A parallel size: 1..4096, else -1. */
static int
size_value(const char *v)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < 1 || n > 4096)
		return -1;
	return (int)n;
}

static const struct {
	const char	*flag, *alias;
} sizes[] = {
	{ "--tensor-parallel-size",	"-tp" },
	{ "--pipeline-parallel-size",	"-pp" },
};

int
vllmargs_gpus(const struct strv *a, int fallback)
{
	const char *tp = vllmargs_value(a, sizes[0].flag, sizes[0].alias);
	const char *pp = vllmargs_value(a, sizes[1].flag, sizes[1].alias);

	if (tp == NULL)
		return fallback;
	return size_value(tp) * (pp ? size_value(pp) : 1);
}

void
vllmargs_with_gmu(const struct strv *a, double gmu, struct strv *out)
{
	size_t i = 0, at, span;
	const char *v;
	int done = 0;

	for (;;) {
		at = i;
		v = gmu > 0 ? next_flag(a, &at, &span, GMU, NULL) : NULL;
		if (v == NULL)
			at = a->n;
		for (; i < at; i++)
			strv_add(out, a->v[i]);
		if (v == NULL)
			break;
		if (span == 2) {
			strv_add(out, GMU);
			strv_addf(out, "%g", gmu);
		} else
			strv_addf(out, "%s=%g", GMU, gmu);
		i = at + span;
		done = 1;
	}
	if (gmu > 0 && !done) {
		strv_add(out, GMU);
		strv_addf(out, "%g", gmu);
	}
}

/*
 * The served name and the API key: tandem asks vLLM with the first served
 * name and sends the key, wherever the config gives them. A served name in
 * vllm.args and in vllm.served_model_name must agree (the flag is then
 * passed once); a key in vllm.api_key_file beside one vLLM gets from the
 * config could disagree, so the key is said once.
 */
static int
names_check(struct cfctx *c)
{
	struct config *cf = c->cf;
	const char *s = vllmargs_value(&cf->vllm.args, VLLM_SERVED_FLAG, NULL);
	const char *k = vllmargs_value(&cf->vllm.args, VLLM_API_KEY_FLAG, NULL);
	char *key, *env;
	int same;

	if (s && *s == '-')
		return cf_fail(c, "vllm.args", VLLM_SERVED_FLAG " needs a name");
	if (k && (*k == '-' || *k == '\0'))
		return cf_fail(c, "vllm.args", VLLM_API_KEY_FLAG " needs a key");
	if (s && cf->vllm.served_model_name &&
	    strcmp(s, cf->vllm.served_model_name) != 0)
		return cf_fail(c, "vllm.served_model_name", "\"%s\" differs "
		    "from the first " VLLM_SERVED_FLAG " in vllm.args, \"%s\"; "
		    "name it in one place", cf->vllm.served_model_name, s);
	if (s && cf->vllm.served_model_name)
		cf_warn(c, "vllm.served_model_name", "the same as "
		    VLLM_SERVED_FLAG " in vllm.args; passed once");
	/*
	 * vLLM up to about 0.9 takes VLLM_API_KEY over --api-key, later
	 * releases the flag (api_server.py, "Ensure --api-key option from
	 * CLI takes precedence"): two different keys mean different things
	 * to different images.
	 */
	if (k && (env = config_vllm_api_key_env(cf)) != NULL) {
		same = strcmp(k, env) == 0;
		free(env);
		if (!same)
			return cf_fail(c, "vllm.args", VLLM_API_KEY_FLAG " and "
			    "the containers' " VLLM_API_KEY_ENV " differ; which "
			    "one vLLM uses depends on its version: give one");
	}
	if (cf->vllm.api_key_file && (key = config_vllm_api_key(cf))) {
		free(key);
		return cf_fail(c, "vllm.api_key_file", "vLLM's key is already "
		    "in vllm.args (" VLLM_API_KEY_FLAG ") or the containers' "
		    VLLM_API_KEY_ENV "; name it in one place");
	}
	return 0;
}

/*
 * --gpu-memory-utilization is the remedy ladder's starting point; the
 * parallel sizes give ray.expect_gpus its default.
 */
int
vllmargs_check(struct cfctx *c)
{
	struct config *cf = c->cf;
	const char *v;
	char *end;
	size_t i;

	if ((v = vllmargs_value(&cf->vllm.args, GMU, NULL)) != NULL) {
		cf->vllm.gpu_memory_utilization = strtod(v, &end);
		if (*end || cf->vllm.gpu_memory_utilization <= 0 ||
		    cf->vllm.gpu_memory_utilization > 1)
			return cf_fail(c, "vllm.args", GMU ": \"%s\" is not a "
			    "number in (0, 1]", v);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		v = vllmargs_value(&cf->vllm.args, sizes[i].flag,
		    sizes[i].alias);
		if (v && size_value(v) == -1)
			return cf_fail(c, "vllm.args", "%s: \"%s\" is not a "
			    "positive integer", sizes[i].flag, v);
	}
	return names_check(c);
}

/*
 * Flags tandem derives from the config. An operator pasting the guide's own
 * `vllm serve` line brings them along: one that says what tandem would say
 * anyway is dropped with a warning, one that disagrees (or cannot hold for
 * every node, as vllm.args is shared) is an error at its position.
 */
enum derived { D_HOST, D_PORT, D_BACKEND, D_DP_SIZE, D_DP_LOCAL, D_DP_ADDR,
    D_DP_RPC, D_API_SERVERS, D_SEED, D_DP_RANK, D_HEADLESS };

static const struct {
	const char	*flag;
	enum derived	 what;
	int		 ray, dp;	/* owned in that topology */
} derived_flags[] = {
	{ "--host",				D_HOST,		1, 1 },
	{ "--port",				D_PORT,		1, 1 },
	{ "--distributed-executor-backend",	D_BACKEND,	1, 0 },
	{ "--data-parallel-size",		D_DP_SIZE,	0, 1 },
	{ "--data-parallel-size-local",		D_DP_LOCAL,	0, 1 },
	{ "--data-parallel-address",		D_DP_ADDR,	0, 1 },
	{ "--data-parallel-rpc-port",		D_DP_RPC,	0, 1 },
	{ "--api-server-count",			D_API_SERVERS,	0, 1 },
	{ "--seed",				D_SEED,		0, 1 },
	{ "--data-parallel-start-rank",		D_DP_RANK,	0, 1 },
	{ "--headless",				D_HEADLESS,	0, 1 },
};

/* What tandem sets for a flag, and the config key it comes from; NULL
 * value: it differs per node, so no shared value can agree. */
static char *
derived_value(const struct config *cf, enum derived what, const char **from)
{
	switch (what) {
	case D_HOST:
		*from = "a fixed rule (vLLM listens on every address)";
		return xstrdup("0.0.0.0");
	case D_PORT:
		*from = "vllm.port";
		return xprintf("%d", cf->vllm.port);
	case D_BACKEND:
		*from = "topology \"ray\"";
		return xstrdup("ray");
	case D_DP_SIZE:
		*from = "dp.size";
		return xprintf("%d", cf->dp.size);
	case D_DP_LOCAL:
		*from = "dp.size_local";
		return xprintf("%d", cf->dp.size_local);
	case D_DP_ADDR:
		*from = "the head node's ip";
		return xstrdup(cf->nodes[cf->head].ip);
	case D_DP_RPC:
		*from = "dp.rpc_port";
		return xprintf("%d", cf->dp.rpc_port);
	case D_API_SERVERS:
		*from = "dp.api_server_count";
		return xprintf("%d", cf->dp.api_server_count);
	case D_SEED:
		*from = "dp.seed";
		return xprintf("%d", cf->dp.seed);
	case D_DP_RANK:
		*from = "each node's rank";
		return NULL;
	case D_HEADLESS:
		*from = "the worker nodes only";
		return NULL;
	}
	return NULL;
}

/* Numbers agree by value ("08000" is 8000), everything else as text. */
static int
same_value(const char *given, const char *want)
{
	char *e1, *e2;
	long a, b;

	errno = 0;
	a = strtol(given, &e1, 10);
	b = strtol(want, &e2, 10);
	if (errno == 0 && *given && *want && *e1 == '\0' && *e2 == '\0')
		return a == b;
	return strcmp(given, want) == 0;
}

int
vllmargs_reconcile(struct cfctx *c)
{
	struct config *cf = c->cf;
	struct strv keep;
	size_t i, j;
	int rc = 0;

	strv_init(&keep);
	for (i = 0; i < cf->vllm.args.n; i++) {
		const char *a = cf->vllm.args.v[i], *given = NULL, *from = "";
		char *path, *want;
		size_t n, taken = 1;

		for (j = 0; j < sizeof(derived_flags) / sizeof(*derived_flags);
		    j++) {
			n = strlen(derived_flags[j].flag);
			if (strncmp(a, derived_flags[j].flag, n) == 0 &&
			    (a[n] == '\0' || a[n] == '=') &&
			    (cf->topology == TOPO_RAY ? derived_flags[j].ray :
			    derived_flags[j].dp))
				break;
		}
		if (j == sizeof(derived_flags) / sizeof(*derived_flags)) {
			strv_add(&keep, a);
			continue;
		}
		path = xprintf("vllm.args[%zu]", i);
		want = derived_value(cf, derived_flags[j].what, &from);
		if (derived_flags[j].what == D_HEADLESS)
			given = "";
		else if (a[n] == '=')
			given = a + n + 1;
		else if (i + 1 < cf->vllm.args.n) {
			given = cf->vllm.args.v[i + 1];
			taken = 2;
		}
		if (want == NULL)
			rc = cf_fail(c, path, "%s is set by tandem per node, "
			    "from %s; remove it", derived_flags[j].flag, from);
		else if (given == NULL)
			rc = cf_fail(c, path, "%s needs a value", a);
		else if (!same_value(given, want))
			rc = cf_fail(c, path, "%s %s conflicts with %s, which "
			    "makes tandem set %s %s; remove the flag or change "
			    "the config", derived_flags[j].flag, given, from,
			    derived_flags[j].flag, want);
		else
			cf_warn(c, path, "%s %s is what tandem sets from %s; "
			    "the flag is redundant and ignored",
			    derived_flags[j].flag, given, from);
		free(path);
		free(want);
		if (rc)
			break;
		i += taken - 1;
	}
	if (rc == 0) {
		strv_free(&cf->vllm.args);
		cf->vllm.args = keep;
	} else
		strv_free(&keep);
	return rc;
}

char *
config_vllm_api_key_env(const struct config *cf)
{
	const struct node_conf *head = &cf->nodes[cf->head];
	const char *v;

	if ((v = cf_kv_find(&head->env, VLLM_API_KEY_ENV)) == NULL)
		v = cf_kv_find(&cf->container.env, VLLM_API_KEY_ENV);
	return v ? config_expand(v, head) : NULL;
}

char *
config_vllm_api_key(const struct config *cf)
{
	const char *v = vllmargs_value(&cf->vllm.args, VLLM_API_KEY_FLAG, NULL);

	return v ? xstrdup(v) : config_vllm_api_key_env(cf);
}
