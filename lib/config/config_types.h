/*
 * What a parsed tandem.json is: struct config and the types it holds.
 * Below every file of lib/config/ (the table, the walk, the checks,
 * vllmargs.c): they fill and read these, and none calls up into config_parse.c
 * for them. The rest of the program includes config.h.
 */
#ifndef TANDEM_CONFIG_TYPES_H
#define TANDEM_CONFIG_TYPES_H

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

#endif
