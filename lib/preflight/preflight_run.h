/*
 * The preflight's driver, once for whoever runs it: tandemd's teardown
 * before a rebuild and the recheck while the retries are stopped (their
 * probe, daemon/cluster/act/probe_preflight.c), the check of a change
 * (daemon/cluster/change.c) and tandemctl check (daemon/ctl/check.c). Each
 * hands over how it sends a command (its own sessions, its own owner of
 * ops) and feeds the answers back; the driver asks preflight_steps.c what to
 * send, and answers a command that cannot be sent as its node's session
 * being down, so that the preflight still completes.
 */
#ifndef TANDEM_PREFLIGHT_RUN_H
#define TANDEM_PREFLIGHT_RUN_H

#include <stddef.h>

#include "preflight.h"

/* Sends c on its node (c->node); -1 when the node's session is down. */
typedef int	pf_send_fn(void *ctx, const struct pf_cmd *c);

struct pf_runner {
	struct preflight	*pf;
	pf_send_fn		*send;
	void			*ctx;
};

/*
 * The node's first commands, sent; a node whose session is not up is
 * told down (why: the SSH layer's or the runner's words) instead.
 */
void	preflight_run_node(const struct pf_runner *, size_t node, int up,
	    const char *why);
/* What the answers so far made due (the link check's pings), sent. */
void	preflight_run_more(const struct pf_runner *);
/* An answer to the command tag on node, and what it made due, sent. */
void	preflight_run_answer(const struct pf_runner *, size_t node, int tag,
	    const struct cmd_result *);

#endif
