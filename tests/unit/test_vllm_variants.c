/*
 * vLLM configured other than the guides' recipe (issue 41): an API key,
 * served names, a load longer than the engine-ready wait, and texts that
 * stop retries only when they say why the process failed. The upstream
 * texts are in tests/unit/data/vllm-log/ and vllm-api-key/ (README.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"
#include "diagnose.h"
#include "vllmdiag.h"
#include "plan.h"
#include "recovery.h"
#include "secret.h"
#include "slurp.h"
#include "util.h"
#include "vllmapi.h"
#include "vllmargs.h"

#define SSH	"\"ssh\":{\"identity_file\":\"/k\",\"known_hosts_file\":\"/kh\"}"
#define N1	"{\"name\":\"a\",\"role\":\"head\",\"ssh_host\":\"h1\"," \
		"\"ip\":\"10.0.0.1\",\"ifname\":\"eth0\"}"
#define N2	"{\"name\":\"b\",\"role\":\"worker\",\"ssh_host\":\"h2\"," \
		"\"ip\":\"10.0.0.2\",\"ifname\":\"eth0\"}"
#define NODES	"\"nodes\":[" N1 "," N2 "]"
#define KEY	"sk-tandem-test-0123456789"

static char *
data(const char *dir, const char *file)
{
	char *path = xprintf("tests/unit/data/%s/%s", dir, file);
	char *s = slurp(path);

	if (s == NULL)
		fail_msg("cannot read %s", path);
	free(path);
	return s;
}

static struct config *
parse(const char *ctr, const char *vllm, char *err, size_t len)
{
	char *json = xprintf("{" SSH ",\"container\":{\"image\":\"img\"%s},"
	    NODES ",\"vllm\":{%s%s}}", ctr, strstr(vllm, "\"model\"") ? "" :
	    "\"model\":\"/m\"", strstr(vllm, "\"model\"") ? vllm + 1 : vllm);
	struct config *cf = config_parse(json, "t.json", err, len);

	free(json);
	return cf;
}

/* The key from vllm.args, from VLLM_API_KEY (a node's over the image's). */
static void
test_api_key_sources(void **state)
{
	char err[512], *k;
	struct config *cf;

	(void)state;
	cf = parse("", ",\"args\":[\"--api-key\",\"" KEY "\"]", err,
	    sizeof(err));
	assert_non_null(cf);
	assert_string_equal(k = config_vllm_api_key(cf), KEY);
	free(k);
	config_free(cf);
	cf = parse("", ",\"args\":[\"--api-key=" KEY "\"]", err, sizeof(err));
	assert_string_equal(k = config_vllm_api_key(cf), KEY);
	free(k);
	config_free(cf);
	cf = parse(",\"env\":{\"VLLM_API_KEY\":\"" KEY "\"}", "", err,
	    sizeof(err));
	assert_non_null(cf);
	assert_string_equal(k = config_vllm_api_key(cf), KEY);
	free(k);
	config_free(cf);
	cf = parse("", "", err, sizeof(err));
	assert_null(config_vllm_api_key(cf));
	config_free(cf);
	/* two keys that differ: vLLM's choice depends on its version */
	cf = parse(",\"env\":{\"VLLM_API_KEY\":\"other\"}",
	    ",\"args\":[\"--api-key\",\"" KEY "\"]", err, sizeof(err));
	assert_null(cf);
	assert_non_null(strstr(err, "differ"));
	/* a key file beside a key the config gives */
	cf = parse("", ",\"args\":[\"--api-key\",\"" KEY "\"],"
	    "\"api_key_file\":\"/etc/tandem/vllm-key\"", err, sizeof(err));
	assert_null(cf);
	assert_non_null(strstr(err, "vllm.api_key_file"));
	cf = parse("", ",\"api_key_file\":\"/etc/tandem/vllm-key\"", err,
	    sizeof(err));
	assert_non_null(cf);
	assert_null(config_vllm_api_key(cf));
	config_free(cf);
}

/* The plan runs the key and shows ***; plan_print and every cmd's shown. */
static void
test_api_key_masked(void **state)
{
	char err[512], *s;
	struct config *cf;
	struct plan p;
	struct sbuf out;
	size_t i;
	int ran = 0;

	(void)state;
	cf = parse("", ",\"args\":[\"--api-key\",\"" KEY "\"]", err,
	    sizeof(err));
	assert_non_null(cf);
	plan_rebuild(cf, 0, &p);
	for (i = 0; i < p.n; i++) {
		ran |= strstr(p.cmds[i].shell, KEY) != NULL;
		assert_null(strstr(p.cmds[i].shown, KEY));
	}
	assert_true(ran);
	sbuf_init(&out);
	plan_print(cf, &p, NULL, &out);
	assert_null(strstr(out.s, KEY));
	assert_non_null(strstr(out.s, "--api-key ***"));
	sbuf_free(&out);
	plan_free(&p);
	config_free(cf);
	s = secret_masked("a KEY b KEYKEY", "KEY");
	assert_string_equal(s, "a *** b ******");
	free(s);
	s = secret_masked("nothing", NULL);
	assert_string_equal(s, "nothing");
	free(s);
}

/* The first served name, wherever it is written; the flag goes once. */
static void
test_served_name(void **state)
{
	char err[512];
	struct config *cf;
	struct strv v;
	size_t i, n = 0;

	(void)state;
	cf = parse("", ",\"args\":[\"--served-model-name\",\"qwen\","
	    "\"qwen-alias\"]", err, sizeof(err));
	assert_non_null(cf);
	assert_string_equal(config_model_id(cf), "qwen");
	config_free(cf);
	cf = parse("", ",\"args\":[\"--served-model-name=qwen\"],"
	    "\"served_model_name\":\"qwen\"", err, sizeof(err));
	assert_non_null(cf);
	assert_string_equal(config_model_id(cf), "qwen");
	strv_init(&v);
	plan_vllm_argv(cf, cf->head, 0, &v);
	for (i = 0; i < v.n; i++)
		n += strncmp(v.v[i], "--served-model-name", 19) == 0;
	assert_int_equal(n, 1);
	strv_free(&v);
	config_free(cf);
	cf = parse("", ",\"args\":[\"--served-model-name\",\"a\"],"
	    "\"served_model_name\":\"b\"", err, sizeof(err));
	assert_null(cf);
	assert_non_null(strstr(err, "vllm.served_model_name"));
	cf = parse("", ",\"served_model_name\":\"b\"", err, sizeof(err));
	assert_string_equal(config_model_id(cf), "b");
	config_free(cf);
}

/* VLLM_ENGINE_READY_TIMEOUT_S: tandem's wait, unless the config says. */
static void
test_engine_ready_env(void **state)
{
	char err[512];
	struct config *cf;
	struct plan p;
	size_t i;

	(void)state;
	cf = parse("", ",\"ready_timeout_s\":2400.5", err, sizeof(err));
	assert_non_null(cf);
	plan_rebuild(cf, 0, &p);
	for (i = 0; i < p.n; i++)
		if (p.cmds[i].phase == PH_HEAD || p.cmds[i].phase == PH_WORKERS)
			assert_non_null(strstr(p.cmds[i].shell,
			    "-e VLLM_ENGINE_READY_TIMEOUT_S=2401 "));
	plan_free(&p);
	config_free(cf);
	cf = parse(",\"env\":{\"VLLM_ENGINE_READY_TIMEOUT_S\":\"900\"}", "",
	    err, sizeof(err));
	assert_non_null(cf);
	plan_rebuild(cf, 0, &p);
	for (i = 0; i < p.n; i++) {
		assert_null(strstr(p.cmds[i].shell,
		    "VLLM_ENGINE_READY_TIMEOUT_S=1800"));
		if (p.cmds[i].phase == PH_HEAD)
			assert_non_null(strstr(p.cmds[i].shell,
			    "VLLM_ENGINE_READY_TIMEOUT_S=900"));
	}
	plan_free(&p);
	config_free(cf);
}

/* vLLM's refusals on /v1 (tests/unit/data/vllm-api-key/). */
static void
test_refusals(void **state)
{
	char *b, names[200];

	(void)state;
	b = data("vllm-api-key", "unauthorized.body");
	assert_int_equal(vllm_refusal(401, b), VLLM_REFUSED_KEY);
	free(b);
	b = data("vllm-api-key", "model-not-found.body");
	assert_int_equal(vllm_refusal(404, b), VLLM_REFUSED_MODEL);
	free(b);
	b = data("vllm-api-key", "model-not-found-0.10.0.body");
	assert_int_equal(vllm_refusal(404, b), VLLM_REFUSED_MODEL);
	free(b);
	/* a 404 of a path vLLM does not have is no model refusal */
	assert_int_equal(vllm_refusal(404, "{\"detail\":\"Not Found\"}"),
	    VLLM_REFUSED_NOT);
	assert_int_equal(vllm_refusal(500, ""), VLLM_REFUSED_NOT);
	b = data("vllm-api-key", "models-served-name.body");
	assert_int_equal(vllm_models_lists(b, "qwen-alias", NULL, 0), 1);
	assert_int_equal(vllm_models_lists(b, "/model/qwen3.5-122", names,
	    sizeof(names)), 0);
	assert_string_equal(names, "qwen, qwen-alias");
	free(b);
	assert_int_equal(vllm_models_lists("{}", "x", names, sizeof(names)),
	    -1);
	assert_int_equal(vllm_models_lists("not json", "x", NULL, 0), -1);
}

struct logcase {
	const char	*file;
	const char	*model;
	const char	*code;
	int		 retryable;
	int		 ready_env;	/* the config sets the engine-ready wait */
};

/* Start-up texts: which diagnosis, and whether a retry may help. */
static void
test_logs(void **state)
{
	static const struct logcase c[] = {
		/* the operator's own VLLM_ENGINE_READY_TIMEOUT_S: raise both */
		{ "engine-ready-timeout.log", "/m", "engine-ready-timeout", 0,
		  1 },
		/* tandem's (vllm.ready_timeout_s): its own wait passed too */
		{ "engine-ready-timeout.log", "/m", "startup-timeout", 1, 0 },
		{ "kv-cache-too-small-0.10.log", "/m", "kv-cache-too-small", 0, 0 },
		{ "unique-ip-stale-node.log", "/m", "stale-ray-node", 1, 0 },
		{ "unique-ip-more-ips.log", "/m", "node-ip-mismatch", 0, 0 },
		/* a local path that is not there: no retry helps */
		{ "invalid-repository.log", "/model/qwen3-8b", "model-missing",
		  0, 0 },
		{ "invalid-repository.log", "./qwen3-8b", "model-missing", 0, 0 },
		/* a hub ID: the hub or the network may be why */
		{ "invalid-repository.log", "Qwen/Qwen3-8B", "model-unreadable",
		  1, 0 },
	};
	char ex[300];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *log = data("vllm-log", c[i].file), err[512];
		char *vllm = xprintf(",\"model\":\"%s\"", c[i].model);
		struct config *cf = parse(c[i].ready_env ? ",\"env\":{"
		    "\"VLLM_ENGINE_READY_TIMEOUT_S\":\"600\"}" : "", vllm, err,
		    sizeof(err));
		const struct diag *d;

		if (cf == NULL)
			fail_msg("%s", err);
		d = diag_match_vllm(log, cf, ex, sizeof(ex));

		assert_non_null(d);
		if (strcmp(d->code, c[i].code) != 0)
			fail_msg("%s with %s: %s, not %s", c[i].file,
			    c[i].model, d->code, c[i].code);
		assert_int_equal(d->retryable, c[i].retryable);
		assert_int_equal(recovery_ladder_applies(d), 0);
		config_free(cf);
		free(vllm);
		free(log);
	}
	/* the stand-in's older text (no counts) stays a stale node */
	assert_int_equal(diag_match("Every node should have a unique IP "
	    "address", NULL, 0)->id, DIAG_STALE_RAY_NODE);
	assert_int_equal(diag_match("TimeoutError: Timed out waiting for "
	    "engines to send initial message on input socket.", NULL, 0)->id,
	    DIAG_ENGINE_READY_TIMEOUT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_key_sources),
		cmocka_unit_test(test_api_key_masked),
		cmocka_unit_test(test_served_name),
		cmocka_unit_test(test_engine_ready_env),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_logs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
