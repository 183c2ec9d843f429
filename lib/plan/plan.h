/*
 * The exact commands tandem runs on nodes (PRODUCT.md section 6), rendered
 * from the config as argument vectors and as the one shell string that goes
 * over SSH. Nothing here touches a node: tandemctl plan prints these, the
 * daemon runs them, the tests compare them with golden files.
 */
#ifndef TANDEM_PLAN_H
#define TANDEM_PLAN_H

#include <stdint.h>

#include "config.h"
#include "plan_label.h"

/* The phases of a rebuild, in order. Each phase runs on all its nodes. */
enum phase {
	PH_TEARDOWN,	/* every node: remove the container */
	PH_HEAD,	/* head: start the container (Ray head / DP head) */
	PH_WORKERS,	/* every worker, in parallel */
	PH_VLLM,	/* ray: vllm serve in the head container */
	PH_COUNT
};

struct cmd {
	size_t		 node;	/* index into config nodes */
	enum phase	 phase;
	struct strv	 argv;
	char		*shell;	/* argv as one quoted shell string */
	char		*shown;	/* shell with vLLM's API key as *** */
};

struct plan {
	struct cmd	*cmds;
	size_t		 n;
};

const char	*phase_name(enum phase);

/*
 * Builds the rebuild plan. gmu > 0 replaces --gpu-memory-utilization in
 * vllm.args (the remedy ladder); 0 keeps the configured args.
 */
void	 plan_rebuild(const struct config *, double gmu, struct plan *);
/* As plan_rebuild, with plan_hash(cf) computed once by the caller. */
void	 plan_rebuild_hashed(const struct config *, double gmu, uint64_t hash,
	    struct plan *);
/*
 * As plan_rebuild_hashed, with what the preflight found of each node's
 * RDMA (rdma[nnodes], lib/parse/rdma.h; NULL none): a node with an
 * ACTIVE port gets NCCL_IB_HCA and its own NCCL_IB_GID_INDEX unless the
 * config sets them.
 */
struct rdma_state;
void	 plan_rebuild_rdma(const struct config *, double gmu, uint64_t hash,
	    const struct rdma_state *rdma, struct plan *);
void	 plan_free(struct plan *);
/*
 * A hash of the plan (with the configured --gpu-memory-utilization): the
 * tandem.plan label of every container, so adoption can tell whether a
 * running cluster was built from this config (the label: plan_label.h).
 */
uint64_t plan_hash(const struct config *);

/*
 * container.cache_dir (issue 47, docs/operations.md "Caches"): each
 * image+model+vllm.args its own directory KEY under it,
 * mounted at PLAN_CACHE_MOUNT; the hub's downloads in PLAN_HUB_DIR beside
 * them, shared by every key and never pruned with them.
 */
#define PLAN_CACHE_MOUNT	"/var/cache/tandem"
#define PLAN_HUB_DIR		"huggingface"
#define PLAN_HUB_MOUNT		"/var/cache/tandem-hub"
uint64_t plan_cache_key(const struct config *);
/* KEY: the image's hash and image+model+args', IIIIIIII-CCCCCCCC */
char	*plan_cache_name(const struct config *);
/* tandemctl check's du and df of cache_dir (cachedisk.h); NULL: off */
char	*plan_cache_probe(const struct config *);
/* cache_dir/KEY, or NULL when container.cache_dir is off */
char	*plan_cache_dir(const struct config *);

/* Prints the plan per node, readable and copy-pasteable into a shell. */
/* only: a node's name, or NULL for every node */
void	 plan_print(const struct config *, const struct plan *,
	    const char *only, struct sbuf *);

/* plan.c: the engine is podman; docker rm -f's argv (podman's -t 0) */
int	 plan_is_podman(const struct config *);
void	 plan_rm_argv(const struct config *, size_t node, struct strv *);

/* plan_probe.c: single commands, each returned as a new shell string. */
char	*cmd_teardown(const struct config *, size_t node);
char	*cmd_inspect_running(const struct config *, size_t node);
char	*cmd_events(const struct config *, size_t node, double since_s);
char	*cmd_ray_status(const struct config *);
char	*cmd_vllm_alive(const struct config *, size_t node);
char	*cmd_log_tail(const struct config *, size_t node);
/* vLLM's timed start-up lines of the node's log (vllmphases.h). */
char	*cmd_vllm_phases(const struct config *, size_t node);
/* Answers (exit 0) once vLLM's log says its API server started. */
char	*cmd_vllm_log_ready(const struct config *, size_t node);
/* nvidia-smi -L: tandemctl init's question, before there is a config
 * (the daemon and the preflight ask cmd_accel, accel.h). */
char	*cmd_gpu_list(void);
char	*cmd_foreign_ps(const struct config *);
char	*cmd_engine_info(const struct config *);
char	*cmd_name_owner(const struct config *, size_t node);

/*
 * plan.c: the model directory on the nodes; NULL when vllm.model is not
 * on a volume.
 */
char	*plan_model_dir(const struct config *);
/*
 * plan_image.c: the image archive and the model fingerprint. The archive
 * commands return NULL when the node has no image_archive.
 */
char	*cmd_archive_present(const struct config *, size_t node);
char	*cmd_archive_manifest(const struct config *, size_t node);
char	*cmd_image_load(const struct config *, size_t node);
/*
 * The image's identity that does not depend on the engine's image store
 * (imagecheck.h image_ident): "ID|CREATED|DIFFID,DIFFID,...".
 */
char	*cmd_image_identity(const struct config *);
/*
 * One config blob of the node's image archive, by the path its
 * manifest.json gives ("blobs/sha256/HEX" or "HEX.json"; anything else is
 * refused: NULL, as is a node without an archive).
 */
char	*cmd_archive_config(const struct config *, size_t node,
	    const char *config_path);
/*
 * plan_gpu.c: a throwaway container of the image with the GPUs
 * (gpucheck.h); NULL when container.extra_args pass the devices.
 */
char	*cmd_gpu_run(const struct config *);
char	*cmd_model_fingerprint(const struct config *);	/* NULL: no volume */
/* plan_probe.c: the preflight's own */
char	*cmd_iface_addr(const struct config *, size_t node);
char	*cmd_ray_port(const struct config *);
char	*cmd_nvidia_runtime(const struct config *);
/* plan.c: 1: --gpus all (podman: the CDI device); 0 for Ascend, none, or when
 * container.extra_args pass the devices themselves. */
int	 plan_wants_nvidia(const struct config *);

/*
 * plan_init.c: what tandemctl init asks a node (read-only), the key it
 * installs, and the link check's commands (lib/preflight/linkcheck.c).
 */
char	*cmd_node_facts(void);
char	*cmd_net_addrs(void);
char	*cmd_net_speeds(void);
char	*cmd_engine_version(const char *engine);
char	*cmd_image_list(const char *engine);
char	*cmd_gpu_memory(void);
char	*cmd_model_dirs(void);
char	*cmd_dir_files(const char *dir);
char	*cmd_authorize_key(const char *pubkey);
char	*cmd_link_state(const struct config *, size_t node);
/* ifname's RDMA ports and GIDs (lib/parse/rdma.h reads them) */
char	*cmd_rdma_state(const struct config *, size_t node);
/* size 0: a plain ping; else that payload with DF set */
char	*cmd_link_ping(const struct config *, size_t node, size_t peer,
	    int size);
/*
 * plan_hw.c: the driver's Xid lines in the kernel log since a Unix time
 * (0: all), and each GPU's index, bus id and uncorrectable ECC count.
 */
char	*cmd_kernel_xid(double since);
char	*cmd_gpu_ecc(void);
/*
 * The node's boot id, a UUID new at every boot: a stopped cluster's
 * recheck of a fatal Xid waits for it to change (lib/preflight/recheck.h,
 * recheck_boot_id reads the answer).
 */
char	*cmd_boot_id(void);
/* plan_bundle.c: what the evidence bundle holds, each answer bounded. */
char	*cmd_bundle_logs(const struct config *, size_t node, int lines);
char	*cmd_bundle_state(const struct config *, size_t node);
char	*cmd_bundle_vllm_log(const struct config *);
char	*cmd_bundle_gpus(void);
/*
 * plan_ray.c: Ray's GCS and dashboard ports from where this runs, and the
 * dashboard's answers without a token; host NULL is the head's nodes[].ip.
 */
#define RAY_DASHBOARD_PORT	8265	/* Ray's DEFAULT_DASHBOARD_PORT */
/* Where ray.auth_token_file appears inside the containers. */
#define RAY_TOKEN_PATH		"/run/tandem/ray-auth-token"
char	*cmd_ray_exposure(const struct config *, const char *host);
/* Exit 0 when ray.auth_token_file is a non-empty file; NULL: not set. */
char	*cmd_ray_token_present(const struct config *);

/* The vllm serve argument vector (for tests and diagnosis). */
void	 plan_vllm_argv(const struct config *, size_t node, double gmu,
	    struct strv *);

#endif
