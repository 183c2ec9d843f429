/*
 * While the retries are stopped (PRODUCT.md section 3, rule 4): which
 * read-only check can see each stopping diagnosis go away, and what a
 * recheck's answers say. The checks are the preflight's own
 * (preflight_new_only): the same commands and verdicts that found the
 * fault, none of which starts a container or changes a node. SSH's
 * refusals are asked again by a fresh login (the host key verified as
 * always); a fatal Xid by the node's boot id, which a reboot changes. A
 * diagnosis no such check can see (a Gloo fallback, vLLM's findings)
 * keeps waiting for the operator. Nothing here does I/O.
 */
#ifndef TANDEM_RECHECK_H
#define TANDEM_RECHECK_H

#include <stddef.h>

#include "diagnose.h"
#include "preflight.h"

/* The recheck's questions (enum pf_ask); 0: no preflight check sees it. */
unsigned	 recheck_asks(enum diag_code);

enum recheck_kind {
	RK_NONE,	/* nothing read-only sees it: the operator */
	RK_PREFLIGHT,	/* the preflight's checks of recheck_asks */
	RK_LOGIN,	/* a fresh SSH login to the nodes it refused */
	RK_BOOT,	/* the node's boot id: a reboot clears a fatal Xid */
};
enum recheck_kind recheck_kind(enum diag_code);
/* The checks asked, for people: "link", "image", "ssh login", ... */
const char	*recheck_what(enum diag_code);

/*
 * The boot id in cmd_boot_id's answer (lib/plan/plan.h): a UUID (36 characters, hex and dashes),
 * copied to id (len >= 37). -1: not one, so the node could not tell.
 */
int		 recheck_boot_id(const char *out, char *id, size_t len);

enum recheck_verdict {
	RCV_CLEARED,	/* every check asked passed on every node */
	RCV_STILL,	/* a check failed with a cause it names */
	RCV_UNTOLD,	/* a node could not be asked, or could not tell */
};

/*
 * The complete preflight's verdict. STILL and UNTOLD: the first node and
 * check that failed, nodes and checks in order, its diagnosis, and its
 * finding ("CHECK: detail", no fix) in finding.
 */
enum recheck_verdict recheck_judge(const struct preflight *, size_t *node,
		    enum diag_code *, char *finding, size_t len);

#endif
