#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raystatus.h"
#include "util.h"

enum section { SEC_NONE, SEC_ACTIVE, SEC_OTHER_NODES, SEC_USAGE, SEC_DEMANDS };

/* "0.0/2.0 GPU" or "2.0/2.0 GPU (2.0 used of ...)" */
static int
usage_line(const char *l, const char *res, double *used, double *total)
{
	char name[64];
	double u, t;

	if (sscanf(l, " %lf/%lf %63s", &u, &t, name) != 3)
		return 0;
	if (strcmp(name, res) != 0)
		return 0;
	*used = u;
	*total = t;
	return 1;
}

int
raystatus_parse(const char *text, struct raystatus *rs, char *err,
    size_t errlen)
{
	enum section sec = SEC_NONE;
	const char *p = text, *nl;
	char line[512];
	int header = 0;

	memset(rs, 0, sizeof(*rs));
	if (strstr(text, "No cluster status.")) {
		seterr(err, errlen, "ray status: no cluster status yet");
		return -1;
	}
	for (; *p; p = nl + 1) {
		size_t n;
		int count;

		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		n = (size_t)(nl - p);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		if (strstr(line, " Autoscaler status: ") && line[0] == '=')
			header = 1;
		else if (strcmp(line, "Active:") == 0 ||
		    strcmp(line, "Healthy:") == 0)
			sec = SEC_ACTIVE;
		else if (strcmp(line, "Idle:") == 0 ||
		    strcmp(line, "Pending:") == 0 ||
		    strcmp(line, "Recent failures:") == 0)
			sec = SEC_OTHER_NODES;
		else if (strcmp(line, "Usage:") == 0 ||
		    strcmp(line, "Total Usage:") == 0)
			sec = SEC_USAGE;
		else if (strcmp(line, "Demands:") == 0 ||
		    strcmp(line, "Pending Demands:") == 0 ||
		    strcmp(line, "Total Demands:") == 0)
			sec = SEC_DEMANDS;
		else if (line[0] != ' ')
			;	/* other headings: keep the section */
		else if (sec == SEC_ACTIVE &&
		    sscanf(line, " %d node_", &count) == 1 && count > 0)
			rs->alive_nodes += count;
		else if (sec == SEC_USAGE) {
			double u, t;

			if (usage_line(line, "GPU", &u, &t)) {
				rs->gpus = t;
				rs->gpus_used = u;
			} else if (usage_line(line, "CPU", &u, &t))
				rs->cpus = t;
		} else if (sec == SEC_DEMANDS &&
		    strstr(line, "pending placement groups")) {
			const char *q = strstr(line, "): ");

			if (q)
				rs->pending_pgs += atoi(q + 3);
		}
		if (*nl == '\0')
			break;
	}
	if (!header) {
		seterr(err, errlen, "ray status: not a status report");
		return -1;
	}
	return 0;
}
