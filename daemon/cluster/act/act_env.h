/*
 * What an action sees of the runtime (issue 44): the config, a read-only
 * view of the nodes, one snapshot of the runtime's state (struct
 * act_view), the rebuild's plan, the one report back, and the few calls
 * that do something, all through one struct act_env the runtime fills
 * (runtime_env.c, which the actions' unit tests link too:
 * tests/unit/act_harness.c sets only the executor, the funnel's door and
 * node.c's login). A step (act_*.c) includes this, action.h,
 * act_types.h and lib/config/'s headers only; a probe (probe_*.c) reads
 * a tool's output with lib/'s parsers and policies and returns what it
 * saw through the structs declared here.
 * Neither includes cluster_int.h (tests/lint/actions checks both): what an
 * action finds out goes back through the one report function, and the
 * runtime applies it.
 */
#ifndef TANDEM_ACT_ENV_H
#define TANDEM_ACT_ENV_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "act_types.h"
#include "action.h"
#include "config.h"
#include "log.h"		/* the log, and mono_ms: the monotonic clock */
#include "plan.h"
#include "preflight.h"
#include "stall.h"
#include "vllmapi.h"

/*
 * What an action may read of a node (node.c's node_rt, copied), taken
 * where it is read: the session's login as the recheck of ssh-auth and
 * host-key polls it, and loading-image's work as the preflight left it.
 */
struct act_node {
	const struct node_conf	*conf;
	int			 reachable;	/* its session is up */
	int			 tried;		/* one connect attempt done */
	enum ctr_state		 container;
	const char		*cid;		/* container started/adopted */
	const char		*last_error;
	int			 logging_in;	/* a login is under way */
	/* why the last login failed; refused: SSH refused it, as against
	   no answer */
	const char		*login_failed;
	int			 refused;
	int			 load_here;	/* loading-image loads here */
};

/*
 * What an action may read of the runtime, in one snapshot (view): taken
 * where it is read, never kept from one tick or answer to the next.
 */
struct act_view {
	enum cstate		 state;		/* the machine's */
	int			 halted;	/* the retries are stopped */
	/* the adoption at start is decided (REPORT_ADOPTED since) */
	int			 adopted;
	/* the GPU fault read or the evidence still runs: a retry waits */
	int			 gathering;
	/* the backoff waits for the hour (recovery.max_rebuilds_per_hour),
	   and the rebuilds of the last hour it counts (remedy.c) */
	int			 capped;
	int			 rebuilds_last_hour;
	/* the diagnosis in force (the one the retries stopped on), NULL;
	   the index of its node, NO_NODE when none */
	const struct diag	*diag;
	size_t			 diag_node;
	int			 gmu_step;	/* the ladder's; -1: configured */
	/* a preflight passed since the start (later rebuilds: link only) */
	int			 preflight_passed;
	int			 image_loaded;	/* once this generation */
	uint64_t		 plan_hash;	/* the tandem.plan label */
	/* the other nodes' build loading-image loads (NULL: none, any) */
	const struct image_ident *image_ref;
};

/* What Ray's status showed (probe_ray.c), for /status and /metrics. */
struct ray_seen {
	int	 known;		/* 0: no answer, or one it could not read */
	int	 alive;
	double	 gpus;
};

/* What docker inspect showed of a node's container (probe_container.c). */
struct ctr_seen {
	int		 known;		/* 0: the answer said nothing of it */
	enum ctr_state	 state;
	char		 cid[80];	/* running: its ID ("": none) */
	/* docker run answered with cid: the events stream may have seen it
	   die first (the runtime then keeps CTR_EXITED) */
	int		 started;
	/* teardown removed it: its IDs are forgotten */
	int		 removed;
};

/* What vLLM's readiness chain showed (probe_vllm.c), for /status. */
struct vllm_seen {
	int		 healthy;	/* -1: keep the last */
	const char	*gen_endpoint;	/* NULL: keep the last */
};

/* Ray's ports as the fast link sees them: the warning ("": none). */
struct rayx_seen {
	const char	*node;
	const char	*msg;
};

/*
 * What the probes remember from one action to the next. The runtime keeps
 * it (cl->probe) and only the actions touch it, except that a container's
 * event asks for the next inspect at once (node.c).
 */
struct probe_memory {
	/* the container probe's next inspect (the events stream's net) */
	uint64_t		 next_inspect_ms;
	/*
	 * vLLM's own counters (GET /metrics), reading after reading
	 * (lib/policy/stall.c), on the monotonic clock in seconds; and when
	 * the running probe cycle began: a reading from then on vouches for
	 * a completion that timed out behind real traffic.
	 */
	struct stall_state	 stall;
	uint64_t		 cycle_ms;
	int			 metrics_unread;	/* said once until read */
	uint64_t		 next_rayx_ms;	/* the next look at Ray's ports */
	uint64_t		 generate_ms;	/* the last one-token completion */
	int			 generate_ok;
};

struct act_env {
	void	*ctx;			/* the runtime's: every call's first */
	/* The config in force (a reload replaces it); not const only for
	   lib/preflight, which keeps a reference of it (config_ref). */
	struct config *(*config)(void *ctx);
	/* Node i as the runtime knows it now. */
	void	(*node)(void *ctx, size_t i, struct act_node *);
	/* The runtime's state now (struct act_view). */
	void	(*view)(void *ctx, struct act_view *);
	/* The rebuild's commands, for the gmu in force (the runtime's own). */
	const struct plan *(*plan)(void *ctx);
	/*
	 * The one way back: verdicts, notes, facts and what was seen
	 * (action.h's struct report). Reporting may end the action.
	 */
	void	(*report)(void *ctx, const struct action *from,
		    const struct report *);
	/* The action's next tick is due in ms: the cron runs no later. */
	void	(*wake)(void *ctx, uint64_t ms);
	/* The probes' memory (struct probe_memory). */
	struct probe_memory *(*memory)(void *ctx);
	/* vLLM's API key for /v1 (a new string); NULL: none. */
	char	*(*vllm_key)(void *ctx);
	/* backoff: the next attempt scheduled, its delay in ms within the
	   hourly cap (remedy.c); the evidence kept with why. */
	uint64_t (*backoff_ms)(void *ctx);
	void	(*keep_evidence)(void *ctx, const char *why);
	/* Serving long enough: the failures before are forgiven
	   (lib/policy/recovery.c's recovery_attempts_reset). */
	void	(*serving_tick)(void *ctx, uint64_t now);
	/* For the recheck of ssh-auth and host-key (node.c): a fresh login
	   to a node that is not up (act_node's logging_in, login_failed). */
	void	(*login_again)(void *ctx, size_t node);
	/* Where node's kernel log is to be read from (hwcheck.c), the
	   cursor's time of asking set. */
	double	(*hw_since)(void *ctx, size_t node);
	/* The running rebuild's trace (tracing.c): vLLM's start phase seen
	   on node; o's step sent (o->step, trace_ms set), and answered. */
	struct act_trace {
		void	(*phase_seen)(void *ctx, size_t node, int phase,
			    double seconds);
		void	(*step_sent)(void *ctx, struct op *o,
			    enum trace_kind);
		void	(*step_answered)(void *ctx, struct op *o);
	} trace;
	/* The unrelated workloads (workload.c): the scan on every node;
	   those flagged to stop, stopped; whether pid on node is one of
	   them (not tandem's memory). */
	struct act_workloads {
		void	(*scan)(void *ctx);
		void	(*stop_foreign)(void *ctx);
		int	(*has_pid)(void *ctx, size_t node, long pid);
	} workloads;
};

/* The shorthands every action uses. */
const struct config	*act_cf(const struct action *);
/* The same, for preflight_new*, which keeps a reference (config_ref). */
struct config		*act_cf_shared(const struct action *);
size_t			 act_nnodes(const struct action *);
void			 act_node(const struct action *, size_t i,
			    struct act_node *);
/* The runtime's state now: read it where it is used. */
void			 act_view(const struct action *, struct act_view *);
/* Whether every node's session is up; node's (op.c's executor). */
int			 act_all_reachable(const struct action *);
int			 act_node_up(const struct action *, size_t node);
/* REPORT_NOTE: d said meanwhile (node: NO_NODE for none). */
void			 act_note(struct action *, enum diag_code,
			    size_t node, const char *excerpt);
/* REPORT_NODE_ERROR: node's last error ("": none). */
void			 act_node_error(struct action *, size_t node,
			    const char *text);

/* REPORT_PREFLIGHT: what of pf the runtime keeps. */
void	act_preflight(struct action *, const struct preflight *,
	    enum pf_what);

/* REPORT_TIMED: how long o, a probe of kind k, took to answer. */
void	act_timed(struct action *, enum probe_kind k, const struct op *o);
/*
 * probe_container.c: docker inspect's answer on node judged (adopt: a
 * container of another config is not ours), seen filled; NULL when the
 * container runs, else the diagnosis and why.
 */
const struct diag *inspect_verdict(const struct config *, size_t node,
	    uint64_t plan_hash, const struct cmd_result *, int adopt,
	    struct ctr_seen *seen, char *why, size_t len);

/* probe_ray.c: Ray's status on the head read, seen filled. */
int	ray_complete(const struct config *, const struct cmd_result *,
	    struct ray_seen *seen, char *why, size_t whylen);
/* After ray_complete said no: it could not tell rather than heard. */
int	ray_untold(const struct ray_seen *, const struct cmd_result *);
/* Ray shows more nodes than tandem runs: one it did not start. */
int	ray_extra(const struct ray_seen *, size_t nnodes, char *why,
	    size_t whylen);
/*
 * probe_ray.c: Ray's ports as the fast link sees them (lib/parse/raysec.c):
 * the first worker's look at the head's address and the head's own at
 * 127.0.0.1, asked with tags worker_tag and head_tag (none: no worker);
 * an answer read (0: no look, the last word stands); both in, judged.
 */
struct ray_probe;
struct rayx_look {
	size_t			 worker;	/* the node that looks */
	struct ray_probe	*seen;		/* the worker's, the head's */
};
void	ray_ports_ask(struct action *, struct rayx_look *, int worker_tag,
	    int head_tag);
int	ray_ports_read(const struct action *, struct rayx_look *,
	    const struct op *, const struct cmd_result *, int head);
void	ray_ports_judge(const struct action *, const struct rayx_look *,
	    struct rayx_seen *, char *msg, size_t len);
void	ray_ports_free(struct rayx_look *);
/* REPORT_SEEN: what Ray's status showed, for the runtime to keep. */
void	act_ray_seen(struct action *, const struct ray_seen *);
/* REPORT_SEEN: what vLLM's chain showed; Ray's ports' warning. */
void	act_vllm_seen(struct action *, const struct vllm_seen *);
void	act_rayx_seen(struct action *, const struct rayx_seen *);
/* REPORT_SEEN: what a node's container is, for the runtime to keep. */
void	act_ctr_seen(struct action *, size_t node, const struct ctr_seen *);

/* act_recheck.c: /status's recovery.awaiting while it runs */
json_t	*recheck_awaiting_json(const struct action *);

/*
 * probe_vllm.c: vLLM's readiness chain, one stage after another: /health,
 * /v1/models listing the model, a one-token completion. The probe and the
 * wait after a start each ask it with their own timeouts and their own
 * verdicts on an answer; the answer comes back with tag TAG_VLLM + stage.
 */
enum vllm_stage { VLLM_HEALTH, VLLM_MODELS, VLLM_GENERATE };

struct vllm_limits {
	double	 health_max_s;		/* the wait asks /health often */
	double	 generate_min_s;	/* a first completion may be slow */
};

void	vllm_ask(struct action *, enum vllm_stage, const struct vllm_limits *);
/* Whether h passes the stage: 200; the model listed; a choice made. */
int	vllm_passes(const struct config *, enum vllm_stage,
	    const struct http_result *h);
/*
 * The one-token completion's answer judged (lib/parse/vllmapi.c): GEN_OK
 * (VLLM_GEN_ENDPOINT proved generation); GEN_ERROR, vLLM's error or no
 * answer; GEN_UNKNOWN, an answer tandem does not know (why: what was
 * asked, what came back, "could not tell").
 */
enum gen_verdict vllm_gen_judge(const struct config *,
	    const struct http_result *, char *why, size_t len);
#define VLLM_GEN_ENDPOINT	gen_endpoint_name(GEN_COMPLETIONS)
/*
 * vLLM refused who asks or what for (lib/vllmapi.h): 401, an API key
 * tandem lacks (vllm-unauthorized); a model list without tandem's name,
 * or 404 for it (vllm-model-name). The diagnosis with why, or NULL.
 */
const struct diag *vllm_refused(struct action *, enum vllm_stage,
	    const struct http_result *h, char *why, size_t len);
/*
 * The probe's verdict on a stage's answer: 1 to ask the next stage; else
 * 0, with *d the first stage that failed names the cycle's fault, or NULL
 * when vLLM passed. A completion is asked only every generate_every_s, or
 * when force (adoption).
 */
int	vllm_probe_verdict(struct action *, const struct op *o,
	    const struct http_result *h, int force, const struct diag **d,
	    char *why, size_t len);
/* GET /metrics beside the chain; its verdict: a stall, or NULL. */
void	vllm_ask_metrics(struct action *, int tag);
const struct diag *vllm_metrics_verdict(struct action *,
	    const struct http_result *h, char *why, size_t len);

/* foreign.c: who runs a Ray node we did not start (wait-ray, the probe) */
struct foreign_scan {
	int		 running;
	int		 pending;
	struct sbuf	 found;
	char		 excerpt[300];
};
void	foreign_scan(struct action *, struct foreign_scan *,
	    const char *excerpt);
void	foreign_answer(struct action *, struct foreign_scan *,
	    const struct op *, const struct cmd_result *);
void	foreign_free(struct foreign_scan *);

/*
 * probe_preflight.c: the preflight the teardown asks (link_only: the fast
 * link's check alone; else every check, with free memory for the
 * gpu_memory_utilization the start will ask), and any preflight asked on
 * the nodes' own sessions as a's ops (hw: each node's kernel log read from
 * the runtime's cursor) and answered; both return whether pf is complete.
 */
struct preflight *probe_preflight_new(struct action *, int link_only);
int	probe_preflight_ask(struct action *, struct preflight *, int hw);
int	probe_preflight_answer(struct action *, struct preflight *,
	    const struct op *, const struct cmd_result *);

/*
 * probe_recheck.c: the read-only check that can see a stopping diagnosis
 * go (lib/preflight/recheck.c), asked on a's ops, and what it saw.
 */
struct recheck_seen {
	int	 passed;	/* every check asked passed on every node */
	int	 untold;	/* else: a node could not be asked or tell */
	size_t	 node;		/* the finding's; NO_NODE: none */
	char	 finding[400];	/* "CHECK: detail" */
};
struct probe_recheck;
/*
 * NULL: no read-only check sees d. *what: the check, for people;
 * *cause_seen: the stop itself saw the cause (SSH refused the login, the
 * kernel log held the Xid).
 */
struct probe_recheck *probe_recheck_new(struct action *, enum diag_code d,
	    const char **what, int *cause_seen);
/* The check asked (again); 1 when it saw at once, seen filled. */
int	probe_recheck_ask(struct probe_recheck *, struct recheck_seen *);
/* The fresh logins polled (the action's wake_ms set while they run). */
int	probe_recheck_tick(struct probe_recheck *, uint64_t now,
	    struct recheck_seen *);
/* An answer; 1 when it completed the check, seen filled. */
int	probe_recheck_answer(struct probe_recheck *, const struct op *,
	    const struct answer *, struct recheck_seen *);
void	probe_recheck_free(struct probe_recheck *);

/*
 * probe_vllm_log.c: vLLM's log as the wait after a start reads it. The
 * failure it names (lib/policy/vllmdiag.c), or NULL; its timed start-up
 * lines on node, into the rebuild's trace.
 */
const struct diag *vllm_log_failure(const struct action *, const char *log,
	    char *excerpt, size_t len);
void	vllm_phases_read(const struct action *, size_t node, const char *out);
/*
 * Its wait for a placement group (lib/policy/pgwait.c), judged with the
 * latest ray status (asked with tag on a sign): the diagnosis and why, or
 * NULL while nothing is decided.
 */
struct raystatus;
struct pg_watch {
	uint64_t		 first_ms;	/* the first sign; 0: none */
	struct raystatus	*rs;		/* the latest ray status, or NULL */
	int			 asking;
};
const struct diag *vllm_pg_check(struct action *, struct pg_watch *,
	    const char *log, int tag, char *why, size_t len);
void	vllm_pg_ray_answered(const struct action *, struct pg_watch *,
	    const struct cmd_result *);
void	vllm_pg_free(struct pg_watch *);

/*
 * probe_cycle.c: a probe cycle's results. The first failure is the one
 * reported; failed cycles in a row degrade past probe.failures_to_degrade
 * (lib/policy/recovery.c's hysteresis).
 */
struct probe_cycle {
	const struct diag	*d;		/* the first failure; NULL: none */
	size_t			 node;
	char			 why[300];
	int			 answered;	/* a failure was an answer */
	int			 fails;		/* failed cycles in a row */
};
/* A new cycle: its results forgotten, the failures in a row kept. */
void	probe_cycle_begin(struct probe_cycle *);
/* unanswered: the failure is that no answer came (a timeout). */
void	probe_cycle_add(struct probe_cycle *, const struct diag *,
	    size_t node, const char *why, int unanswered);
/* The cycle ends: its failure counted (none: the row starts over); 1
   when the failures in a row degrade the cluster. */
int	probe_cycle_degrades(struct probe_cycle *, const struct config *);

#endif
