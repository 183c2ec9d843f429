/*
 * The cluster state machine of PRODUCT.md section 3, as a pure function:
 * (state, action) + event -> (state, action). The daemon starts the work an
 * action names when the machine enters it, and feeds back events; nothing
 * here does I/O.
 */
#ifndef TANDEM_FSM_H
#define TANDEM_FSM_H

enum cstate {
	ST_ABSENT,
	ST_UP,		/* "ray-up", or "nodes-up" in topology dp */
	ST_SERVING,
	ST_DEGRADED,
};

enum caction {
	A_IDLE,
	A_WAITING_FOR_NODES,
	A_BACKOFF,
	A_TEARDOWN,
	A_LOADING_IMAGE,	/* docker load of the image archive, then teardown */
	A_STARTING_RAY,
	A_WAITING_RAY,
	A_STARTING_VLLM,
	A_WAITING_VLLM,
	A_PAUSED,
};

enum event {
	EV_ADOPT_HEALTHY,	/* at start: everything already serves */
	EV_ADOPT_PARTIAL,	/* at start: anything less -> rebuild */
	EV_NODES_MISSING,	/* a node stopped answering */
	EV_NODES_BACK,		/* every node answers, engine included */
	EV_LOAD_IMAGE,		/* preflight: a node lacks the image, has its archive */
	EV_IMAGE_LOADED,	/* every such node loaded it: on with the teardown */
	EV_TEARDOWN_DONE,	/* containers gone, GPU memory released */
	EV_CONTAINERS_UP,	/* head and every worker container started */
	EV_RAY_READY,		/* ray status: expect_nodes and expect_gpus */
	EV_VLLM_STARTED,	/* vllm serve launched in the head container */
	EV_VLLM_READY,		/* /health, /v1/models and a completion OK */
	EV_CHECK_FAILED,	/* a probe of a built cluster failed */
	EV_STEP_FAILED,		/* a rebuild step failed; retry after backoff */
	EV_FATAL,		/* a retry cannot fix it: stop retrying */
	EV_BACKOFF_DONE,
	EV_REBUILD,		/* operator: POST /rebuild, SIGHUP with changes */
	EV_PAUSE,
	EV_RESUME,
	/*
	 * Stopped: the read-only check of what stopped the retries passes
	 * now (act_recheck.c): rebuild, as POST /rebuild would.
	 */
	EV_RECHECK_CLEARED,
};

/*
 * What the daemon saw. Which event it means depends on what the machine is
 * doing, so fsm_decide says, not the daemon.
 */
enum fact {
	FACT_CHECK_FAILED,	/* a probe cycle failed enough times */
	FACT_CONTAINER_DIED,	/* the events stream: our container died */
	FACT_NODE_LOST,		/* a node's SSH session went down */
	FACT_SSH_REFUSED,	/* host key or authentication: no retry */
};

struct fsm {
	enum cstate	 state;
	enum caction	 action;
	int		 halted;	/* after EV_FATAL, until EV_REBUILD */
	int		 dp;		/* topology dp: no Ray steps */
};

void		 fsm_init(struct fsm *, int dp);
/* The topology changed (a reload): dp has no Ray steps. */
void		 fsm_set_dp(struct fsm *, int dp);
/* The event a fact means now; 0 when it means none. */
int		 fsm_decide(const struct fsm *, enum fact, enum event *ev);
/* Applies ev; returns 1 when state, action or halted changed. */
int		 fsm_step(struct fsm *, enum event ev);
/* Whether entering this action begins a rebuild (generation + 1). */
int		 fsm_starts_rebuild(enum caction from, enum caction to);

const char	*state_name(enum cstate, int dp);
const char	*action_name(enum caction);
const char	*event_name(enum event);

#endif
