/*
 * The tandem.json configuration (PRODUCT.md section 2): parsed with jansson,
 * validated completely, defaults filled in and derived values computed, so
 * the rest of the program never checks a config value again.
 */
#ifndef TANDEM_CONFIG_H
#define TANDEM_CONFIG_H

#include <stddef.h>

#include "util.h"

/*
 * tandemd remembers this many rebuild start times for the hourly cap, so
 * recovery.max_rebuilds_per_hour cannot be larger: a cap beyond the
 * history would never be reached.
 */
#define REBUILDS_HISTORY 1024

enum topology {
	TOPO_RAY,
	TOPO_DP,
};

/* container.accelerator: whose devices the nodes carry (accel.h). */
enum accel {
	ACCEL_NVIDIA,
	ACCEL_ASCEND,
	ACCEL_NONE,
};

struct kv {
	char	*key;
	char	*val;
};

struct kvlist {
	struct kv	*v;
	size_t		 n;
};

struct node_conf {
	char		*name;
	int		 is_head;
	char		*ssh_host;
	int		 ssh_port;
	char		*ip;
	char		*ifname;
	struct kvlist	 env;
	char		*container_name;
	char		*image_archive;	/* docker save of the image; NULL: none */
	int		 rank;		/* head 0; workers in config order */
	int		 dp_start_rank;	/* topology dp: first DP rank here */
};

struct config {
	char		*path;
	/* the bytes it was parsed from: tandemd keeps the last config that
	   served in its state dir (issue 46) */
	char		*text;
	char		*name;
	char		*listen_host;
	int		 listen_port;
	char		*api_token_file;
	char		*api_socket;	/* tandemctl's Unix socket */
	enum topology	 topology;

	struct {
		char	*user;
		int	 port;
		char	*identity_file;
		char	*known_hosts_file;
		double	 connect_timeout_s;
		double	 keepalive_s;
	} ssh;

	struct {
		char		*engine;
		char		*image;
		char		*shm_size;
		struct strv	 volumes;
		struct kvlist	 env;
		struct strv	 extra_args;
		char		*image_archive;	/* nodes[] may override */
		struct strv	 stop_foreign;	/* name regexes */
		enum accel	 accelerator;
		char		*cache_dir;	/* NULL: no cache (issue 47) */
		double		 cache_max_gib;
	} container;

	struct node_conf	*nodes;
	size_t			 nnodes;
	size_t			 head;		/* index of the head node */

	struct {
		int	 port;
		int	 expect_nodes;
		int	 expect_gpus;
		char	*auth_token_file;	/* on every node; NULL: no auth */
	} ray;

	struct {
		char		*model;
		int		 port;
		struct strv	 args;
		char		*url;
		char		*log_file;
		double		 ready_timeout_s;
		char		*served_model_name;
		char		*api_key_file;	/* on tandem's host; NULL: none */
		double		 gpu_memory_utilization; /* from args; 0 = unset */
	} vllm;

	struct {
		int	 size;
		int	 size_local;
		int	 rpc_port;
		int	 api_server_count;
		int	 seed;
	} dp;

	struct {
		double	 interval_s;
		double	 timeout_s;
		int	 failures_to_degrade;
		double	 generate_every_s;
		double	 ray_wait_timeout_s;
		double	 stall_s;		/* no token with work: stalled */
		int	 stall_readings;	/* ... over so many readings */
	} probe;

	struct {
		double	 backoff_initial_s;
		double	 backoff_max_s;
		int	 max_rebuilds_per_hour;
		double	 recheck_s;	/* stopped: the cause asked again */
		int	 change_attempts;	/* then the last good config */
		double	*gmu_steps;
		size_t	 ngmu_steps;
	} recovery;

	struct {
		int	 ready_when_serving;	/* else "started" */
		int	 on_stop_teardown;	/* else "keep" */
	} systemd;

	struct {
		struct strv	 on_state;	/* argv; empty: no hook */
		struct strv	 on_change;	/* argv: a change's verdict */
		double		 timeout_s;
	} hooks;

	/* "FILE:LINE:COL: path: what": accepted, but worth telling. */
	struct strv		 warnings;

	int			 refs;	/* config_ref; config_free drops one */
};

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
/*
 * The API key vLLM wants on /v1 when the config says it: --api-key in
 * vllm.args, else VLLM_API_KEY of the head's container (nodes[].env over
 * container.env, as docker keeps the last -e). A new string, or NULL;
 * vllm.api_key_file is read by the daemon (lib does no I/O).
 */
char		*config_vllm_api_key(const struct config *);
/* Whether container.env or any nodes[].env sets the variable key. */
int		 config_sets_env(const struct config *, const char *key);
/* Only the containers' VLLM_API_KEY (the head's), or NULL. */
char		*config_vllm_api_key_env(const struct config *);

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
