/*
 * The single commands the daemon runs on nodes besides the rebuild plan
 * (probes, teardown, the events stream, the foreign-container scan; the
 * workload scan run by sh on real engine output is in test_engine_texts.c):
 * golden files for both example configs and for podman.
 * UPDATE_GOLDEN=1 rewrites a golden file and skips its comparison.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "accel.h"
#include "conffile.h"
#include "plan.h"
#include "workload.h"

#include "slurp.h"

/* Takes s. */
static void
line(struct sbuf *out, const char *what, char *s)
{
	sbuf_addf(out, "%s: %s\n", what, s);
	free(s);
}

static void
render(const struct config *cf, struct sbuf *out)
{
	size_t i;

	line(out, "engine", cmd_engine_info(cf));
	line(out, "ray status", cmd_ray_status(cf));
	line(out, "accel list", cmd_accel(cf, AQ_LIST));
	line(out, "accel memory", cmd_accel(cf, AQ_MEMORY));
	line(out, "accel procs", cmd_accel(cf, AQ_PROCS));
	line(out, "foreign ps", cmd_foreign_ps(cf));
	line(out, "workloads", cmd_workloads(cf));
	for (i = 0; i < cf->nnodes; i++) {
		sbuf_addf(out, "node %s\n", cf->nodes[i].name);
		line(out, "  teardown", cmd_teardown(cf, i));
		line(out, "  inspect", cmd_inspect_running(cf, i));
		line(out, "  events", cmd_events(cf, i, 0));
		line(out, "  events replay", cmd_events(cf, i, 12.5));
		line(out, "  vllm alive", cmd_vllm_alive(cf, i));
		line(out, "  log tail", cmd_log_tail(cf, i));
		line(out, "  log ready", cmd_vllm_log_ready(cf, i));
		line(out, "  name owner", cmd_name_owner(cf, i));
	}
}

static void
golden(const char *cfgpath, const char *engine, const char *goldpath)
{
	char err[ERRLEN];
	struct config *cf = conffile_load(cfgpath, err, sizeof(err));
	struct sbuf out;
	char *want;

	assert_non_null(cf);
	if (engine) {
		free(cf->container.engine);
		cf->container.engine = strdup(engine);
	}
	sbuf_init(&out);
	render(cf, &out);
	config_free(cf);
	if (getenv("UPDATE_GOLDEN")) {
		FILE *fp = fopen(goldpath, "w");

		assert_non_null(fp);
		fputs(out.s, fp);
		fclose(fp);
		sbuf_free(&out);
		skip();		/* written, not compared with itself */
	}
	want = slurp(goldpath);
	assert_string_equal(out.s, want);
	free(want);
	sbuf_free(&out);
}

static void
test_golden_ray(void **state)
{
	(void)state;
	golden("etc/tandem.json", NULL, "tests/golden/cmds-ray.txt");
}

static void
test_golden_dp(void **state)
{
	(void)state;
	golden("etc/tandem-dp.json", NULL, "tests/golden/cmds-dp.txt");
}

static void
test_golden_podman(void **state)
{
	(void)state;
	golden("etc/tandem.json", "podman", "tests/golden/cmds-podman.txt");
}

/* A value with shell metacharacters reaches the node as one quoted word. */
static void
test_quoted(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	char *s;

	(void)state;
	assert_non_null(cf);
	free(cf->container.engine);
	cf->container.engine = strdup("/opt/my docker;rm");
	s = cmd_foreign_ps(cf);
	assert_string_equal(s, "'/opt/my docker;rm' ps --format "
	    "'{{.Names}} {{.Label \"tandem.cluster\"}}'");
	free(s);
	config_free(cf);
}

/* The scan's engine and stop's names are quoted words too. */
static void
test_quoted_workloads(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	struct strv names;
	char *s;

	(void)state;
	assert_non_null(cf);
	free(cf->container.engine);
	cf->container.engine = strdup("/opt/my docker;rm");
	s = cmd_workloads(cf);
	assert_non_null(strstr(s, "; '/opt/my docker;rm' ps --format "));
	assert_non_null(strstr(s, "|| '/opt/my docker;rm' top \"$i\" -eo pid"));
	free(s);
	strv_init(&names);
	strv_add(&names, "jupyter");
	strv_add(&names, "a b$(x)");
	s = cmd_stop_containers(cf, &names);
	assert_string_equal(s, "'/opt/my docker;rm' stop jupyter 'a b$(x)'");
	free(s);
	strv_free(&names);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_ray),
		cmocka_unit_test(test_golden_dp),
		cmocka_unit_test(test_golden_podman),
		cmocka_unit_test(test_quoted),
		cmocka_unit_test(test_quoted_workloads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
