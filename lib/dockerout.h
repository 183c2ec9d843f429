/*
 * Parsing what tandem's docker/podman commands print: the inspect probe
 * ("true ID") and one line of the events stream ("die ID NAME").
 */
#ifndef TANDEM_DOCKEROUT_H
#define TANDEM_DOCKEROUT_H

#include <stddef.h>

/* Returns 0 and sets running (1/0) and id, or -1 for anything else. */
int	docker_inspect_parse(const char *out, int *running, char *id,
	    size_t idlen);
/* Returns 0 and fills action, id and name, or -1 for a malformed line. */
int	docker_event_parse(const char *line, char *action, size_t actionlen,
	    char *id, size_t idlen, char *name, size_t namelen);

#endif
