#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "dockerout.h"

/* Copies the next space-separated word; returns where it ended or NULL. */
static const char *
word(const char *p, char *out, size_t outlen)
{
	size_t n = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || *p == '\n')
		return NULL;
	while (*p && !isspace((unsigned char)*p)) {
		if (n + 1 >= outlen)
			return NULL;
		out[n++] = *p++;
	}
	out[n] = '\0';
	return p;
}

static int
hexid(const char *s)
{
	size_t n = strlen(s);

	if (n < 12 || n > 64)
		return 0;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return 0;
	return 1;
}

int
docker_inspect_parse(const char *out, int *running, char *id, size_t idlen,
    char *plan, size_t planlen)
{
	char state[8];
	const char *p, *q;

	if ((p = word(out, state, sizeof(state))) == NULL ||
	    (p = word(p, id, idlen)) == NULL || !hexid(id))
		return -1;
	plan[0] = '\0';
	if ((q = word(p, plan, planlen)) != NULL) {
		/* docker prints "<no value>" for a missing label */
		if (strcmp(plan, "<no") == 0 && (q = word(q, plan, planlen)) &&
		    strcmp(plan, "value>") == 0)
			plan[0] = '\0';
		p = q;
	}
	if (p == NULL)
		return -1;
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (*p)
		return -1;
	if (strcmp(state, "true") == 0)
		*running = 1;
	else if (strcmp(state, "false") == 0)
		*running = 0;
	else
		return -1;
	return 0;
}

int
docker_event_parse(const char *line, char *action, size_t actionlen,
    char *id, size_t idlen, char *name, size_t namelen)
{
	const char *p;

	if ((p = word(line, action, actionlen)) == NULL ||
	    (p = word(p, id, idlen)) == NULL || !hexid(id) ||
	    (p = word(p, name, namelen)) == NULL)
		return -1;
	/* podman 4 names them "died" and "remove" (its events' .Status). */
	if (strcmp(action, "died") == 0)
		snprintf(action, actionlen, "die");
	else if (strcmp(action, "remove") == 0)
		snprintf(action, actionlen, "destroy");
	return 0;
}

int
docker_image_id(const char *out, char *id, size_t idlen)
{
	const char *p, *hex;
	size_t n;

	if ((p = word(out, id, idlen)) == NULL)
		return -1;
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (*p)
		return -1;
	hex = strncmp(id, "sha256:", 7) == 0 ? id + 7 : id;
	n = strlen(hex);
	if (n != 64 || !hexid(hex))
		return -1;
	return 0;
}

int
docker_runtimes_nvidia(const char *out, char *list, size_t listlen)
{
	char name[128];
	size_t len = 0;
	int found = 0;
	const char *p = out;

	if (listlen)
		list[0] = '\0';
	for (;;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (*p == '\0' || (p = word(p, name, sizeof(name))) == NULL)
			break;
		if (strcmp(name, "nvidia") == 0)
			found = 1;
		if (len + strlen(name) + 2 <= listlen)
			len += (size_t)snprintf(list + len, listlen - len, "%s%s",
			    len ? " " : "", name);
	}
	return found;
}

enum name_owner
docker_name_owner(const char *out, const char *cluster, int *running)
{
	size_t len = strlen(cluster), end = strcspn(out, "\n");

	*running = 0;
	if (strspn(out, " \t\r") >= end)
		return OWNER_FREE;	/* no such container: no line */
	if (len && strncmp(out, cluster, len) == 0 && out[len] == ' ') {
		const char *up = strstr(out + len, " Up ");

		*running = up != NULL && (size_t)(up - out) < end;
		return OWNER_OURS;
	}
	return OWNER_FOREIGN;
}
