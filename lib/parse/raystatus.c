#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raystatus.h"
#include "utf8.h"
#include "util.h"

enum section { SEC_NONE, SEC_ACTIVE, SEC_IDLE, SEC_PENDING, SEC_FAILURES,
	SEC_USAGE, SEC_DEMANDS };

/* "0.0/2.0 GPU" or "2.0/2.0 GPU (2.0 used of 2.0 reserved in ...)" */
static int
usage_line(const char *l, const char *res, double *used, double *total,
    double *reserved)
{
	char name[64];
	double u, t, pu, pt;
	int off = 0;

	if (sscanf(l, " %lf/%lf %63s%n", &u, &t, name, &off) != 3)
		return 0;
	if (strcmp(name, res) != 0)
		return 0;
	*used = u;
	*total = t;
	*reserved = 0;
	if (sscanf(l + off, " (%lf used of %lf reserved", &pu, &pt) == 2)
		*reserved = pt;
	return 1;
}

/*
 * More nodes or placement groups than any Ray cluster has: the answer is
 * not one to read. A sum of such counts stays within an int (issue 43:
 * two " 1192559076 node_x" lines summed to a negative node count).
 */
#define RAY_COUNT_MAX	1000000

/* A count: 0 when s is none, -1 when beyond RAY_COUNT_MAX or negative. */
static long
count_of(const char *s, char **end)
{
	long n;

	errno = 0;
	n = strtol(s, end, 10);
	if (*end == s)
		return 0;
	return errno == ERANGE || n < 0 || n > RAY_COUNT_MAX ? -1 : n;
}

/* Adds n (from count_of) to *sum; -1 (and *sum as it was) past the limit. */
static int
count_add(int *sum, long n)
{
	if (n < 0 || n > RAY_COUNT_MAX - *sum)
		return -1;
	*sum += (int)n;
	return 0;
}

/*
 * " 2 node_<hex56>" (v1's readonly provider), " 1 headgroup" (KubeRay),
 * " 4 arm_worker_node" (cluster launcher): a count and a node type name.
 * " (no active nodes)" and " (no idle nodes)" count nothing.
 */
static long
node_line(const char *l)
{
	char *end;
	long count;

	while (*l == ' ')
		l++;
	/*
	 * The name may be empty: v2 counts nodes by ray_node_type_name, which
	 * nothing sets on a cluster started by hand (" 2 ").
	 */
	if (*l < '0' || *l > '9' || (count = count_of(l, &end)) == -1)
		return *l >= '0' && *l <= '9' ? -1 : 0;
	return *end == ' ' || *end == '\0' ? count : 0;
}

/*
 * " node_ab12: NodeTerminated (ip: 10.0.0.2)" (util.py format_info_string,
 * failed_nodes), " worker: LaunchFailed (latest_attempt: 10:00:00)" (the
 * node availability records).
 */
static void
failure_line(const char *l, struct raystatus *rs)
{
	struct ray_failure *f;
	const char *colon, *open, *close, *p = l;

	while (*p == ' ')
		p++;
	if (*p == '(' || (colon = strstr(p, ": ")) == NULL)
		return;	/* " (no failures)" */
	if (rs->nfailures >= RAYSTATUS_FAILURES) {
		rs->nfailures++;
		return;
	}
	f = &rs->failures[rs->nfailures++];
	utf8_copyn(f->node_type, sizeof(f->node_type), p, (size_t)(colon - p));
	p = colon + 2;
	open = strchr(p, '(');
	utf8_copyn(f->cause, sizeof(f->cause), p, open ? (size_t)(open - p) :
	    strcspn(p, " "));
	f->cause[strcspn(f->cause, " ")] = '\0';
	f->detail[0] = '\0';
	if (open && (close = strchr(open, ')')) != NULL)
		utf8_copyn(f->detail, sizeof(f->detail), open + 1,
		    (size_t)(close - open - 1));
}

static enum section
heading(const char *line, enum section sec)
{
	static const struct {
		const char	*label;
		enum section	 sec;
	} h[] = {
		{ "Active:", SEC_ACTIVE }, { "Healthy:", SEC_ACTIVE },
		{ "Idle:", SEC_IDLE }, { "Pending:", SEC_PENDING },
		{ "Recent failures:", SEC_FAILURES }, { "Usage:", SEC_USAGE },
		{ "Total Usage:", SEC_USAGE }, { "Demands:", SEC_DEMANDS },
		{ "Pending Demands:", SEC_DEMANDS },
		{ "Total Demands:", SEC_DEMANDS },
		/* the request_resources() constraints: no node, no demand */
		{ "From request_resources:", SEC_NONE },
		{ "Total Constraints:", SEC_NONE },
	};
	size_t i;

	for (i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		if (strcmp(line, h[i].label) == 0)
			return h[i].sec;
	/* "Node status", "Resources", the separators: nothing of their own */
	return line[0] == '-' || strcmp(line, "Node status") == 0 ||
	    strcmp(line, "Resources") == 0 ? SEC_NONE : sec;
}

int
raystatus_parse(const char *text, struct raystatus *rs, char *err,
    size_t errlen)
{
	return raystatus_parse_key(text, "GPU", rs, err, errlen);
}

int
raystatus_parse_key(const char *text, const char *key, struct raystatus *rs,
    char *err, size_t errlen)
{
	enum section sec = SEC_NONE;
	const char *p = text, *nl;
	char line[512];
	int header = 0, toobig = 0;

	memset(rs, 0, sizeof(*rs));
	if (strstr(text, "No cluster status.")) {
		seterr(err, errlen, "ray status: no cluster status yet");
		return -1;
	}
	for (; *p; p = nl + 1) {
		size_t n;

		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		n = (size_t)(nl - p);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		if (strstr(line, " Autoscaler status: ") && line[0] == '=')
			header = 1;
		else if (line[0] != ' ' && line[0] != '\0') {
			sec = heading(line, sec);
			if (sec == SEC_IDLE)
				rs->autoscaler_v2 = 1;
		} else if (line[0] == '\0')
			;	/* the blank line after the usage report */
		else if (sec == SEC_ACTIVE)
			toobig |= count_add(&rs->active_nodes, node_line(line));
		else if (sec == SEC_IDLE)
			toobig |= count_add(&rs->idle_nodes, node_line(line));
		else if (sec == SEC_PENDING && strstr(line, "(no pending") ==
		    NULL)
			rs->pending_nodes++;
		else if (sec == SEC_FAILURES)
			failure_line(line, rs);
		else if (sec == SEC_USAGE) {
			double u, t, r;

			if (usage_line(line, key, &u, &t, &r)) {
				rs->gpus = t;
				rs->gpus_used = u;
				rs->gpus_pg_reserved = r;
			} else if (usage_line(line, "CPU", &u, &t, &r))
				rs->cpus = t;
		} else if (sec == SEC_DEMANDS &&
		    strstr(line, "pending placement groups")) {
			const char *q = strstr(line, "): ");
			char *end;

			if (q)
				toobig |= count_add(&rs->pending_pgs,
				    count_of(q + 3, &end));
		}
		if (*nl == '\0')
			break;
	}
	if (!header) {
		seterr(err, errlen, "ray status: not a status report");
		return -1;
	}
	if (toobig) {
		seterr(err, errlen, "ray status: a count beyond %d nodes or "
		    "placement groups", RAY_COUNT_MAX);
		return -1;
	}
	rs->alive_nodes = rs->active_nodes + rs->idle_nodes;
	return 0;
}
