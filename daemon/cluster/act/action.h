/*
 * What the machine does, as objects (issue 30; relayd's hce.c, tmux's
 * job.c). lib/policy/fsm.c says which action the cluster is in: teardown,
 * waiting-ray, ... Each action kind is one file act_*.c with one struct
 * action_ops, and action_run.c's table maps the machine's enum caction to it.
 * While the machine is in an action, one struct action of that kind lives
 * (cl->act): its enter starts work, answered takes each answer, tick runs
 * from the cron, free releases what it holds.
 *
 * An action owns the operations it starts (op.c: SSH commands, HTTP
 * requests). When the machine leaves the action they are cancelled with
 * it: an answer that comes later is dropped by op.c and freed there, and
 * no one else ever sees it. No callback frees an op.
 *
 * An action says what happened through one call, action_report (action.c),
 * which goes through its act_env's report to the machine (cluster.c,
 * lib/policy/fsm.c); the shorthands below all
 * go through it. Reporting may end the action there and then: a report is
 * the last thing an enter, answered or tick does. The action's memory
 * stays until the cron's next run (action_reap), so the frames still on
 * the stack may return through it.
 */
#ifndef TANDEM_ACTION_H
#define TANDEM_ACTION_H

#include <sys/queue.h>
#include <stddef.h>
#include <stdint.h>

#include "diagnose.h"
#include "fsm.h"
#include "op.h"

struct cluster;

/* No node: an answer or a report about the whole cluster. */
#define NO_NODE		((size_t)-1)

/*
 * Tags every owner may use besides its own (which are below TAG_SHARED):
 * vLLM's readiness chain (TAG_VLLM + enum vllm_stage) and the foreign
 * container scan.
 */
enum {
	TAG_SHARED = 0x100,
	TAG_VLLM = TAG_SHARED,		/* + enum vllm_stage */
	TAG_FOREIGN = TAG_SHARED + 0x10,
};

struct action;

struct action_ops {
	size_t	 size;		/* of the kind's struct, which begins with
				   a struct action */
	void	(*enter)(struct action *);
	void	(*answered)(struct action *, struct op *,
		    const struct answer *);
	void	(*tick)(struct action *, uint64_t now);	/* NULL: none */
	void	(*free)(struct action *);		/* NULL: nothing */
};

struct act_env;

struct action {
	struct owner		 own;	/* first: an op's owner is its action */
	const struct action_ops	*ops;
	const struct act_env	*env;	/* what it sees, how it reports */
	struct cluster		*cl;
	enum caction		 id;
	int			 dead;		/* ended, awaiting the reap */
	struct action		*next_dead;
	uint64_t		 began_ms;
	/* when it wants its next tick (the cron's sleep); UINT64_MAX: none */
	uint64_t		 wake_ms;
	/* it only waits for the next probe: the cron may sleep up to 1 s */
	int			 quiet;
	uint64_t		 deadline_ms;	/* of its wait, if it has one */
	int			 pending;	/* answers its step awaits */
};

/* The kinds (act_*.c). */
extern const struct action_ops	act_watch;	/* idle, paused */
extern const struct action_ops	act_recheck;	/* idle while halted */
extern const struct action_ops	act_wait_nodes;
extern const struct action_ops	act_backoff;
extern const struct action_ops	act_teardown;
extern const struct action_ops	act_load_image;
extern const struct action_ops	act_start;	/* starting-ray */
extern const struct action_ops	act_start_vllm;
extern const struct action_ops	act_wait_ray;
extern const struct action_ops	act_wait_vllm;

/* action_run.c: the runtime's side */
/* halted: the retries are stopped, and idle is the recheck */
const struct action_ops	*action_kind(enum caction, int halted);
/* The machine entered another action: the old one ends, the new enters. */
void	action_begin(struct cluster *);
/*
 * The action ends: its ops cancelled, its memory on the dead list for
 * action_reap. The caller sets cl->act anew (action_begin) or to NULL
 * (cluster_free, at exit).
 */
void	action_end(struct action *);
/* Frees the ended actions, once nothing on the stack holds them. */
void	action_reap(struct cluster *);
/* action.c */
/* The next tick in ms (no later than the cron's own). */
void	action_wake(struct action *, uint64_t ms);
/* A repeated question's next time: ms after the last one was sent. */
uint64_t action_repoll_ms(uint64_t sent_ms, uint64_t every_ms);

/* What an action reports: the one funnel into the machine. */
enum report_kind {
	REPORT_EVENT,		/* ev happened; text: the reason */
	REPORT_FAILED,		/* the step failed: diag at node, text the
				   excerpt; retried or fatal as diag says */
	REPORT_NODE_LOST,	/* node does not answer: waited for */
	REPORT_CHECK,		/* a check of a built cluster failed: fact */
	REPORT_NOTE,		/* diag said meanwhile, at node (if any): no
				   step of the machine */
	REPORT_NODE_ERROR,	/* text: node's last error ("": none) */
	REPORT_SEEN,		/* what a probe saw: ray, or ctr at node */
	REPORT_TIMED,		/* a probe's answer took took_s (probe:
				   enum probe_kind), for /metrics */
	REPORT_PREFLIGHT,	/* what the preflight pf found, for the
				   runtime to keep: pf_what says which */
	REPORT_ADOPTED,		/* the adoption at start is decided */
	REPORT_STALLED,		/* a generation stall began (counted once) */
};

/* REPORT_PREFLIGHT: which of the preflight's findings the runtime keeps. */
enum pf_what {
	PFW_FOUND,	/* the nodes' workloads and GPU faults (any verdict) */
	PFW_RDMA,	/* it passed: each node's RDMA, for the plan */
	PFW_LOAD,	/* it wants the image loaded: which nodes, which build */
	PFW_PASSED,	/* it passed: the later rebuilds check the link only */
	PFW_LOADING,	/* loading-image began (pf NULL): once a generation */
	PFW_AGAIN,	/* the image vanished (pf NULL): the next try runs the
			   whole preflight, which finds what to load */
};

struct preflight;

struct ray_seen;
struct ctr_seen;
struct vllm_seen;
struct rayx_seen;

struct report {
	enum report_kind	 kind;
	enum event		 ev;
	enum fact		 fact;
	enum diag_code		 diag;
	size_t			 node;
	const char		*text;
	const struct ray_seen	*ray;	/* REPORT_SEEN */
	const struct ctr_seen	*ctr;
	const struct vllm_seen	*vllm;
	const struct rayx_seen	*rayx;
	int			 probe;	/* REPORT_TIMED */
	double			 took_s;
	const struct preflight	*pf;	/* REPORT_PREFLIGHT */
	enum pf_what		 pf_what;
};

void	action_report(struct action *, const struct report *);
void	action_event(struct action *, enum event, const char *reason);
void	action_fail(struct action *, enum diag_code, size_t node,
	    const char *excerpt);
void	action_lost(struct action *, size_t node, const char *why);
void	action_check(struct action *, enum fact, enum diag_code,
	    size_t node, const char *excerpt);
/*
 * A command that failed: the node lost, its output's signature (a node
 * with an image archive retries once for a missing image), else fallback
 * with the exit code and the first line. A fallback of
 * DIAG_UNRECOGNISED_ANSWER (the failure says nothing tandem knows) quotes
 * what was asked (cmd, shortened) and says it could not tell.
 */
void	action_fail_output(struct action *, size_t node, const char *cmd,
	    const struct cmd_result *, enum diag_code fallback);

#endif
