/*
 * Each file keeps its tail, not its head: the end of a log is where a
 * failure is. The README comes first in the tar so that `tar -tf` and a
 * reader opening the archive meet it before anything else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bundle.h"
#include "plan.h"
#include "ustar.h"

static void
item(struct bundle_plan *p, size_t node, char *cmd, const char *what,
    const char *fmt, const char *nodename)
{
	struct bundle_item *it;

	p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
	it = &p->v[p->n++];
	memset(it, 0, sizeof(*it));
	snprintf(it->name, sizeof(it->name), fmt, nodename);
	it->node = node;
	it->cmd = cmd;
	it->what = what;
}

void
bundle_plan(const struct config *cf, double since, struct bundle_plan *p)
{
	size_t i;

	p->v = NULL;
	p->n = 0;
	for (i = 0; i < cf->nnodes; i++) {
		const char *n = cf->nodes[i].name;

		item(p, i, cmd_bundle_logs(cf, i, BUNDLE_LOG_LINES),
		    "the container's output (docker logs --tail)",
		    "nodes/%s/container.log", n);
		item(p, i, cmd_bundle_state(cf, i),
		    "how the container ended (docker inspect .State)",
		    "nodes/%s/container-state.json", n);
		item(p, i, cmd_bundle_gpus(), "nvidia-smi",
		    "nodes/%s/nvidia-smi.txt", n);
		item(p, i, cmd_kernel_xid(since),
		    "the GPU driver's kernel lines (NVRM, Xid)",
		    "nodes/%s/kernel-nvrm.txt", n);
	}
	item(p, cf->head, cmd_bundle_vllm_log(cf),
	    "vllm serve's log (vllm.log_file), its tail", "head/vllm.log%s", "");
	if (cf->topology == TOPO_RAY)
		item(p, cf->head, cmd_ray_status(cf), "ray status",
		    "head/ray-status.txt%s", "");
}

void
bundle_plan_free(struct bundle_plan *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->v[i].cmd);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

void
bundle_add(struct bundle *b, const char *name, const char *data, size_t len,
    int rc, const char *note)
{
	struct bundle_part *pt;
	size_t cut = len > BUNDLE_PART_MAX ? len - BUNDLE_PART_MAX : 0;

	b->v = xrealloc(b->v, (b->n + 1) * sizeof(*b->v));
	pt = &b->v[b->n++];
	memset(pt, 0, sizeof(*pt));
	snprintf(pt->name, sizeof(pt->name), "%s", name);
	pt->len = len - cut;
	pt->cut = cut;
	pt->data = xmalloc(pt->len + 1);
	if (pt->len)
		memcpy(pt->data, data + cut, pt->len);
	pt->data[pt->len] = '\0';
	pt->rc = rc;
	snprintf(pt->note, sizeof(pt->note), "%s", note ? note : "");
}

void
bundle_free(struct bundle *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		free(b->v[i].data);
	free(b->v);
	b->v = NULL;
	b->n = 0;
}

static void
readme_line(struct sbuf *r, const struct bundle_part *pt, int left_out)
{
	sbuf_addf(r, "  %s: ", pt->name);
	if (left_out)
		sbuf_addf(r, "left out (%zu bytes): the bundle is at its size "
		    "limit", pt->len);
	else if (pt->rc >= 0)
		sbuf_addf(r, "%zu bytes, exit status %d", pt->len, pt->rc);
	else
		sbuf_addf(r, "%zu bytes", pt->len);
	if (pt->cut)
		sbuf_addf(r, ", its first %zu bytes cut", pt->cut);
	if (pt->note[0])
		sbuf_addf(r, "; %s", pt->note);
	sbuf_add(r, "\n");
}

int
bundle_tar(const struct bundle *b, const char *summary, uint64_t mtime,
    size_t max, struct sbuf *out, char *err, size_t errlen)
{
	struct sbuf readme;
	size_t i, used, *fits;
	int rc = 0;

	fits = xcalloc(b->n ? b->n : 1, sizeof(*fits));
	/* room for the README (at most 64 KiB) and the end blocks first */
	used = ustar_file_size(64 * 1024) + 2 * USTAR_BLOCK;
	for (i = 0; i < b->n; i++)
		if (used + ustar_file_size(b->v[i].len) <= max) {
			used += ustar_file_size(b->v[i].len);
			fits[i] = 1;
		}
	sbuf_init(&readme);
	sbuf_add(&readme, "tandem evidence bundle\n\n");
	if (summary && *summary)
		sbuf_addf(&readme, "%s\n\n", summary);
	sbuf_add(&readme, "Files (each keeps the tail of what was read; exit "
	    "status of the command on the node):\n");
	for (i = 0; i < b->n; i++)
		readme_line(&readme, &b->v[i], !fits[i]);
	if (readme.len > 64 * 1024)
		readme.len = 64 * 1024;
	if (ustar_add(out, "README.txt", readme.s, readme.len, 0644, mtime,
	    err, errlen) == -1)
		rc = -1;
	for (i = 0; rc == 0 && i < b->n; i++)
		if (fits[i] && ustar_add(out, b->v[i].name, b->v[i].data,
		    b->v[i].len, 0644, mtime, err, errlen) == -1)
			rc = -1;
	if (rc == 0)
		ustar_end(out);
	sbuf_free(&readme);
	free(fits);
	return rc;
}

void
bundle_name(double now, uint64_t generation, char *buf, size_t len)
{
	time_t t = (time_t)now;
	struct tm tm;
	char ts[32];

	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(buf, len, "tandem-bundle-%s-g%llu.tar", ts,
	    (unsigned long long)generation);
}

int
bundle_name_valid(const char *s)
{
	static const char pre[] = "tandem-bundle-";
	size_t i, n = strlen(s);

	if (n < sizeof(pre) - 1 + 16 + 3 + 4 || n >= BUNDLE_NAME_MAX ||
	    strncmp(s, pre, sizeof(pre) - 1) != 0 ||
	    strcmp(s + n - 4, ".tar") != 0)
		return 0;
	s += sizeof(pre) - 1;
	for (i = 0; i < 16; i++)
		if (!(i == 8 ? s[i] == 'T' : i == 15 ? s[i] == 'Z' :
		    s[i] >= '0' && s[i] <= '9'))
			return 0;
	if (s[16] != '-' || s[17] != 'g')
		return 0;
	/*
	 * The whole rest is digits then ".tar", nothing after: the name is
	 * also what tandemctl bundle writes under, so a '/' or ".." that a
	 * check stopping at the first '.' let through would be a path.
	 */
	for (s += 18, i = 0; s[i] >= '0' && s[i] <= '9'; i++)
		;
	return i > 0 && strcmp(s + i, ".tar") == 0;
}

/* The names sort by time: the newest is the greatest. */
static int
newer(const char *a, const char *b)
{
	return strcmp(a, b) > 0;
}

long
bundle_latest(char *const *names, size_t n)
{
	long best = -1;
	size_t i;

	for (i = 0; i < n; i++)
		if (bundle_name_valid(names[i]) && (best == -1 ||
		    newer(names[i], names[best])))
			best = (long)i;
	return best;
}

size_t
bundle_rotate(char *const *names, const uint64_t *sizes, size_t n,
    size_t keep, uint64_t max_total, size_t *del)
{
	size_t *order, m = 0, i, j, ndel = 0;
	uint64_t total = 0;

	order = xcalloc(n ? n : 1, sizeof(*order));
	for (i = 0; i < n; i++)
		if (bundle_name_valid(names[i]))
			order[m++] = i;
	/* newest first (insertion sort: a handful of files) */
	for (i = 1; i < m; i++)
		for (j = i; j > 0 && newer(names[order[j]],
		    names[order[j - 1]]); j--) {
			size_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (i = 0; i < m; i++) {
		total += sizes[order[i]];
		if (i > 0 && (i >= keep || total > max_total))
			del[ndel++] = order[i];
	}
	free(order);
	return ndel;
}
