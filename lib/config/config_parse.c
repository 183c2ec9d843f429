/*
 * tandem.json parsed, on top of lib/config/: the text is walked over the
 * table of keys (config_table.c) section by section, in table order, by
 * config_walk.c; the table also says how a value is freed. A config's
 * reference count and the accessors that read it live here.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"
#include "jsonpos.h"
#include "vllmargs.h"

struct config *
config_parse(const char *text, const char *file, char *err, size_t errlen)
{
	struct cfctx c = { file, NULL, err, errlen, 0, NULL };
	json_error_t je;
	json_t *root;

	root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		seterr(err, errlen, "%s:%d:%d: %s", file, je.line, je.column,
		    je.text);
		return NULL;
	}
	c.jp = jsonpos_index(text);
	c.cf = xcalloc(1, sizeof(*c.cf));
	c.cf->refs = 1;
	c.cf->path = xstrdup(file);
	c.cf->text = xstrdup(text);
	if (cf_walk(&c, root) == -1) {
		config_free(c.cf);
		c.cf = NULL;
	}
	jsonpos_free(c.jp);
	json_decref(root);
	return c.cf;
}

struct config *
config_parse_buf(const char *name, const char *bytes, size_t len,
    char *err, size_t errlen)
{
	struct config *cf;
	char *text;

	if (len > 0 && memchr(bytes, '\0', len) != NULL) {
		seterr(err, errlen, "%s: contains a NUL byte", name);
		return NULL;
	}
	text = xmalloc(len + 1);
	if (len > 0)
		memcpy(text, bytes, len);
	text[len] = '\0';
	cf = config_parse(text, name, err, errlen);
	free(text);
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

static void
free_key(const struct ckey *k, void *base)
{
	char *at = (char *)base + k->off;

	switch (k->type) {
	case K_STR:
	case K_LISTEN:
		free(*(char **)at);
		break;
	case K_STRLIST:
		strv_free((struct strv *)at);
		break;
	case K_ENV:
		kvlist_free((struct kvlist *)at);
		break;
	case K_STEPS:
		free(*(double **)at);
		break;
	case K_OBJECT:
	case K_NODES:
	case K_CHOICE:
	case K_INT:
	case K_NUM:
		break;
	}
}

void
config_free(struct config *cf)
{
	size_t i, j;

	if (cf == NULL || --cf->refs > 0)
		return;
	for (i = 0; i < config_ntable; i++)
		if (!cf_node_key(&config_table[i]))
			free_key(&config_table[i], cf);
		else
			for (j = 0; j < cf->nnodes && cf->nodes; j++)
				free_key(&config_table[i], &cf->nodes[j]);
	free(cf->nodes);
	free(cf->path);
	free(cf->text);
	strv_free(&cf->warnings);
	free(cf);
}

struct config *
config_ref(struct config *cf)
{
	cf->refs++;
	return cf;
}

int
config_is_ray(const struct config *cf)
{
	return cf->topology == TOPO_RAY;
}

const char *
config_model_id(const struct config *cf)
{
	const char *s;

	if (cf->vllm.served_model_name)
		return cf->vllm.served_model_name;
	if ((s = vllmargs_value(&cf->vllm.args, VLLM_SERVED_FLAG, NULL)))
		return s;
	return cf->vllm.model;
}

int
config_sets_env(const struct config *cf, const char *key)
{
	size_t i;

	if (cf_kv_find(&cf->container.env, key))
		return 1;
	for (i = 0; i < cf->nnodes; i++)
		if (cf_kv_find(&cf->nodes[i].env, key))
			return 1;
	return 0;
}
