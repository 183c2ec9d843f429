/*
 * The walk over the key table: each section of tandem.json in table order,
 * each key read by its type, checked by its rule, stored where the table
 * says; the cross-key rules run when their section is complete.
 */
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

/* Unknown keys are an error: a typo is never ignored. */
static int
check_keys(struct cfctx *c, json_t *obj, const char *path, size_t sec)
{
	const char **allowed;
	size_t i, n = 0;
	int rc;

	allowed = xcalloc(config_ntable + 1, sizeof(*allowed));
	if (path[0] == '\0') {
		for (i = 0; i < config_ntable; i++)
			if (strchr(config_table[i].path, '.') == NULL)
				allowed[n++] = config_table[i].path;
	} else
		for (i = 0; i < cf_nkeys(sec); i++)
			allowed[n++] = cf_leaf(config_table[sec + 1 + i].path);
	rc = cf_check_keys(c, obj, path, allowed);
	free(allowed);
	return rc;
}

static int
bad_value(struct cfctx *c, const char *parent, const struct ckey *k,
    const char *s)
{
	char *p;
	int rc;

	if (k->flags & KF_AT_PARENT)
		return cf_fail(c, parent, "%s \"%s\": %s", cf_leaf(k->path), s,
		    k->why);
	p = cf_join(parent, cf_leaf(k->path));
	rc = cf_fail(c, p, "%s", k->why);
	free(p);
	return rc;
}

/* KF_PATH: refuses a C0 control character or DEL in s, at path[index]. */
static int
no_control(struct cfctx *c, const char *parent, const struct ckey *k,
    const char *s, long index)
{
	const unsigned char *u;
	char *p;
	int rc;

	for (u = (const unsigned char *)s; *u; u++)
		if (*u < 0x20 || *u == 0x7f)
			break;
	if (*u == '\0')
		return 0;
	p = index < 0 ? cf_join(parent, cf_leaf(k->path)) :
	    xprintf("%s%s%s[%ld]", parent, parent[0] ? "." : "",
	    cf_leaf(k->path), index);
	rc = cf_fail(c, p, "a control character (\\x%02x) at character %zu: "
	    "a path or a name has none", *u,
	    (size_t)(u - (const unsigned char *)s) + 1);
	free(p);
	return rc;
}

static int
choose(struct cfctx *c, const char *parent, const struct ckey *k,
    const char *s, int *out)
{
	const struct choice *ch;
	struct sbuf b;
	char *p;

	for (ch = k->choices; ch->name; ch++)
		if (strcmp(ch->name, s) == 0) {
			*out = ch->val;
			return 0;
		}
	sbuf_init(&b);
	for (ch = k->choices; ch->name; ch++)
		sbuf_addf(&b, "%s\"%s\"", ch == k->choices ? "must be " :
		    ch[1].name ? ", " : " or ", ch->name);
	p = cf_join(parent, cf_leaf(k->path));
	cf_fail(c, p, "%s", b.s);
	free(p);
	sbuf_free(&b);
	return -1;
}

/* Reads one key of obj (which may be NULL: every key absent) into base. */
static int
read_key(struct cfctx *c, json_t *obj, const char *parent,
    const struct ckey *k, void *base)
{
	const char *key = cf_leaf(k->path);
	char *at = (char *)base + k->off, *s = NULL;
	struct strv *sv;
	size_t i;
	int rc;

	switch (k->type) {
	case K_STR:
		if ((k->flags & KF_OFF_EMPTY) && obj && (
		    json_is_null(json_object_get(obj, key)) ||
		    (json_is_string(json_object_get(obj, key)) &&
		    json_string_length(json_object_get(obj, key)) == 0))) {
			*(char **)at = NULL;
			return 0;
		}
		s = k->sdyn ? k->sdyn(c->cf) : NULL;
		rc = cf_get_str(c, obj, parent, key, s ? s : k->sdef,
		    k->required, (char **)at);
		free(s);
		s = *(char **)at;
		if (rc == 0 && s && (k->flags & KF_PATH))
			rc = no_control(c, parent, k, s, -1);
		if (rc == 0 && s && k->valid && !k->valid(s))
			rc = bad_value(c, parent, k, s);
		return rc;
	case K_CHOICE:
		at = k->sdyn ? k->sdyn(c->cf) : NULL;
		rc = cf_get_str(c, obj, parent, key, at ? at : k->sdef,
		    k->required, &s);
		free(at);
		at = (char *)base + k->off;
		if (rc)
			return -1;
		rc = choose(c, parent, k, s, (int *)at);
		free(s);
		return rc;
	case K_LISTEN:
		if (cf_get_str(c, obj, parent, key, k->sdef, k->required, &s))
			return -1;
		rc = cf_parse_listen(s, (char **)at,
		    (int *)((char *)base + k->off2));
		free(s);
		if (rc == -1) {
			s = cf_join(parent, key);
			cf_fail(c, s, "%s", k->why);
			free(s);
		}
		return rc;
	case K_INT:
	case K_NUM:
		return cf_get_number(c, obj, parent, key, k->type == K_INT,
		    k->min, k->max, k->idyn ? k->idyn(c->cf) : k->ndef, at);
	case K_STRLIST:
		sv = (struct strv *)at;
		if (cf_get_strlist(c, obj, parent, key, sv))
			return -1;
		for (i = 0; (k->flags & KF_PATH) && i < sv->n; i++)
			if (no_control(c, parent, k, sv->v[i], (long)i))
				return -1;
		for (i = 0; k->valid && i < sv->n; i++)
			if (!k->valid(sv->v[i])) {
				s = xprintf("%s.%s[%zu]", parent, key, i);
				cf_fail(c, s, "%s", k->why);
				free(s);
				return -1;
			}
		return 0;
	case K_ENV:
		return cf_get_env(c, obj, parent, key, (struct kvlist *)at);
	case K_STEPS:
		return cf_get_steps(c, obj, parent, key, (double **)at,
		    (size_t *)((char *)base + k->off2));
	case K_OBJECT:
	case K_NODES:
		break;
	}
	return 0;
}

static const char *
topology_name(enum topology t)
{
	switch (t) {
	case TOPO_RAY:	return "ray";
	case TOPO_DP:	return "dp";
	}
	return "?";
}

static int
read_section(struct cfctx *c, json_t *root, size_t i)
{
	const struct ckey *k = &config_table[i];
	json_t *obj = cf_get_obj(c, root, "", k->path);
	size_t j;

	if (c->failed)
		return -1;
	if (obj == NULL && k->required)
		return cf_fail(c, k->path, "%s", k->required);
	if (obj && k->topology &&
	    strcmp(k->topology, topology_name(c->cf->topology)) != 0)
		return cf_fail(c, k->path, "only used with topology \"%s\"",
		    k->topology);
	if (check_keys(c, obj, k->path, i))
		return -1;
	for (j = 0; j < cf_nkeys(i); j++)
		if (read_key(c, obj, k->path, &config_table[i + 1 + j], c->cf))
			return -1;
	return k->post ? k->post(c) : 0;
}

static int
read_nodes(struct cfctx *c, json_t *root, size_t i)
{
	const struct ckey *k = &config_table[i];
	struct config *cf = c->cf;
	json_t *nodes = json_object_get(root, k->path), *n;
	size_t j, m;
	char *p;
	int rc = 0;

	if (nodes == NULL)
		return cf_fail(c, k->path, "%s", k->required);
	if (!json_is_array(nodes))
		return cf_fail(c, k->path, "must be a list, not %s",
		    cf_typename(nodes));
	if (json_array_size(nodes) == 0)
		return cf_fail(c, k->path, "must list at least the head node");
	cf->nnodes = json_array_size(nodes);
	cf->nodes = xcalloc(cf->nnodes, sizeof(*cf->nodes));
	json_array_foreach(nodes, j, n) {
		p = xprintf("%s[%zu]", k->path, j);
		if (!json_is_object(n))
			rc = cf_fail(c, p, "must be an object, not %s",
			    cf_typename(n));
		if (rc == 0)
			rc = check_keys(c, n, p, i);
		for (m = 0; rc == 0 && m < cf_nkeys(i); m++)
			rc = read_key(c, n, p, &config_table[i + 1 + m],
			    &cf->nodes[j]);
		if (rc == 0 && k->each)
			rc = k->each(c, j);
		free(p);
		if (rc)
			return rc;
	}
	return k->post ? k->post(c) : 0;
}

/* The top level's keys in table order; a section reads its own keys. */
int
cf_walk(struct cfctx *c, json_t *root)
{
	size_t i;
	int rc;

	if (!json_is_object(root))
		return cf_fail(c, "", "the config must be a JSON object, not %s",
		    cf_typename(root));
	if (check_keys(c, root, "", 0))
		return -1;
	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];

		if (strchr(k->path, '.'))
			continue;
		if (k->type == K_OBJECT)
			rc = read_section(c, root, i);
		else if (k->type == K_NODES)
			rc = read_nodes(c, root, i);
		else
			rc = read_key(c, root, "", k, c->cf);
		if (rc)
			return -1;
	}
	return 0;
}
