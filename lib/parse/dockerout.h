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

/*
 * `image inspect --format '{{.Id}}'`: docker prints "sha256:HEX", podman
 * the bare HEX. Returns 0 and copies it to id, or -1.
 */
int	docker_image_id(const char *out, char *id, size_t idlen);
/*
 * The runtime names `docker info` lists, one a line: returns 1 when one is
 * "nvidia", else 0, and copies them, space-separated, to list.
 */
int	docker_runtimes_nvidia(const char *out, char *list, size_t listlen);

enum name_owner { OWNER_FREE, OWNER_OURS, OWNER_FOREIGN };
/*
 * The name-owner line of `ps -a` ("CLUSTER STATUS"; a container without
 * our label prints an empty CLUSTER): whose the name is, and (ours) whether
 * it runs.
 */
enum name_owner	docker_name_owner(const char *out, const char *cluster,
		    int *running);

#endif
