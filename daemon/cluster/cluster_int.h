/*
 * The cluster runtime's insides, shared by its files and by no one else:
 * reload.c (a new config read and sorted, above the funnel), funnel.c (the
 * funnel into the machine, the cron, life cycle), action_run.c (the
 * actions' life), runtime_env.c (what they see), node.c (the SSH sessions,
 * the engine's events stream, the executor's transport), keys.c, view.c,
 * change.c, and svc/'s services. The actions and the executor (act/:
 * act_*.c, probe_*.c, action_calls.c, foreign.c, op.c) see none of it. What lies
 * below the funnel tells it through hooks it sets (cl->report, the
 * executor's sent and answered, change_init's apply and rollback), never
 * by calling up.
 */
#ifndef CLUSTER_INT_H
#define CLUSTER_INT_H

#include "act_env.h"
#include "action.h"
#include "budget.h"
#include "bundle.h"
#include "cluster.h"
#include "config.h"
#include "http.h"
#include "hwfault.h"
#include "log.h"
#include "notify.h"
#include "plan.h"
#include "preflight.h"
#include "preflight_run.h"
#include "recovery.h"
#include "ssh.h"
#include "vllmapi.h"
#include "stall.h"
#include "workload.h"

#define EVENTS_MAX	1000

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
	struct workloads	 wl;		/* unrelated, last scan */
	int			 wl_known;
	struct hw_finding	 hw_warn;	/* gpu-ecc, npu-health; cls OK: none */
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
	uint64_t	 written;	/* writes that reached the disk */
};

/*
 * /events: the ring of transitions (history.c holds it, state.c writes it
 * to events.json).
 */
struct history {
	struct event_rec	 ev[EVENTS_MAX];
	size_t			 n;
	uint64_t		 seq;
	struct file_writer	 w;		/* events.json */
};

/*
 * What the probes and the waits saw last (/status, /metrics), as the
 * actions reported it (runtime_env.c). What the probes remember from one
 * action to the next is struct probe_memory (act_env.h), cl->probe.
 */
struct seen {
	int		 ray_known;
	int		 ray_alive;
	double		 ray_gpus;
	int		 vllm_healthy;
	/* gen_endpoint_name of the one that proved generation; NULL none */
	const char	*gen_endpoint;
	/*
	 * Ray's ports as the fast link sees them (lib/parse/raysec.c, act_watch.c):
	 * the ray-unauthenticated warning ("": none).
	 */
	char		 rayx_node[64];
	char		 rayx_msg[500];
};

/*
 * Recovery's bookkeeping (remedy.c): every time on the monotonic clock,
 * so that a step of the wall clock moves no backoff, no hourly cap and no
 * generation check.
 */
struct recovery_rt {
	int		 attempt;
	uint64_t	 next_attempt_ms;
	double		 rebuilds[REBUILDS_HISTORY];	/* start times (s), ring */
	size_t		 nrebuilds;
	int		 rebuild_open;	/* the last one still runs */
	uint64_t	 serving_since_ms;
	uint64_t	 degraded_at_ms;
	int		 gmu_step;	/* -1: configured value */
};

/* /metrics' counters. */
struct counters {
	uint64_t		 rebuilds_total;
	struct fail_count	 failures[32];
	size_t			 nfailures;
	struct histogram	 h_probe[PR_COUNT];
	struct histogram	 h_recover;
	struct trace_hist	 h_step;
	uint64_t		 stalls_total;	/* generation-stalled degrades */
	/* the last load of the config (start or reload): Prometheus' names */
	int			 reload_ok;
	double			 reload_ok_at;	/* wall clock of the last good one */
	struct xid_count	 xid[XID_COUNTS_MAX];	/* each line once */
	size_t			 nxid;
};

/*
 * The nodes' GPU faults (hwcheck.c): read by the preflight and after every
 * failure, before a retry. Each node's cursor, by name (a reload keeps
 * it): its kernel log is read from since on, and the lines already
 * counted are in seen.
 */
struct hw_cursor {
	char		 node[64];
	double		 since;		/* wall clock: the kernel log's */
	double		 asked;		/* when the last read was sent */
	struct xid_seen	 seen;
};

struct hw_answers;

struct hwcheck {
	struct owner		 own;	/* the read after a failure */
	struct hw_answers	*at;	/* its answers, per node, while it runs */
	size_t			 nat;
	struct hw_cursor	*cur;
	size_t			 ncur;
};

/*
 * The evidence bundle (evidence.c): the nodes' answers collected when the
 * retries stop, the tar written off the loop thread.
 */
struct evidence {
	struct owner		 own;		/* the questions to the nodes */
	struct bundle_plan	 plan;		/* what they are */
	struct bundle		 b;		/* the answers so far */
	char			 why[300];	/* what stopped the retries */
	char			*(*status)(struct cluster *);	/* GET /status */
	int			 writing;	/* the tar is being written */
	uv_work_t		 req;
	struct sbuf		 tar;
	char			 name[BUNDLE_NAME_MAX];
	char			 err[200];
	char			 latest[BUNDLE_NAME_MAX];	/* "": none */
};

/* The config's commands, built once (config_loaded, cluster_plan). */
struct plan_cache {
	uint64_t	 hash;		/* the containers' tandem.plan */
	struct plan	 plan;		/* the rebuild's, for gmu */
	double		 gmu;
	int		 built;
	/* each node's RDMA as the last preflight found it (NULL: none
	   yet): its NCCL_IB_GID_INDEX and NCCL_IB_HCA (issue 47) */
	struct rdma_state *rdma;
	/* told each build: change.c's change_built (change_init sets it),
	   what last-good.json may record; NULL: nobody asks */
	void		(*on_built)(struct cluster *);
};

/* tandemd --once */
struct once {
	int		 on;
	uint64_t	 start_ms;
	int		 exit_code;
};

/*
 * A change of what the containers run (change.c, issue 46): checked on
 * every node while the old cluster serves, then switched to or refused.
 */
enum change_phase {
	CH_NONE,	/* no change since start */
	CH_CHECKING,
	CH_SWITCHING,
	CH_REFUSED,
	CH_APPLIED,
	CH_ROLLED_BACK,	/* the last good config runs; the file's did not serve */
};

struct change_rt {
	struct owner		 own;		/* the check's questions */
	/*
	 * The runtime's side, given by change_init (funnel.c's
	 * cluster_apply_change and cluster_rollback_to): a checked config,
	 * or the last good one, replaces the running one as a reload does.
	 */
	void			(*apply)(struct cluster *, struct config *nc,
				    char *key);
	int			(*rollback_to)(struct cluster *,
				    struct config *nc, char *err,
				    size_t errlen);
	struct preflight	*pf;
	struct pf_runner	 run;		/* pf's driver, on own */
	struct config		*next;		/* checked; applied if it passes */
	char			*next_key;	/* its vLLM API key */
	enum change_phase	 phase;
	char			 result[16];	/* applied, refused, superseded */
	uint64_t		 from_gen;
	int			 attempt0;	/* recovery's failures before the switch */
	char			 from[20];	/* plan_hash of each, in hex */
	char			 to[20];
	double			 at;		/* wall clock: the phase began */
	char			 reason[600];
	char			 fix[400];
	uint64_t		 reloads;	/* reloads handled */
	uint64_t		 reload_of;	/* the reload that began it */
	uint64_t		 applied;	/* tandem_config_changes_total */
	uint64_t		 refused;
	uint64_t		 rolled_back;
	char			 bad_file[20];	/* its text's hash: rolled back */
	char			 built[20];	/* plan_hash of what was built */
	struct config		*start_cf;	/* restart: last good, not file */
	int			 rolling;	/* the rollback's own rebuild */
	int			 no_rollback;	/* the good config did not parse */
	int			 keep_failed;	/* tandemctl apply --no-rollback */
	char			*own_path;	/* tandemd's own config file */
	/*
	 * The last config that reached serving (the state dir's
	 * last-good.json): its text, plan checksum, the generation that
	 * served it, and when (wall clock) it began and last served.
	 */
	char			*good_text;	/* NULL: none yet */
	char			 good_sum[20];
	uint64_t		 good_gen;
	double			 good_since;
	double			 good_last;
	struct file_writer	 w_good;
	struct file_writer	 w_change;	/* change.json: the phase */
};

/*
 * A part of state.json that another file keeps (state_add_part): its key,
 * its value as JSON, and the value read back at start (an object).
 */
struct state_part {
	const char	*key;
	json_t		*(*save)(const struct cluster *);
	void		 (*load)(struct cluster *, json_t *);
};
#define STATE_PARTS_MAX	4

struct cluster {
	uv_loop_t		*loop;
	struct config		*cf;
	char			*state_dir;
	struct file_writer	 w_state;	/* state.json */
	const struct state_part	*parts[STATE_PARTS_MAX];	/* hwcheck.c's */
	size_t			 nparts;
	struct fsm		 fsm;
	double			 since;		/* wall clock: for people */
	uint64_t		 generation;
	struct node_rt		*nodes;
	size_t			 nnodes;
	/* where ops go; the registry of the standing owners (bg, hw, ev,
	   chg) and the starts in flight (op.c's) */
	struct exec		 exec;
	struct act_env		 env;		/* what actions see (runtime_env.c) */
	/* the funnel's one door for what is below it (node.c, hwcheck.c):
	 * cluster_report, set by cluster_new */
	void			(*report)(struct cluster *,
				    const struct report *);
	uv_timer_t		 cron;
	struct action		*act;		/* the machine's current one */
	struct action		*dead;		/* ended, freed by the cron */
	struct owner		 bg;		/* ops of no action: scans */
	struct hwcheck		 hw;		/* GPU faults after a failure */
	struct evidence		 ev;		/* the bundle when retries stop */
	int			 adopted;
	struct plan_cache	 plan;
	struct seen		 seen;
	struct probe_memory	 probe;		/* the actions' (act_env.h) */
	const struct diag	*diag;
	char			 diag_msg[600];
	char			 diag_node[64];	/* the diagnosis's node; "" */
	struct recovery_rt	 rec;
	struct history		 hist;
	struct counters		 cnt;
	struct trace		 trace;		/* running; start_ms 0: none */
	struct trace		 trace_last;	/* the last one that ended */
	int			 preflight_passed;
	/* loading-image: the image to load (none: any), once per generation */
	struct image_ident	 image_ref;
	int			 image_ref_set;
	int			 image_loaded;
	int			 ssh_remake;	/* ssh.* reloaded, not applied */
	char			*token;		/* api_token_file content */
	char			*vllm_key_file;	/* vllm.api_key_file's key */
	struct once		 once;
	int			 stopping;
	/* waits for the starts in flight (exec.starts_inflight) */
	struct stopper		*stopper;
	struct change_rt	 chg;
};

/* state.c: the state dir, written atomically */
void	 state_load(struct cluster *);
void	 state_load_remedy(struct cluster *);
void	 state_save(struct cluster *);
/* Before state_load: p is saved in state.json with it, and loaded back. */
void	 state_add_part(struct cluster *, const struct state_part *p);
/* One file of the state dir, written atomically off the loop (takes
 * data); its owner (history.c, change.c) says what is in it. */
void	 state_write(struct cluster *, struct file_writer *, const char *name,
	    char *data, size_t len);
/* One file of the state dir, parsed; NULL: none (one that does not parse
 * is moved aside with a warning). */
json_t	*state_read(struct cluster *, const char *name);
/* A write in flight or waiting. */
int	 state_writing(const struct cluster *);
/* change.json (change.c's): takes data */
void	 state_save_change(struct cluster *, char *data);
/* last-good.json: the last config that served (change.c); takes data */
void	 state_save_good(struct cluster *, char *data);

/* runtime_env.c: act_env.h filled from the cluster; what actions saw */
void	runtime_env_init(struct cluster *cl);
void	runtime_env_apply(struct cluster *cl, const struct report *r);

/* funnel.c: the funnel (the actions' through act_env's report) */
void	cluster_report(struct cluster *, const struct report *);

/* keys.c: vLLM's API key and tandemd's API token, read from their files */
/* vLLM's API key for /v1 (config or vllm.api_key_file); NULL: none. */
char	*cluster_vllm_key(const struct cluster *cl);
/* vllm.api_key_file's key into *key (NULL: none); -1 (err) unreadable. */
int	keys_vllm_read(const struct config *cf, char **key, char *err,
	    size_t len);
/* The key read is the cluster's now (takes key). */
void	keys_vllm_set(struct cluster *cl, char *key);
/* api_token_file's token, or NULL with a warning: POSTs answer 403. */
char	*keys_read_token(const char *path);
/* nc runs now: its api_token_file's token is the one POSTs need. */
void	keys_token_take(struct cluster *cl, const struct config *nc);

/* funnel.c */
/* cl->cf is new: what was built from the old one goes. */
void	cluster_config_loaded(struct cluster *cl);
/* systemd's status line and the log's context: state, action, generation. */
void	cluster_notify(struct cluster *cl);
/* New nodes or commands: fresh sessions, then a rebuild (takes nc). */
void	cluster_rebuild_for(struct cluster *cl, struct config *nc);
/* New ssh.* settings: new sessions, at once or once the rebuild ends. */
void	cluster_remake_sessions(struct cluster *cl);
/* The rebuild's commands, for the gmu in force (built once per change). */
const struct plan	*cluster_plan(struct cluster *cl);
/* What a passed preflight found of each node's RDMA, for cluster_plan. */
void			 cluster_rdma_seen(struct cluster *,
			    const struct preflight *);
/*
 * A fact about the nodes: a built cluster's check failed (an action), a
 * container died, a session was lost or refused (node.c, a REPORT_CHECK
 * through cl->report): the machine says what it means.
 */
void	cluster_fact(struct cluster *cl, enum fact, enum diag_code,
	    const char *node, const char *excerpt);
void	cluster_cron(uv_timer_t *t);

/* history.c: the ring of events (/events, events.json) */
void	 history_record(struct cluster *cl, const char *from, const char *to,
	    const char *action, const char *reason);
const struct event_rec *history_at(const struct history *, uint64_t seq);
json_t	*history_event_json(const struct event_rec *);
/* An entry that changes neither state nor action: a remedy, a fault. */
void	 history_note(struct cluster *cl, const char *reason);
/* events.json read at start: its events back into the ring. */
void	 history_restore(struct cluster *cl);
void	 history_free(struct cluster *cl);

/* remedy.c */
void	remedy_note_rebuild(struct cluster *cl);
void	remedy_close_rebuild(struct cluster *cl, enum caction to);
void	remedy_count_failure(struct cluster *cl, enum diag_code);
void	remedy_lower_gmu(struct cluster *cl, const struct diag *d);
/* The backoff's next attempt, within the hourly cap: its delay in ms. */
uint64_t	remedy_schedule_backoff(struct cluster *cl);

/* node.c */
int	node_all_reachable(const struct cluster *cl);
void	node_tend_connections(struct cluster *cl);
/* The node's session finds out it is gone too (the step saw it first). */
void	node_missing(struct cluster *cl, size_t node, const char *why);
struct sshc	*node_new_session(struct cluster *cl, struct node_rt *n);
void	node_make_all(struct cluster *cl);
void	node_free_all(struct cluster *cl);
/*
 * The one way the nodes' sessions are made again, after what was asked on
 * the old ones is cancelled (owners_cancel OWNERS_SESSIONS): fresh, the
 * node table built anew from cl->cf (other nodes or commands); otherwise
 * each node keeps what it knows and gets a new session (new ssh.*). Each
 * new session connects.
 */
void	node_sessions_renew(struct cluster *cl, int fresh);
void	node_exec_init(struct cluster *cl);

/* probe_container.c, probe_ray.c, probe_vllm.c: the questions and verdicts */

/* tracing.c: the running rebuild's trace */
void	tracing_rebuild_begins(struct cluster *cl);
void	tracing_rebuild_ends(struct cluster *cl, const char *outcome);
/* the executor's hooks' form (op.h): arg is the cluster */
void	tracing_step_sent(void *arg, struct op *o, enum trace_kind k);
void	tracing_step_answered(void *arg, struct op *o);


/* workload.c; its ops are the background owner's (cl->bg), answered here */
enum { BG_SCAN, BG_STOP };
void	workload_bg_answered(struct owner *w, struct op *o,
	    const struct answer *a);
void	workload_seen(struct cluster *cl, size_t node,
	    const struct workloads *wl);
void	workload_explain(const struct cluster *cl, enum diag_code code,
	    char *msg, size_t len);
void	workload_scan(struct cluster *cl);
void	workload_stop_foreign(struct cluster *cl);
int	workload_has_pid(const struct node_rt *n, long pid);

/* hwcheck.c: the nodes' GPU faults (Xid, ECC; Ascend's health) */
void	hw_init(struct cluster *cl);
void	hw_free(struct cluster *cl);
/* A failure with this diagnosis: read every node before the retry. */
void	hw_after_failure(struct cluster *cl, enum diag_code);
/* The read after a failure still runs: a retry waits for it. */
int	hw_busy(const struct cluster *cl);
/* Where the node's kernel log is to be read from (the preflight's too). */
double	hw_klog_since(struct cluster *cl, size_t node);
/* The preflight's answers: counted, noted, warned, the cursors moved. */
void	hw_preflight_seen(struct cluster *cl, const struct preflight *pf);
/* tandemctl resume: what the logs said until now is dealt with. */
void	hw_resume(struct cluster *cl);

/* evidence.c: the bundle kept when the retries stop */
void	evidence_init(struct cluster *cl, char *(*status)(struct cluster *));
void	evidence_free(struct cluster *cl);
void	evidence_collect(struct cluster *cl, const char *why);
int	evidence_writing(const struct cluster *cl);
/* A GPU fault read or the bundle's questions still run: a retry and a
 * teardown wait. */
int	evidence_gathering(const struct cluster *cl);
/* lib/policy/budget.c's summary of the last hour, with the newest bundle. */
void	cluster_budget(const struct cluster *cl, struct budget_summary *);

/*
 * node.c's part of act_env.h, set after runtime_env_init: for the
 * recheck of ssh-auth and host-key (act_recheck.c), a fresh login to a
 * node that is not up (its session's refusal forgotten; the host key
 * checked against known_hosts as always). Whether one is under way and
 * why the last one failed the action reads in its node view
 * (runtime_env.c's, from the session and node_rt's fatal, last_error).
 */
void	 node_env_init(struct cluster *);

/* change.c: a change of what the containers run, checked first */
/* change.json's and /status' name of a phase. */
const char	*change_phase_name(enum change_phase p);
/* At start: last-good.json and change.json (a switch that was running). */
void	change_load(struct cluster *cl);
void	change_init(struct cluster *cl,
	    void (*apply)(struct cluster *, struct config *, char *),
	    int (*rollback_to)(struct cluster *, struct config *, char *,
	    size_t));
void	change_free(struct cluster *cl);
/* Whether the reload from old to nc is checked before it applies. */
int	change_guarded(const struct cluster *cl, const struct config *old,
	    const struct config *nc);
/* Checks nc (and owns it and key): applied by cluster_apply_change. */
void	change_check(struct cluster *cl, struct config *nc, char *key);
/* A newer reload came: the running check's config goes. */
void	change_supersede(struct cluster *cl);
/* The rebuild for a change began (checked or not). */
void	change_switching(struct cluster *cl, const struct config *old,
	    const struct config *nc);
/*
 * At start, after state_load: the last good config when change.json says
 * the file's text was rolled back and the file still holds it (NULL:
 * the file's). The caller owns it.
 */
struct config *change_start_config(struct cluster *cl);
/* The start's commands were built from cl->cf (cluster_plan). */
void	change_built(struct cluster *cl);
/* From the cron: a switch that serves is applied. */
void	change_tick(struct cluster *cl);
/*
 * The state entered or left serving (or tandemd stops while serving):
 * the running config is the last that served, as of now (one that left
 * serving only if it is the one that served: a reload's rebuild swapped
 * the config before the state left).
 */
void	change_served(struct cluster *cl);
/*
 * A reload of the file that still holds the config rolled back: nothing to
 * do, the last good one stays (1).
 */
int	change_still_rolled_back(const struct cluster *cl,
	    const struct config *nc);
/* funnel.c: a checked config replaces the running one, as a reload does */
void	cluster_apply_change(struct cluster *cl, struct config *nc, char *key);
/* The same for the last good config; -1 (err) when its key cannot be read. */
int	cluster_rollback_to(struct cluster *cl, struct config *nc, char *err,
	    size_t errlen);

/* stop.c: an op answered; a container start's ends a stop's wait */
void	stop_op_answered(struct cluster *cl, const struct op *o);

#endif
