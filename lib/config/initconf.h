/*
 * tandemctl init's decisions: from what every node said (discover.c,
 * netinfo.c) to a tandem.json, with each choice, the alternatives, and
 * what is left to do said in words. Pure: the command asks the nodes and
 * writes the files (daemon/ctl/init.c).
 */
#ifndef TANDEM_INITCONF_H
#define TANDEM_INITCONF_H

#include <jansson.h>
#include <stddef.h>

#include "discover.h"
#include "netinfo.h"
#include "util.h"

/* What one node said; the head first. */
struct init_node {
	const char		*ssh_host;
	int			 ssh_port;
	struct node_facts	 facts;
	struct net_ifaces	 ifs;
	int			 gpus;		/* 0: none seen */
	double			 gpu_free;	/* share, 0-1; -1 unknown */
	char			 gpu_name[64];
	const char		*engine;	/* "docker", "podman"; NULL */
	char			 engine_version[64];
	char			 engine_error[160];
	struct strv		 images;	/* REPOSITORY:TAG */
	struct strv		 model_dirs;	/* under /model, /models */
	int			 model_found;	/* the model's config.json */
	long long		 model_bytes;
	size_t			 model_files;
};

struct init_opts {
	const char	*name;		/* the cluster's; NULL: "tandem" */
	const char	*user;
	const char	*identity_file;
	const char	*known_hosts_file;
	const char	*token_file;
	const char	*model;		/* NULL: the one directory on every node */
	const char	*image;		/* NULL: the one vLLM image on every node */
	const char	*link;		/* an ifname or a subnet; NULL: the best */
	const char	*listen;	/* the API's address; NULL: the default */
	/* more of vllm.args (tandemctl init ... -- ARGS); theirs win */
	char *const	*vllm_args;
	size_t		 nvllm_args;
	int		 head_is_local;	/* tandemd runs on the head */
};

struct init_plan {
	json_t			*config;	/* NULL: see errors */
	struct link_choice	*links;
	size_t			 nlinks;
	size_t			 link;		/* index of the chosen one */
	char			*model;
	char			*image;
	int			 tp, pp;
	struct strv		 notes;		/* choices and alternatives */
	struct strv		 errors;	/* what stops it, with the fix */
	struct strv		 todo;		/* left to do once written */
};

/*
 * The model to use: opts->model, or the one directory every node has
 * under /model or /models. NULL with a line in errors when none (or
 * several: they are listed, --model picks one).
 */
char	*init_pick_model(const struct init_node *, size_t n,
	    const struct init_opts *, struct strv *errors);

/* Everything else, once the model's files are known on every node. */
void	init_derive(const struct init_node *, size_t n,
	    const struct init_opts *, const char *model, struct init_plan *);
void	init_plan_free(struct init_plan *);

/* A config the package or make install ships (etc/tandem.json, etc/tandem-dp.json), as bytes. */
struct init_example {
	const char		*name;		/* "etc/tandem.json" */
	const unsigned char	*text;
	size_t			 len;
};

#define INIT_CONF_EMPTY	(-2)	/* an empty file: the .deb's conffile */
#define INIT_CONF_OWN	(-1)	/* someone's config: only --force replaces it */

/*
 * Whether the file at init's output path holds no one's config: empty
 * (the .deb ships /etc/tandem/tandem.json empty, so the unit stays
 * inactive) or byte for byte one of the shipped examples (make install
 * copies etc/tandem.json there). Returns INIT_CONF_EMPTY, the index of
 * the example it is, or INIT_CONF_OWN: a single edited byte makes it the
 * operator's, which init replaces only with --force.
 */
int	init_conf_replaceable(const char *text, size_t len,
	    const struct init_example *, size_t nexamples);
void	init_node_free(struct init_node *);

#endif
