/*
 * The cluster runtime's insides, shared by its files and by no one else:
 * cluster.c (the transition funnel, the cron, life cycle), node.c (ssh
 * sessions and the engine's events stream), rebuild.c (the steps of a
 * rebuild and the waits for readiness), probe*.c (the health probes),
 * foreign.c, remedy.c, stop.c, view.c, and state.c (the state dir).
 */
#ifndef CLUSTER_INT_H
#define CLUSTER_INT_H

#include "tandemd.h"
#include "cluster.h"
#include "conffile.h"
#include "plan.h"
#include "recovery.h"
#include "ssh.h"
#include "workload.h"

#define EVENTS_MAX	1000

/*
 * The sub-steps of the actions that have more than one. Each action has its
 * own, all back at their first value when the action changes.
 */
enum teardown_step {
	TEARDOWN_REMOVING,	/* rm -f of every container */
	TEARDOWN_GPU_CHECK,	/* asking whether GPU memory is released */
	TEARDOWN_GPU_HELD,	/* a node answered that it still holds some */
};

enum start_step {
	START_HEAD,		/* docker run of the head */
	START_GCS_WAIT,		/* ray: until the head's GCS answers */
	START_WORKERS,		/* docker run of every worker */
};

enum nodes_step {
	NODES_WAIT,		/* until every session is up and it is time */
	NODES_CHECKING,		/* asking every node's engine */
	NODES_NOT_YET,		/* an engine did not answer this round */
};

/* A probe cycle watches a built cluster, or decides whether to adopt one. */
enum probe_mode { PROBE_WATCH, PROBE_ADOPT };

struct node_rt {
	size_t			 idx;
	const struct node_conf	*conf;
	struct sshc		*ssh;
	struct cluster		*cl;
	int			 reachable;
	int			 fatal;		/* host key / auth: no retry */
	int			 tried;		/* one connect attempt done */
	uint64_t		 next_connect_ms;
	double			 connect_delay_s;
	enum ctr_state		 container;
	char			 cid[80];	/* container we started/adopted */
	char			 dead_id[80];	/* died before run -d answered */
	int			 gpus;		/* -1 unknown */
	int			 events_on;
	uint64_t		 events_retry_ms;
	uint64_t		 events_end_ms;	/* last stream ended; 0 none */
	char			 last_error[256];
	int			 load_image;	/* loading-image: load here */
	char			 load_id[IMAGE_ID_LEN];	/* the archive's */
	struct workloads	 wl;		/* unrelated, last scan */
	int			 wl_known;
};

struct event_rec {
	uint64_t	 seq;
	double		 time;
	char		 from[20];
	char		 to[20];
	char		 action[24];
	char		*reason;	/* its own length: most are far below the cap */
};
#define EVENT_REASON_MAX 300

/* The first failure of a probe cycle: the one reported. */
struct probe_failure {
	const struct diag	*d;	/* NULL: none yet */
	char			 node[64];
	char			 why[300];
};

/*
 * A state file written off the loop thread (state.c): one write at a time,
 * and a newer content replaces one still waiting, since only the last counts.
 */
struct file_writer {
	uv_work_t	 req;
	const char	*dir;
	const char	*name;
	char		*data;		/* being written */
	size_t		 len;
	char		*next;		/* waiting its turn */
	size_t		 nextlen;
	int		 err;		/* errno of a failed write */
};

struct cluster {
	uv_loop_t		*loop;
	struct config		*cf;
	char			*state_dir;
	struct file_writer	 w_state;	/* state.json */
	struct file_writer	 w_events;	/* events.json */
	struct fsm		 fsm;
	double			 since;
	uint64_t		 generation;
	struct node_rt		*nodes;
	size_t			 nnodes;
	uv_timer_t		 cron;
	uint64_t		 epoch;		/* bumped when the action changes */
	uint64_t		 action_ms;	/* when the action began */
	int			 adopted;
	int			 pending;	/* outstanding ops of this step */
	/* sub-steps of the current action; steps_reset when it changes */
	enum teardown_step	 teardown_step;	/* A_TEARDOWN */
	enum start_step		 start_step;	/* A_STARTING_RAY */
	enum nodes_step		 nodes_step;	/* A_WAITING_FOR_NODES */
	enum probe_mode		 probe_mode;	/* of the running probe cycle */
	uint64_t		 next_poll_ms;
	uint64_t		 next_log_ms;
	uint64_t		 next_extend_ms;
	uint64_t		 deadline_ms;
	int			 vllm_log_wait;	/* A_WAITING_VLLM: log awaited */
	uint64_t		 next_fallback_ms; /* its /health meanwhile */

	/* the config's commands, built once (config_loaded, rebuild_plan) */
	uint64_t		 plan_hash;	/* the containers' tandem.plan */
	struct plan		 plan;		/* the rebuild's, for plan_gmu */
	double			 plan_gmu;
	int			 plan_built;

	/* what the probes saw */
	int			 ray_known;
	int			 ray_alive;
	double			 ray_gpus;
	int			 vllm_healthy;
	int			 probe_running;
	struct probe_failure	 first_failure;	/* of the running cycle */
	int			 probe_fails;
	char			 probe_reason[300];
	uint64_t		 next_probe_ms;
	uint64_t		 next_container_probe_ms;
	double			 last_generate;
	int			 generate_ok;

	/* diagnosis */
	const struct diag	*diag;
	char			 diag_msg[600];

	/* recovery */
	int			 attempt;
	double			 next_attempt;
	double			 rebuilds[REBUILDS_HISTORY];	/* start times, ring */
	size_t			 nrebuilds;
	int			 rebuild_open;	/* the last one still runs */
	double			 serving_since;
	double			 degraded_at;
	int			 gmu_step;	/* -1: configured value */

	/* /events */
	struct event_rec	 ev[EVENTS_MAX];
	size_t			 ev_n;
	uint64_t		 ev_seq;

	/* /metrics */
	uint64_t		 rebuilds_total;
	struct fail_count	 failures[32];
	size_t			 nfailures;
	struct histogram	 h_probe[PR_COUNT];
	struct histogram	 h_recover;
	struct trace_hist	 h_step;

	/* GET /rebuilds/last (tracing.c) */
	struct trace		 trace;		/* running; start_ms 0: none */
	struct trace		 trace_last;	/* the last one that ended */
	long			 preflight_step;	/* in trace; -1 none */
	uint64_t		 preflight_trace;	/* that trace's start */

	struct preflight	*preflight;	/* running, before 1st rebuild */
	struct preflight	*preflight_done; /* freed by the next cron */
	int			 preflight_passed;
	/* loading-image: the ID to load ("" any), done once per generation */
	char			 image_ref[IMAGE_ID_LEN];
	int			 image_loaded;
	int			 ssh_remake;	/* ssh.* reloaded, not applied */
	char			*token;		/* api_token_file content */
	int			 once;		/* tandemd --once */
	double			 once_start;
	int			 exit_code;
	int			 stopping;
	int			 ready_sent;
	int			 starts_inflight; /* docker run / exec -d */
	struct stopper		*stopper;	/* waits for them to answer */
};

/* state.c: the state dir, written atomically */
void	 state_load(struct cluster *);
void	 state_save(struct cluster *);
void	 state_save_events(struct cluster *);
void	 state_flush(struct cluster *);

/*
 * vLLM's readiness chain, one stage after another: /health, /v1/models
 * listing the model, a one-token completion. The probe and the wait after a
 * start ask it, each with its own timeouts and its own verdict on an answer.
 */
enum vllm_stage { VLLM_HEALTH, VLLM_MODELS, VLLM_GENERATE };

struct op;
struct http_result;

struct vllm_chain {
	double	 health_max_s;		/* the wait asks /health often */
	double	 generate_min_s;	/* a first completion may be slow */
	/*
	 * ok: the answer passes (200; the model listed; a choice made).
	 * Returns 1 to ask the next stage; 0 when the owner is done with op.
	 */
	int	(*answered)(struct op *o, enum vllm_stage at,
		    const struct http_result *h, int ok);
};

/*
 * One asynchronous operation of the current action. It carries the epoch
 * of the action that started it; claim() drops an answer that comes after
 * the action changed.
 */
struct op {
	struct cluster	*cl;
	const struct vllm_chain	*chain;	/* vllm_chain: whose questions */
	enum vllm_stage	 vllm_stage;	/* vllm_chain: the one asked */
	size_t		 node;
	uint64_t	 epoch;
	void		*ctx;
	uint64_t	 start_ms;
	int		 force_generate;	/* probe_vllm: not only /health */
	int		 vllm_gone;	/* tail_log: pkill -0 found no vllm */
	long		 step;		/* its step in cl->trace; -1 none */
	uint64_t	 trace_ms;	/* that trace's start_ms */
};

/* cluster.c */
void	poll_after(struct cluster *cl, uint64_t ms);
struct op	*op_new(struct cluster *cl, size_t node);
void	steps_reset(struct cluster *cl);
void	config_loaded(struct cluster *cl);
int	claim(struct op *o);
int	is_ray(const struct cluster *cl);
struct node_rt	*head(struct cluster *cl);
void	set_diag(struct cluster *cl, const struct diag *d, const char *node,
	    const char *excerpt);
void	fail_step(struct cluster *cl, enum diag_code, size_t node,
	    const char *excerpt);
void	fail_check(struct cluster *cl, enum fact, enum diag_code,
	    const char *node, const char *excerpt);
void	cron(uv_timer_t *t);
const char	*sname(const struct cluster *cl);
char	*event_reason(const char *);
void	 event_clear(struct event_rec *);
void	record_event(struct cluster *cl, const char *from, const char *to,
	    const char *action, const char *reason);

/* remedy.c */
void	note_rebuild(struct cluster *cl, double t);
void	close_rebuild(struct cluster *cl, enum caction to);
void	count_failure(struct cluster *cl, enum diag_code);
void	lower_gmu(struct cluster *cl, const struct diag *d);
void	schedule_backoff(struct cluster *cl);

/* node.c */
int	node_exec(struct cluster *cl, size_t node, const char *cmd,
	    double timeout_s, ssh_exec_fn *done);
/* node_exec, traced as a step of the running rebuild */
int	node_exec_step(struct cluster *cl, size_t node, const char *cmd,
	    double timeout_s, ssh_exec_fn *done, enum trace_kind k);
int	all_reachable(const struct cluster *cl);
void	tend_connections(struct cluster *cl);
void	node_missing(struct cluster *cl, size_t node, const char *why);
void	check_engines(struct cluster *cl);
struct sshc	*new_session(struct cluster *cl, struct node_rt *n);
void	make_nodes(struct cluster *cl);
void	free_nodes(struct cluster *cl);
const char	*first_line(const char *s, char *buf, size_t len);
const char	*last_line(const char *s, char *buf, size_t len);

/* rebuild.c */
void	start_teardown(struct cluster *cl);
void	gpu_check(struct cluster *cl);
void	start_head(struct cluster *cl);
void	start_vllm(struct cluster *cl);
void	poll_ray(struct cluster *cl);
void	poll_vllm(struct cluster *cl);
void	wait_vllm_log(struct cluster *cl);
void	watch_vllm_start(struct cluster *cl);

/* probe.c */
void	observe(struct cluster *cl, enum probe_kind k, struct op *o);
void	probe_cycle(struct cluster *cl, enum probe_mode mode);
void	probe_done(struct cluster *cl, const struct diag *, const char *node,
	    const char *why);

/* probe_container.c */
void	probe_containers(struct cluster *cl);

/* probe_ray.c */
int	ray_complete(struct cluster *cl, const struct ssh_result *r, char *why,
	    size_t whylen);
int	ray_extra(struct cluster *cl, char *why, size_t whylen);
void	probe_ray(struct cluster *cl);

/* probe_vllm.c */
void	vllm_chain(struct op *o, const struct vllm_chain *c);
void	probe_vllm(struct cluster *cl, int force_generate);

/* tracing.c: the running rebuild's trace */
void	trace_open(struct cluster *cl);
void	trace_close(struct cluster *cl, const char *outcome);
void	step_sent(struct cluster *cl, struct op *o, enum trace_kind k);
void	step_answered(struct cluster *cl, struct op *o);
void	preflight_sent(struct cluster *cl);
void	preflight_answered(struct cluster *cl);

/* foreign.c */
void	scan_foreign(struct cluster *cl, const char *excerpt);

/* imageload.c */
int	image_load_wanted(struct cluster *cl, const struct preflight *pf);
void	start_image_load(struct cluster *cl);
int	image_load_retry(struct cluster *cl, size_t node, const struct diag *d,
	    const char *excerpt);
/* workload.c */
void	workloads_seen(struct cluster *cl, size_t node,
	    const struct workloads *wl);
void	workloads_explain(const struct cluster *cl, enum diag_code code,
	    char *msg, size_t len);
void	stop_foreign(struct cluster *cl);
int	workload_pid(const struct node_rt *n, long pid);
int	gpu_held_by_us(const struct node_rt *n, const char *out, char *line,
	    size_t len);

/* stop.c */
void	start_answered(struct cluster *cl);

#endif
