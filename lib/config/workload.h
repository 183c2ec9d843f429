/*
 * Unrelated workloads on a node (the DGX Spark guide: "dedicate the nodes,
 * stop unrelated containers"): running containers that carry no
 * tandem.cluster label of this cluster, and processes outside every
 * container of this cluster that hold GPU memory. One remote command lists
 * them (cmd_workloads); the parser here says which are foreign and how much
 * memory each holds. They are warnings, never failures.
 */
#ifndef TANDEM_WORKLOAD_H
#define TANDEM_WORKLOAD_H

#include <stddef.h>

#include "config.h"

#define WORKLOADS_MAX	8

enum workload_kind { WL_CONTAINER, WL_PROCESS };

struct workload {
	enum workload_kind	 kind;
	char			 name[128];	/* container or process name */
	long			 pid;		/* WL_PROCESS */
	long long		 mib;		/* device memory; -1 none or unknown */
	int			 npu;		/* the memory is NPU memory */
	long			 pids[4];	/* its GPU processes (host PIDs) */
	size_t			 npids;
};

struct workloads {
	struct workload	 w[WORKLOADS_MAX];
	size_t		 n;
	size_t		 more;		/* found beyond WORKLOADS_MAX */
};

/*
 * What cmd_workloads printed (len bytes, not NUL-terminated): "G PID, MIB,
 * NAME" per GPU process, or "A LINE" per line of npu-smi info (its process
 * table read by accel.c; a process on several NPUs or chips counts once,
 * its memory summed), "C ID [NAME,CLUSTER]" per running container (its
 * name and tandem.cluster label as a JSON array; CLUSTER "" without one),
 * "P ID PID" per process of a container. A container's line whose ID is
 * not hex, whose array is not exactly two strings or whose name is not one
 * an engine allows is skipped, as is anything else, a line cut short and
 * numbers out of range; bytes that are not UTF-8 are made valid: never an
 * error.
 */
void	workloads_parse(const char *out, size_t len, const char *cluster,
	    struct workloads *);
/*
 * One line for /status and the logs: container "jupyter" on node2 holds
 * 18.2 GiB of GPU memory (NPU memory on Ascend nodes).
 */
void	workload_message(const struct workload *, const char *node,
	    char *buf, size_t len);

/*
 * container.stop_foreign: 1 when name matches one of the patterns, each a
 * POSIX extended regular expression matched against the whole name.
 */
int	workload_stop_match(const struct strv *patterns, const char *name);
/*
 * 1 when re compiles as such a pattern (config load) within bounds that
 * keep glibc's regcomp fast: at most WORKLOAD_RE_MAX bytes, no
 * backreference, and a repeat count {m,n} (at most 255) only after a
 * single character, '.' or a bracket expression. "((a*)*){30}" held
 * regcomp, and so --check, a start or a reload, for more than 20 s
 * (issue 43); a container name needs none of it.
 */
#define WORKLOAD_RE_MAX	256
int	workload_valid_regex(const char *re);

/* The commands (as in plan.c, each a new shell string). */
char	*cmd_workloads(const struct config *);
/* engine stop of the given containers. */
char	*cmd_stop_containers(const struct config *, const struct strv *names);

#endif
