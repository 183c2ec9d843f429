#include "fsm.h"

void
fsm_init(struct fsm *f, int dp)
{
	f->state = ST_ABSENT;
	f->action = A_IDLE;
	f->halted = 0;
	f->dp = dp;
}

void
fsm_set_dp(struct fsm *f, int dp)
{
	f->dp = dp;
}

/* A check failing takes a built cluster to degraded; absent stays absent. */
static enum cstate
broken(enum cstate s)
{
	return s == ST_ABSENT ? ST_ABSENT : ST_DEGRADED;
}

static int
building(enum caction a)
{
	return a == A_TEARDOWN || a == A_LOADING_IMAGE || a == A_STARTING_RAY ||
	    a == A_WAITING_RAY || a == A_STARTING_VLLM || a == A_WAITING_VLLM;
}

int
fsm_step(struct fsm *f, enum event ev)
{
	enum cstate s = f->state;
	enum caction a = f->action;
	int was_halted = f->halted;

	if (f->action == A_PAUSED) {
		/* Paused: state still follows what probes see; nothing acts. */
		switch (ev) {
		case EV_RESUME:
			a = s == ST_SERVING ? A_IDLE : A_TEARDOWN;
			f->halted = 0;
			break;
		case EV_CHECK_FAILED:
		case EV_NODES_MISSING:
			s = broken(s);
			break;
		case EV_ADOPT_HEALTHY:
			s = ST_SERVING;
			break;
		default:
			break;
		}
		goto out;
	}
	switch (ev) {
	case EV_PAUSE:
		a = A_PAUSED;
		break;
	case EV_RESUME:
		break;
	case EV_REBUILD:
		/* Tearing down on purpose: no longer serving from here on. */
		f->halted = 0;
		s = broken(s);
		a = A_TEARDOWN;
		break;
	case EV_ADOPT_HEALTHY:
		if (a == A_IDLE) {
			s = ST_SERVING;
		}
		break;
	case EV_ADOPT_PARTIAL:
		if (a == A_IDLE && !f->halted)
			a = A_TEARDOWN;
		break;
	case EV_NODES_MISSING:
		s = broken(s);
		if (!f->halted)
			a = A_WAITING_FOR_NODES;
		break;
	case EV_NODES_BACK:
		if (a == A_WAITING_FOR_NODES)
			a = A_TEARDOWN;
		break;
	case EV_LOAD_IMAGE:
		if (a == A_TEARDOWN)
			a = A_LOADING_IMAGE;
		break;
	case EV_IMAGE_LOADED:
		if (a == A_LOADING_IMAGE)
			a = A_TEARDOWN;
		break;
	case EV_TEARDOWN_DONE:
		if (a == A_TEARDOWN) {
			s = ST_ABSENT;
			a = A_STARTING_RAY;
		}
		break;
	case EV_CONTAINERS_UP:
		if (a == A_STARTING_RAY) {
			/* dp: the containers run the engines themselves */
			if (f->dp) {
				s = ST_UP;
				a = A_WAITING_VLLM;
			} else
				a = A_WAITING_RAY;
		}
		break;
	case EV_RAY_READY:
		if (a == A_WAITING_RAY) {
			s = ST_UP;
			a = A_STARTING_VLLM;
		}
		break;
	case EV_VLLM_STARTED:
		if (a == A_STARTING_VLLM)
			a = A_WAITING_VLLM;
		break;
	case EV_VLLM_READY:
		if (a == A_WAITING_VLLM) {
			s = ST_SERVING;
			a = A_IDLE;
		}
		break;
	case EV_CHECK_FAILED:
		/* Rebuild at once: every failure rebuilds all nodes together. */
		if (s == ST_SERVING || s == ST_UP || s == ST_DEGRADED) {
			s = broken(s);
			if (!f->halted && (a == A_IDLE || building(a)))
				a = A_TEARDOWN;
		}
		break;
	case EV_STEP_FAILED:
		if (building(a) || a == A_IDLE) {
			s = broken(s);
			a = A_BACKOFF;
		}
		break;
	case EV_FATAL:
		s = broken(s);
		f->halted = 1;
		a = A_IDLE;
		break;
	case EV_BACKOFF_DONE:
		if (a == A_BACKOFF)
			a = A_TEARDOWN;
		break;
	case EV_RECHECK_CLEARED:
		/* only a stopped cluster rechecks; anything else moved on */
		if (f->halted && a == A_IDLE) {
			f->halted = 0;
			s = broken(s);
			a = A_TEARDOWN;
		}
		break;
	}
out:
	/* halted alone changes too: a stop while idle begins the recheck */
	if (s == f->state && a == f->action && f->halted == was_halted)
		return 0;
	f->state = s;
	f->action = a;
	return 1;
}

int
fsm_decide(const struct fsm *f, enum fact fact, enum event *ev)
{
	enum caction a = f->action;

	switch (fact) {
	case FACT_CHECK_FAILED:
		/* a check that fails under a rebuild step fails the step */
		*ev = a == A_IDLE || a == A_PAUSED ? EV_CHECK_FAILED :
		    EV_STEP_FAILED;
		return 1;
	case FACT_CONTAINER_DIED:
		/* a teardown removes them on purpose; nothing runs to die */
		if (a == A_IDLE || a == A_PAUSED) {
			*ev = EV_CHECK_FAILED;
			return f->state != ST_ABSENT;
		}
		/* before the teardown, old containers may still die */
		*ev = EV_STEP_FAILED;
		return building(a) && a != A_TEARDOWN && a != A_LOADING_IMAGE;
	case FACT_NODE_LOST:
		/* already waiting: the machine knows */
		*ev = EV_NODES_MISSING;
		return a != A_WAITING_FOR_NODES;
	case FACT_SSH_REFUSED:
		*ev = EV_FATAL;
		return 1;
	}
	return 0;
}

int
fsm_starts_rebuild(enum caction from, enum caction to)
{
	/* the load runs inside a rebuild and hands back to its teardown */
	return to == A_TEARDOWN && from != A_TEARDOWN &&
	    from != A_LOADING_IMAGE;
}

const char *
state_name(enum cstate s, int dp)
{
	switch (s) {
	case ST_ABSENT:		return "absent";
	case ST_UP:		return dp ? "nodes-up" : "ray-up";
	case ST_SERVING:	return "serving";
	case ST_DEGRADED:	return "degraded";
	}
	return "?";
}

const char *
action_name(enum caction a)
{
	switch (a) {
	case A_IDLE:			return "idle";
	case A_WAITING_FOR_NODES:	return "waiting-for-nodes";
	case A_BACKOFF:			return "backoff";
	case A_TEARDOWN:		return "teardown";
	case A_LOADING_IMAGE:		return "loading-image";
	case A_STARTING_RAY:		return "starting-ray";
	case A_WAITING_RAY:		return "waiting-ray";
	case A_STARTING_VLLM:		return "starting-vllm";
	case A_WAITING_VLLM:		return "waiting-vllm";
	case A_PAUSED:			return "paused";
	}
	return "?";
}

const char *
event_name(enum event e)
{
	switch (e) {
	case EV_ADOPT_HEALTHY:	return "adopt-healthy";
	case EV_ADOPT_PARTIAL:	return "adopt-partial";
	case EV_NODES_MISSING:	return "nodes-missing";
	case EV_NODES_BACK:	return "nodes-back";
	case EV_LOAD_IMAGE:	return "load-image";
	case EV_IMAGE_LOADED:	return "image-loaded";
	case EV_TEARDOWN_DONE:	return "teardown-done";
	case EV_CONTAINERS_UP:	return "containers-up";
	case EV_RAY_READY:	return "ray-ready";
	case EV_VLLM_STARTED:	return "vllm-started";
	case EV_VLLM_READY:	return "vllm-ready";
	case EV_CHECK_FAILED:	return "check-failed";
	case EV_STEP_FAILED:	return "step-failed";
	case EV_FATAL:		return "fatal";
	case EV_BACKOFF_DONE:	return "backoff-done";
	case EV_REBUILD:	return "rebuild";
	case EV_PAUSE:		return "pause";
	case EV_RESUME:		return "resume";
	case EV_RECHECK_CLEARED: return "recheck-cleared";
	}
	return "?";
}
