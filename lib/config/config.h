/*
 * The tandem.json configuration (PRODUCT.md section 2): parsed with jansson,
 * validated completely, defaults filled in and derived values computed, so
 * the rest of the program never checks a config value again.
 */
#ifndef TANDEM_CONFIG_H
#define TANDEM_CONFIG_H

#include <stddef.h>

#include "config_types.h"
#include "util.h"

/*
 * Parses and validates the LEN bytes of a tandem.json; NAME is the file
 * the messages name (the daemon reads the file: daemon/sys/conffile.c). On
 * error returns NULL and writes "NAME:LINE:COL: key.path: what is wrong"
 * into err.
 */
struct config	*config_parse_buf(const char *name, const char *bytes,
		    size_t len, char *err, size_t errlen);
/* The same for a NUL-terminated text. */
struct config	*config_parse(const char *text, const char *file,
		    char *err, size_t errlen);
/*
 * A config is shared by whoever still reads it: the daemon's current one,
 * and a preflight that began with it while a reload replaced it. Each
 * holder takes a reference; config_free drops one, and the last frees it.
 */
struct config	*config_ref(struct config *);
void		 config_free(struct config *);

/*
 * The served model id probed in /v1/models and asked for a completion:
 * vllm.served_model_name, else the first name after --served-model-name
 * in vllm.args, else vllm.model (config_parse made the two agree).
 */
const char	*config_model_id(const struct config *);
/* Whether the containers form one Ray cluster (topology ray). */
int		 config_is_ray(const struct config *);
/* Whether container.env or any nodes[].env sets the variable key. */
int		 config_sets_env(const struct config *, const char *key);

/*
 * Expands {ip} {ifname} {name} {rank} in an env template for one node.
 * Templates were validated at load time, so this cannot fail.
 */
char		*config_expand(const char *tmpl, const struct node_conf *);

/* Nonzero when a and b differ in anything the running cluster depends on. */
int		 config_cluster_changed(const struct config *a,
		    const struct config *b);
/*
 * Nonzero when a and b differ in how the daemon reaches the nodes (ssh.*):
 * the sessions must be made again, the containers need not be rebuilt.
 */
int		 config_ssh_changed(const struct config *a,
		    const struct config *b);
/*
 * Whether a change touches what the containers run (container.image,
 * vllm.model, vllm.args, container.env, container.volumes): tandemd checks
 * it on every node before it tears the serving cluster down.
 */
int		 config_change_differs(const struct config *a,
		    const struct config *b);
/* Whether the nodes, or how they are reached (ssh.*), differ. */
int		 config_nodes_changed(const struct config *a,
		    const struct config *b);

#endif
