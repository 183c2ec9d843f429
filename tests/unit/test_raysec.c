/*
 * Ray's ports and token authentication: the answers recorded in
 * tests/unit/data/ray-2.52/ (README there) and the verdict, then the
 * command itself run by a real bash against ports where nothing listens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conffile.h"
#include "plan.h"
#include "raysec.h"
#include "util.h"

#include "slurp.h"

#define DATA "tests/unit/data/ray-2.52/"

static void
probe_file(const char *name, struct ray_probe *r)
{
	char path[256], *t;

	snprintf(path, sizeof(path), DATA "%s", name);
	t = slurp(path);
	ray_probe_parse(t, strlen(t), r);
	free(t);
}

static void
test_disabled_is_open(void **state)
{
	struct ray_probe w;
	char msg[512];

	(void)state;
	probe_file("exposure-open-disabled.txt", &w);
	assert_int_equal(w.gcs_open, 1);
	assert_int_equal(w.dash_open, 1);
	assert_int_equal(w.mode_status, 200);
	assert_int_equal(w.auth, RAY_AUTH_DISABLED);
	assert_int_equal(ray_exposure_judge(&w, NULL, "10.10.10.1", 6379, 0,
	    msg, sizeof(msg)), RAYX_OPEN);
	assert_string_equal(msg, "the head's Ray GCS port 6379 and dashboard/"
	    "job API port 8265 answer on 10.10.10.1 from the fast link and "
	    "Ray's token authentication is off: anyone on that network can "
	    "run code on every node (CVE-2023-48022); set ray.auth_token_file");
	/* the config's word does not outweigh what Ray says */
	assert_int_equal(ray_exposure_judge(&w, NULL, "10.10.10.1", 6379, 1,
	    msg, sizeof(msg)), RAYX_OPEN);
}

static void
test_token_is_auth(void **state)
{
	struct ray_probe w;
	char msg[512];

	(void)state;
	probe_file("exposure-open-token.txt", &w);
	assert_int_equal(w.auth, RAY_AUTH_TOKEN);
	assert_int_equal(w.version_status, 401);
	assert_string_equal(w.words, "{\"authentication_mode\": \"token\"}");
	assert_int_equal(ray_exposure_judge(&w, NULL, "10.10.10.1", 6379, 0,
	    msg, sizeof(msg)), RAYX_AUTH);
	assert_string_equal(msg, "");
}

/*
 * Ray's default dashboard host is 127.0.0.1: from a worker only the GCS
 * answers, and the head's own look at its dashboard decides.
 */
static void
test_gcs_only_asks_the_head(void **state)
{
	struct ray_probe w, h;
	char msg[512];

	(void)state;
	probe_file("exposure-gcs-only.txt", &w);
	assert_int_equal(w.gcs_open, 1);
	assert_int_equal(w.dash_open, 0);
	assert_int_equal(w.auth, RAY_AUTH_UNKNOWN);
	probe_file("exposure-head-local-disabled.txt", &h);
	assert_int_equal(ray_exposure_judge(&w, &h, "10.10.10.1", 6379, 0,
	    msg, sizeof(msg)), RAYX_OPEN);
	assert_string_equal(msg, "the head's Ray GCS port 6379 answers on "
	    "10.10.10.1 from the fast link and Ray's token authentication is "
	    "off: anyone on that network can run code on every node "
	    "(CVE-2023-48022); set ray.auth_token_file");
	/* no dashboard anywhere: the config decides */
	assert_int_equal(ray_exposure_judge(&w, NULL, "10.10.10.1", 6379, 1,
	    msg, sizeof(msg)), RAYX_AUTH);
	assert_int_equal(ray_exposure_judge(&w, NULL, "10.10.10.1", 6379, 0,
	    msg, sizeof(msg)), RAYX_OPEN);
	assert_string_equal(msg, "the head's Ray GCS port 6379 answers on "
	    "10.10.10.1 from the fast link; Ray's dashboard did not say whether "
	    "token authentication is on, and tandem did not turn it on: set "
	    "ray.auth_token_file");
}

static void
test_before_2_52(void **state)
{
	struct ray_probe w;
	char msg[512];

	(void)state;
	probe_file("exposure-before-2.52.txt", &w);
	assert_int_equal(w.mode_status, 404);
	assert_int_equal(w.auth, RAY_AUTH_ABSENT);
	assert_int_equal(ray_exposure_judge(&w, NULL, "10.10.10.1", 6379, 1,
	    msg, sizeof(msg)), RAYX_OPEN);
	assert_non_null(strstr(msg, "this Ray has no token authentication (it "
	    "came in Ray 2.52)"));
}

static void
test_closed_and_garbage(void **state)
{
	struct ray_probe w;
	char msg[512];
	static const char junk[] = "port\nport x\nget /api/version\n"
	    "HTTP/1.1 9999 What\n\xff\xfe\nend /api/version\nend x\n";

	(void)state;
	probe_file("exposure-closed.txt", &w);
	assert_int_equal(ray_exposure_judge(&w, NULL, "10.10.10.1", 6379, 0,
	    msg, sizeof(msg)), RAYX_CLOSED);
	ray_probe_parse(junk, sizeof(junk) - 1, &w);
	assert_int_equal(w.version_status, 0);
	assert_int_equal(w.auth, RAY_AUTH_UNKNOWN);
	ray_probe_parse("", 0, &w);
	assert_int_equal(w.gcs_open, -1);
	assert_int_equal(ray_exposure_judge(&w, NULL, "10.10.10.1", 6379, 0,
	    msg, sizeof(msg)), RAYX_CLOSED);
}

/* The command in a real bash: no quoting slip, and refused ports closed. */
static void
test_command_runs(void **state)
{
	char err[ERRLEN], buf[4096];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	struct ray_probe r;
	char *cmd;
	FILE *p;
	size_t n;

	(void)state;
	assert_non_null(cf);
	cf->ray.port = 9;	/* discard: nothing listens here */
	cmd = cmd_ray_exposure(cf, "127.0.0.1");
	assert_non_null(strstr(cmd, "tandem-ray-check 127.0.0.1 9 8265"));
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	pclose(p);
	ray_probe_parse(buf, n, &r);
	assert_int_equal(r.gcs_open, 0);
	assert_non_null(strstr(buf, "get /api/authentication_mode\n\nend "
	    "/api/authentication_mode\n"));
	free(cmd);
	cmd = cmd_ray_exposure(cf, NULL);
	assert_non_null(strstr(cmd, "tandem-ray-check 10.10.10.1 9 8265"));
	free(cmd);
	assert_null(cmd_ray_token_present(cf));
	cf->ray.auth_token_file = xstrdup("/etc/tandem/ray token");
	cmd = cmd_ray_token_present(cf);
	assert_string_equal(cmd, "test -f '/etc/tandem/ray token' -a -s "
	    "'/etc/tandem/ray token'");
	assert_int_not_equal(system(cmd), 0);	/* not on this machine */
	free(cmd);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disabled_is_open),
		cmocka_unit_test(test_token_is_auth),
		cmocka_unit_test(test_gcs_only_asks_the_head),
		cmocka_unit_test(test_before_2_52),
		cmocka_unit_test(test_closed_and_garbage),
		cmocka_unit_test(test_command_runs),
	};

	return cmocka_run_group_tests_name("raysec", tests, NULL, NULL);
}
