/*
 * Known failure signatures of vLLM, Ray, the container engine and SSH, each
 * with what it means, what to do, and whether retrying can help
 * (the contract's rebuild rules; the DGX Spark Ray guide's troubleshooting table).
 */
#ifndef TANDEM_DIAGNOSE_H
#define TANDEM_DIAGNOSE_H

#include <stddef.h>

/*
 * Every diagnosis tandem reports. The order is the catalogue's, and so the
 * order in which diag_match tries them: most specific first.
 */
enum diag_code {
	DIAG_STALE_RAY_NODE,
	DIAG_GLOO_LOOPBACK,
	DIAG_GPU_MEMORY_LOW,
	DIAG_KV_CACHE_NO_MEMORY,
	DIAG_CUDA_OOM,
	DIAG_KV_CACHE_TOO_SMALL,
	DIAG_PLACEMENT_GROUP,
	DIAG_ARCH_UNSUPPORTED,
	DIAG_MODEL_MISSING,
	DIAG_NVIDIA_RUNTIME_MISSING,
	DIAG_RAY_TOKEN_MISSING,
	DIAG_IMAGE_MISSING,
	DIAG_ENGINE_PERMISSION,
	DIAG_ENGINE_DOWN,
	DIAG_PORT_IN_USE,
	DIAG_GCS_UNREACHABLE,
	DIAG_NCCL_ERROR,
	DIAG_WORKER_LOST,
	/* issue 41 items 6 and 8: accelerators, CDI and images at start */
	DIAG_CDI_UNRESOLVABLE,
	DIAG_CUDA_DRIVER_TOO_OLD,
	DIAG_NPU_OOM,
	DIAG_IMAGE_PULL_FAILED,
	/* detected by tandem itself, never matched in output */
	DIAG_SSH_AUTH,
	DIAG_HOST_KEY,
	DIAG_NODE_UNREACHABLE,
	DIAG_RAY_INCOMPLETE,
	DIAG_STARTUP_TIMEOUT,
	DIAG_VLLM_EXITED,
	DIAG_CONTAINER_DIED,
	DIAG_GENERATION_FAILED,
	DIAG_GPU_NOT_RELEASED,
	DIAG_IMAGE_MISMATCH,
	DIAG_MODEL_MISMATCH,
	DIAG_INTERFACE_WRONG,
	DIAG_LINK_DOWN,
	DIAG_LINK_UNREACHABLE,
	DIAG_MTU_MISMATCH,
	DIAG_GPUS_MISSING,
	DIAG_FOREIGN_CONTAINER,
	DIAG_PLACEMENT_GROUP_WAIT,
	DIAG_UNRECOGNISED_ANSWER,
	DIAG_GENERATION_STALLED,
	DIAG_GPU_XID,
	/* vLLM configured other than the guides' recipe (issue 41) */
	DIAG_ENGINE_READY_TIMEOUT,
	DIAG_NODE_IP_MISMATCH,
	DIAG_MODEL_UNREADABLE,
	DIAG_VLLM_UNAUTHORIZED,
	DIAG_VLLM_MODEL_NAME,
	DIAG_REBUILD_LIMIT,
};
#define DIAG_COUNT	(DIAG_REBUILD_LIMIT + 1)

enum remedy {
	REMEDY_NONE,
	REMEDY_REBUILD,		/* a full rebuild of every node fixes it */
	REMEDY_LOWER_GMU,	/* next step of gpu_memory_utilization_steps */
	/*
	 * The opposite direction: more --gpu-memory-utilization (or a
	 * shorter --max-model-len). tandem never raises it by itself, and
	 * the ladder must not step down for it (recovery_ladder_applies).
	 */
	REMEDY_RAISE_GMU,
};

struct diag {
	enum diag_code	 id;
	const char	*code;		/* diag_code_name(id) */
	const char	*patterns[5];	/* any one matches */
	const char	*message;
	const char	*remedy;
	int		 retryable;
	enum remedy	 action;
};

/*
 * Finds the first catalogue entry matching text. When excerpt is set, the
 * line that matched is copied there (trimmed) for the report.
 */
const struct diag	*diag_match(const char *text, char *excerpt,
			    size_t excerptlen);
/* The entry of a code; never NULL for a code of the enum. */
const struct diag	*diag_get(enum diag_code);
/* Looks up an entry by its wire name; NULL when there is none. */
const struct diag	*diag_find(const char *code);
/*
 * The message of a diagnosis as /status shows it: the catalogue's
 * message, " on NODE" when a node is named, ": EXCERPT" when there is
 * one, and " (retries stopped)" for one that is not retried. The
 * catalogue's messages never name "the node" themselves, so the node is
 * said once.
 */
void			 diag_format(const struct diag *, const char *node,
			    const char *excerpt, char *buf, size_t len);
/*
 * The excerpt of an answer tandem does not understand
 * (DIAG_UNRECOGNISED_ANSWER): what was asked, what came back in the
 * tool's own words (the first line of stderr, else of stdout, made valid
 * UTF-8) with its exit status, and that tandem could not tell. exit_code
 * < 0 leaves the status out.
 */
void			 diag_unknown_excerpt(char *buf, size_t len,
			    const char *asked, int exit_code, const char *out,
			    const char *err);
/* The wire name: /status, /metrics, /events and the docs use it. */
const char		*diag_code_name(enum diag_code);
size_t			 diag_count(void);
const struct diag	*diag_at(size_t);

#endif
