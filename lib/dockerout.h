/*
 * Parsing what tandem's docker/podman commands print: the inspect probe
 * ("true ID") and one line of the events stream ("die ID NAME").
 */
#ifndef TANDEM_DOCKEROUT_H
#define TANDEM_DOCKEROUT_H

#include <stddef.h>

/*
 * "RUNNING ID [PLAN]": returns 0 and sets running (1/0), id and plan (the
 * tandem.plan label; empty for a container started by hand), or -1.
 */
int	docker_inspect_parse(const char *out, int *running, char *id,
	    size_t idlen, char *plan, size_t planlen);
/* Returns 0 and fills action, id and name, or -1 for a malformed line. */
int	docker_event_parse(const char *line, char *action, size_t actionlen,
	    char *id, size_t idlen, char *name, size_t namelen);

#endif
