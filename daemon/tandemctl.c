/*
 * tandemctl: the operator's command line (PRODUCT.md section 5).
 */
#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "plan.h"
#include "tandemd.h"
#include "version.h"

static const char	*api_url;
static const char	*token_file;
static int		 color;

static size_t
collect(char *p, size_t sz, size_t n, void *u)
{
	sbuf_addn(u, p, sz * n);
	return sz * n;
}

/*
 * One request to the daemon's API. Returns the HTTP status, or -1 with a
 * message naming the API address when the daemon cannot be reached.
 */
static long
api(const char *method, const char *path, const char *token,
    struct sbuf *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char *url = xprintf("%s%s", api_url, path), *auth = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	long code = -1;
	CURLcode rc;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	}
	if (token) {
		auth = xprintf("Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	else
		fprintf(stderr, "tandemctl: tandemd is not running at %s (%s)\n",
		    api_url, rc == CURLE_COULDNT_CONNECT ? "connection refused" :
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(auth);
	return code;
}

static const char *
col(const char *code)
{
	return color ? code : "";
}

static const char *
state_color(const char *state)
{
	if (strcmp(state, "serving") == 0)
		return col("\033[32m");
	if (strcmp(state, "degraded") == 0)
		return col("\033[31m");
	return col("\033[33m");
}

static const char *
jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static void
print_status(json_t *st)
{
	json_t *nodes = json_object_get(st, "nodes"), *n, *diag, *ray, *vllm;
	json_t *rec;
	size_t i;

	printf("cluster %s: %s%s%s, %s (mode %s, generation %lld, since %s)\n",
	    jstr(st, "name"), state_color(jstr(st, "state")), jstr(st, "state"),
	    col("\033[0m"), jstr(st, "action"), jstr(st, "mode"),
	    (long long)json_integer_value(json_object_get(st, "generation")),
	    jstr(st, "since"));
	printf("%-16s %-7s %-18s %-16s %-9s %-9s %-5s %s\n", "NODE", "ROLE",
	    "SSH", "IP", "REACHABLE", "CONTAINER", "GPUS", "LAST ERROR");
	json_array_foreach(nodes, i, n) {
		json_t *g = json_object_get(n, "gpus");
		char gpus[16] = "-";

		if (json_is_integer(g))
			snprintf(gpus, sizeof(gpus), "%lld",
			    (long long)json_integer_value(g));
		printf("%-16s %-7s %-18s %-16s %-9s %-9s %-5s %s\n",
		    jstr(n, "name"), jstr(n, "role"), jstr(n, "ssh_host"),
		    jstr(n, "ip"), json_is_true(json_object_get(n,
		    "reachable")) ? "yes" : "NO", jstr(n, "container"), gpus,
		    json_is_string(json_object_get(n, "last_error")) ?
		    jstr(n, "last_error") : "");
	}
	ray = json_object_get(st, "ray");
	if (json_is_integer(json_object_get(ray, "alive_nodes")))
		printf("ray: %lld/%lld nodes, %g/%lld GPUs\n",
		    (long long)json_integer_value(json_object_get(ray,
		    "alive_nodes")), (long long)json_integer_value(
		    json_object_get(ray, "expect_nodes")), json_number_value(
		    json_object_get(ray, "gpus")), (long long)json_integer_value(
		    json_object_get(ray, "expect_gpus")));
	vllm = json_object_get(st, "vllm");
	printf("vllm: %s %s, %s\n", jstr(vllm, "url"), jstr(vllm, "model"),
	    json_is_true(json_object_get(vllm, "healthy")) ? "healthy" :
	    "not healthy");
	rec = json_object_get(st, "recovery");
	if (json_integer_value(json_object_get(rec, "attempt")) ||
	    json_is_true(json_object_get(rec, "halted")))
		printf("recovery: attempt %lld, next in %.0f s, %lld rebuilds in "
		    "the last hour%s\n", (long long)json_integer_value(
		    json_object_get(rec, "attempt")), json_number_value(
		    json_object_get(rec, "next_attempt_s")),
		    (long long)json_integer_value(json_object_get(rec,
		    "rebuilds_last_hour")), json_is_true(json_object_get(rec,
		    "halted")) ? ", retries stopped" : "");
	diag = json_object_get(st, "diagnosis");
	if (json_is_object(diag))
		printf("%sdiagnosis %s%s: %s\n  remedy: %s\n", col("\033[1m"),
		    jstr(diag, "code"), col("\033[0m"), jstr(diag, "message"),
		    jstr(diag, "remedy"));
}

static int
ctl_status(int as_json)
{
	struct sbuf out;
	json_t *st;
	long code;

	sbuf_init(&out);
	if ((code = api("GET", "/status", NULL, &out)) < 0)
		return 1;
	if (code != 200 || (st = json_loads(out.s ? out.s : "", 0, NULL)) ==
	    NULL) {
		fprintf(stderr, "tandemctl: /status answered %ld\n", code);
		sbuf_free(&out);
		return 1;
	}
	if (as_json)
		fputs(out.s, stdout);
	else
		print_status(st);
	json_decref(st);
	sbuf_free(&out);
	return 0;
}

static long long
print_events(const char *body, long long last)
{
	json_t *a = json_loads(body, 0, NULL), *e;
	size_t i;

	json_array_foreach(a, i, e) {
		time_t t = (time_t)json_number_value(json_object_get(e, "time"));
		struct tm tm;
		char ts[32];

		localtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
		last = json_integer_value(json_object_get(e, "seq"));
		printf("%6lld %s %-9s -> %-9s %-18s %s\n", last, ts,
		    jstr(e, "from"), jstr(e, "to"), jstr(e, "action"),
		    jstr(e, "reason"));
	}
	json_decref(a);
	fflush(stdout);
	return last;
}

static int
ctl_events(int follow)
{
	long long last = 0;
	struct sbuf out;
	char path[64];

	do {
		sbuf_init(&out);
		snprintf(path, sizeof(path), "/events?since=%lld", last);
		if (api("GET", path, NULL, &out) != 200) {
			sbuf_free(&out);
			return 1;
		}
		last = print_events(out.s ? out.s : "[]", last);
		sbuf_free(&out);
		if (follow)
			sleep(1);
	} while (follow);
	return 0;
}

/* On stderr, so plan and check output stays the commands and results. */
static void
print_warnings(const struct config *cf)
{
	size_t i;

	for (i = 0; i < cf->warnings.n; i++)
		fprintf(stderr, "tandemctl: warning: %s\n", cf->warnings.v[i]);
}

static char *
read_token(const char *cfgfile)
{
	const char *path = token_file;
	struct config *cf = NULL;
	char err[ERRLEN], buf[512];
	size_t n;
	FILE *fp;

	if (path == NULL) {
		cf = config_load(cfgfile, err, sizeof(err));
		path = cf ? cf->api_token_file : NULL;
	}
	if (path == NULL || (fp = fopen(path, "r")) == NULL) {
		fprintf(stderr, "tandemctl: no token: pass --token-file or set "
		    "api_token_file in %s\n", cfgfile);
		config_free(cf);
		return NULL;
	}
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	config_free(cf);
	buf[n] = '\0';
	while (n && strchr("\r\n ", buf[n - 1]))
		buf[--n] = '\0';
	return xstrdup(buf);
}

static int
ctl_post(const char *cfgfile, const char *path)
{
	char *token = read_token(cfgfile);
	struct sbuf out;
	json_t *j;
	long code;

	if (token == NULL)
		return 2;
	sbuf_init(&out);
	code = api("POST", path, token, &out);
	free(token);
	if (code < 0) {
		sbuf_free(&out);
		return 1;
	}
	j = json_loads(out.s ? out.s : "", 0, NULL);
	if (code == 202)
		printf("%s\n", jstr(j, "ok"));
	else
		fprintf(stderr, "tandemctl: %s answered %ld: %s\n", path, code,
		    jstr(j, "error"));
	json_decref(j);
	sbuf_free(&out);
	return code == 202 ? 0 : 1;
}

#define DEFAULT_CONFIG "/etc/tandem/tandem.json"

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: tandemctl [--config FILE] [--api URL] [--token-file F] "
	    "COMMAND\n"
	    "commands:\n"
	    "  status [--json]   cluster state, nodes, Ray, vLLM, diagnosis\n"
	    "  events [--follow] recent transitions and actions\n"
	    "  rebuild [--reset] tear down and rebuild every node\n"
	    "  pause | resume    stop or restart automatic action\n"
	    "  plan              the commands a rebuild runs, per node\n"
	    "  check [--json]    preflight on every node over SSH\n"
	    "  bench             the DGX Spark guide's load test\n"
	    "  --version\n");
}

static void
on_preflight(struct preflight *pf, void *arg)
{
	(void)pf;
	uv_stop(arg);
}

/* tandemctl check: the preflight table over SSH, in parallel on every node. */
static int
ctl_check(const char *file, int json)
{
	char err[ERRLEN];
	struct config *cf;
	struct preflight *pf;
	struct sbuf out;
	uv_loop_t *loop = uv_default_loop();
	int ok;

	if ((cf = config_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return 2;
	}
	print_warnings(cf);
	log_init(0);
	signal(SIGPIPE, SIG_IGN);
	if (sshc_ssh_init() != 0) {
		fprintf(stderr, "tandemctl: cannot initialise libssh2\n");
		return 1;
	}
	pf = preflight_start(loop, cf, on_preflight, loop);
	uv_run(loop, UV_RUN_DEFAULT);
	sbuf_init(&out);
	if (json) {
		json_t *o = preflight_json(pf);
		char *s = json_dumps(o, JSON_INDENT(2));

		sbuf_addf(&out, "%s\n", s);
		free(s);
		json_decref(o);
	} else
		preflight_print(pf, &out);
	fputs(out.s, stdout);
	ok = preflight_ok(pf);
	sbuf_free(&out);
	preflight_free(pf);
	uv_run(loop, UV_RUN_NOWAIT);
	config_free(cf);
	return ok ? 0 : 1;
}

static int
ctl_plan(const char *file)
{
	char err[ERRLEN];
	struct config *cf;
	struct plan p;
	struct sbuf out;

	if ((cf = config_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return 2;
	}
	print_warnings(cf);
	plan_rebuild(cf, 0, &p);
	sbuf_init(&out);
	plan_print(cf, &p, &out);
	fputs(out.s, stdout);
	sbuf_free(&out);
	plan_free(&p);
	config_free(cf);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config",	required_argument,	NULL, 'c' },
		{ "api",	required_argument,	NULL, 'a' },
		{ "token-file",	required_argument,	NULL, 't' },
		{ "version",	no_argument,		NULL, 'V' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *file = getenv("TANDEM_CONFIG") ? getenv("TANDEM_CONFIG") :
	    DEFAULT_CONFIG, *cmd;
	int ch;

	/* "+" stops at the command so its own flags reach it untouched. */
	while ((ch = getopt_long(argc, argv, "+c:", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'a':
			api_url = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'V':
			printf("tandemctl %s\n", TANDEM_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (strcmp(cmd, "bench") == 0) {
		/* Against vLLM itself: vllm.url from the config by default. */
		char err[ERRLEN];
		struct config *cf = config_load(file, err, sizeof(err));
		char *url = xstrdup(cf ? cf->vllm.url : "http://127.0.0.1:8000");
		int rc;

		config_free(cf);
		log_init(0);
		rc = bench_main(argc - optind, argv + optind, url);
		free(url);
		return rc;
	}
	if (api_url == NULL) {
		/* The API address comes from the config when it can be read. */
		char err[ERRLEN];
		struct config *cf = config_load(file, err, sizeof(err));

		api_url = cf ? xprintf(strchr(cf->listen_host, ':') ?
		    "http://[%s]:%d" : "http://%s:%d", cf->listen_host,
		    cf->listen_port) : "http://127.0.0.1:9100";
		config_free(cf);
	}
	color = isatty(1) && getenv("NO_COLOR") == NULL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (strcmp(cmd, "plan") == 0 && optind + 1 == argc)
		return ctl_plan(file);
	if (strcmp(cmd, "check") == 0 && optind + 1 == argc)
		return ctl_check(file, 0);
	if (strcmp(cmd, "check") == 0 && optind + 2 == argc &&
	    strcmp(argv[optind + 1], "--json") == 0)
		return ctl_check(file, 1);
	if (strcmp(cmd, "status") == 0 && optind + 1 == argc)
		return ctl_status(0);
	if (strcmp(cmd, "status") == 0 && optind + 2 == argc &&
	    strcmp(argv[optind + 1], "--json") == 0)
		return ctl_status(1);
	if (strcmp(cmd, "events") == 0 && optind + 1 == argc)
		return ctl_events(0);
	if (strcmp(cmd, "events") == 0 && optind + 2 == argc &&
	    strcmp(argv[optind + 1], "--follow") == 0)
		return ctl_events(1);
	if (strcmp(cmd, "rebuild") == 0 && optind + 1 == argc)
		return ctl_post(file, "/rebuild");
	if (strcmp(cmd, "rebuild") == 0 && optind + 2 == argc &&
	    strcmp(argv[optind + 1], "--reset") == 0)
		return ctl_post(file, "/rebuild?reset=1");
	if ((strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0) &&
	    optind + 1 == argc) {
		char path[16];

		snprintf(path, sizeof(path), "/%s", cmd);
		return ctl_post(file, path);
	}
	fprintf(stderr, "tandemctl: unknown command or arguments: %s\n", cmd);
	usage(stderr);
	return 2;
}
