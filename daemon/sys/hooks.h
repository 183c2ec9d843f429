/*
 * hooks.on_state: the operator's command on every change of the
 * cluster's state, as keepalived's notify scripts (tandem.json(5));
 * hooks.on_change: on every verdict on a change of config.
 */
#ifndef TANDEM_HOOKS_H
#define TANDEM_HOOKS_H

#include <uv.h>

#include "config.h"

/*
 * A change of state from old_state to new_state: queued for the command
 * of cf's hooks.on_state (nothing when it has none), which runs once the
 * previous one ended. Never blocks: the command is spawned on loop and
 * reaped there. diagnosis and message may be NULL.
 */
void	hooks_on_state(uv_loop_t *loop, const struct config *cf,
	    const char *old_state, const char *new_state, const char *action,
	    const char *diagnosis, const char *message, const char *reason,
	    unsigned long long generation);
/*
 * The verdict on a change of what the containers run (result refused,
 * applied or rolled-back; from and to the configs' checksums), for cf's
 * hooks.on_change, queued and run as hooks_on_state's.
 */
void	hooks_on_change(uv_loop_t *loop, const struct config *cf,
	    const char *result, const char *from, const char *to,
	    const char *reason, unsigned long long generation);

#endif
