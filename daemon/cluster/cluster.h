/*
 * The cluster runtime as the rest of tandemd sees it (tandemd.c, httpd.c):
 * an opaque struct cluster, the calls that drive it, and a read-only view
 * of what /status and /metrics report. Its fields live in cluster_int.h,
 * which only the runtime's own files include.
 */
#ifndef CLUSTER_H
#define CLUSTER_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "act_types.h"	/* enum ctr_state, enum probe_kind */
#include "config.h"
#include "diagnose.h"
#include "fsm.h"
#include "metrics.h"
#include "trace.h"

struct cluster;

/* One node as /status and /metrics show it; valid until the loop runs on. */
struct node_view {
	const struct node_conf	*conf;
	int			 reachable;
	enum ctr_state		 container;
	int			 gpus;		/* -1 unknown */
	const char		*last_error;
	uint64_t		 execs;		/* ssh commands run */
};

/* The cluster as /status and /metrics show it; valid as node_view. */
struct cluster_view {
	const struct config	*cf;
	struct fsm		 fsm;
	double			 since;
	uint64_t		 generation;
	size_t			 nnodes;
	int			 ray_known;
	int			 ray_alive;
	double			 ray_gpus;
	int			 vllm_healthy;
	const char		*gen_endpoint;	/* NULL: none proved */
	const struct diag	*diag;
	const char		*diag_msg;
	int			 attempt;
	double			 next_attempt;
	uint64_t		 rebuilds_total;
	const struct fail_count	*failures;
	size_t			 nfailures;
	const struct histogram	*h_probe;	/* [PR_COUNT] */
	const struct histogram	*h_recover;
	const struct trace_hist	*h_step;
	const struct trace	*trace_last;	/* the last that ended */
	uint64_t		 stalls_total;
	int			 reload_ok;	/* the last load of the config */
	double			 reload_ok_at;	/* when one last succeeded */
	const struct xid_count	*xid;		/* per node and code */
	size_t			 nxid;
};

struct cluster	*cluster_new(uv_loop_t *, struct config *, const char *state_dir,
		    int once);
void		 cluster_start(struct cluster *);
void		 cluster_event(struct cluster *, enum event, const char *reason);
int		 cluster_reload(struct cluster *, const char *file, char *err,
		    size_t errlen);
/*
 * tandemctl apply: text (len bytes, named path) taken as a reload of a
 * changed file would take it, the file on disk untouched; no_rollback
 * keeps a change that does not serve. tandemctl rollback: the last config
 * that served. Both return as cluster_reload does (-1 with err).
 */
int		 cluster_apply_text(struct cluster *, const char *text,
		    size_t len, const char *path, int no_rollback, char *err,
		    size_t errlen);
int		 cluster_rollback(struct cluster *, char *err, size_t errlen);
void		 cluster_stop(struct cluster *, void (*done)(void *), void *arg);
void		 cluster_free(struct cluster *);
int		 cluster_rebuilds_last_hour(const struct cluster *);
double		 cluster_gmu(const struct cluster *);
void		 cluster_reset_remedy(struct cluster *);
/* recovery.max_rebuilds_per_hour reached: the backoff waits for the hour. */
int		 cluster_capped(const struct cluster *);
/* POST /resume: paused, halted or capped; what it did, for the answer. */
const char	*cluster_resume(struct cluster *);
/*
 * /status's "budget" (lib/policy/budget.c) when the retries stopped or the
 * hourly cap is reached, else NULL; the newest evidence bundle, or NULL.
 */
json_t		*cluster_budget_json(const struct cluster *);
const char	*evidence_latest(const struct cluster *);
/* GET /status's document, for the bundle (evidence.c). */
void		 cluster_status_doc(struct cluster *,
		    char *(*render)(struct cluster *));

/* Read-only access for tandemd.c and httpd.c. */
void		 cluster_view(const struct cluster *, struct cluster_view *);
void		 cluster_node_view(const struct cluster *, size_t,
		    struct node_view *);
const struct fsm *cluster_fsm(const struct cluster *);
const struct config *cluster_config(const struct cluster *);
uv_loop_t	*cluster_loop(const struct cluster *);
const char	*cluster_token(const struct cluster *);	/* NULL: none */
/* GET /rebuilds/last: the running rebuild's trace, else the last one's. */
json_t		*cluster_trace_json(const struct cluster *);
/*
 * /status's recovery.awaiting: while the retries are stopped, what the
 * recheck waits for (act_recheck.c); null otherwise.
 */
json_t		*cluster_awaiting_json(const struct cluster *);
/* /status's change: the last change of what the containers run (change.c) */
json_t		*cluster_change_json(const struct cluster *);
/* /status's config: the running one, and the last that served */
json_t		*cluster_config_json(const struct cluster *);
/* tandem_config_changes_total, by result */
void		 cluster_change_counts(const struct cluster *, uint64_t *applied,
		    uint64_t *refused, uint64_t *rolled_back);
/* The last diagnosis' message, NULL when there is none. */
const char	*cluster_diag_msg(const struct cluster *);
int		 cluster_once(const struct cluster *);
int		 cluster_exit_code(const struct cluster *);
void		 cluster_set_exit_code(struct cluster *, int);

/* workload.c: unrelated workloads on the nodes, as /status and /metrics
 * show them (warnings, never failures) */
json_t		*cluster_warnings_json(const struct cluster *);

/* history.c: the event log as /events shows it */
json_t		*history_json(const struct cluster *, uint64_t since);
/* the newest event's seq: /events changes only when it does */
uint64_t	 history_last_seq(const struct cluster *);

#endif
