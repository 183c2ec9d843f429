/*
 * tandemctl: the operator's command line (tandemctl(1)): plan and check
 * here, the commands that read tandemd's API in ctl_show.c, those that
 * change it in ctl_post.c (both through ctl_api.c). options.c reads the
 * command line, json.c builds the --json documents, bench.c is the load
 * test, init.c is tandemctl init.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conffile.h"
#include "config.h"
#include "ctl.h"
#include "plan.h"

/* The command line's global options, set once before any command runs. */
static const char	*file;		/* --config, TANDEM_CONFIG */
static int		 file_named;	/* not the default path */

/*
 * The last rebuild's trace: a step a line, in ms from the rebuild's start,
 * "*" on the critical path, and "gap" the time tandem took from the answer
 * to its next step.
 */

/* On stderr, so plan and check output stays the commands and results. */
static void
print_warnings(const struct config *cf)
{
	size_t i;

	for (i = 0; i < cf->warnings.n; i++)
		fprintf(stderr, "tandemctl: warning: %s\n", cf->warnings.v[i]);
}

/* --node NAME must name a node of the config; the message lists them. */
static int
node_known(const struct config *cf, const char *only)
{
	size_t i;

	if (only == NULL)
		return 1;
	for (i = 0; i < cf->nnodes; i++)
		if (strcmp(cf->nodes[i].name, only) == 0)
			return 1;
	fprintf(stderr, "tandemctl: no node named %s in %s; its nodes:", only,
	    file);
	for (i = 0; i < cf->nnodes; i++)
		fprintf(stderr, " %s", cf->nodes[i].name);
	fputc('\n', stderr);
	return 0;
}

/* plan and check: the config, --node checked against it, its warnings. */
static struct config *
load_for(const char *only)
{
	char err[ERRLEN];
	struct config *cf;

	if ((cf = conffile_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return NULL;
	}
	if (!node_known(cf, only)) {
		config_free(cf);
		return NULL;
	}
	print_warnings(cf);
	return cf;
}

/* tandemctl check: the preflight table over SSH, in parallel on every node. */
static int
ctl_check(int as_json, const char *only)
{
	struct config *cf;
	int rc;

	if ((cf = load_for(only)) == NULL)
		return 2;
	rc = ctl_run_check(cf, as_json, only);
	config_free(cf);
	return rc;
}

static int
ctl_plan(int as_json, const char *only)
{
	struct config *cf;
	struct plan p;
	struct sbuf out;
	int rc = 0;

	if ((cf = load_for(only)) == NULL)
		return 2;
	plan_rebuild(cf, 0, &p);
	if (as_json)
		rc = ctl_put_built(ctl_plan_json(cf, &p, only));
	else {
		sbuf_init(&out);
		plan_print(cf, &p, only, &out);
		fputs(out.s, stdout);
		sbuf_free(&out);
	}
	plan_free(&p);
	config_free(cf);
	return rc;
}

static int
run_cmd(const char *cmd, const struct ctl_args *a)
{
	if (strcmp(cmd, "plan") == 0)
		return ctl_plan(a->json, a->node);
	if (strcmp(cmd, "check") == 0)
		return ctl_check(a->json, a->node);
	if (ctl_api_open(file, file_named, a->api_url) == -1)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (strcmp(cmd, "status") == 0)
		return ctl_show_status(a->json, a->quiet);
	if (strcmp(cmd, "wait") == 0)
		return ctl_show_wait(a->arg, a->timeout_s);
	if (strcmp(cmd, "reload") == 0)
		return ctl_post_reload(a->pid, a->timeout_s);
	if (strcmp(cmd, "apply") == 0)
		return ctl_post_apply(file, a->arg, a->no_rollback,
		    a->timeout_s);
	if (strcmp(cmd, "rollback") == 0)
		return ctl_post_apply(file, NULL, 0, a->timeout_s);
	if (strcmp(cmd, "events") == 0)
		return ctl_show_events(a->follow, a->json);
	if (strcmp(cmd, "trace") == 0)
		return ctl_show_trace(a->json);
	if (strcmp(cmd, "bundle") == 0) {
		char *token = ctl_post_token(file);
		int rc = token ? ctl_bundle(ctl_api_url(), token,
		    a->output) : 2;

		free(token);
		return rc;
	}
	if (strcmp(cmd, "rebuild") == 0 && a->wait)
		return ctl_post_rebuild_wait(file,
		    a->reset ? "/rebuild?reset=1" :
		    "/rebuild");
	if (strcmp(cmd, "rebuild") == 0)
		return ctl_post(file, a->reset ? "/rebuild?reset=1" :
		    "/rebuild");
	return ctl_post(file, strcmp(cmd, "pause") == 0 ? "/pause" :
	    "/resume");
}

int
main(int argc, char **argv)
{
	const char *term = getenv("TERM");
	struct ctl_args a;
	int rc;

	if ((rc = ctl_parse(argc, argv, &a)) >= 0)
		return rc;
	/* TERM=dumb, like NO_COLOR (no-color.org), turns colour off. */
	ctl_show_color(isatty(1) && getenv("NO_COLOR") == NULL && term &&
	    strcmp(term, "dumb") != 0);
	if (strcmp(a.cmd, "bench") == 0) {
		log_init(0);
		return bench_main(a.argc, a.argv, &a);
	}
	if (strcmp(a.cmd, "init") == 0)
		return init_main(a.argc, a.argv, &a);
	file = a.config;
	file_named = a.config_named;
	ctl_post_token_file(a.token_file);
	return run_cmd(a.cmd, &a);
}
