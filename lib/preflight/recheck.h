/*
 * While the retries are stopped (PRODUCT.md section 3, rule 4): which
 * read-only check can see each stopping diagnosis go away, and what a
 * recheck's answers say. The checks are the preflight's own
 * (preflight_new_only): the same commands and verdicts that found the
 * fault, none of which starts a container or changes a node. A diagnosis
 * no such check can see (a Gloo fallback, an Xid in the kernel log, a
 * host key) keeps waiting for the operator. Nothing here does I/O.
 */
#ifndef TANDEM_RECHECK_H
#define TANDEM_RECHECK_H

#include <stddef.h>

#include "diagnose.h"
#include "preflight.h"

/* The recheck's questions (enum pf_ask); 0: no read-only check sees it. */
unsigned	 recheck_asks(enum diag_code);
/* The checks asked, for people: "link", "image", "model", ... */
const char	*recheck_what(enum diag_code);

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
