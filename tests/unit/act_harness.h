/*
 * The actions' unit tests (issue 30): each action of daemon/cluster/act/ runs
 * as in tandemd, against a fake executor instead of the nodes' SSH
 * sessions and libcurl, and a clock the test moves. The test answers each
 * command or request the action sent, in any order, with recorded texts
 * (tests/unit/data/), failures and timeouts; the reports go through the
 * real machine (lib/policy/fsm.c), so a report that changes the action begins the
 * next one, as funnel.c does. The runtime's services are the real ones
 * (a fresh state dir per test); what the harness stands in for (the
 * executor, the funnel, node.c's logins; its own clock and log) is in
 * act_harness.c.
 */
#ifndef ACT_HARNESS_H
#define ACT_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cluster_int.h"

#define H_MAX_ASKED	256
#define H_MAX_REPORTS	32

/* One command or request an action sent, not answered yet. */
struct asked {
	int		 http;
	size_t		 node;
	char		*cmd;		/* or the URL */
	char		*body;
	double		 timeout_s;
	cmd_done_fn	*done;
	http_done_fn	*hdone;
	void		*arg;
	int		 answered;
};

struct harness {
	struct cluster	*cl;
	struct config	*cf;		/* the test's config (cl's) */
	struct asked	 asked[H_MAX_ASKED];
	size_t		 nasked;
	int		 down[64];	/* node's session down */
	/* node.c's logins for the recheck: begun, and refused again */
	int		 logins[64];
	int		 refused[64];
	struct report	 reports[H_MAX_REPORTS];
	char		*texts[H_MAX_REPORTS];
	size_t		 nreports;	/* verdicts: events, failures, facts */
	size_t		 nnotes;	/* notes and what was seen */
	char		 last_diag[64];	/* set_diag's code */
	char		 events[4096];	/* h_events' text */
	char		 state_dir[64];	/* the cluster's, a fresh temp dir */
	int		 starts_answered;
};

extern struct harness	 H;
extern uint64_t		 h_now_ms;	/* the fake monotonic clock */
extern double		 h_wall_s;	/* the fake wall clock */

/* A cluster of the config's JSON text, every node's session up. */
void		 h_setup(const char *config_json);
/* The same with a config file (etc/tandem.json, etc/tandem-dp.json). */
void		 h_setup_file(const char *path);
void		 h_teardown(void);
/* The machine is in state/action now, and the action begins. */
void		 h_enter(enum cstate, enum caction);
/* Both clocks move; the action's tick runs as the cron would run it. */
void		 h_tick(uint64_t ms);

/* The next unanswered request whose command (or URL) holds needle on node
 * (NO_NODE: any); fails the test when there is none. */
struct asked	*h_find(size_t node, const char *needle);
/* How many unanswered requests hold needle. */
size_t		 h_count(const char *needle);
void		 h_answer(struct asked *, int exit_code, const char *out,
		    const char *err);
/* The transport's failure (a timeout, a dropped channel). */
void		 h_fail(struct asked *, const char *error);
void		 h_http(struct asked *, long status, const char *body);
/* libcurl's timeout: no answer within the request's timeout_s. */
void		 h_http_timeout(struct asked *);
/* Answers every unanswered request holding needle the same way. */
void		 h_answer_all(const char *needle, int exit_code, const char *out,
		    const char *err);
/* A recorded text of tests/unit/data/ (a file the test frees). */
char		*h_data(const char *path);

/* Where the machine is after the reports so far. */
enum caction	 h_action(void);
int		 h_halted(void);
enum cstate	 h_state(void);

/*
 * What the runtime shows the actions now, through act_env.h as tandemd
 * fills it (runtime_env.c): a preflight passed since the start; the
 * adoption decided; the remedy's gmu step; node's view.
 */
int		 h_preflight_passed(void);
int		 h_adopted(void);
int		 h_gmu_step(void);
struct act_node	 h_node(size_t node);
/* loading-image's work as the preflight left it (act_node's load_here,
   act_view's image_ref); the tandem.plan label adoption compares. */
int		 h_load_here(size_t node);
int		 h_image_ref(struct image_ident *);
uint64_t	 h_plan_hash(void);
/* The running action (NULL: none). */
struct action	*h_act(void);
/* What the runtime kept of what the actions saw (REPORT_SEEN). */
const struct seen *h_seen(void);

/*
 * The runtime as a test has it before the action begins: h_setup's
 * cluster has a preflight passed, the adoption done, the configured gmu
 * (-1) and every session up; h_stopped_on: the retries stopped on code,
 * its node named (NULL: none).
 */
void		 h_set_preflight_passed(int passed);
void		 h_set_adopted(int adopted);
void		 h_set_gmu_step(int step);
void		 h_set_reachable(size_t node, int up);
void		 h_stopped_on(enum diag_code, const char *node);
/* The preflight left node to load ref's build (PFW_LOAD). */
void		 h_set_image_load(size_t node, const struct image_ident *ref);
/* An event from outside the actions (an operator's rebuild): the
   machine steps, a new action begins as funnel.c's funnel begins it;
   0: the machine refused it. */
int		 h_event(enum event);

/*
 * The state dir's files as state.c wrote them (the writes in flight
 * waited for): name's JSON (NULL: none), whether it is there; name
 * removed; j written as name, as a restart finds it.
 */
json_t		*h_state_json(const char *name);
int		 h_state_has(const char *name);
void		 h_state_remove(const char *name);
void		 h_state_put(const char *name, json_t *j);
/* state.c's and evidence.c's writes in flight end (libuv's pool). */
void		 h_drain(void);

/* The reasons of the events history.c recorded, one a line. */
const char	*h_events(void);

/* The last report, and whether one of its kind came. */
const struct report *h_last(void);
int		 h_reported(enum report_kind, int ev_or_diag);

#endif
