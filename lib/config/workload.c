#include <jansson.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "utf8.h"
#include "workload.h"

/* Bounds on what one node's answer is read for: a node is not a cloud. */
#define CTRS_MAX	128
#define PIDS_MAX	4096
#define APPS_MAX	128
#define CTR_NAME_LEN	128

struct ctr {
	char	id[65];		/* as ps prints it: 12 hex digits */
	char	name[CTR_NAME_LEN];
	int	ours;
};

struct app {
	long		 pid;
	long long	 mib;
	char		 name[128];
};

struct scan {
	struct ctr	c[CTRS_MAX];
	size_t		nc;
	struct {
		long	pid;
		size_t	ctr;
	}		p[PIDS_MAX];
	size_t		np;
	struct app	a[APPS_MAX];
	size_t		na;
	struct sbuf	npu;		/* the "A " lines: npu-smi info */
	struct accel_info ai;
};

/*
 * A decimal number that fits, read from s up to lim at most (the answer is
 * not NUL-terminated: no strtoll); -1 otherwise. end: after it.
 */
static long long
number(const char *s, const char *lim, const char **end)
{
	long long v = 0;
	const char *p;

	*end = s;
	if (s >= lim || *s < '0' || *s > '9')
		return -1;
	for (p = s; p < lim && *p >= '0' && *p <= '9'; p++) {
		if (v > (LLONG_MAX - (*p - '0')) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	*end = p;
	return v;
}

/* The container of this ID (the len bytes at id), or s->nc for none. */
static size_t
find_ctr(const struct scan *s, const char *id, size_t len)
{
	size_t i;

	for (i = 0; i < s->nc; i++)
		if (strlen(s->c[i].id) == len &&
		    memcmp(s->c[i].id, id, len) == 0)
			return i;
	return s->nc;
}

/*
 * The length of the first word of the len bytes at p: up to a space or
 * their end. The answer is not NUL-terminated, so never strcspn.
 */
static size_t
word(const char *p, size_t len)
{
	const char *sp = memchr(p, ' ', len);

	return sp ? (size_t)(sp - p) : len;
}

/* An ID as the engines print one: 12 hex digits (64 untruncated). */
static int
valid_id(const char *p, size_t len)
{
	size_t i;

	if (len < 12 || len > 64)
		return 0;
	for (i = 0; i < len; i++)
		if (p[i] == '\0' || strchr("0123456789abcdef", p[i]) == NULL)
			return 0;
	return 1;
}

/*
 * A name the engines let a container have: [a-zA-Z0-9][a-zA-Z0-9_.-]*
 * (moby daemon/names/names.go, podman's define.NameRegex). Anything else
 * did not come from an engine's .Names, and never reaches the
 * container.stop_foreign match.
 */
static int
valid_name(const char *n)
{
#define ALNUM	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	size_t len = strlen(n);

	return len > 0 && len < CTR_NAME_LEN && strchr(ALNUM, n[0]) != NULL &&
	    strspn(n, ALNUM "_.-") == len;
#undef ALNUM
}

/*
 * "C ID [NAME,CLUSTER]": the container's ID, then its name and its
 * tandem.cluster label ("" without one) as one JSON array, each value
 * escaped by the engine's json: whatever a label holds, it is this line's
 * and compared whole. A line that is not exactly that is skipped.
 */
static void
line_ctr(struct scan *s, const char *p, size_t len, const char *cluster)
{
	size_t il = word(p, len);
	const char *name, *label;
	json_t *j;

	if (il == len || !valid_id(p, il) || s->nc == CTRS_MAX ||
	    find_ctr(s, p, il) < s->nc)
		return;
	/* no JSON_ALLOW_NUL: a label with \u0000 is refused, never cut */
	j = json_loadb(p + il + 1, len - il - 1, 0, NULL);
	if (j && json_unpack(j, "[ss!]", &name, &label) == 0 &&
	    valid_name(name)) {
		memcpy(s->c[s->nc].id, p, il);
		s->c[s->nc].id[il] = '\0';
		strcpy(s->c[s->nc].name, name);
		s->c[s->nc].ours = strcmp(label, cluster) == 0;
		s->nc++;
	}
	json_decref(j);
}

/* "P ID PID": a process of container ID (the header line is skipped). */
static void
line_pid(struct scan *s, const char *p, size_t len)
{
	size_t nl = word(p, len), c;
	const char *e;
	long long pid;

	if (nl >= len || s->np == PIDS_MAX)
		return;
	c = find_ctr(s, p, nl);
	pid = number(p + nl + 1, p + len, &e);
	if (c == s->nc || pid <= 0 || pid > 0x7fffffff)
		return;
	s->p[s->np].pid = (long)pid;
	s->p[s->np].ctr = c;
	s->np++;
}

/* "G PID, MIB, NAME" as nvidia-smi's csv,noheader,nounits prints it. */
static void
line_app(struct scan *s, const char *p, size_t len)
{
	const char *e, *end = p + len;
	long long pid, mib;
	struct app *a;

	pid = number(p, end, &e);
	if (pid <= 0 || pid > 0x7fffffff || e >= end || *e != ',' ||
	    s->na == APPS_MAX)
		return;
	for (e++; e < end && *e == ' '; e++)
		;
	mib = number(e, end, &e);	/* "[N/A]" on unified memory: -1 */
	a = &s->a[s->na++];
	a->pid = (long)pid;
	a->mib = mib;
	e = memchr(e, ',', (size_t)(end - e));
	if (e == NULL) {
		a->name[0] = '\0';
		return;
	}
	for (e++; e < end && *e == ' '; e++)
		;
	utf8_copyn(a->name, sizeof(a->name), e, (size_t)(end - e));
}

/*
 * npu-smi info's process table: one row per process and chip; a process
 * on two chips (an A3's two dies) is one process, its memory summed.
 */
static void
npu_apps(struct scan *s)
{
	size_t i, j;

	accel_parse(ACCEL_ASCEND, AQ_PROCS, 0, s->npu.s ? s->npu.s : "",
	    s->npu.len, NULL, &s->ai);
	for (i = 0; i < s->ai.nproc; i++) {
		const struct accel_proc *p = &s->ai.proc[i];

		for (j = 0; j < s->na && s->a[j].pid != p->pid; j++)
			;
		if (j == s->na) {
			if (s->na == APPS_MAX)
				continue;
			s->na++;
			s->a[j].pid = p->pid;
			s->a[j].mib = -1;
			utf8_copy(s->a[j].name, sizeof(s->a[j].name), p->name);
		}
		if (p->mib >= 0)
			s->a[j].mib = (s->a[j].mib < 0 ? 0 : s->a[j].mib) +
			    p->mib;
	}
}

static struct workload *
add(struct workloads *out, enum workload_kind kind, const char *name,
    long pid, long long mib)
{
	static struct workload spare;
	struct workload *w;

	if (out->n == WORKLOADS_MAX) {
		out->more++;
		return memset(&spare, 0, sizeof(spare));
	}
	w = &out->w[out->n++];
	w->kind = kind;
	utf8_copy(w->name, sizeof(w->name), name);
	w->pid = pid;
	w->mib = mib;
	return w;
}

/* The container a process belongs to, or s->nc for none. */
static size_t
pid_owner(const struct scan *s, long pid)
{
	size_t i;

	for (i = 0; i < s->np; i++)
		if (s->p[i].pid == pid)
			return s->p[i].ctr;
	return s->nc;
}

static void
collect(const struct scan *s, struct workloads *out)
{
	int npu = s->npu.len > 0;
	size_t i, j;

	for (i = 0; i < s->nc; i++) {
		struct workload *w;

		if (s->c[i].ours)
			continue;
		w = add(out, WL_CONTAINER, s->c[i].name, 0, -1);
		w->npu = npu;
		for (j = 0; j < s->na; j++) {
			if (pid_owner(s, s->a[j].pid) != i)
				continue;
			if (s->a[j].mib >= 0)
				w->mib = (w->mib < 0 ? 0 : w->mib) + s->a[j].mib;
			if (w->npids < sizeof(w->pids) / sizeof(w->pids[0]))
				w->pids[w->npids++] = s->a[j].pid;
		}
	}
	for (j = 0; j < s->na; j++)
		if (pid_owner(s, s->a[j].pid) == s->nc) {
			struct workload *w = add(out, WL_PROCESS,
			    s->a[j].name, s->a[j].pid, s->a[j].mib);

			w->pids[0] = s->a[j].pid;
			w->npids = 1;
			w->npu = npu;
		}
}

void
workloads_parse(const char *out, size_t len, const char *cluster,
    struct workloads *res)
{
	struct scan *s = calloc(1, sizeof(*s));
	const char *p = out, *end = out + len, *nl;

	memset(res, 0, sizeof(*res));
	if (s == NULL)
		return;
	for (; p < end; p = nl + 1) {
		size_t l;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		l = (size_t)(nl - p);
		if (l > 2 && p[1] == ' ') {
			if (p[0] == 'C')
				line_ctr(s, p + 2, l - 2, cluster);
			else if (p[0] == 'P')
				line_pid(s, p + 2, l - 2);
			else if (p[0] == 'G')
				line_app(s, p + 2, l - 2);
		}
		if (l >= 2 && p[0] == 'A' && p[1] == ' ') {
			sbuf_addn(&s->npu, p + 2, l - 2);
			sbuf_addc(&s->npu, '\n');
		}
		if (nl == end)
			break;
	}
	if (s->npu.len)
		npu_apps(s);
	collect(s, res);
	sbuf_free(&s->npu);
	free(s);
}

void
workload_message(const struct workload *w, const char *node, char *buf,
    size_t len)
{
	char what[200], mem[64];
	const char *kind = w->npu ? "NPU" : "GPU";

	if (w->kind == WL_CONTAINER)
		utf8_fmt(what, sizeof(what), "container \"%s\"", w->name);
	else
		utf8_fmt(what, sizeof(what), "process \"%s\" (pid %ld)",
		    w->name[0] ? w->name : "?", w->pid);
	if (w->mib >= 0)
		snprintf(mem, sizeof(mem), "%.1f GiB of", (double)w->mib /
		    1024.0);
	else
		snprintf(mem, sizeof(mem), "%s", "no");
	if (w->kind == WL_PROCESS && w->mib < 0)
		utf8_fmt(buf, len, "%s on %s holds %s memory (amount not "
		    "reported)", what, node, kind);
	else
		utf8_fmt(buf, len, "%s on %s holds %s %s memory", what, node,
		    mem, kind);
}

/* The pattern anchored: it must match the whole name, never a part. */
static int
compile(regex_t *rx, const char *re)
{
	char *full = xprintf("^(%s)$", re);
	int rc = regcomp(rx, full, REG_EXTENDED | REG_NOSUB);

	free(full);
	return rc;
}

/* The bounds workload_valid_regex states, on the pattern's text. */
static int
regex_bounded(const char *re)
{
	const char *p = re;
	int atom = 0;	/* the last thing was a character, '.' or [...] */

	if (strlen(re) > WORKLOAD_RE_MAX)
		return 0;
	while (*p) {
		switch (*p) {
		case '\\':
			/* \1..\9 (a glibc extension in EREs) backtracks */
			if (p[1] == '\0' || (p[1] >= '0' && p[1] <= '9'))
				return 0;
			p += 2;
			atom = 1;
			continue;
		case '[':
			/* to the closing ']': "[]a]" and "[^]a]" hold a ']' */
			p++;
			if (*p == '^')
				p++;
			if (*p == ']')
				p++;
			while (*p && *p != ']') {
				if (*p == '[' && (p[1] == ':' || p[1] == '.' ||
				    p[1] == '=')) {
					const char *e = strchr(p + 2, p[1]);

					if (e == NULL || e[1] != ']')
						return 0;
					p = e + 2;
				} else
					p++;
			}
			if (*p == '\0')
				return 0;
			p++;
			atom = 1;
			continue;
		case '{': {
			char *end;
			long n;

			if (!atom)
				return 0;
			/* {m}, {m,} or {m,n}, each at most 255 */
			n = strtol(p + 1, &end, 10);
			if (end == p + 1 || n > 255)
				return 0;
			if (*end == ',' && end[1] != '}') {
				const char *q = end + 1;

				n = strtol(q, &end, 10);
				if (end == q || n > 255)
					return 0;
			} else if (*end == ',')
				end++;
			if (*end != '}')
				return 0;
			p = end + 1;
			atom = 0;
			continue;
		}
		case '(': case ')': case '|': case '*': case '+': case '?':
		case '^': case '$':
			atom = 0;
			break;
		default:
			atom = 1;
			break;
		}
		p++;
	}
	return 1;
}

int
workload_valid_regex(const char *re)
{
	regex_t rx;

	if (re[0] == '\0' || !regex_bounded(re) || compile(&rx, re) != 0)
		return 0;
	regfree(&rx);
	return 1;
}

int
workload_stop_match(const struct strv *patterns, const char *name)
{
	size_t i;

	for (i = 0; i < patterns->n; i++) {
		regex_t rx;
		int m;

		if (compile(&rx, patterns->v[i]) != 0)
			continue;
		m = regexec(&rx, name, 0, NULL, 0) == 0;
		regfree(&rx);
		if (m)
			return 1;
	}
	return 0;
}
