/*
 * What changed between two configs, key by key from the table: a reload
 * rebuilds the cluster, makes the SSH sessions again, or just applies.
 */
#include <string.h>

#include "config_int.h"

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

static int
key_differs(const struct ckey *k, const void *a, const void *b)
{
	const char *x = (const char *)a + k->off, *y = (const char *)b + k->off;
	size_t i, n;

	switch (k->type) {
	case K_STR:
		return !streq0(*(char *const *)x, *(char *const *)y);
	case K_LISTEN:
		return !streq0(*(char *const *)x, *(char *const *)y) ||
		    *(const int *)((const char *)a + k->off2) !=
		    *(const int *)((const char *)b + k->off2);
	case K_CHOICE:
	case K_INT:
		return *(const int *)x != *(const int *)y;
	case K_NUM:
		return *(const double *)x != *(const double *)y;
	case K_STRLIST:
		return !strv_eq((const struct strv *)x,
		    (const struct strv *)y);
	case K_ENV:
		return !kv_eq((const struct kvlist *)x,
		    (const struct kvlist *)y);
	case K_STEPS:
		n = *(const size_t *)((const char *)a + k->off2);
		if (n != *(const size_t *)((const char *)b + k->off2))
			return 1;
		for (i = 0; i < n; i++)
			if ((*(double *const *)x)[i] != (*(double *const *)y)[i])
				return 1;
		return 0;
	case K_OBJECT:
	case K_NODES:
		break;
	}
	return 0;
}

/* Whether any key of that reload class differs between a and b. */
static int
differs(const struct config *a, const struct config *b, enum kreload r)
{
	size_t i, j;

	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];

		if (k->reload != r)
			continue;
		if (k->type == K_NODES || cf_node_key(k)) {
			if (a->nnodes != b->nnodes || a->head != b->head)
				return 1;
			for (j = 0; cf_node_key(k) && j < a->nnodes; j++)
				if (key_differs(k, &a->nodes[j], &b->nodes[j]))
					return 1;
		} else if (key_differs(k, a, b))
			return 1;
	}
	return 0;
}

int
config_cluster_changed(const struct config *a, const struct config *b)
{
	return differs(a, b, R_REBUILD);
}

int
config_ssh_changed(const struct config *a, const struct config *b)
{
	return differs(a, b, R_SSH);
}

/*
 * What the containers run (issue 46): a change of these is checked on
 * every node before the serving cluster is torn down for it.
 */
static const char *const change_keys[] = {
	"container.image", "vllm.model", "vllm.args", "container.env",
	"container.volumes", NULL,
};

int
config_change_differs(const struct config *a, const struct config *b)
{
	size_t i, j;

	for (i = 0; i < config_ntable; i++)
		for (j = 0; change_keys[j]; j++)
			if (strcmp(config_table[i].path, change_keys[j]) == 0 &&
			    key_differs(&config_table[i], a, b))
				return 1;
	return 0;
}

int
config_nodes_changed(const struct config *a, const struct config *b)
{
	size_t i, j;

	if (a->nnodes != b->nnodes || a->head != b->head)
		return 1;
	for (i = 0; i < config_ntable; i++) {
		const struct ckey *k = &config_table[i];

		for (j = 0; cf_node_key(k) && j < a->nnodes; j++)
			if (key_differs(k, &a->nodes[j], &b->nodes[j]))
				return 1;
	}
	return differs(a, b, R_SSH);
}
