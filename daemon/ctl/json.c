/*
 * tandemctl's --json documents (docs/api.md shows each): the plan and the
 * preflight built here; status and events are the API's own.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctl.h"
#include "plan.h"

/* A document of the API on standard output, ending with a newline. */
void
ctl_put_json(const char *s)
{
	size_t n = strlen(s);

	fputs(s, stdout);
	if (n == 0 || s[n - 1] != '\n')
		putchar('\n');
}

/* A JSON value we built; NULL (a string that was not UTF-8) is a failure. */
int
ctl_put_built(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_INDENT(2) | TANDEM_JSON_REALS) : NULL;

	json_decref(j);
	if (s == NULL) {
		fprintf(stderr, "tandemctl: cannot render the JSON output\n");
		return 1;
	}
	ctl_put_json(s);
	free(s);
	return 0;
}

static json_t *
warnings_json(const struct config *cf)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < cf->warnings.n; i++)
		json_array_append_new(a, json_string(cf->warnings.v[i]));
	return a;
}

/* The config's warnings, then the unrelated workloads the scan found. */
static json_t *
check_warnings_json(const struct preflight *pf, const char *only)
{
	const struct config *cf = preflight_config(pf);
	json_t *a = warnings_json(cf);
	char msg[300];
	size_t i, j;

	for (i = 0; i < cf->nnodes; i++) {
		const struct workloads *wl = preflight_workloads(pf, i);

		for (j = 0; wl && j < wl->n && (only == NULL ||
		    strcmp(only, cf->nodes[i].name) == 0); j++) {
			workload_message(&wl->w[j], cf->nodes[i].name,
			    msg, sizeof(msg));
			json_array_append_new(a, json_sprintf("foreign-workload: "
			    "%s", msg));
		}
	}
	return a;
}

/* KiB as bytes, or null when unknown (-1). */
static json_t *
kib_bytes(long long kib)
{
	return kib < 0 ? json_null() : json_integer(kib * 1024);
}

/*
 * A node's cache_dir (issue 47): null when the node was not asked; its
 * used and free bytes null when not known (no directory yet, df unread).
 */
static json_t *
cache_json(const struct config *cf, const struct ctl_cache *c)
{
	int read = c->read;

	if (c->line == NULL)
		return json_null();
	return json_pack("{s:s, s:f, s:o, s:o, s:s?, s:s}", "dir",
	    cf->container.cache_dir, "bound_gib", cf->container.cache_max_gib,
	    "used_bytes", kib_bytes(read ? c->cd.used_kib : -1),
	    "free_bytes", kib_bytes(read ? c->cd.avail_kib : -1),
	    "mount", read && c->cd.avail_kib >= 0 ? c->cd.mount : NULL,
	    "detail", c->line);
}

/* tandemctl check --json: documented in docs/api.md. */
json_t *
ctl_check_json(const struct preflight *pf, const struct ctl_cache *caches,
    const char *only)
{
	const struct config *cf = preflight_config(pf);
	json_t *nodes = json_array(), *checks, *n;
	size_t i;
	int c, ok;

	for (i = 0; i < cf->nnodes; i++) {
		if (only && strcmp(only, cf->nodes[i].name) != 0)
			continue;
		checks = json_array();
		ok = 1;
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = preflight_result(pf, i, c);

			/*
			 * "-": not run (no SSH) or not for this node. ok is
			 * true for a check that passed, null for one that
			 * was not made, false else.
			 */
			if (json_array_append_new(checks, json_pack(
			    "{s:s, s:o, s:s, s:s?, s:s?, s:s?}", "check",
			    preflight_check_name(c), "ok", r->status ==
			    PFS_NOT_CHECKED ? json_null() : json_boolean(r->ok),
			    "status", preflight_status_name(r->status), "detail",
			    strcmp(r->detail, "-") == 0 ? NULL : r->detail,
			    "fix", r->fix[0] ? r->fix : NULL,
			    "value", r->value[0] ? r->value : NULL)) == -1) {
				json_decref(checks);
				json_decref(nodes);
				return NULL;
			}
			ok = ok && r->ok;
		}
		n = json_pack("{s:s, s:b, s:o, s:o}", "name",
		    cf->nodes[i].name, "ok", ok, "checks", checks, "cache",
		    cache_json(cf, &caches[i]));
		if (json_array_append_new(nodes, n) == -1) {
			json_decref(nodes);
			return NULL;
		}
	}
	return json_pack("{s:s, s:b, s:o, s:o}", "name", cf->name, "ok",
	    preflight_ok(pf, only), "nodes", nodes, "warnings",
	    check_warnings_json(pf, only));
}

/* tandemctl plan --json: documented in docs/api.md. */
json_t *
ctl_plan_json(const struct config *cf, const struct plan *p, const char *only)
{
	json_t *nodes = json_array(), *cmds, *argv;
	size_t i, j, k;

	for (i = 0; i < cf->nnodes; i++) {
		const struct node_conf *n = &cf->nodes[i];

		if (only && strcmp(only, n->name) != 0)
			continue;
		cmds = json_array();
		for (j = 0; j < p->n; j++) {
			if (p->cmds[j].node != i)
				continue;
			argv = json_array();
			for (k = 0; k < p->cmds[j].argv.n; k++)
				json_array_append_new(argv, json_string(
				    p->cmds[j].argv.v[k]));
			json_array_append_new(cmds, json_pack("{s:s, s:o, s:s}",
			    "phase", phase_name(p->cmds[j].phase), "argv", argv,
			    "shell", p->cmds[j].shown));
		}
		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:i, "
		    "s:s, s:o}", "name", n->name, "role", n->is_head ? "head" :
		    "worker", "ssh_host", n->ssh_host, "ssh_port", n->ssh_port,
		    "ssh_user", cf->ssh.user, "commands", cmds));
	}
	return json_pack("{s:s, s:s, s:o, s:o}", "name", cf->name, "topology",
	    cf->topology == TOPO_RAY ? "ray" : "dp", "nodes", nodes,
	    "warnings", warnings_json(cf));
}

