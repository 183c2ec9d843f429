#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "jsonpos.h"

struct ctx {
	const char	*file;
	struct jsonpos	*jp;
	char		*err;
	size_t		 errlen;
	int		 failed;
};

/*
 * Records the first error only: later ones are usually consequences of it,
 * and an operator fixes one line at a time anyway.
 */
/* Where PATH starts in the file; a missing key points at its parent. */
static void
position(struct ctx *c, const char *path, int *line, int *col)
{
	char at[256];

	snprintf(at, sizeof(at), "%s", path);
	while (jsonpos_find(c->jp, at, line, col) == -1 && at[0]) {
		char *dot = strrchr(at, '.'), *br = strrchr(at, '[');
		char *cut = dot > br ? dot : br;

		if (cut == NULL)
			at[0] = '\0';
		else
			*cut = '\0';
	}
	if (at[0] == '\0')
		(void)jsonpos_find(c->jp, "", line, col);
}

static int __attribute__((format(printf, 3, 4)))
fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	char msg[ERRLEN];
	int line = 1, col = 1;
	va_list ap;

	if (c->failed)
		return -1;
	c->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	position(c, path, &line, &col);
	seterr(c->err, c->errlen, "%s:%d:%d: %s: %s", c->file, line, col,
	    path[0] ? path : "(top level)", msg);
	return -1;
}

/* A warning has the same "FILE:LINE:COL: path: what" shape as an error. */
static void __attribute__((format(printf, 4, 5)))
warn(struct ctx *c, struct config *cf, const char *path, const char *fmt, ...)
{
	char msg[ERRLEN];
	int line = 1, col = 1;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	position(c, path, &line, &col);
	strv_addf(&cf->warnings, "%s:%d:%d: %s: %s", c->file, line, col,
	    path, msg);
}

static char *
join(const char *path, const char *key)
{
	return path[0] ? xprintf("%s.%s", path, key) : xstrdup(key);
}

static const char *
typename(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:	return "an object";
	case JSON_ARRAY:	return "a list";
	case JSON_STRING:	return "a string";
	case JSON_INTEGER:	return "an integer";
	case JSON_REAL:		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:	return "a boolean";
	case JSON_NULL:		return "null";
	}
	return "a value";
}

static int
check_keys(struct ctx *c, json_t *obj, const char *path,
    const char *const *allowed)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(obj, key, v) {
		for (i = 0; allowed[i]; i++)
			if (strcmp(allowed[i], key) == 0)
				break;
		if (allowed[i] == NULL) {
			char *p = join(path, key);
			int rc = fail(c, p, "unknown key");

			free(p);
			return rc;
		}
	}
	return 0;
}

/* Returns the member, NULL when absent; fails when present but not an object. */
static json_t *
get_obj(struct ctx *c, json_t *obj, const char *path, const char *key)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char *p;

	if (v == NULL || json_is_object(v))
		return v;
	p = join(path, key);
	fail(c, p, "must be an object, not %s", typename(v));
	free(p);
	return NULL;
}

static int
get_str(struct ctx *c, json_t *obj, const char *path, const char *key,
    const char *def, int required, char **out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char *p = join(path, key);
	int rc = 0;

	if (v == NULL) {
		if (required)
			rc = fail(c, p, "missing (required)");
		else
			*out = def ? xstrdup(def) : NULL;
	} else if (!json_is_string(v))
		rc = fail(c, p, "must be a string, not %s", typename(v));
	else if (json_string_length(v) != strlen(json_string_value(v)))
		rc = fail(c, p, "must not contain a NUL character");
	else if (json_string_length(v) == 0)
		rc = fail(c, p, "must not be empty");
	else
		*out = xstrdup(json_string_value(v));
	free(p);
	return rc;
}

static int
get_int(struct ctx *c, json_t *obj, const char *path, const char *key,
    long long min, long long max, int def, int *out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char *p = join(path, key);
	int rc = 0;

	if (v == NULL)
		*out = def;
	else if (!json_is_integer(v))
		rc = fail(c, p, "must be an integer, not %s", typename(v));
	else if (json_integer_value(v) < min || json_integer_value(v) > max)
		rc = fail(c, p, "%lld is out of range (%lld..%lld)",
		    (long long)json_integer_value(v), min, max);
	else
		*out = (int)json_integer_value(v);
	free(p);
	return rc;
}

static int
get_num(struct ctx *c, json_t *obj, const char *path, const char *key,
    double min, double max, double def, double *out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char *p = join(path, key);
	int rc = 0;

	if (v == NULL)
		*out = def;
	else if (!json_is_number(v))
		rc = fail(c, p, "must be a number, not %s", typename(v));
	else if (json_number_value(v) < min || json_number_value(v) > max)
		rc = fail(c, p, "%g is out of range (%g..%g)",
		    json_number_value(v), min, max);
	else
		*out = json_number_value(v);
	free(p);
	return rc;
}

static int
get_strlist(struct ctx *c, json_t *obj, const char *path, const char *key,
    struct strv *out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL, *e;
	char *p = join(path, key), *ep;
	size_t i;
	int rc = 0;

	strv_init(out);
	if (v == NULL)
		goto done;
	if (!json_is_array(v)) {
		rc = fail(c, p, "must be a list of strings, not %s",
		    typename(v));
		goto done;
	}
	json_array_foreach(v, i, e) {
		ep = xprintf("%s[%zu]", p, i);
		if (!json_is_string(e))
			rc = fail(c, ep, "must be a string, not %s",
			    typename(e));
		else if (json_string_length(e) == 0)
			rc = fail(c, ep, "empty argument");
		else if (json_string_length(e) !=
		    strlen(json_string_value(e)))
			rc = fail(c, ep, "must not contain a NUL character");
		else
			strv_add(out, json_string_value(e));
		free(ep);
		if (rc)
			break;
	}
done:
	free(p);
	return rc;
}

static int
valid_env_key(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

static const char *const derived_env[] = {
	"VLLM_HOST_IP", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", NULL
};

/* Checks {placeholders}: only {ip} {ifname} {name} {rank} exist. */
static const char *
bad_template(const char *s)
{
	static const char *const known[] = { "ip", "ifname", "name", "rank",
	    NULL };
	const char *open, *close;
	size_t i;

	for (open = strchr(s, '{'); open; open = strchr(close, '{')) {
		close = strchr(open, '}');
		if (close == NULL)
			return "unterminated '{' (placeholders are {ip} "
			    "{ifname} {name} {rank})";
		for (i = 0; known[i]; i++)
			if (strlen(known[i]) == (size_t)(close - open - 1) &&
			    strncmp(open + 1, known[i], close - open - 1) == 0)
				break;
		if (known[i] == NULL)
			return "unknown placeholder (placeholders are {ip} "
			    "{ifname} {name} {rank})";
	}
	return NULL;
}

static int
get_env(struct ctx *c, json_t *obj, const char *path, const char *key,
    struct kvlist *out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL, *e;
	const char *k, *why;
	char *p = join(path, key), *ep;
	size_t i;
	int rc = 0;

	out->v = NULL;
	out->n = 0;
	if (v == NULL)
		goto done;
	if (!json_is_object(v)) {
		rc = fail(c, p, "must be an object of strings, not %s",
		    typename(v));
		goto done;
	}
	out->v = xcalloc(json_object_size(v), sizeof(struct kv));
	json_object_foreach(v, k, e) {
		ep = join(p, k);
		if (!valid_env_key(k))
			rc = fail(c, ep, "not a valid environment variable "
			    "name (letters, digits, _; not starting with a "
			    "digit)");
		else if (!json_is_string(e))
			rc = fail(c, ep, "must be a string, not %s",
			    typename(e));
		else if (strlen(json_string_value(e)) != json_string_length(e))
			rc = fail(c, ep, "must not contain a NUL character");
		else if ((why = bad_template(json_string_value(e))) != NULL)
			rc = fail(c, ep, "%s", why);
		for (i = 0; rc == 0 && derived_env[i]; i++)
			if (strcmp(k, derived_env[i]) == 0)
				rc = fail(c, ep, "is derived from the node's ip "
				    "and ifname; remove it");
		if (rc == 0) {
			out->v[out->n].key = xstrdup(k);
			out->v[out->n].val = xstrdup(json_string_value(e));
			out->n++;
		}
		free(ep);
		if (rc)
			break;
	}
done:
	free(p);
	return rc;
}

static int
is_ipv4(const char *s)
{
	struct in_addr a;

	return inet_pton(AF_INET, s, &a) == 1;
}

/* Linux IFNAMSIZ is 16; '/' and whitespace are refused by the kernel. */
static int
valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 15 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("_.-@", *s)))
			return 0;
	return 1;
}

/* Docker's rule for container names: [a-zA-Z0-9][a-zA-Z0-9_.-]+ */
static int
valid_container_name(const char *s)
{
	if (!isalnum((unsigned char)s[0]) || s[1] == '\0')
		return 0;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("_.-", *s)))
			return 0;
	return strlen(s) <= 128;
}

static int
valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("_.-", *s)))
			return 0;
	return 1;
}

static int
valid_host(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253 || s[0] == '-')
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr(".-:", *s)))
			return 0;
	return 1;
}

static int
valid_user(const char *s)
{
	if (!(islower((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) ||
		    strchr("_-.", *s)))
			return 0;
	return 1;
}

/* Image references: no whitespace, no shell metacharacters needed. */
static int
valid_image(const char *s)
{
	if (s[0] == '-')
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("_.-/:@", *s)))
			return 0;
	return 1;
}

static int
valid_shm(const char *s)
{
	if (!isdigit((unsigned char)*s))
		return 0;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s && strchr("bkmgBKMG", *s))
		s++;
	return *s == '\0';
}

static int
valid_volume(const char *s)
{
	const char *colon = strchr(s, ':');
	const char *opt;

	if (s[0] != '/' || colon == NULL || colon[1] != '/')
		return 0;
	opt = strchr(colon + 1, ':');
	if (opt && strcmp(opt, ":ro") != 0 && strcmp(opt, ":rw") != 0)
		return 0;
	return 1;
}

static int
parse_listen(const char *s, char **host, int *port)
{
	const char *colon;
	char *end;
	long p;
	char buf[64];
	struct in6_addr a6;

	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL || rb[1] != ':' || (size_t)(rb - s - 1) >=
		    sizeof(buf))
			return -1;
		memcpy(buf, s + 1, rb - s - 1);
		buf[rb - s - 1] = '\0';
		if (inet_pton(AF_INET6, buf, &a6) != 1)
			return -1;
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || (size_t)(colon - s) >= sizeof(buf))
			return -1;
		memcpy(buf, s, colon - s);
		buf[colon - s] = '\0';
		if (!is_ipv4(buf))
			return -1;
	}
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p < 1 || p > 65535)
		return -1;
	*host = xstrdup(buf);
	*port = (int)p;
	return 0;
}

/* Finds "--flag N" or "--flag=N" in vllm.args. */
static const char *
arg_value(const struct strv *args, const char *flag, const char *alias)
{
	size_t i, n = strlen(flag);

	for (i = 0; i < args->n; i++) {
		const char *a = args->v[i];

		if ((strcmp(a, flag) == 0 || (alias && strcmp(a, alias) == 0))
		    && i + 1 < args->n)
			return args->v[i + 1];
		if (strncmp(a, flag, n) == 0 && a[n] == '=')
			return a + n + 1;
	}
	return NULL;
}

static int
arg_int(struct ctx *c, const struct config *cf, const char *flag,
    const char *alias, int def, int *out)
{
	const char *v = arg_value(&cf->vllm.args, flag, alias);
	char *end;
	long n;

	*out = def;
	if (v == NULL)
		return 0;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < 1 || n > 4096)
		return fail(c, "vllm.args", "%s: \"%s\" is not a positive "
		    "integer", flag, v);
	*out = (int)n;
	return 0;
}

/* --gpu-memory-utilization is the remedy ladder's starting point. */
static int
check_args(struct ctx *c, struct config *cf)
{
	const char *gmu;
	char *end;

	gmu = arg_value(&cf->vllm.args, "--gpu-memory-utilization", NULL);
	if (gmu) {
		cf->vllm.gpu_memory_utilization = strtod(gmu, &end);
		if (*end || cf->vllm.gpu_memory_utilization <= 0 ||
		    cf->vllm.gpu_memory_utilization > 1)
			return fail(c, "vllm.args", "--gpu-memory-utilization:"
			    " \"%s\" is not a number in (0, 1]", gmu);
	}
	return 0;
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

static int
reconcile_derived(struct ctx *c, struct config *cf)
{
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
			rc = fail(c, path, "%s is set by tandem per node, from "
			    "%s; remove it", derived_flags[j].flag, from);
		else if (given == NULL)
			rc = fail(c, path, "%s needs a value", a);
		else if (!same_value(given, want))
			rc = fail(c, path, "%s %s conflicts with %s, which "
			    "makes tandem set %s %s; remove the flag or change "
			    "the config", derived_flags[j].flag, given, from,
			    derived_flags[j].flag, want);
		else
			warn(c, cf, path, "%s %s is what tandem sets from %s; "
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

static int
parse_nodes(struct ctx *c, json_t *root, struct config *cf)
{
	static const char *const keys[] = { "name", "role", "ssh_host",
	    "ssh_port", "ip", "ifname", "env", "container_name", NULL };
	json_t *nodes = json_object_get(root, "nodes"), *n;
	size_t i, j, heads = 0, workers = 0;
	char *p, *role;
	int rc = 0;

	if (nodes == NULL)
		return fail(c, "nodes", "missing (required)");
	if (!json_is_array(nodes))
		return fail(c, "nodes", "must be a list, not %s",
		    typename(nodes));
	if (json_array_size(nodes) == 0)
		return fail(c, "nodes", "must list at least the head node");
	cf->nnodes = json_array_size(nodes);
	cf->nodes = xcalloc(cf->nnodes, sizeof(*cf->nodes));
	json_array_foreach(nodes, i, n) {
		struct node_conf *nc = &cf->nodes[i];

		p = xprintf("nodes[%zu]", i);
		role = NULL;
		if (!json_is_object(n))
			rc = fail(c, p, "must be an object, not %s",
			    typename(n));
		if (rc == 0)
			rc = check_keys(c, n, p, keys);
		if (rc == 0)
			rc = get_str(c, n, p, "name", NULL, 1, &nc->name);
		if (rc == 0 && !valid_name(nc->name))
			rc = fail(c, p, "name \"%s\": use letters, digits, "
			    "'.', '_', '-' (at most 63)", nc->name);
		if (rc == 0)
			rc = get_str(c, n, p, "role", NULL, 1, &role);
		if (rc == 0) {
			if (strcmp(role, "head") == 0)
				nc->is_head = 1;
			else if (strcmp(role, "worker") != 0) {
				char *rp = join(p, "role");

				rc = fail(c, rp, "must be \"head\" or "
				    "\"worker\"");
				free(rp);
			}
		}
		free(role);
		if (rc == 0)
			rc = get_str(c, n, p, "ssh_host", NULL, 1,
			    &nc->ssh_host);
		if (rc == 0 && !valid_host(nc->ssh_host)) {
			char *hp = join(p, "ssh_host");

			rc = fail(c, hp, "not a host name or address");
			free(hp);
		}
		if (rc == 0)
			rc = get_int(c, n, p, "ssh_port", 1, 65535,
			    cf->ssh.port, &nc->ssh_port);
		if (rc == 0)
			rc = get_str(c, n, p, "ip", NULL, 1, &nc->ip);
		if (rc == 0 && !is_ipv4(nc->ip)) {
			char *ip = join(p, "ip");

			rc = fail(c, ip, "not an IPv4 address");
			free(ip);
		}
		if (rc == 0)
			rc = get_str(c, n, p, "ifname", NULL, 1, &nc->ifname);
		if (rc == 0 && !valid_ifname(nc->ifname)) {
			char *ip = join(p, "ifname");

			rc = fail(c, ip, "not a valid interface name (at "
			    "most 15 of letters, digits, '_', '.', '-')");
			free(ip);
		}
		if (rc == 0)
			rc = get_env(c, n, p, "env", &nc->env);
		if (rc == 0)
			rc = get_str(c, n, p, "container_name", NULL, 0,
			    &nc->container_name);
		if (rc == 0 && nc->container_name &&
		    !valid_container_name(nc->container_name)) {
			char *ip = join(p, "container_name");

			rc = fail(c, ip, "not a valid container name "
			    "([a-zA-Z0-9][a-zA-Z0-9_.-]+)");
			free(ip);
		}
		if (rc == 0 && nc->is_head && ++heads > 1)
			rc = fail(c, p, "a second head node; exactly one node "
			    "has role \"head\"");
		for (j = 0; rc == 0 && j < i; j++) {
			struct node_conf *o = &cf->nodes[j];

			if (strcmp(o->name, nc->name) == 0)
				rc = fail(c, p, "name \"%s\" is already used "
				    "by nodes[%zu]", nc->name, j);
			else if (strcmp(o->ssh_host, nc->ssh_host) == 0 &&
			    o->ssh_port == nc->ssh_port)
				rc = fail(c, p, "ssh_host %s:%d is already used "
				    "by nodes[%zu]", nc->ssh_host,
				    nc->ssh_port, j);
			else if (strcmp(o->ip, nc->ip) == 0)
				rc = fail(c, p, "ip %s is already used by "
				    "nodes[%zu]; every node needs a unique IP "
				    "address", nc->ip, j);
		}
		free(p);
		if (rc)
			return rc;
	}
	if (heads == 0)
		return fail(c, "nodes", "no node has role \"head\"; exactly "
		    "one must");
	/* Ranks and default names follow config order, head first. */
	for (i = 0; i < cf->nnodes; i++) {
		struct node_conf *nc = &cf->nodes[i];

		if (nc->is_head) {
			cf->head = i;
			nc->rank = 0;
		} else
			nc->rank = (int)++workers;
		if (nc->container_name == NULL)
			nc->container_name = nc->is_head ?
			    xstrdup("vllm-head") : nc->rank == 1 ?
			    xstrdup("vllm-worker") :
			    xprintf("vllm-worker-%d", nc->rank);
	}
	return 0;
}

static int
parse(struct ctx *c, json_t *root, struct config *cf)
{
	static const char *const top[] = { "name", "listen", "api_token_file",
	    "topology", "ssh", "container", "nodes", "ray", "vllm", "dp",
	    "probe", "recovery", "systemd", NULL };
	static const char *const ssh_keys[] = { "user", "port",
	    "identity_file", "known_hosts_file", "connect_timeout_s",
	    "keepalive_s", NULL };
	static const char *const ctr_keys[] = { "engine", "image", "shm_size",
	    "volumes", "env", "extra_args", NULL };
	static const char *const ray_keys[] = { "port", "expect_nodes",
	    "expect_gpus", NULL };
	static const char *const vllm_keys[] = { "model", "port", "args",
	    "url", "log_file", "ready_timeout_s", "served_model_name", NULL };
	static const char *const dp_keys[] = { "size", "size_local",
	    "rpc_port", "api_server_count", "seed", NULL };
	static const char *const probe_keys[] = { "interval_s", "timeout_s",
	    "failures_to_degrade", "generate_every_s", "ray_wait_timeout_s",
	    NULL };
	static const char *const rec_keys[] = { "backoff_initial_s",
	    "backoff_max_s", "max_rebuilds_per_hour",
	    "gpu_memory_utilization_steps", NULL };
	static const char *const sd_keys[] = { "ready_when", "on_stop", NULL };
	json_t *ssh, *ctr, *ray, *vllm, *dp, *probe, *rec, *sd, *steps, *e;
	char *s = NULL;
	size_t i;
	int tp, pp;

	if (!json_is_object(root))
		return fail(c, "", "the config must be a JSON object, not %s",
		    typename(root));
	if (check_keys(c, root, "", top))
		return -1;
	if (get_str(c, root, "", "name", "tandem", 0, &cf->name))
		return -1;
	if (!valid_name(cf->name))
		return fail(c, "name", "use letters, digits, '.', '_', '-' "
		    "(at most 63)");
	if (get_str(c, root, "", "listen", "127.0.0.1:9100", 0, &s))
		return -1;
	if (parse_listen(s, &cf->listen_host, &cf->listen_port) == -1) {
		free(s);
		return fail(c, "listen", "must be IPv4:PORT or [IPv6]:PORT");
	}
	free(s);
	if (get_str(c, root, "", "api_token_file", NULL, 0,
	    &cf->api_token_file))
		return -1;
	if (get_str(c, root, "", "topology", "ray", 0, &s))
		return -1;
	if (strcmp(s, "ray") == 0)
		cf->topology = TOPO_RAY;
	else if (strcmp(s, "dp") == 0)
		cf->topology = TOPO_DP;
	else {
		free(s);
		return fail(c, "topology", "must be \"ray\" or \"dp\"");
	}
	free(s);

	ssh = get_obj(c, root, "", "ssh");
	if (c->failed)
		return -1;
	if (ssh == NULL)
		return fail(c, "ssh", "missing (required: known_hosts_file "
		    "and identity_file at least)");
	if (check_keys(c, ssh, "ssh", ssh_keys) ||
	    get_str(c, ssh, "ssh", "user", "root", 0, &cf->ssh.user) ||
	    get_int(c, ssh, "ssh", "port", 1, 65535, 22, &cf->ssh.port) ||
	    get_str(c, ssh, "ssh", "identity_file", NULL, 1,
	    &cf->ssh.identity_file) ||
	    get_str(c, ssh, "ssh", "known_hosts_file", NULL, 1,
	    &cf->ssh.known_hosts_file) ||
	    get_num(c, ssh, "ssh", "connect_timeout_s", 0.1, 300, 5,
	    &cf->ssh.connect_timeout_s) ||
	    get_num(c, ssh, "ssh", "keepalive_s", 0.1, 3600, 5,
	    &cf->ssh.keepalive_s))
		return -1;
	if (!valid_user(cf->ssh.user))
		return fail(c, "ssh.user", "not a valid user name");

	ctr = get_obj(c, root, "", "container");
	if (c->failed)
		return -1;
	if (ctr == NULL)
		return fail(c, "container", "missing (required: image at "
		    "least)");
	if (check_keys(c, ctr, "container", ctr_keys) ||
	    get_str(c, ctr, "container", "engine", "docker", 0,
	    &cf->container.engine))
		return -1;
	if (strcmp(cf->container.engine, "docker") != 0 &&
	    strcmp(cf->container.engine, "podman") != 0)
		return fail(c, "container.engine", "must be \"docker\" or "
		    "\"podman\"");
	if (get_str(c, ctr, "container", "image", NULL, 1,
	    &cf->container.image))
		return -1;
	if (!valid_image(cf->container.image))
		return fail(c, "container.image", "not a valid image "
		    "reference");
	if (get_str(c, ctr, "container", "shm_size", "16g", 0,
	    &cf->container.shm_size))
		return -1;
	if (!valid_shm(cf->container.shm_size))
		return fail(c, "container.shm_size", "must be a size like "
		    "16g, 512m or 1073741824");
	if (get_strlist(c, ctr, "container", "volumes",
	    &cf->container.volumes))
		return -1;
	for (i = 0; i < cf->container.volumes.n; i++)
		if (!valid_volume(cf->container.volumes.v[i])) {
			char *p = xprintf("container.volumes[%zu]", i);
			int rc = fail(c, p, "must be /HOST:/CONTAINER[:ro]");

			free(p);
			return rc;
		}
	if (get_env(c, ctr, "container", "env", &cf->container.env) ||
	    get_strlist(c, ctr, "container", "extra_args",
	    &cf->container.extra_args))
		return -1;

	if (parse_nodes(c, root, cf))
		return -1;

	vllm = get_obj(c, root, "", "vllm");
	if (c->failed)
		return -1;
	if (vllm == NULL)
		return fail(c, "vllm", "missing (required: model at least)");
	if (check_keys(c, vllm, "vllm", vllm_keys) ||
	    get_str(c, vllm, "vllm", "model", NULL, 1, &cf->vllm.model) ||
	    get_int(c, vllm, "vllm", "port", 1, 65535, 8000, &cf->vllm.port) ||
	    get_strlist(c, vllm, "vllm", "args", &cf->vllm.args))
		return -1;
	s = xprintf("http://127.0.0.1:%d", cf->vllm.port);
	if (get_str(c, vllm, "vllm", "url", s, 0, &cf->vllm.url)) {
		free(s);
		return -1;
	}
	free(s);
	if (strncmp(cf->vllm.url, "http://", 7) != 0 &&
	    strncmp(cf->vllm.url, "https://", 8) != 0)
		return fail(c, "vllm.url", "must start with http:// or "
		    "https://");
	if (cf->vllm.url[strlen(cf->vllm.url) - 1] == '/')
		cf->vllm.url[strlen(cf->vllm.url) - 1] = '\0';
	if (get_str(c, vllm, "vllm", "log_file", "/tmp/vllm_serve.log", 0,
	    &cf->vllm.log_file) ||
	    get_num(c, vllm, "vllm", "ready_timeout_s", 1, 86400, 1800,
	    &cf->vllm.ready_timeout_s) ||
	    get_str(c, vllm, "vllm", "served_model_name", NULL, 0,
	    &cf->vllm.served_model_name))
		return -1;
	/* vllm serve would read either as one of its options */
	if (cf->vllm.model[0] == '-')
		return fail(c, "vllm.model", "must not begin with '-': vllm "
		    "serve would take it for an option");
	if (cf->vllm.served_model_name && cf->vllm.served_model_name[0] == '-')
		return fail(c, "vllm.served_model_name", "must not begin with "
		    "'-': vllm serve would take it for an option");
	if (cf->vllm.log_file[0] != '/')
		return fail(c, "vllm.log_file", "must be an absolute path "
		    "inside the head container");
	if (check_args(c, cf))
		return -1;

	ray = get_obj(c, root, "", "ray");
	dp = get_obj(c, root, "", "dp");
	if (c->failed)
		return -1;
	if (ray && cf->topology != TOPO_RAY)
		return fail(c, "ray", "only used with topology \"ray\"");
	if (dp && cf->topology != TOPO_DP)
		return fail(c, "dp", "only used with topology \"dp\"");
	if (arg_int(c, cf, "--tensor-parallel-size", "-tp", 1, &tp) ||
	    arg_int(c, cf, "--pipeline-parallel-size", "-pp", 1, &pp))
		return -1;
	if (check_keys(c, ray, "ray", ray_keys) ||
	    get_int(c, ray, "ray", "port", 1, 65535, 6379, &cf->ray.port) ||
	    get_int(c, ray, "ray", "expect_nodes", 1, 100000,
	    (int)cf->nnodes, &cf->ray.expect_nodes) ||
	    get_int(c, ray, "ray", "expect_gpus", 1, 1000000,
	    arg_value(&cf->vllm.args, "--tensor-parallel-size", "-tp") ?
	    tp * pp : (int)cf->nnodes, &cf->ray.expect_gpus))
		return -1;
	if (check_keys(c, dp, "dp", dp_keys) ||
	    get_int(c, dp, "dp", "size_local", 1, 1024, 1,
	    &cf->dp.size_local) ||
	    get_int(c, dp, "dp", "size", 1, 65536,
	    (int)cf->nnodes * cf->dp.size_local, &cf->dp.size) ||
	    get_int(c, dp, "dp", "rpc_port", 1, 65535, 13389,
	    &cf->dp.rpc_port) ||
	    get_int(c, dp, "dp", "api_server_count", 1, 1024, cf->dp.size,
	    &cf->dp.api_server_count) ||
	    get_int(c, dp, "dp", "seed", 0, 2147483647, 1024, &cf->dp.seed))
		return -1;
	if (cf->topology == TOPO_DP &&
	    cf->dp.size != (int)cf->nnodes * cf->dp.size_local)
		return fail(c, "dp.size", "%d does not equal nodes (%zu) x "
		    "size_local (%d)", cf->dp.size, cf->nnodes,
		    cf->dp.size_local);
	for (i = 0; i < cf->nnodes; i++)
		cf->nodes[i].dp_start_rank = cf->nodes[i].rank *
		    cf->dp.size_local;
	if (reconcile_derived(c, cf))
		return -1;

	probe = get_obj(c, root, "", "probe");
	rec = get_obj(c, root, "", "recovery");
	sd = get_obj(c, root, "", "systemd");
	if (c->failed)
		return -1;
	if (check_keys(c, probe, "probe", probe_keys) ||
	    get_num(c, probe, "probe", "interval_s", 0.1, 3600, 5,
	    &cf->probe.interval_s) ||
	    get_num(c, probe, "probe", "timeout_s", 0.1, 3600, 10,
	    &cf->probe.timeout_s) ||
	    get_int(c, probe, "probe", "failures_to_degrade", 1, 100, 2,
	    &cf->probe.failures_to_degrade) ||
	    get_num(c, probe, "probe", "generate_every_s", 0.1, 86400, 30,
	    &cf->probe.generate_every_s) ||
	    get_num(c, probe, "probe", "ray_wait_timeout_s", 1, 86400, 300,
	    &cf->probe.ray_wait_timeout_s))
		return -1;
	if (check_keys(c, rec, "recovery", rec_keys) ||
	    get_num(c, rec, "recovery", "backoff_initial_s", 0.1, 86400, 5,
	    &cf->recovery.backoff_initial_s) ||
	    get_num(c, rec, "recovery", "backoff_max_s", 0.1, 86400, 300,
	    &cf->recovery.backoff_max_s) ||
	    get_int(c, rec, "recovery", "max_rebuilds_per_hour", 1,
	    REBUILDS_HISTORY, 10, &cf->recovery.max_rebuilds_per_hour))
		return -1;
	if (cf->recovery.backoff_max_s < cf->recovery.backoff_initial_s)
		return fail(c, "recovery.backoff_max_s", "is smaller than "
		    "backoff_initial_s");
	steps = rec ? json_object_get(rec, "gpu_memory_utilization_steps") :
	    NULL;
	if (steps && !json_is_array(steps))
		return fail(c, "recovery.gpu_memory_utilization_steps",
		    "must be a list of numbers, not %s", typename(steps));
	if (steps) {
		cf->recovery.gmu_steps = xcalloc(json_array_size(steps),
		    sizeof(double));
		json_array_foreach(steps, i, e) {
			char *p = xprintf(
			    "recovery.gpu_memory_utilization_steps[%zu]", i);
			double v = json_number_value(e);

			if (!json_is_number(e) || v <= 0 || v > 1 ||
			    (i > 0 && v >= cf->recovery.gmu_steps[i - 1])) {
				fail(c, p, "steps must be numbers in (0, 1], "
				    "each lower than the one before");
				free(p);
				return -1;
			}
			free(p);
			cf->recovery.gmu_steps[cf->recovery.ngmu_steps++] = v;
		}
	}
	if (check_keys(c, sd, "systemd", sd_keys) ||
	    get_str(c, sd, "systemd", "ready_when", "serving", 0, &s))
		return -1;
	cf->systemd.ready_when_serving = strcmp(s, "serving") == 0;
	if (!cf->systemd.ready_when_serving && strcmp(s, "started") != 0) {
		free(s);
		return fail(c, "systemd.ready_when", "must be \"serving\" or "
		    "\"started\"");
	}
	free(s);
	if (get_str(c, sd, "systemd", "on_stop", "keep", 0, &s))
		return -1;
	cf->systemd.on_stop_teardown = strcmp(s, "teardown") == 0;
	if (!cf->systemd.on_stop_teardown && strcmp(s, "keep") != 0) {
		free(s);
		return fail(c, "systemd.on_stop", "must be \"keep\" or "
		    "\"teardown\"");
	}
	free(s);
	return 0;
}

struct config *
config_parse(const char *text, const char *file, char *err, size_t errlen)
{
	struct ctx c = { file, NULL, err, errlen, 0 };
	struct config *cf;
	json_error_t je;
	json_t *root;

	root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		seterr(err, errlen, "%s:%d:%d: %s", file, je.line, je.column,
		    je.text);
		return NULL;
	}
	c.jp = jsonpos_index(text);
	cf = xcalloc(1, sizeof(*cf));
	cf->path = xstrdup(file);
	if (parse(&c, root, cf) == -1) {
		config_free(cf);
		cf = NULL;
	}
	jsonpos_free(c.jp);
	json_decref(root);
	return cf;
}

struct config *
config_load(const char *file, char *err, size_t errlen)
{
	struct sbuf b;
	char buf[8192];
	size_t n;
	FILE *fp;
	struct config *cf;

	if ((fp = fopen(file, "r")) == NULL) {
		seterr(err, errlen, "%s: %s", file, strerror(errno));
		return NULL;
	}
	sbuf_init(&b);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0) {
		sbuf_addn(&b, buf, n);
		if (b.len > 4 * 1024 * 1024) {
			fclose(fp);
			sbuf_free(&b);
			seterr(err, errlen, "%s: larger than 4 MiB; not a "
			    "tandem config", file);
			return NULL;
		}
	}
	if (ferror(fp)) {
		seterr(err, errlen, "%s: %s", file, strerror(errno));
		fclose(fp);
		sbuf_free(&b);
		return NULL;
	}
	fclose(fp);
	if (b.s == NULL)
		sbuf_add(&b, "");
	if (strlen(b.s) != b.len) {
		seterr(err, errlen, "%s: contains a NUL byte", file);
		sbuf_free(&b);
		return NULL;
	}
	cf = config_parse(b.s, file, err, errlen);
	sbuf_free(&b);
	return cf;
}

static void
kvlist_free(struct kvlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].val);
	}
	free(l->v);
}

void
config_free(struct config *cf)
{
	size_t i;

	if (cf == NULL)
		return;
	free(cf->path);
	free(cf->name);
	free(cf->listen_host);
	free(cf->api_token_file);
	free(cf->ssh.user);
	free(cf->ssh.identity_file);
	free(cf->ssh.known_hosts_file);
	free(cf->container.engine);
	free(cf->container.image);
	free(cf->container.shm_size);
	strv_free(&cf->container.volumes);
	kvlist_free(&cf->container.env);
	strv_free(&cf->container.extra_args);
	for (i = 0; i < cf->nnodes; i++) {
		free(cf->nodes[i].name);
		free(cf->nodes[i].ssh_host);
		free(cf->nodes[i].ip);
		free(cf->nodes[i].ifname);
		kvlist_free(&cf->nodes[i].env);
		free(cf->nodes[i].container_name);
	}
	free(cf->nodes);
	free(cf->vllm.model);
	strv_free(&cf->vllm.args);
	strv_free(&cf->warnings);
	free(cf->vllm.url);
	free(cf->vllm.log_file);
	free(cf->vllm.served_model_name);
	free(cf->recovery.gmu_steps);
	free(cf);
}

const char *
config_model_id(const struct config *cf)
{
	return cf->vllm.served_model_name ? cf->vllm.served_model_name :
	    cf->vllm.model;
}

char *
config_expand(const char *tmpl, const struct node_conf *n)
{
	struct sbuf b;
	const char *p;

	sbuf_init(&b);
	for (p = tmpl; *p; p++) {
		if (strncmp(p, "{ip}", 4) == 0) {
			sbuf_add(&b, n->ip);
			p += 3;
		} else if (strncmp(p, "{ifname}", 8) == 0) {
			sbuf_add(&b, n->ifname);
			p += 7;
		} else if (strncmp(p, "{name}", 6) == 0) {
			sbuf_add(&b, n->name);
			p += 5;
		} else if (strncmp(p, "{rank}", 6) == 0) {
			sbuf_addf(&b, "%d", n->rank);
			p += 5;
		} else
			sbuf_addc(&b, *p);
	}
	return sbuf_take(&b);
}

static int
strv_eq(const struct strv *a, const struct strv *b)
{
	size_t i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return 0;
	return 1;
}

static int
kv_eq(const struct kvlist *a, const struct kvlist *b)
{
	size_t i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i].key, b->v[i].key) != 0 ||
		    strcmp(a->v[i].val, b->v[i].val) != 0)
			return 0;
	return 1;
}

static int
streq0(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

int
config_cluster_changed(const struct config *a, const struct config *b)
{
	size_t i;

	if (a->topology != b->topology || a->nnodes != b->nnodes ||
	    a->head != b->head ||
	    strcmp(a->container.engine, b->container.engine) != 0 ||
	    strcmp(a->container.image, b->container.image) != 0 ||
	    strcmp(a->container.shm_size, b->container.shm_size) != 0 ||
	    !strv_eq(&a->container.volumes, &b->container.volumes) ||
	    !kv_eq(&a->container.env, &b->container.env) ||
	    !strv_eq(&a->container.extra_args, &b->container.extra_args) ||
	    strcmp(a->vllm.model, b->vllm.model) != 0 ||
	    a->vllm.port != b->vllm.port ||
	    !strv_eq(&a->vllm.args, &b->vllm.args) ||
	    strcmp(a->vllm.log_file, b->vllm.log_file) != 0 ||
	    !streq0(a->vllm.served_model_name, b->vllm.served_model_name) ||
	    a->ray.port != b->ray.port || a->dp.size != b->dp.size ||
	    a->dp.size_local != b->dp.size_local ||
	    a->dp.rpc_port != b->dp.rpc_port ||
	    a->dp.api_server_count != b->dp.api_server_count ||
	    a->dp.seed != b->dp.seed)
		return 1;
	for (i = 0; i < a->nnodes; i++) {
		const struct node_conf *x = &a->nodes[i], *y = &b->nodes[i];

		if (strcmp(x->name, y->name) != 0 ||
		    strcmp(x->ssh_host, y->ssh_host) != 0 ||
		    x->ssh_port != y->ssh_port ||
		    strcmp(x->ip, y->ip) != 0 ||
		    strcmp(x->ifname, y->ifname) != 0 ||
		    !kv_eq(&x->env, &y->env) ||
		    strcmp(x->container_name, y->container_name) != 0)
			return 1;
	}
	return 0;
}

int
config_ssh_changed(const struct config *a, const struct config *b)
{
	return strcmp(a->ssh.user, b->ssh.user) != 0 ||
	    a->ssh.port != b->ssh.port ||
	    !streq0(a->ssh.identity_file, b->ssh.identity_file) ||
	    !streq0(a->ssh.known_hosts_file, b->ssh.known_hosts_file) ||
	    a->ssh.connect_timeout_s != b->ssh.connect_timeout_s ||
	    a->ssh.keepalive_s != b->ssh.keepalive_s;
}
