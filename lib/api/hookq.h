/*
 * hooks.on_state (tandem.json(5)): what the operator's command is told of
 * a change of state, and the queue of changes waiting for it. No I/O:
 * daemon/hooks.c runs the command. At most one runs at a time; changes
 * that come meanwhile wait here, HOOKQ_MAX at most. When the queue is
 * full a new change is folded into the newest waiting one (its NEW state
 * and details become the new change's, its OLD state stays), so the
 * command always learns where the cluster went, and TANDEM_COALESCED says
 * how many changes it did not see one by one.
 */
#ifndef TANDEM_HOOKQ_H
#define TANDEM_HOOKQ_H

#include <stddef.h>

#include "util.h"

#define HOOKQ_MAX	16

struct hook_event {
	char			 cluster[64];
	char			 old_state[16];
	char			 new_state[16];
	char			 action[24];
	char			 diagnosis[48];		/* its code; "" none */
	char			 message[1024];		/* the diagnosis' */
	char			 reason[400];		/* the transition's */
	unsigned long long	 generation;
	double			 time;			/* Unix seconds */
	unsigned		 coalesced;	/* changes folded into it */
	/* hooks.on_change: a change's verdict, not a change of state */
	int			 change;
	char			 result[16];	/* refused, applied, rolled-back */
	char			 from[20];	/* the configs' plan checksums */
	char			 to[20];
};

struct hookq {
	struct hook_event	 ev[HOOKQ_MAX];
	size_t			 head;	/* the oldest */
	size_t			 n;
	unsigned long long	 coalesced_total;
};

/* Fills e from its parts; NULL strings are empty. */
void	hook_event_set(struct hook_event *e, const char *cluster,
	    const char *old_state, const char *new_state, const char *action,
	    const char *diagnosis, const char *message, const char *reason,
	    unsigned long long generation, double time);
/*
 * hooks.on_change: the verdict on a change of what the containers run
 * (result refused, applied or rolled-back; from and to the configs'
 * checksums; reason why), as /status's change object says it.
 */
void	hook_change_set(struct hook_event *e, const char *cluster,
	    const char *result, const char *from, const char *to,
	    const char *reason, unsigned long long generation, double time);
/* Queues e; a full queue folds it into the newest waiting change. */
void	hookq_push(struct hookq *, const struct hook_event *e);
/* The oldest waiting change into out: 1, or 0 when none waits. */
int	hookq_pop(struct hookq *, struct hook_event *out);
/*
 * The command's environment: env (the daemon's own, NULL-terminated)
 * without any TANDEM_* of it, then TANDEM_CLUSTER, TANDEM_OLD_STATE,
 * TANDEM_NEW_STATE, TANDEM_ACTION, TANDEM_DIAGNOSIS,
 * TANDEM_DIAGNOSIS_MESSAGE, TANDEM_REASON, TANDEM_GENERATION, TANDEM_TIME
 * and TANDEM_COALESCED. For a change's verdict (hook_change_set):
 * TANDEM_CLUSTER, TANDEM_CHANGE_RESULT, TANDEM_CHANGE_FROM,
 * TANDEM_CHANGE_TO, TANDEM_CHANGE_REASON, TANDEM_GENERATION, TANDEM_TIME
 * and TANDEM_COALESCED. out.v is NULL-terminated, as execve wants.
 */
void	hook_env(const struct hook_event *e, char *const *env,
	    struct strv *out);

#endif
