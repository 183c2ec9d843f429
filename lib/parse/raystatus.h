/*
 * Parses `ray status` output (formats.md section 1; tests/unit/data/ray-*):
 * both autoscalers' formats, which share Ray's format_info_string
 * (python/ray/autoscaler/_private/util.py). v1, the monitor of a cluster
 * started by hand, lists every node under "Active:" (older Ray
 * "Healthy:"); v2 (RAY_enable_autoscaler_v2=1, clusters started by newer
 * tooling) splits them into "Active:" and "Idle:", and before vLLM starts
 * every node is idle. Both are alive. Resources come from "Usage:" /
 * "Total Usage:", the same in both.
 */
#ifndef TANDEM_RAYSTATUS_H
#define TANDEM_RAYSTATUS_H

#include <stddef.h>

#define RAYSTATUS_FAILURES	8

/*
 * One line of "Recent failures:": " NODE_TYPE: CAUSE (DETAIL)", where
 * CAUSE is NodeTerminated (a node that died: detail "ip: IP" or
 * "instance_id: ID") or a launch failure's category (detail
 * "latest_attempt: HH:MM:SS").
 */
struct ray_failure {
	char	node_type[72];
	char	cause[32];
	char	detail[64];
};

struct raystatus {
	int	 alive_nodes;	/* active + idle */
	int	 active_nodes;
	int	 idle_nodes;
	int	 pending_nodes;	/* lines under "Pending:" */
	int	 autoscaler_v2;	/* an "Idle:" section was printed */
	double	 gpus;		/* total GPUs (the accelerator's key) */
	double	 gpus_used;
	double	 gpus_pg_reserved;	/* "(U used of R reserved in placement groups)" */
	double	 cpus;
	int	 pending_pgs;	/* "N+ pending placement groups" */
	int	 nfailures;	/* lines under "Recent failures:" */
	struct ray_failure failures[RAYSTATUS_FAILURES];
};

/* Returns 0, or -1 with a message when the text is not a status report. */
int	raystatus_parse(const char *text, struct raystatus *, char *err,
	    size_t errlen);
/*
 * The same, counting the accelerator resource named key ("GPU", or
 * Ascend's "NPU": accel_ray_key) as gpus.
 */
int	raystatus_parse_key(const char *text, const char *key,
	    struct raystatus *, char *err, size_t errlen);

#endif
