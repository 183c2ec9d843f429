/*
 * A rebuild's trace: every remote step tandemd sent (to which node, when),
 * when its answer came and when tandem sent the next step of the chain,
 * in monotonic milliseconds. From it: tandem's own overhead, the time the
 * rebuild's critical path spent not waiting on a node (GET /rebuilds/last),
 * and the step-duration histograms of /metrics. No I/O, no clock: the
 * daemon passes the times in.
 */
#ifndef TANDEM_TRACE_H
#define TANDEM_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "metrics.h"
#include "vllmphases.h"

/* The kinds of remote step, as the histograms' step label. */
enum trace_kind {
	TS_PREFLIGHT,		/* tandemctl check's checks, every node */
	TS_LINK_CHECK,		/* the fast link's check, every node */
	TS_TEARDOWN,		/* rm -f of the node's containers */
	TS_GPU_CHECK,		/* nvidia-smi: GPU memory released? */
	TS_RUN_HEAD,		/* docker run of the head */
	TS_GCS_WAIT,		/* ray status until the head's GCS answers */
	TS_RUN_WORKER,		/* docker run of a worker */
	TS_RAY_STATUS,		/* ray status until the cluster is whole */
	TS_VLLM_SERVE,		/* docker exec -d ... vllm serve */
	TS_VLLM_LOG_READY,	/* until vLLM's log says the API started */
	TS_VLLM_HEALTH,		/* GET /health */
	TS_VLLM_MODELS,		/* GET /v1/models */
	TS_VLLM_GENERATE,	/* a one-token completion */
	TS_VLLM_PHASES,		/* grep of vLLM's timed start-up lines */
	TS_LOG_TAIL,		/* side: vLLM's log read for a known failure */
	TS_VLLM_ALIVE,		/* side: is vllm serve still running */
	TS_COUNT
};

#define TRACE_NODE_ALL	((size_t)-1)	/* a step of no single node */
#define TRACE_STEPS_MAX	4096		/* later steps are only counted */

struct trace_step {
	enum trace_kind	 kind;
	size_t		 node;		/* TRACE_NODE_ALL: every node */
	uint64_t	 sent_ms;
	uint64_t	 answer_ms;	/* 0: no answer (yet) */
	uint64_t	 next_ms;	/* next chain step sent; 0: none */
	int		 critical;	/* on the critical path */
};

#define TRACE_PHASES_MAX	128	/* nodes x phases kept */

/* vLLM's own timing of a start-up phase on one node (vllmphases.h). */
struct trace_phase {
	size_t		 node;
	enum vllm_phase	 phase;
	double		 seconds;
};

struct trace {
	uint64_t		 generation;
	uint64_t		 start_ms;
	uint64_t		 end_ms;	/* 0: still running */
	char			 outcome[24];	/* the action it ended in */
	struct trace_step	*steps;
	size_t			 n;
	size_t			 cap;
	size_t			 dropped;	/* past TRACE_STEPS_MAX */
	uint64_t		 overhead_ms;	/* set by trace_end */
	uint64_t		 waiting_ms;	/* critical path on nodes */
	struct trace_phase	 phases[TRACE_PHASES_MAX];
	size_t			 nphases;
};

/* The step durations, one histogram per kind. */
struct trace_hist {
	struct histogram	 h[TS_COUNT];
};

extern const double hist_step_bounds[HIST_BUCKETS];

const char	*trace_kind_name(enum trace_kind);
/* Side steps watch the chain; they never hold it up. */
int		 trace_kind_side(enum trace_kind);

void	 trace_begin(struct trace *, uint64_t generation, uint64_t now_ms);
/* The step's index, for trace_answered; -1 past TRACE_STEPS_MAX. */
long	 trace_sent(struct trace *, enum trace_kind, size_t node,
	    uint64_t now_ms);
/* The duration goes into hist when it is not NULL. */
void	 trace_answered(struct trace *, long idx, uint64_t now_ms,
	    struct trace_hist *hist);
/*
 * The rebuild ended at now_ms: walks the critical path back from the end
 * (at each point, the chain step whose answer came last before it) and
 * sets overhead_ms, waiting_ms, each step's next_ms and critical.
 */
void	 trace_end(struct trace *, const char *outcome, uint64_t now_ms);
void	 trace_free(struct trace *);
/*
 * vLLM said on node that phase took seconds. Its ranks on one node run a
 * phase side by side, and the log is read again and again: the longest
 * is kept.
 */
void	 trace_phase_seen(struct trace *, size_t node, enum vllm_phase,
	    double seconds);
/* Moves src into dst (dst's steps freed); src is empty after. */
void	 trace_move(struct trace *dst, struct trace *src);

/*
 * The /rebuilds/last document. names[i] names node i (nnames of them);
 * times are in ms from the rebuild's start.
 */
json_t	*trace_json(const struct trace *, const char *const *names,
	    size_t nnames);
/*
 * tandem_vllm_startup_phase_seconds of the trace (the longest node's),
 * HELP and TYPE included; nothing when t is NULL or holds no phase.
 */
void	 trace_phases_render(struct sbuf *, const struct trace *);
/* tandem_rebuild_step_seconds, HELP and TYPE included. */
void	 trace_hist_render(struct sbuf *, const struct trace_hist *);

#endif
