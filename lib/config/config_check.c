/*
 * What a value of tandem.json must look like beyond its type, and the rules
 * that tie keys together (one head node, dp.size = nodes x size_local...).
 * The table in config_table.c names which rule applies to which key.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "config_int.h"
#include "workload.h"

/* Every character of s a letter, a digit or one of extra. */
static int
made_of(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr(extra, *s)))
			return 0;
	return 1;
}

int
cf_valid_ipv4(const char *s)
{
	struct in_addr a;

	return inet_pton(AF_INET, s, &a) == 1;
}

/* Linux IFNAMSIZ is 16; '/' and whitespace are refused by the kernel. */
int
cf_valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 15 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	return made_of(s, "_.-@");
}

/* Docker's rule for container names: [a-zA-Z0-9][a-zA-Z0-9_.-]+ */
int
cf_valid_container_name(const char *s)
{
	if (!isalnum((unsigned char)s[0]) || s[1] == '\0')
		return 0;
	return made_of(s + 1, "_.-");
}

int
cf_valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]))
		return 0;
	return made_of(s, "_.-");
}

int
cf_valid_host(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253 || s[0] == '-')
		return 0;
	return made_of(s, ".-:");
}

int
cf_valid_user(const char *s)
{
	if (!(islower((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) ||
		    strchr("_-.", *s)))
			return 0;
	return 1;
}

int
cf_valid_engine(const char *s)
{
	return strcmp(s, "docker") == 0 || strcmp(s, "podman") == 0;
}

/* Image references: no whitespace, no shell metacharacters needed. */
int
cf_valid_image(const char *s)
{
	return s[0] != '-' && made_of(s, "_.-/:@");
}

int
cf_valid_shm(const char *s)
{
	if (!isdigit((unsigned char)*s))
		return 0;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s && strchr("bkmgBKMG", *s))
		s++;
	return *s == '\0';
}

/* container.stop_foreign: compiled as the scan compiles it. */
int
cf_valid_regex(const char *s)
{
	return workload_valid_regex(s);
}

int
cf_valid_volume(const char *s)
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

int
cf_valid_url(const char *s)
{
	return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

int
cf_valid_abspath(const char *s)
{
	return s[0] == '/';
}

/* sun_path holds 108 bytes with the NUL (unix(7)). */
int
cf_valid_sockpath(const char *s)
{
	return s[0] == '/' && strlen(s) < 108;
}

/* vllm serve would read a leading '-' as one of its options. */
int
cf_valid_not_option(const char *s)
{
	return s[0] != '-';
}

int
cf_parse_listen(const char *s, char **host, int *port)
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
		if (!cf_valid_ipv4(buf))
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

/*
 * tandem derives some variables per node (accel.h, accel_env_table): a
 * hand-set one is refused, unless it is the very template tandem uses
 * ("HCCL_IF_IP": "{ip}", as the Ascend data-parallel guide's configs were
 * written before tandem derived it), which is dropped with a warning.
 */
static int
derived_env(struct cfctx *c, const char *path, struct kvlist *l)
{
	const struct accel_env *e;
	size_t i, k = 0;
	int rc = 0;

	for (i = 0; i < l->n; i++) {
		struct kv *kv = &l->v[i];
		char *p;

		for (e = accel_env_table(c->cf->container.accelerator);
		    e->name && strcmp(e->name, kv->key) != 0; e++)
			;
		if (e->name == NULL || rc) {
			l->v[k++] = *kv;
			continue;
		}
		p = cf_join(path, kv->key);
		if (e->tmpl && strcmp(e->tmpl, kv->val) == 0)
			cf_warn(c, p, "tandem derives %s=%s from %s; this entry "
			    "is redundant and ignored (remove it)", kv->key,
			    e->tmpl, e->from);
		else
			rc = cf_fail(c, p, "is derived from %s; remove it",
			    e->tmpl ? "the node's ip and ifname" : e->from);
		free(p);
		free(kv->key);
		free(kv->val);
	}
	l->n = k;
	return rc;
}

int
cf_check_container(struct cfctx *c)
{
	return derived_env(c, "container.env", &c->cf->container.env);
}

/* Node i against the nodes before it: one head, nothing shared. */
int
cf_check_node(struct cfctx *c, size_t i)
{
	const struct config *cf = c->cf;
	const struct node_conf *nc = &cf->nodes[i];
	char *p = xprintf("nodes[%zu]", i), *env = xprintf("nodes[%zu].env", i);
	size_t j, heads = 0;
	int rc = derived_env(c, env, &c->cf->nodes[i].env);

	free(env);
	if (rc) {
		free(p);
		return rc;
	}

	for (j = 0; j <= i; j++)
		heads += cf->nodes[j].is_head ? 1 : 0;
	if (nc->is_head && heads > 1)
		rc = cf_fail(c, p, "a second head node; exactly one node has "
		    "role \"head\"");
	for (j = 0; rc == 0 && j < i; j++) {
		const struct node_conf *o = &cf->nodes[j];

		if (strcmp(o->name, nc->name) == 0)
			rc = cf_fail(c, p, "name \"%s\" is already used by "
			    "nodes[%zu]", nc->name, j);
		else if (strcmp(o->ssh_host, nc->ssh_host) == 0 &&
		    o->ssh_port == nc->ssh_port)
			rc = cf_fail(c, p, "ssh_host %s:%d is already used by "
			    "nodes[%zu]", nc->ssh_host, nc->ssh_port, j);
		else if (strcmp(o->ip, nc->ip) == 0)
			rc = cf_fail(c, p, "ip %s is already used by nodes[%zu]; "
			    "every node needs a unique IP address", nc->ip, j);
	}
	free(p);
	return rc;
}

/* Exactly one head; ranks and default names follow config order. */
int
cf_check_nodes(struct cfctx *c)
{
	struct config *cf = c->cf;
	size_t i;
	int workers = 0, heads = 0;

	for (i = 0; i < cf->nnodes; i++)
		heads += cf->nodes[i].is_head;
	if (heads == 0)
		return cf_fail(c, "nodes", "no node has role \"head\"; exactly "
		    "one must");
	for (i = 0; i < cf->nnodes; i++) {
		struct node_conf *nc = &cf->nodes[i];

		if (nc->is_head) {
			cf->head = i;
			nc->rank = 0;
		} else
			nc->rank = ++workers;
		if (nc->container_name == NULL)
			nc->container_name = nc->is_head ?
			    xstrdup("vllm-head") : nc->rank == 1 ?
			    xstrdup("vllm-worker") :
			    xprintf("vllm-worker-%d", nc->rank);
	}
	return 0;
}

int
cf_check_vllm(struct cfctx *c)
{
	char *url = c->cf->vllm.url;

	if (url[strlen(url) - 1] == '/')
		url[strlen(url) - 1] = '\0';
	return vllmargs_check(c);
}

int
cf_check_dp(struct cfctx *c)
{
	struct config *cf = c->cf;
	size_t i;

	if (cf->topology == TOPO_DP &&
	    cf->dp.size != (int)cf->nnodes * cf->dp.size_local)
		return cf_fail(c, "dp.size", "%d does not equal nodes (%zu) x "
		    "size_local (%d)", cf->dp.size, cf->nnodes,
		    cf->dp.size_local);
	for (i = 0; i < cf->nnodes; i++)
		cf->nodes[i].dp_start_rank = cf->nodes[i].rank *
		    cf->dp.size_local;
	return vllmargs_reconcile(c);
}

/*
 * ready_when "serving" made systemd wait for the cluster: a boot with a
 * worker off never reached multi-user.target, an apt upgrade hung on the
 * restart. READY=1 now means "up and managing", whatever the key says.
 */
int
cf_check_systemd(struct cfctx *c)
{
	if (c->cf->systemd.ready_when_serving)
		cf_warn(c, "systemd.ready_when", "\"serving\" is no longer "
		    "honoured: READY=1 goes out once tandemd is up, so no "
		    "boot or package upgrade waits on the cluster; wait for "
		    "serving with tandemctl wait serving (remove the key)");
	return 0;
}

/* The command is run without a shell, so its program is a path. */
int
cf_check_hooks(struct cfctx *c)
{
	const struct strv *cmd = &c->cf->hooks.on_state;
	const struct strv *chg = &c->cf->hooks.on_change;

	if (cmd->n > 0 && cmd->v[0][0] != '/')
		return cf_fail(c, "hooks.on_state[0]", "must be an absolute "
		    "path: the command runs without a shell (for a shell "
		    "line: [\"/bin/sh\", \"-c\", \"...\"])");
	if (chg->n > 0 && chg->v[0][0] != '/')
		return cf_fail(c, "hooks.on_change[0]", "must be an absolute "
		    "path: the command runs without a shell (for a shell "
		    "line: [\"/bin/sh\", \"-c\", \"...\"])");
	return 0;
}

int
cf_check_recovery(struct cfctx *c)
{
	if (c->cf->recovery.backoff_max_s < c->cf->recovery.backoff_initial_s)
		return cf_fail(c, "recovery.backoff_max_s", "is smaller than "
		    "backoff_initial_s");
	return 0;
}

/* container.cache_dir: the host side of a -v HOST:CONTAINER (docker run). */
int
cf_valid_cachedir(const char *s)
{
	return s[0] == '/' && s[1] != '\0' && strpbrk(s, ":,") == NULL;
}
