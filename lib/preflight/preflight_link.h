/*
 * The preflight's link check (preflight_steps.c's PF_LINK), in its rounds:
 * every node's interface (cmd_link_state, asked with the preflight's first
 * commands); then, when every interface is up with one MTU, a ping of the
 * MTU's size with DF set from every node to every peer; then, where a
 * full-size one got no reply, a 56-byte one, which tells a path that drops
 * large packets (mtu-mismatch) from a peer not reached at all
 * (link-unreachable), and beside it the full-size one again: a packet
 * lost once (a link that just came back) is not a path's MTU, and
 * mtu-mismatch stops the retries. The pings need every node's interface
 * first, so they are handed out as they become due (preflight_more). The
 * verdict is linkcheck_judge's; pure, like the rest of the preflight.
 */
#ifndef TANDEM_PREFLIGHT_LINK_H
#define TANDEM_PREFLIGHT_LINK_H

#include <stddef.h>

#include "config.h"
#include "linkcheck.h"
#include "preflight_cmd.h"
#include "result.h"

/* A ping's tag: PF_LINK_TAG_PING + 3 * peer, + 1 small, + 2 again. */
#define PF_LINK_TAG_PING	0x100

enum link_phase { LK_STATES, LK_BIG, LK_SMALL, LK_DONE };

struct pf_link {
	size_t			 n;
	enum link_phase		 phase;
	size_t			 states;	/* interfaces answered */
	size_t			 owed;		/* pings not answered yet */
	int			 ran;		/* judged, not abandoned */
	struct link_state	*st;		/* per node */
	struct ping_res		*big, *small;	/* [from * n + to] */
	struct ping_res		*again;		/* the full-size one, again */
	struct pf_cmd		*due;		/* for preflight_more */
	size_t			 ndue;
	struct link_finding	 f;
	int			 failed;	/* f is set */
};

void	pflink_init(struct pf_link *, size_t nnodes);
void	pflink_free(struct pf_link *);
/* cmd_link_state's answer on node */
void	pflink_state(struct pf_link *, const struct config *, size_t node,
	    const struct cmd_result *);
/* a ping's answer (tag >= PF_LINK_TAG_PING) from node */
void	pflink_ping(struct pf_link *, const struct config *, size_t node,
	    int tag, const struct cmd_result *);
/* A node could not be asked: the link is not checked this time. */
void	pflink_abandon(struct pf_link *);
/* The commands due since the last call (ownership passes). */
size_t	pflink_more(struct pf_link *, struct pf_cmd **);
/*
 * Once judged (phase LK_DONE and ran): node's result for the preflight's
 * table. ok 0 with the finding's code first in detail ("link-down: ...";
 * could not tell: the finding's message alone), for recovery.c.
 */
void	pflink_result(const struct pf_link *, const struct config *,
	    size_t node, struct pf_result *);

#endif
