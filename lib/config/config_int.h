/*
 * Inside the tandem.json parser: the table of keys (config_table.c), the
 * typed readers that report "FILE:LINE:COL: path: what" (config_get.c), the
 * value rules and cross-key checks (config_check.c) and the vllm.args
 * checks (vllmargs.c). Nothing outside these files and their unit test
 * includes this header; the rest of the program sees config.h.
 */
#ifndef TANDEM_CONFIG_INT_H
#define TANDEM_CONFIG_INT_H

#include <stddef.h>

#include <jansson.h>

#include "config.h"

struct jsonpos;

/* One parse: where messages go, and the config being filled. */
struct cfctx {
	const char	*file;
	struct jsonpos	*jp;
	char		*err;
	size_t		 errlen;
	int		 failed;
	struct config	*cf;
};

enum ktype {
	K_OBJECT,	/* a section; its keys follow it in the table */
	K_NODES,	/* the list of node objects; "nodes[].KEY" follow */
	K_STR,		/* a non-empty string */
	K_CHOICE,	/* one of .choices, stored as its int value */
	K_INT,
	K_NUM,
	K_STRLIST,	/* a list of non-empty strings */
	K_ENV,		/* an object of environment variables (templates) */
	K_LISTEN,	/* IPv4:PORT or [IPv6]:PORT: host at off, port at off2 */
	K_STEPS,	/* decreasing numbers in (0, 1]: off, count at off2 */
};

/*
 * What a reload does when the key's value changes (config_cluster_changed,
 * config_ssh_changed). The zero value is the safe one: a key nobody
 * classified rebuilds the cluster rather than being ignored.
 */
enum kreload {
	R_REBUILD = 0,
	R_SSH,
	R_LIVE,
};

struct choice {
	const char	*name;
	int		 val;
};

/* Report a failed value at its parent: nodes[1]: name "x y": why. */
#define KF_AT_PARENT	0x1
/*
 * A path or a name (a model, a file, an image): no control character. It
 * reaches the nodes' command lines and the operator's terminal (tandemctl
 * init, check, the logs), where an ESC is a terminal command (issue 43).
 */
#define KF_PATH		0x2
/* K_STR: "" or null is a value of its own, "off", stored as NULL */
#define KF_OFF_EMPTY	0x4

/*
 * One key of tandem.json. Keys of a section follow the section in table
 * order, which is also the order they are read and checked in: a default
 * computed from another key (dp.size from dp.size_local) comes after it.
 */
struct ckey {
	const char	*path;		/* "ssh.port"; a node's key "nodes[].ip" */
	enum ktype	 type;
	enum kreload	 reload;
	size_t		 off;		/* in struct config; node keys in node_conf */
	size_t		 off2;
	const char	*required;	/* the message when missing; NULL: optional */
	const char	*sdef;		/* K_STR, K_CHOICE, K_LISTEN default */
	double		 ndef;		/* K_INT, K_NUM default */
	int		(*idyn)(const struct config *);	/* computed K_INT default */
	/* computed K_STR or K_CHOICE default */
	char		*(*sdyn)(const struct config *);
	double		 min, max;	/* K_INT, K_NUM */
	int		(*valid)(const char *);	/* K_STR, K_STRLIST elements */
	const char	*why;		/* what valid() (or K_LISTEN) refused */
	const struct choice *choices;	/* K_CHOICE, ended by a NULL name */
	const char	*topology;	/* K_OBJECT: only with this topology */
	unsigned	 flags;
	/* Cross-key rules, after a section's keys (K_NODES: after each node). */
	int		(*each)(struct cfctx *, size_t node);
	int		(*post)(struct cfctx *);
};

extern const struct ckey	config_table[];
extern const size_t		config_ntable;

/* config_table.c: the table's shape */
const char	*cf_leaf(const char *path);
int		 cf_node_key(const struct ckey *);
size_t		 cf_nkeys(size_t section);

/* config_walk.c */
int		 cf_walk(struct cfctx *, json_t *root);

/* config_get.c */
int		 cf_fail(struct cfctx *, const char *path, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));
void		 cf_warn(struct cfctx *, const char *path, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));
const char	*cf_typename(const json_t *);
char		*cf_join(const char *path, const char *key);
int		 cf_check_keys(struct cfctx *, json_t *obj, const char *path,
		    const char *const *allowed);
json_t		*cf_get_obj(struct cfctx *, json_t *obj, const char *path,
		    const char *key);
int		 cf_get_str(struct cfctx *, json_t *obj, const char *path,
		    const char *key, const char *def, const char *required,
		    char **out);
int		 cf_get_number(struct cfctx *, json_t *obj, const char *path,
		    const char *key, int integer, double min, double max,
		    double def, void *out);
int		 cf_get_strlist(struct cfctx *, json_t *obj, const char *path,
		    const char *key, struct strv *out);
int		 cf_get_env(struct cfctx *, json_t *obj, const char *path,
		    const char *key, struct kvlist *out);
int		 cf_get_steps(struct cfctx *, json_t *obj, const char *path,
		    const char *key, double **out, size_t *n);
const char	*cf_kv_find(const struct kvlist *, const char *key);

/* config_check.c: value rules (nonzero: acceptable) and cross-key rules */
int		 cf_valid_name(const char *);
int		 cf_valid_host(const char *);
int		 cf_valid_user(const char *);
int		 cf_valid_ipv4(const char *);
int		 cf_valid_ifname(const char *);
int		 cf_valid_container_name(const char *);
int		 cf_valid_engine(const char *);
int		 cf_valid_image(const char *);
int		 cf_valid_shm(const char *);
int		 cf_valid_volume(const char *);
int		 cf_valid_regex(const char *);
int		 cf_valid_url(const char *);
int		 cf_valid_abspath(const char *);
int		 cf_valid_cachedir(const char *);
int		 cf_valid_sockpath(const char *);
int		 cf_valid_not_option(const char *);
int		 cf_parse_listen(const char *, char **host, int *port);
int		 cf_check_container(struct cfctx *);
int		 cf_check_node(struct cfctx *, size_t node);
int		 cf_check_nodes(struct cfctx *);
int		 cf_check_vllm(struct cfctx *);
int		 cf_check_dp(struct cfctx *);
int		 cf_check_recovery(struct cfctx *);
int		 cf_check_systemd(struct cfctx *);
int		 cf_check_hooks(struct cfctx *);

/* vllmargs.c: the flags in vllm.args that tandem reads or sets */
int		 vllmargs_check(struct cfctx *);
int		 vllmargs_reconcile(struct cfctx *);

#endif
