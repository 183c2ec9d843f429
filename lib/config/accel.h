/*
 * The accelerators, vendor by vendor (container.accelerator): what tandem
 * asks a node about its GPUs or NPUs, and what the answers say. The
 * commands are authored in plan_accel.c beside plan.c's; this file reads
 * what they print (nvidia-smi's CSV and -L lines, npu-smi's tables, as
 * recorded under tests/unit/data/npu-smi/) into one shape, so that the
 * teardown, the preflight, the device count and the unrelated-workload
 * scan ask the same questions whatever the vendor:
 *   which of our processes still hold accelerator memory (accel_held),
 *   is there free memory for the utilisation vLLM will ask (accel_free),
 *   which devices are there and are they healthy (accel_devices),
 *   which processes hold memory at all (accel_info.proc[]).
 * With accelerator none nothing is asked and every verdict says
 * "not checked": never a pass.
 */
#ifndef TANDEM_ACCEL_H
#define TANDEM_ACCEL_H

#include <stddef.h>

#include "config.h"
#include "diagnose.h"

/* The three questions, each one remote command (cmd_accel). */
enum accel_query {
	AQ_LIST,	/* the devices: nvidia-smi -L, npu-smi info -l */
	AQ_MEMORY,	/* each device's memory (and health, Ascend) */
	AQ_PROCS,	/* the processes holding device memory */
};

/* What came back. */
enum accel_answer {
	AA_READ,	/* the tool answered, and tandem read its answer */
	AA_NOT_ASKED,	/* accelerator none: nothing was asked */
	AA_NO_TOOL,	/* exit 127: the tool is not on the node */
	AA_UNREADABLE,	/* an answer tandem cannot read: could not tell */
};

#define ACCEL_DEVS_MAX	64
#define ACCEL_PROCS_MAX	256

struct accel_dev {
	int		 id;		/* GPU index, NPU ID */
	int		 chip;		/* Ascend: chip of the NPU; else 0 */
	char		 name[32];	/* "910B3", "NVIDIA GB10"; "" unknown */
	char		 health[16];	/* Ascend: "OK", "Warning", ...; "" */
	long long	 used_mib;	/* -1: not reported */
	long long	 total_mib;	/* -1: not reported (unified memory) */
};

struct accel_proc {
	int		 dev;		/* -1: not reported (nvidia-smi CSV) */
	int		 chip;
	long		 pid;		/* as the node's host sees it */
	char		 name[64];	/* "" when the tool printed none */
	long long	 mib;		/* -1: not reported */
};

struct accel_info {
	enum accel		 accel;
	enum accel_query	 query;
	enum accel_answer	 answer;
	char			 said[200];	/* the tool's words, unless READ */
	struct accel_dev	 dev[ACCEL_DEVS_MAX];
	size_t			 ndev;
	size_t			 more_devs;	/* beyond ACCEL_DEVS_MAX */
	int			 nnpus;		/* Ascend: distinct NPU IDs */
	int			 procs_read;	/* the process table was there */
	char			 driver[32];	/* nvidia: driver_version; "" */
	struct accel_proc	 proc[ACCEL_PROCS_MAX];
	size_t			 nproc;
	size_t			 more_procs;
};

/* What a check found. Not checked and unknown are never a pass. */
enum accel_verdict {
	AV_PASS,
	AV_FAIL,
	AV_NOT_CHECKED,	/* accelerator none, or no tool: say it was skipped */
	AV_UNKNOWN,	/* the answer could not be read: could not tell */
};

const char	*accel_name(enum accel);
/* "GPU" or "NPU" ("device" for none), plural with an "s". */
const char	*accel_word(enum accel, int plural);
/* The tool that answers: "nvidia-smi", "npu-smi"; NULL for none. */
const char	*accel_tool(enum accel);
/*
 * Ray's resource key for the accelerator: "GPU"; Ascend "NPU", the
 * ray_device_key vllm-ascend's platform gives (vllm_ascend/platform.py)
 * and the resource Ray's NPU accelerator manager registers, so that
 * `ray status` shows " 0.0/16.0 NPU" and vLLM's placement group asks
 * {'NPU': 1.0} bundles.
 */
const char	*accel_ray_key(enum accel);
const char	*accel_verdict_name(enum accel_verdict);

/*
 * The default of container.accelerator: ascend when extra_args pass an
 * Ascend device (/dev/davinci*, as --device /dev/davinci0 or
 * --device=/dev/davinci0[:...]), else nvidia.
 */
enum accel	 accel_default(const struct strv *extra_args);
/*
 * The /dev/davinciN (N a number) that extra_args pass, in their order,
 * at most max into ids; returns how many there are.
 */
size_t		 accel_davinci(const struct strv *extra_args, int *ids,
		    size_t max);

/*
 * The variables tandem derives for every node's container, in the order
 * docker run gets them: VLLM_HOST_IP and GLOO_SOCKET_IFNAME always; with
 * nvidia (and none) NCCL_SOCKET_IFNAME; with ascend the Ascend
 * data-parallel guide's HCCL_IF_IP, HCCL_SOCKET_IFNAME and
 * TP_SOCKET_IFNAME, and ASCEND_RT_VISIBLE_DEVICES when extra_args pass
 * /dev/davinciN devices. tmpl is the value as a container.env template
 * ("{ip}", "{ifname}"), or NULL when it is computed from the config.
 */
struct accel_env {
	const char	*name;
	const char	*tmpl;
	const char	*from;	/* what it is derived from, for messages */
};
/* The derived variables, ended by a NULL name. */
const struct accel_env *accel_env_table(enum accel);
/* One derived variable's value for a node; NULL: not derived here. */
char		*accel_env_value(const struct config *, const struct node_conf *,
		    const struct accel_env *);

/*
 * Reads what cmd_accel(cf, q) printed: its exit status, stdout and
 * stderr. Never fails: an answer it cannot read is AA_UNREADABLE with
 * the tool's first words in said.
 */
void		 accel_parse(enum accel, enum accel_query, int exit_code,
		    const char *out, size_t outlen, const char *err,
		    struct accel_info *);

/*
 * The teardown's question: does a process that is not an unrelated
 * workload's (foreign(pid, arg) says which are; NULL: none are) still
 * hold device memory? AV_FAIL with msg naming the first: "pid 4242
 * (python3) holds 50128 MiB on NPU 0 chip 0"; AV_PASS "NPU memory
 * released (read from npu-smi)"; AV_NOT_CHECKED / AV_UNKNOWN with what
 * was or was not said.
 */
enum accel_verdict accel_held(const struct accel_info *,
		    int (*foreign)(long pid, void *arg), void *arg,
		    char *msg, size_t len);

/*
 * The preflight's question: does every device have the share of its
 * memory free that --gpu-memory-utilization gmu will ask for (vLLM's own
 * start check: free >= gmu x total)? gmu <= 0: vLLM's default 0.9.
 */
enum accel_verdict accel_free(const struct accel_info *, double gmu,
		    char *msg, size_t len);

/*
 * tandemctl check's device column: how many devices, their name, and
 * whether each is healthy (Ascend's health column). AV_FAIL when there
 * is none, or one is not OK.
 */
enum accel_verdict accel_devices(const struct accel_info *, char *msg,
		    size_t len);

/*
 * Which question names the devices for accel_devices: npu-smi info on
 * Ascend (it names every chip and its health; info -l only counts them),
 * nvidia-smi -L else. On Ascend it is the memory question too, so one
 * answer serves both checks.
 */
enum accel_query accel_devices_query(enum accel);

/*
 * The diagnosis of a device answer tandem could not read, once asking
 * again did not help: unrecognised-answer, retried, never terminal.
 */
#define ACCEL_COULD_NOT_TELL	DIAG_UNRECOGNISED_ANSWER

/* The commands, each a new shell string (plan_accel.c); NULL for none. */
char		*cmd_accel(const struct config *, enum accel_query);

#endif
