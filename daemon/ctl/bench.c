/*
 * tandemctl bench: the two-node DGX Spark Ray guide's load test against the OpenAI-compatible API.
 * One thread, libuv + libcurl multi: per level N requests are in flight and
 * a new one starts as each finishes (a closed loop, like the guide's run).
 * Tokens come from the response's usage; with --stream, time to first
 * token and inter-token latency from the SSE chunks' arrival times.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchstat.h"
#include "ctl.h"

#define SEED_PROMPT "Explain parallel computing in one sentence."

struct bench_opts {
	const char		*url;
	const char		*model;
	const char		*key;	/* vLLM's --api-key; NULL: none */
	int			 levels[64];
	size_t			 nlevels;
	int			 requests;
	int			 max_tokens;
	double			 temperature;
	struct strv		 prompts;	/* JSON "messages" arrays */
	int			 stream;
	double			 timeout_s;
	enum bench_format	 format;
	int			 find_knee;
	double			 max_p95;
};

struct run {
	const struct bench_opts	*o;
	uv_loop_t		*loop;
	struct bench_level	 lvl;
	int			 started;
	int			 finished;
	uint64_t		 t0;
	int			 progress;
};

struct call {
	struct run	*run;
	uint64_t	 t0;
	uint64_t	 first_ms;
	uint64_t	 last_ms;
	int		 chunks;
	int		 prompt_tokens;
	int		 completion_tokens;
	struct sbuf	 sse;
};

static char *
request_body(const struct bench_opts *o, int i)
{
	json_t *msgs = json_loads(o->prompts.v[(size_t)i % o->prompts.n], 0,
	    NULL);
	json_t *b = json_pack("{s:s, s:o, s:i, s:f, s:b}", "model", o->model,
	    "messages", msgs, "max_tokens", o->max_tokens, "temperature",
	    o->temperature, "stream", o->stream);
	char *s;

	if (o->stream)
		json_object_set_new(b, "stream_options",
		    json_pack("{s:b}", "include_usage", 1));
	s = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	return s;
}

/* SSE: "data: {...}\n\n" per chunk; a content delta is a token. */
static void
on_chunk(const char *data, size_t len, void *arg)
{
	struct call *c = arg;
	char *nl;

	sbuf_addn(&c->sse, data, len);
	while (c->sse.s && (nl = strstr(c->sse.s, "\n"))) {
		size_t n = (size_t)(nl - c->sse.s) + 1;
		json_t *j;

		*nl = '\0';
		if (strncmp(c->sse.s, "data: ", 6) == 0 &&
		    strcmp(c->sse.s + 6, "[DONE]") != 0 &&
		    (j = json_loads(c->sse.s + 6, 0, NULL))) {
			json_t *ch = json_array_get(json_object_get(j,
			    "choices"), 0);
			const char *content = json_string_value(json_object_get(
			    json_object_get(ch, "delta"), "content"));
			json_t *u = json_object_get(j, "usage");

			if (content && *content) {
				uint64_t now = mono_ms();

				if (c->chunks++ == 0)
					c->first_ms = now;
				c->last_ms = now;
			}
			if (json_is_object(u)) {
				c->prompt_tokens = (int)json_integer_value(
				    json_object_get(u, "prompt_tokens"));
				c->completion_tokens = (int)json_integer_value(
				    json_object_get(u, "completion_tokens"));
			}
			json_decref(j);
		}
		memmove(c->sse.s, c->sse.s + n, c->sse.len - n);
		c->sse.len -= n;
		c->sse.s[c->sse.len] = '\0';
	}
}

static void	start_one(struct run *);

static int
classify(const struct http_result *h)
{
	if (h->status)
		return BE_HTTP;
	if (h->error && (strstr(h->error, "imed out") ||
	    strstr(h->error, "imeout")))
		return BE_TIMEOUT;
	if (h->error && (strstr(h->error, "onnect") ||
	    strstr(h->error, "reset") || strstr(h->error, "Empty reply") ||
	    strstr(h->error, "closed")))
		return BE_CONNECT;
	return BE_OTHER;
}

static void
on_done(const struct http_result *h, void *arg)
{
	struct call *c = arg;
	struct run *r = c->run;
	struct bench_sample s;
	json_t *j;

	/* the level it belonged to has ended: nothing to count it in */
	if (h->status == 0 && h->error && strcmp(h->error, HTTP_SHUTDOWN) == 0) {
		sbuf_free(&c->sse);
		free(c);
		return;
	}
	memset(&s, 0, sizeof(s));
	s.latency_s = (double)(mono_ms() - c->t0) / 1000.0;
	s.status = h->status;
	if (h->status == 200 && !r->o->stream &&
	    (j = json_loads(h->body, 0, NULL))) {
		json_t *u = json_object_get(j, "usage");

		c->prompt_tokens = (int)json_integer_value(json_object_get(u,
		    "prompt_tokens"));
		c->completion_tokens = (int)json_integer_value(json_object_get(
		    u, "completion_tokens"));
		s.ok = json_is_object(u);
		json_decref(j);
	} else if (h->status == 200 && r->o->stream)
		s.ok = c->chunks > 0 || c->completion_tokens > 0;
	if (!s.ok)
		s.err = h->status == 200 ? BE_OTHER : classify(h);
	s.prompt_tokens = c->prompt_tokens;
	s.completion_tokens = c->completion_tokens;
	if (r->o->stream && c->chunks > 0) {
		s.ttft_s = (double)(c->first_ms - c->t0) / 1000.0;
		if (c->chunks > 1)
			s.itl_s = (double)(c->last_ms - c->first_ms) / 1000.0 /
			    (c->chunks - 1);
	}
	bench_add(&r->lvl, &s);
	sbuf_free(&c->sse);
	free(c);
	r->finished++;
	if (r->progress) {
		fprintf(stderr, "\rconcurrency %d: %d/%d", r->lvl.concurrency,
		    r->finished, r->o->requests);
		fflush(stderr);
	}
	if (r->started < r->o->requests)
		start_one(r);
	else if (r->finished == r->o->requests) {
		r->lvl.wall_s = (double)(mono_ms() - r->t0) / 1000.0;
		uv_stop(r->loop);
	}
}

static void
start_one(struct run *r)
{
	struct call *c = xcalloc(1, sizeof(*c));
	char *url = xprintf("%s/v1/chat/completions", r->o->url);
	char *body = request_body(r->o, r->started);

	c->run = r;
	c->t0 = mono_ms();
	sbuf_init(&c->sse);
	r->started++;
	http_request_stream(url, body, r->o->key, r->o->timeout_s, r->o->stream ?
	    on_chunk : NULL, on_done, c);
	free(url);
	free(body);
}

static void
run_level(uv_loop_t *loop, const struct bench_opts *o, int conc,
    struct bench_summary *out)
{
	struct run r;
	int i;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.loop = loop;
	r.lvl.concurrency = conc;
	r.progress = isatty(2);
	r.t0 = mono_ms();
	for (i = 0; i < conc && r.started < o->requests; i++)
		start_one(&r);
	uv_run(loop, UV_RUN_DEFAULT);
	if (r.progress)
		fprintf(stderr, "\r%40s\r", "");
	bench_summarize(&r.lvl, out);
	bench_free(&r.lvl);
}

struct fetch {
	uv_loop_t	*loop;
	char		*model;
	char		 err[256];
};

static void
on_models(const struct http_result *h, void *arg)
{
	struct fetch *f = arg;
	json_t *j;
	const char *id;

	if (h->status != 200 || (j = json_loads(h->body, 0, NULL)) == NULL) {
		snprintf(f->err, sizeof(f->err), "%s", h->status ?
		    "/v1/models did not answer with a model list" : h->error);
	} else {
		id = json_string_value(json_object_get(json_array_get(
		    json_object_get(j, "data"), 0), "id"));
		if (id)
			f->model = xstrdup(id);
		else
			snprintf(f->err, sizeof(f->err), "/v1/models lists "
			    "no model");
		json_decref(j);
	}
	uv_stop(f->loop);
}

/* --help: the whole of it; after a usage error, the synopsis (stderr). */
static void
usage(FILE *fp, int full)
{
	fprintf(fp, "usage: tandemctl bench [--url U] [--model M] "
	    "[--concurrency 1,5,10,20] [--requests 40]\n"
	    "       [--max-tokens 64] [--temperature 0] "
	    "[--prompt TEXT | --prompts FILE] [--stream]\n"
	    "       [--timeout S] [--format table|markdown|json|csv | --json]\n"
	    "       [--find-knee [--max-p95 S]] [OPTIONS]\n");
	if (!full) {
		fprintf(fp, "tandemctl bench --help tells more.\n");
		return;
	}
	fprintf(fp, "The load test of the DGX Spark Ray guide against vLLM's "
	    "OpenAI-compatible API:\n"
	    "per concurrency level, requests in flight in a closed loop; "
	    "a table of\n"
	    "throughput and latency.\n\n"
	    "options:\n"
	    "      --url U          vLLM's address (default: vllm.url from "
	    "the config)\n"
	    "      --model M        the model (default: the first of "
	    "/v1/models)\n"
	    "      --concurrency L  the levels, comma-separated (1,5,10,20)\n"
	    "      --requests N     requests per level (40)\n"
	    "      --max-tokens N   max_tokens of each request (64)\n"
	    "      --temperature T  temperature of each request (0)\n"
	    "      --prompt TEXT    the prompt (the guide's)\n"
	    "      --prompts FILE   prompts, one a line (text, or a JSON "
	    "object with\n"
	    "                       \"messages\"), used in turn\n"
	    "      --stream         stream the answers: time to first token "
	    "and\n"
	    "                       inter-token latency too\n"
	    "      --timeout S      per request, seconds (300)\n"
	    "      --format F       table, markdown, json or csv (table)\n"
	    "      --json           the same as --format json\n"
	    "      --find-knee      double the concurrency until throughput "
	    "stops growing\n"
	    "      --max-p95 S      with --find-knee: stop where p95 latency "
	    "passes S\n\n");
	ctl_global_help(fp);
}

static int
add_prompt_line(struct bench_opts *o, const char *line)
{
	json_t *j = NULL, *m;
	char *s;

	if (line[0] == '{' && (j = json_loads(line, 0, NULL)) &&
	    json_is_array(m = json_object_get(j, "messages"))) {
		s = json_dumps(m, JSON_COMPACT);
		strv_add(&o->prompts, s);
		free(s);
		json_decref(j);
		return 0;
	}
	json_decref(j);
	j = json_pack("[{s:s, s:s}]", "role", "user", "content", line);
	if (j == NULL)
		return -1;	/* not UTF-8 */
	s = json_dumps(j, JSON_COMPACT);
	strv_add(&o->prompts, s);
	free(s);
	json_decref(j);
	return 0;
}

static int
load_prompts(struct bench_opts *o, const char *path)
{
	FILE *fp = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (fp == NULL) {
		perror(path);
		return -1;
	}
	while ((n = getline(&line, &cap, fp)) > 0) {
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n && add_prompt_line(o, line) == -1) {
			fprintf(stderr, "%s: a line is not UTF-8\n", path);
			free(line);
			fclose(fp);
			return -1;
		}
	}
	free(line);
	fclose(fp);
	if (o->prompts.n == 0) {
		fprintf(stderr, "%s: no prompts\n", path);
		return -1;
	}
	return 0;
}

static int
parse_levels(struct bench_opts *o, const char *s)
{
	char *copy = xstrdup(s), *tok, *save = NULL, *end;

	o->nlevels = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	    tok = strtok_r(NULL, ",", &save)) {
		long v = strtol(tok, &end, 10);

		if (*end || v < 1 || v > 4096 || o->nlevels == 64) {
			free(copy);
			return -1;
		}
		o->levels[o->nlevels++] = (int)v;
	}
	free(copy);
	return o->nlevels ? 0 : -1;
}

/* Doubling until a doubling adds less than 5 % or p95 passes the bound. */
static size_t
find_knee(uv_loop_t *loop, const struct bench_opts *o,
    struct bench_summary *res, int *knee)
{
	size_t n = 0;
	int c;

	*knee = 1;
	for (c = 1; c <= 1024 && n < 12; c *= 2) {
		run_level(loop, o, c, &res[n]);
		if (res[n].ok == 0)
			return n + 1;
		if (n > 0 && (res[n].completion_tps <
		    res[n - 1].completion_tps * 1.05 ||
		    (o->max_p95 > 0 && res[n].lat_p95 > o->max_p95))) {
			int lo = res[n - 1].concurrency;

			/* one bisection between the last two levels */
			if (c - lo > 1) {
				run_level(loop, o, (lo + c) / 2, &res[n + 1]);
				n++;
				if (res[n].completion_tps >=
				    res[n - 2].completion_tps * 1.05 &&
				    !(o->max_p95 > 0 &&
				    res[n].lat_p95 > o->max_p95))
					lo = res[n].concurrency;
			}
			*knee = lo;
			return n + 1;
		}
		*knee = c;
		n++;
	}
	return n;
}

int
bench_main(int argc, char **argv, struct ctl_args *g)
{
	static const struct option opts[] = {
		{ "url",	 required_argument, NULL, 'u' },
		{ "model",	 required_argument, NULL, 'm' },
		{ "concurrency", required_argument, NULL, 'C' },
		{ "requests",	 required_argument, NULL, 'n' },
		{ "max-tokens",	 required_argument, NULL, 't' },
		{ "temperature", required_argument, NULL, 'T' },
		{ "prompt",	 required_argument, NULL, 'p' },
		{ "prompts",	 required_argument, NULL, 'P' },
		{ "stream",	 no_argument,	    NULL, 's' },
		{ "timeout",	 required_argument, NULL, 'o' },
		{ "format",	 required_argument, NULL, 'f' },
		{ "find-knee",	 no_argument,	    NULL, 'k' },
		{ "max-p95",	 required_argument, NULL, 'x' },
		{ "json",	 no_argument,	    NULL, 'j' },
		CTL_GLOBAL_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct bench_opts o;
	struct bench_summary res[64];
	const char *prompt = SEED_PROMPT, *prompts_file = NULL;
	uv_loop_t *loop;
	struct sbuf out;
	size_t i, n = 0;
	int ch, knee = 0, rc = 0;
	char *end, *fetched = NULL, *cfg_url = NULL, *cfg_key = NULL;

	memset(&o, 0, sizeof(o));
	o.requests = 40;
	o.max_tokens = 64;
	o.timeout_s = 300;
	o.levels[0] = 1;
	o.levels[1] = 5;
	o.levels[2] = 10;
	o.levels[3] = 20;
	o.nlevels = 4;
	strv_init(&o.prompts);
	optind = 0;	/* glibc: a fresh scan, without the first one's "+" */
	while ((ch = getopt_long(argc, argv, "hc:", opts, NULL)) != -1) {
		if (ctl_global(g, ch, optarg))
			continue;
		switch (ch) {
		case 'h':
			usage(stdout, 1);
			strv_free(&o.prompts);
			return 0;
		case 'u':
			o.url = optarg;
			break;
		case 'm':
			o.model = optarg;
			break;
		case 'C':
			if (parse_levels(&o, optarg) == -1)
				goto bad;
			break;
		case 'n':
			o.requests = (int)strtol(optarg, &end, 10);
			if (*end || o.requests < 1 || o.requests > 1000000)
				goto bad;
			break;
		case 't':
			o.max_tokens = (int)strtol(optarg, &end, 10);
			if (*end || o.max_tokens < 1)
				goto bad;
			break;
		case 'T':
			o.temperature = strtod(optarg, &end);
			if (*end)
				goto bad;
			break;
		case 'p':
			prompt = optarg;
			break;
		case 'P':
			prompts_file = optarg;
			break;
		case 's':
			o.stream = 1;
			break;
		case 'o':
			o.timeout_s = strtod(optarg, &end);
			if (*end || o.timeout_s <= 0)
				goto bad;
			break;
		case 'f':
			if (strcmp(optarg, "table") == 0)
				o.format = BF_TABLE;
			else if (strcmp(optarg, "markdown") == 0)
				o.format = BF_MARKDOWN;
			else if (strcmp(optarg, "json") == 0)
				o.format = BF_JSON;
			else if (strcmp(optarg, "csv") == 0)
				o.format = BF_CSV;
			else
				goto bad;
			break;
		case 'j':
			o.format = BF_JSON;
			break;
		case 'k':
			o.find_knee = 1;
			break;
		case 'x':
			o.max_p95 = strtod(optarg, &end);
			if (*end)
				goto bad;
			break;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	if (prompts_file ? load_prompts(&o, prompts_file) == -1 :
	    add_prompt_line(&o, prompt) == -1) {
		strv_free(&o.prompts);
		return 2;
	}
	loop = uv_default_loop();
	if (http_init(loop) != 0) {
		fprintf(stderr, "tandemctl bench: cannot start libcurl\n");
		return 1;
	}
	/* Only now: --config may come after the command. */
	if (o.url == NULL &&
	    (o.url = cfg_url = ctl_vllm_url(g->config, g->config_named)) == NULL) {
		strv_free(&o.prompts);
		http_shutdown();
		return 2;
	}
	/* the config's vLLM wants its key on /v1 (--api-key) */
	if (ctl_vllm_key(g->config, g->config_named, &cfg_key) == -1) {
		strv_free(&o.prompts);
		free(cfg_url);
		http_shutdown();
		return 2;
	}
	o.key = cfg_key;
	if (o.model == NULL) {
		struct fetch f;
		char *url = xprintf("%s/v1/models", o.url);

		memset(&f, 0, sizeof(f));
		f.loop = loop;
		http_request_key(url, NULL, o.key, 10, on_models, &f);
		free(url);
		uv_run(loop, UV_RUN_DEFAULT);
		if (f.model == NULL) {
			fprintf(stderr, "tandemctl bench: %s: %s\n", o.url,
			    f.err);
			strv_free(&o.prompts);
			free(cfg_url);
			free(cfg_key);
			return 1;
		}
		o.model = fetched = f.model;
	}
	if (o.find_knee)
		n = find_knee(loop, &o, res, &knee);
	else
		for (i = 0; i < o.nlevels; i++)
			run_level(loop, &o, o.levels[i], &res[n++]);
	sbuf_init(&out);
	bench_render(&out, o.format, o.stream, res, n);
	if (o.find_knee && o.format != BF_JSON && o.format != BF_CSV)
		sbuf_addf(&out, "\nknee: concurrency %d (beyond it completion "
		    "tok/s grows less than 5%% per doubling%s)\n", knee,
		    o.max_p95 > 0 ? " or p95 passes --max-p95" : "");
	fputs(out.s, stdout);
	sbuf_free(&out);
	for (i = 0; i < n; i++)
		if (res[i].failed)
			fprintf(stderr, "tandemctl bench: concurrency %d: %d of "
			    "%d requests failed\n", res[i].concurrency,
			    res[i].failed, res[i].ok + res[i].failed);
	http_shutdown();
	uv_run(loop, UV_RUN_NOWAIT);
	strv_free(&o.prompts);
	free(fetched);
	free(cfg_url);
	free(cfg_key);
	for (i = 0; i < n; i++)
		if (res[i].failed)
			rc = 1;
	return rc;
bad:
	usage(stderr, 0);
	strv_free(&o.prompts);
	return 2;
}
