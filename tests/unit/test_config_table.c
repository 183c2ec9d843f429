/*
 * Every key of the config table (lib/config/config_table.c), generated from
 * the table: its type error, its default, its range bounds, its rule, a missing
 * required key, an unknown key beside it, what a reload does with it. The
 * messages are spelled out here, not taken from the table, and each list
 * below must name every key it applies to, so a new key cannot slip in
 * untested (test_config_docs.c checks that the docs name it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config_int.h"

/* The section a key belongs to ("" for the top level) and its own name. */
static void
split(const char *path, char *sec, size_t len, const char **key)
{
	const char *dot = strrchr(path, '.');

	snprintf(sec, len, "%.*s", dot ? (int)(dot - path) : 0, path);
	*key = dot ? dot + 1 : path;
}

/* The smallest valid config's required members, per object. */
static const char *const ssh_req[] = { "identity_file", "\"/k\"",
	"known_hosts_file", "\"/kh\"", NULL };
static const char *const ctr_req[] = { "image", "\"img\"", NULL };
static const char *const vllm_req[] = { "model", "\"/m\"", NULL };
static const char *const head_req[] = { "name", "\"a\"", "role", "\"head\"",
	"ssh_host", "\"h1\"", "ip", "\"10.0.0.1\"", "ifname", "\"eth0\"", NULL };
#define WORKER	"{\"name\":\"b\",\"role\":\"worker\",\"ssh_host\":\"h2\"," \
		"\"ip\":\"10.0.0.2\",\"ifname\":\"eth0\"}"

struct built {
	struct sbuf	 b;
	size_t		 at;	/* offset of the injected value, or of the
				 * object it would be in when omitted */
	size_t		 obj;	/* offset of the object it is in */
};

/*
 * Members of one object: the required ones but the target, then the
 * target on a line of its own ("\n\"key\":VALUE"); VALUE NULL: omitted.
 */
static void
object(struct built *o, const char *const *req, int target,
    const char *key, const char *value)
{
	size_t i;
	int first = 1;

	if (target)
		o->at = o->obj = o->b.len;
	sbuf_addc(&o->b, '{');
	for (i = 0; req && req[i]; i += 2) {
		if (target && strcmp(req[i], key) == 0)
			continue;
		sbuf_addf(&o->b, "%s\"%s\":%s", first ? "" : ",", req[i],
		    req[i + 1]);
		first = 0;
	}
	if (target && value) {
		sbuf_addf(&o->b, "%s\n\"%s\":", first ? "" : ",", key);
		o->at = o->b.len;
		sbuf_add(&o->b, value);
	}
	sbuf_addc(&o->b, '}');
}

/*
 * A valid two-node config with PATH set to VALUE (NULL: left out); a
 * section's own path replaces the whole section.
 */
static void
build(struct built *o, const char *path, const char *value)
{
	static const char *const sections[] = { "ssh", "container", "nodes",
	    "vllm", NULL };
	static const char *const *reqs[] = { ssh_req, ctr_req, NULL,
	    vllm_req };
	char sec[64];
	const char *key, *sep = "";
	size_t i;

	split(path, sec, sizeof(sec), &key);
	sbuf_init(&o->b);
	o->at = o->obj = 0;
	sbuf_addc(&o->b, '{');
	if (sec[0] == '\0' && value) {
		sbuf_addf(&o->b, "\n\"%s\":", key);
		o->at = o->b.len;
		sbuf_addf(&o->b, "%s,", value);
	}
	if (strcmp(sec, "dp") == 0 || strcmp(path, "dp") == 0)
		sbuf_add(&o->b, "\"topology\":\"dp\",");
	for (i = 0; sections[i]; i++) {
		if (sec[0] == '\0' && strcmp(key, sections[i]) == 0)
			continue;
		sbuf_addf(&o->b, "%s\"%s\":", sep, sections[i]);
		sep = ",";
		if (reqs[i])
			object(o, reqs[i], strcmp(sec, sections[i]) == 0, key,
			    value);
		else {
			sbuf_addc(&o->b, '[');
			object(o, head_req, strcmp(sec, "nodes[]") == 0, key,
			    value);
			sbuf_add(&o->b, "," WORKER "]");
		}
	}
	if (sec[0] && strcmp(sec, "nodes[]") != 0 && strcmp(sec, "ssh") != 0 &&
	    strcmp(sec, "container") != 0 && strcmp(sec, "vllm") != 0) {
		sbuf_addf(&o->b, ",\"%s\":", sec);
		object(o, NULL, 1, key, value);
	}
	sbuf_addc(&o->b, '}');
}

/* "t.json:LINE:COL: " of an offset in the built text. */
static char *
where(const struct built *o, size_t off)
{
	size_t i, line = 1, nl = (size_t)-1;

	for (i = 0; i < off; i++)
		if (o->b.s[i] == '\n') {
			line++;
			nl = i;
		}
	return xprintf("t.json:%zu:%zu: ", line, off - nl);
}

/* The path as messages write it: a node's key is nodes[0].KEY. */
static char *
msgpath(const char *path)
{
	const char *n = "nodes[].";

	if (strncmp(path, n, strlen(n)) == 0)
		return xprintf("nodes[0].%s", path + strlen(n));
	return xstrdup(path);
}

static struct config *
parse(const struct built *o, char *err)
{
	err[0] = '\0';
	return config_parse(o->b.s, "t.json", err, ERRLEN);
}

/* Parses PATH=VALUE and expects exactly "t.json:L:C: SHOWN: MSG". */
static void
expect_error(const char *path, const char *value, const char *shown,
    long delta, const char *msg)
{
	struct built o;
	char err[ERRLEN], *at, *want;
	struct config *cf;

	build(&o, path, value);
	cf = parse(&o, err);
	at = where(&o, delta < 0 ? o.obj : o.at + (size_t)delta);
	want = xprintf("%s%s: %s", at, shown, msg);
	if (cf != NULL || strcmp(err, want) != 0)
		fail_msg("%s\n  config: %s\n  want: %s\n  got:  %s", path,
		    o.b.s, want, cf ? "(accepted)" : err);
	config_free(cf);
	free(at);
	free(want);
	sbuf_free(&o.b);
}

static int
is_key(const struct ckey *k)
{
	return k->type != K_OBJECT && k->type != K_NODES;
}

static void
test_type_errors(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];
		const char *value = "1", *msg = NULL;
		char *shown = msgpath(k->path);

		switch (k->type) {
		case K_OBJECT:
			msg = "must be an object, not an integer";
			break;
		case K_NODES:
			value = "{}";
			msg = "must be a list, not an object";
			break;
		case K_STR:
		case K_CHOICE:
		case K_LISTEN:
			msg = "must be a string, not an integer";
			break;
		case K_INT:
			value = "\"1\"";
			msg = "must be an integer, not a string";
			break;
		case K_NUM:
			value = "\"1\"";
			msg = "must be a number, not a string";
			break;
		case K_STRLIST:
			value = "\"x\"";
			msg = "must be a list of strings, not a string";
			break;
		case K_ENV:
			msg = "must be an object of strings, not an integer";
			break;
		case K_STEPS:
			value = "\"x\"";
			msg = "must be a list of numbers, not a string";
			break;
		}
		expect_error(k->path, value, shown, 0, msg);
		free(shown);
	}
}

/* An unknown key in every object; a string key that is empty. */
static void
test_unknown_and_empty(void **state)
{
	char *p, *shown;
	size_t i;

	(void)state;
	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];

		if (k->type == K_OBJECT || k->type == K_NODES) {
			p = xprintf("%s%s.bogus", k->path,
			    k->type == K_NODES ? "[]" : "");
			shown = msgpath(p);
			expect_error(p, "1", shown, 0, "unknown key");
			free(p);
			free(shown);
		}
		/* container.cache_dir: "" is "off", tested on its own */
		if ((k->type == K_STR && !(k->flags & KF_OFF_EMPTY)) ||
		    k->type == K_CHOICE || k->type == K_LISTEN) {
			shown = msgpath(k->path);
			expect_error(k->path, "\"\"", shown, 0,
			    "must not be empty");
			free(shown);
		}
	}
	expect_error("bogus", "1", "bogus", 0, "unknown key");
}

/* The stored value as text: "22", "5", "ray", "[]", "(none)"... */
static char *
render(const struct config *cf, const struct ckey *k)
{
	const char *base = cf_node_key(k) ? (const char *)&cf->nodes[0] :
	    (const char *)cf;
	const char *at = base + k->off;
	const struct strv *sv = (const struct strv *)at;
	const struct choice *ch;
	struct sbuf b;
	size_t i, n;

	sbuf_init(&b);
	switch (k->type) {
	case K_STR:
		sbuf_add(&b, *(char *const *)at ? *(char *const *)at :
		    "(none)");
		break;
	case K_CHOICE:
		for (ch = k->choices; ch->name; ch++)
			if (ch->val == *(const int *)at)
				sbuf_add(&b, ch->name);
		break;
	case K_LISTEN:
		sbuf_addf(&b, "%s:%d", *(char *const *)at,
		    *(const int *)(base + k->off2));
		break;
	case K_INT:
		sbuf_addf(&b, "%d", *(const int *)at);
		break;
	case K_NUM:
		sbuf_addf(&b, "%g", *(const double *)at);
		break;
	case K_STRLIST:
		sbuf_addc(&b, '[');
		for (i = 0; i < sv->n; i++)
			sbuf_addf(&b, "%s%s", i ? "," : "", sv->v[i]);
		sbuf_addc(&b, ']');
		break;
	case K_ENV:
		sbuf_addf(&b, "{%zu}", ((const struct kvlist *)at)->n);
		break;
	case K_STEPS:
		n = *(const size_t *)(base + k->off2);
		sbuf_addc(&b, '[');
		for (i = 0; i < n; i++)
			sbuf_addf(&b, "%s%g", i ? "," : "",
			    (*(double *const *)at)[i]);
		sbuf_addc(&b, ']');
		break;
	case K_OBJECT:
	case K_NODES:
		break;
	}
	if (b.s == NULL)
		sbuf_add(&b, "");
	return sbuf_take(&b);
}

/* What a two-node config with nothing optional set holds (nodes[0]). */
static const struct {
	const char	*path, *value;
} defaults[] = {
	{ "name", "tandem" }, { "listen", "127.0.0.1:9100" },
	{ "api_token_file", "(none)" }, { "topology", "ray" },
	{ "api_socket", "/run/tandem/api.sock" },
	{ "ssh.user", "root" }, { "ssh.port", "22" },
	{ "ssh.connect_timeout_s", "5" }, { "ssh.keepalive_s", "1.5" },
	{ "container.engine", "docker" }, { "container.shm_size", "16g" },
	{ "container.volumes", "[]" }, { "container.env", "{0}" },
	{ "container.extra_args", "[]" }, { "container.image_archive", "(none)" },
	{ "container.stop_foreign", "[]" }, { "container.accelerator", "nvidia" },
	{ "container.cache_dir", "/var/cache/tandem" },
	{ "container.cache_max_gib", "50" },
	{ "nodes[].ssh_port", "22" }, { "nodes[].env", "{0}" },
	{ "nodes[].container_name", "vllm-head" },
	{ "nodes[].image_archive", "(none)" },
	{ "vllm.port", "8000" }, { "vllm.args", "[]" },
	{ "vllm.url", "http://127.0.0.1:8000" },
	{ "vllm.log_file", "/tmp/vllm_serve.log" },
	{ "vllm.ready_timeout_s", "1800" },
	{ "vllm.served_model_name", "(none)" },
	{ "vllm.api_key_file", "(none)" },
	{ "ray.port", "6379" }, { "ray.expect_nodes", "2" },
	{ "ray.expect_gpus", "2" }, { "ray.auth_token_file", "(none)" },
	{ "dp.size_local", "1" }, { "dp.size", "2" }, { "dp.rpc_port", "13389" },
	{ "dp.api_server_count", "2" }, { "dp.seed", "1024" },
	{ "probe.interval_s", "5" }, { "probe.timeout_s", "10" },
	{ "probe.failures_to_degrade", "2" }, { "probe.generate_every_s", "30" },
	{ "probe.ray_wait_timeout_s", "300" },
	{ "probe.stall_s", "180" }, { "probe.stall_readings", "3" },
	{ "recovery.backoff_initial_s", "5" },
	{ "recovery.backoff_max_s", "300" },
	{ "recovery.max_rebuilds_per_hour", "10" },
	{ "recovery.recheck_s", "30" },
	{ "recovery.change_attempts", "2" },
	{ "recovery.gpu_memory_utilization_steps", "[]" },
	{ "systemd.ready_when", "started" }, { "systemd.on_stop", "keep" },
	{ "hooks.on_state", "[]" }, { "hooks.on_change", "[]" },
	{ "hooks.timeout_s", "10" },
};

static void
test_defaults_all(void **state)
{
	struct built o;
	char err[ERRLEN], *got;
	struct config *cf;
	size_t i, j;

	(void)state;
	build(&o, "x", NULL);
	cf = parse(&o, err);
	assert_non_null(cf);
	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];

		if (!is_key(k) || k->required)
			continue;
		for (j = 0; j < sizeof(defaults) / sizeof(*defaults); j++)
			if (strcmp(defaults[j].path, k->path) == 0)
				break;
		if (j == sizeof(defaults) / sizeof(*defaults))
			fail_msg("%s: no default asserted", k->path);
		got = render(cf, k);
		if (strcmp(got, defaults[j].value) != 0)
			fail_msg("%s: default %s, want %s", k->path, got,
			    defaults[j].value);
		free(got);
	}
	config_free(cf);
	sbuf_free(&o.b);
}

/*
 * A bound itself is accepted unless a cross-key rule refuses it; those
 * cases name the rule's exact message.
 */
static const struct {
	const char	*path, *value, *shown, *msg;
} at_bound[] = {
	{ "dp.size", "1", "dp.size", "1 does not equal nodes (2) x size_local "
	  "(1)" },
	{ "dp.size", "65536", "dp.size", "65536 does not equal nodes (2) x "
	  "size_local (1)" },
	{ "recovery.backoff_initial_s", "86400", "recovery.backoff_max_s",
	  "is smaller than backoff_initial_s" },
	{ "recovery.backoff_max_s", "0.1", "recovery.backoff_max_s",
	  "is smaller than backoff_initial_s" },
};

/* Every number's range, as its out-of-range message writes it. */
static const struct {
	const char	*path, *range;
} ranges[] = {
	{ "ssh.port", "1..65535" }, { "ssh.connect_timeout_s", "0.1..300" },
	{ "ssh.keepalive_s", "0.1..3600" }, { "nodes[].ssh_port", "1..65535" },
	{ "container.cache_max_gib", "1..65536" },
	{ "vllm.port", "1..65535" }, { "vllm.ready_timeout_s", "1..86400" },
	{ "ray.port", "1..65535" }, { "ray.expect_nodes", "1..100000" },
	{ "ray.expect_gpus", "1..1000000" }, { "dp.size_local", "1..1024" },
	{ "dp.size", "1..65536" }, { "dp.rpc_port", "1..65535" },
	{ "dp.api_server_count", "1..1024" }, { "dp.seed", "0..2147483647" },
	{ "probe.interval_s", "0.1..3600" }, { "probe.timeout_s", "0.1..3600" },
	{ "probe.failures_to_degrade", "1..100" },
	{ "probe.generate_every_s", "0.1..86400" },
	{ "probe.ray_wait_timeout_s", "1..86400" },
	{ "probe.stall_s", "1..86400" }, { "probe.stall_readings", "1..1000" },
	{ "recovery.backoff_initial_s", "0.1..86400" },
	{ "recovery.backoff_max_s", "0.1..86400" },
	{ "recovery.max_rebuilds_per_hour", "1..1024" },
	{ "recovery.recheck_s", "0.5..86400" },
	{ "recovery.change_attempts", "1..100" },
	{ "hooks.timeout_s", "0.1..3600" },
};

static const char *
range(const struct ckey *k)
{
	size_t i;

	for (i = 0; i < sizeof(ranges) / sizeof(*ranges); i++)
		if (strcmp(ranges[i].path, k->path) == 0)
			return ranges[i].range;
	fail_msg("%s: its range is not listed", k->path);
	return NULL;
}

static void
bound(const struct ckey *k, double v, int inside)
{
	struct built o;
	char err[ERRLEN], value[64], *shown = msgpath(k->path), *got, *msg;
	struct config *cf;
	size_t j;

	if (k->type == K_INT)
		snprintf(value, sizeof(value), "%lld", (long long)v);
	else
		snprintf(value, sizeof(value), "%g", v);
	if (!inside) {
		msg = xprintf("%s is out of range (%s)", value, range(k));
		expect_error(k->path, value, shown, 0, msg);
		free(msg);
		free(shown);
		return;
	}
	for (j = 0; j < sizeof(at_bound) / sizeof(*at_bound); j++)
		if (strcmp(at_bound[j].path, k->path) == 0 &&
		    strcmp(at_bound[j].value, value) == 0)
			break;
	if (j < sizeof(at_bound) / sizeof(*at_bound)) {
		/* the rule's message points at its own key */
		build(&o, k->path, value);
		cf = parse(&o, err);
		assert_null(cf);
		got = strstr(err, ": ");
		assert_non_null(got);
		msg = xprintf(": %s: %s", at_bound[j].shown, at_bound[j].msg);
		assert_string_equal(got, msg);
		free(msg);
		sbuf_free(&o.b);
		free(shown);
		return;
	}
	build(&o, k->path, value);
	cf = parse(&o, err);
	if (cf == NULL)
		fail_msg("%s = %s refused: %s", k->path, value, err);
	got = render(cf, k);
	assert_string_equal(got, value);
	free(got);
	config_free(cf);
	sbuf_free(&o.b);
	free(shown);
}

static void
test_bounds(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];

		if (k->type == K_INT) {
			bound(k, k->min, 1);
			bound(k, k->max, 1);
			bound(k, k->min - 1, 0);
			bound(k, k->max + 1, 0);
		} else if (k->type == K_NUM) {
			bound(k, k->min, 1);
			bound(k, k->max, 1);
			bound(k, k->min / 2, 0);
			bound(k, k->max + 1, 0);
		}
	}
}

/*
 * Every key with a rule beyond its type, broken once: the value, where
 * the message points (a list element, or the node for a node's name) and
 * the exact message.
 */
/* 96 bytes: with "/run/tandem/" one past a Unix socket's 107 */
#define LONG96	"0123456789abcdef0123456789abcdef0123456789abcdef" \
		"0123456789abcdef0123456789abcdef0123456789abcdef"
static const struct {
	const char	*path, *value, *shown;
	long		 delta;	/* from the value's start; -1: its object */
	const char	*msg;
} rules[] = {
	{ "name", "\"my cluster\"", "name", 0,
	  "use letters, digits, '.', '_', '-' (at most 63)" },
	{ "listen", "\"localhost:9100\"", "listen", 0,
	  "must be IPv4:PORT or [IPv6]:PORT" },
	{ "listen", "\"[::1]:0\"", "listen", 0,
	  "must be IPv4:PORT or [IPv6]:PORT" },
	{ "api_socket", "\"run/api.sock\"", "api_socket", 0,
	  "must be an absolute path of at most 107 bytes (a Unix socket's "
	  "limit)" },
	{ "api_socket", "\"/run/tandem/" LONG96 "\"", "api_socket", 0,
	  "must be an absolute path of at most 107 bytes (a Unix socket's "
	  "limit)" },
	{ "topology", "\"mesh\"", "topology", 0, "must be \"ray\" or \"dp\"" },
	{ "ssh.user", "\"Root\"", "ssh.user", 0, "not a valid user name" },
	{ "container.engine", "\"lxc\"", "container.engine", 0,
	  "must be \"docker\" or \"podman\"" },
	{ "container.image", "\"-i\"", "container.image", 0,
	  "not a valid image reference" },
	{ "container.shm_size", "\"16q\"", "container.shm_size", 0,
	  "must be a size like 16g, 512m or 1073741824" },
	{ "container.volumes", "[\"/a:/b\",\"/a:/b:rx\"]",
	  "container.volumes[1]", 9, "must be /HOST:/CONTAINER[:ro]" },
	{ "container.cache_dir", "\"cache\"", "container.cache_dir", 0,
	  "must be an absolute path without ':' or ',', or \"\" (no cache)" },
	{ "container.cache_dir", "\"/\"", "container.cache_dir", 0,
	  "must be an absolute path without ':' or ',', or \"\" (no cache)" },
	{ "container.cache_dir", "\"/a:b\"", "container.cache_dir", 0,
	  "must be an absolute path without ':' or ',', or \"\" (no cache)" },
	{ "container.image_archive", "\"img.tar\"", "container.image_archive",
	  0, "must be an absolute path on the nodes" },
	{ "nodes[].image_archive", "\"img.tar\"", "nodes[0].image_archive", 0,
	  "must be an absolute path on the node" },
	{ "container.accelerator", "\"amd\"", "container.accelerator", 0,
	  "must be \"nvidia\", \"ascend\" or \"none\"" },
	{ "ray.auth_token_file", "\"ray-token\"", "ray.auth_token_file", 0,
	  "must be an absolute path on the nodes" },
	{ "container.stop_foreign", "[\"jupyter-.*\",\"(\"]",
	  "container.stop_foreign[1]", 14,
	  "not a POSIX extended regular expression within tandem's bounds "
	  "(at most 256 bytes, no backreference, a count {m,n} of at most 255 "
	  "only after a character, '.' or [...])" },
	{ "nodes[].name", "\"a b\"", "nodes[0]", -1, "name \"a b\": use "
	  "letters, digits, '.', '_', '-' (at most 63)" },
	{ "nodes[].role", "\"boss\"", "nodes[0].role", 0,
	  "must be \"head\" or \"worker\"" },
	{ "nodes[].ssh_host", "\"-oProxyCommand=x\"", "nodes[0].ssh_host", 0,
	  "not a host name or address" },
	{ "nodes[].ip", "\"10.0.0\"", "nodes[0].ip", 0,
	  "not an IPv4 address" },
	{ "nodes[].ifname", "\"a/b\"", "nodes[0].ifname", 0,
	  "not a valid interface name (at most 15 of letters, digits, '_', "
	  "'.', '-')" },
	{ "nodes[].container_name", "\"x\"", "nodes[0].container_name", 0,
	  "not a valid container name ([a-zA-Z0-9][a-zA-Z0-9_.-]+)" },
	{ "vllm.model", "\"-m\"", "vllm.model", 0, "must not begin with '-': "
	  "vllm serve would take it for an option" },
	{ "vllm.url", "\"127.0.0.1:8000\"", "vllm.url", 0,
	  "must start with http:// or https://" },
	{ "vllm.log_file", "\"vllm.log\"", "vllm.log_file", 0,
	  "must be an absolute path inside the head container" },
	{ "vllm.served_model_name", "\"--x\"", "vllm.served_model_name", 0,
	  "must not begin with '-': vllm serve would take it for an option" },
	{ "vllm.api_key_file", "\"key\"", "vllm.api_key_file", 0,
	  "must be an absolute path" },
	{ "recovery.gpu_memory_utilization_steps", "[0.6,0]",
	  "recovery.gpu_memory_utilization_steps[1]", 5, "steps must be "
	  "numbers in (0, 1], each lower than the one before" },
	{ "recovery.gpu_memory_utilization_steps", "[1.5]",
	  "recovery.gpu_memory_utilization_steps[0]", 1, "steps must be "
	  "numbers in (0, 1], each lower than the one before" },
	{ "systemd.ready_when", "\"later\"", "systemd.ready_when", 0,
	  "must be \"serving\" or \"started\"" },
	{ "systemd.on_stop", "\"explode\"", "systemd.on_stop", 0,
	  "must be \"keep\" or \"teardown\"" },
	{ "hooks.on_state", "[\"notify-send\",\"x\"]", "hooks.on_state[0]", 1,
	  "must be an absolute path: the command runs without a shell (for a "
	  "shell line: [\"/bin/sh\", \"-c\", \"...\"])" },
	{ "hooks.on_state", "[\"/bin/x\",\"\"]", "hooks.on_state[1]", 10,
	  "empty argument" },
	{ "hooks.on_change", "[\"page\"]", "hooks.on_change[0]", 1,
	  "must be an absolute path: the command runs without a shell (for a "
	  "shell line: [\"/bin/sh\", \"-c\", \"...\"])" },
};

static void
test_rules(void **state)
{
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(rules) / sizeof(*rules); i++)
		expect_error(rules[i].path, rules[i].value, rules[i].shown,
		    rules[i].delta, rules[i].msg);
	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];

		if (!k->valid && !k->choices && k->type != K_LISTEN &&
		    k->type != K_STEPS)
			continue;
		for (j = 0; j < sizeof(rules) / sizeof(*rules); j++)
			if (strcmp(rules[j].path, k->path) == 0)
				break;
		if (j == sizeof(rules) / sizeof(*rules))
			fail_msg("%s: its rule is not tested", k->path);
	}
}

/* Leaving out a required key or section: the message at its parent. */
static const struct {
	const char	*path, *msg;
} required[] = {
	{ "ssh", "missing (required: known_hosts_file and identity_file at "
	  "least)" },
	{ "ssh.identity_file", "missing (required)" },
	{ "ssh.known_hosts_file", "missing (required)" },
	{ "container", "missing (required: image at least)" },
	{ "container.image", "missing (required)" },
	{ "nodes", "missing (required)" },
	{ "nodes[].name", "missing (required)" },
	{ "nodes[].role", "missing (required)" },
	{ "nodes[].ssh_host", "missing (required)" },
	{ "nodes[].ip", "missing (required)" },
	{ "nodes[].ifname", "missing (required)" },
	{ "vllm", "missing (required: model at least)" },
	{ "vllm.model", "missing (required)" },
};

static void
test_required(void **state)
{
	size_t i, j, n = sizeof(required) / sizeof(*required);
	char *shown;

	(void)state;
	for (i = 0; i < n; i++) {
		shown = msgpath(required[i].path);
		expect_error(required[i].path, NULL, shown, 0,
		    required[i].msg);
		free(shown);
	}
	for (i = 0; i < config_ntable; i++) {
		for (j = 0; j < n; j++)
			if (strcmp(required[j].path, config_table[i].path) == 0)
				break;
		if ((j < n) != (config_table[i].required != NULL))
			fail_msg("%s: required is %s in the table", 
			    config_table[i].path,
			    config_table[i].required ? "set" : "not set");
	}
}

/* What a reload does when a key changes; every other key rebuilds. */
static const char *const ssh_keys[] = { "ssh.user", "ssh.port",
	"ssh.identity_file", "ssh.known_hosts_file", "ssh.connect_timeout_s",
	"ssh.keepalive_s", NULL };
static const char *const live_keys[] = { "name", "listen", "api_token_file",
	"api_socket",
	"container.stop_foreign", "container.cache_dir", "container.cache_max_gib",
	"vllm.url", "vllm.ready_timeout_s", "vllm.api_key_file",
	"ray.expect_nodes",
	"ray.expect_gpus", "probe.interval_s", "probe.timeout_s",
	"probe.failures_to_degrade", "probe.generate_every_s",
	"probe.ray_wait_timeout_s", "probe.stall_s", "probe.stall_readings",
	"recovery.backoff_initial_s",
	"recovery.backoff_max_s", "recovery.max_rebuilds_per_hour",
	"recovery.recheck_s",
	"recovery.change_attempts",
	"recovery.gpu_memory_utilization_steps", "systemd.ready_when",
	"systemd.on_stop", "hooks.on_state", "hooks.on_change",
	"hooks.timeout_s", NULL };

static int
listed(const char *const *list, const char *path)
{
	for (; *list; list++)
		if (strcmp(*list, path) == 0)
			return 1;
	return 0;
}

static struct config *
try_parse(const char *path, const char *value)
{
	struct built o;
	char err[ERRLEN];
	struct config *cf;

	build(&o, path, value);
	cf = parse(&o, err);
	sbuf_free(&o.b);
	return cf;
}

static struct config *
parse_with(const char *path, const char *value)
{
	struct config *cf = try_parse(path, value);

	if (cf == NULL)
		fail_msg("%s = %s refused", path, value ? value : "-");
	return cf;
}

static void
test_reload(void **state)
{
	struct config *a, *b, *a_dp;
	char value[64];
	size_t i;

	(void)state;
	a = parse_with("x", NULL);
	a_dp = parse_with("dp.seed", "1024");
	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];
		enum kreload want = listed(ssh_keys, k->path) ? R_SSH :
		    listed(live_keys, k->path) ? R_LIVE : R_REBUILD;
		const struct config *base = strncmp(k->path, "dp.", 3) == 0 ?
		    a_dp : a;
		int cluster, ssh;

		if (!is_key(k))
			continue;
		if (k->reload != want)
			fail_msg("%s: reload class %d, want %d", k->path,
			    k->reload, want);
		if (k->type != K_INT && k->type != K_NUM)
			continue;
		/* a number changed from its default to another valid one */
		if (strcmp(k->path, "dp.size") == 0)
			continue;	/* only one value is valid with 2 nodes */
		/* the lowest other value, else the highest (cross-key rules) */
		if (k->type == K_INT)
			snprintf(value, sizeof(value), "%lld", (long long)k->min +
			    (!k->idyn && k->min == k->ndef));
		else
			snprintf(value, sizeof(value), "%g", k->min + 0.5);
		if ((b = try_parse(k->path, value)) == NULL) {
			snprintf(value, sizeof(value), "%g", k->max);
			b = parse_with(k->path, value);
		}
		cluster = config_cluster_changed(base, b);
		ssh = config_ssh_changed(base, b);
		/*
		 * Today ssh.port also rebuilds: it is the default of every
		 * node's ssh_port, which the cluster depends on.
		 */
		if (cluster != (want == R_REBUILD ||
		    strcmp(k->path, "ssh.port") == 0) || ssh != (want == R_SSH))
			fail_msg("%s = %s: cluster changed %d, ssh changed %d",
			    k->path, value, cluster, ssh);
		config_free(b);
	}
	config_free(a);
	config_free(a_dp);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_type_errors),
		cmocka_unit_test(test_unknown_and_empty),
		cmocka_unit_test(test_defaults_all),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_required),
		cmocka_unit_test(test_reload),
	};

	return cmocka_run_group_tests_name("config_table", tests, NULL, NULL);
}
