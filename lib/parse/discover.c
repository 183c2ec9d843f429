/*
 * tandemctl init's answers parsed. nvidia-smi -L prints "GPU N: NAME
 * (UUID: GPU-...)" (the nvidia-smi(1) page: "List each of the NVIDIA GPUs
 * in the system, along with their UUIDs"); docker and podman's image ls
 * templates print what they are given, untagged images as <none>.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discover.h"
#include "utf8.h"

/* Calls fn on each line of out (without its newline). */
static void
lines(const char *out, void (*fn)(const char *, size_t, void *), void *arg)
{
	const char *p = out, *nl;

	for (; p && *p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		fn(p, nl ? (size_t)(nl - p) : strlen(p), arg);
	}
}

static void
fact_line(const char *l, size_t n, void *arg)
{
	struct node_facts *f = arg;
	const char *base;
	char line[256];

	if (n >= sizeof(line))
		return;
	memcpy(line, l, n);
	line[n] = '\0';
	if (strncmp(line, "hostname ", 9) == 0) {
		utf8_copy(f->hostname, sizeof(f->hostname), line + 9);
		return;
	}
	if (strncmp(line, "ssh ", 4) == 0) {
		/* CLIENT CPORT SERVER SPORT */
		char c[64], cp[16], s[64];

		if (sscanf(line + 4, "%63s %15s %63s", c, cp, s) == 3)
			utf8_copy(f->ssh_ip, sizeof(f->ssh_ip), s);
		return;
	}
	if (line[0] != '/')
		return;
	base = strrchr(line, '/') + 1;
	if (strcmp(base, "docker") == 0)
		f->docker = 1;
	else if (strcmp(base, "podman") == 0)
		f->podman = 1;
	else if (strcmp(base, "nvidia-smi") == 0)
		f->nvidia_smi = 1;
	else if (strcmp(base, "npu-smi") == 0)
		f->npu_smi = 1;
}

int
facts_parse(const char *out, struct node_facts *f)
{
	memset(f, 0, sizeof(*f));
	lines(out, fact_line, f);
	return strstr(out, "hostname ") == out ||
	    strstr(out, "\nhostname ") ? 0 : -1;
}

struct gpus {
	int	 n;
	char	*name;
	size_t	 len;
};

/*
 * "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)" (nvidia-smi -L). Every
 * read stays inside the line's n bytes: the line is not NUL-terminated
 * where it ends, and the last one ends at the answer's end, so "GPU 00:"
 * there once sent strstr two bytes past the buffer (issue 43).
 */
static void
gpu_line(const char *l, size_t n, void *arg)
{
	struct gpus *g = arg;
	const char *end = l + n, *colon, *name, *uuid;

	if (n < 7 || strncmp(l, "GPU ", 4) != 0 || l[4] < '0' || l[4] > '9' ||
	    (colon = memchr(l, ':', n)) == NULL)
		return;
	if (g->n++ > 0)
		return;
	name = colon + 1;
	if (name < end && *name == ' ')
		name++;
	uuid = name < end ? memmem(name, (size_t)(end - name), " (UUID:", 7) :
	    NULL;
	if (uuid == NULL)
		uuid = end;
	if (name < uuid)
		utf8_copyn(g->name, g->len, name, (size_t)(uuid - name));
}

int
gpus_parse(const char *out, char *name, size_t len)
{
	struct gpus g = { 0, name, len };

	if (len)
		name[0] = '\0';
	lines(out, gpu_line, &g);
	return g.n;
}

struct share {
	double	 free;		/* the smallest so far; 2: none yet */
	int	 bad;
};

static void
mem_line(const char *l, size_t n, void *arg)
{
	struct share *sh = arg;
	char line[128], *end;
	double total, used;

	if (n == 0)
		return;
	if (n >= sizeof(line)) {
		sh->bad = 1;
		return;
	}
	memcpy(line, l, n);
	line[n] = '\0';
	total = strtod(line, &end);
	if (end == line || *end != ',' || total <= 0) {
		sh->bad = 1;
		return;
	}
	used = strtod(end + 1, &end);
	while (*end == ' ')
		end++;
	if (*end || used < 0 || used > total) {
		sh->bad = 1;
		return;
	}
	if (1 - used / total < sh->free)
		sh->free = 1 - used / total;
}

double
gpu_free_share(const char *out)
{
	struct share sh = { 2, 0 };

	lines(out, mem_line, &sh);
	return sh.bad || sh.free > 1 ? -1 : sh.free;
}

int
strv_has(const struct strv *v, const char *s)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (strcmp(v->v[i], s) == 0)
			return 1;
	return 0;
}

static void
image_line(const char *l, size_t n, void *arg)
{
	struct strv *refs = arg;
	size_t w = strcspn(l, " \n");
	char ref[512];

	if (w == 0 || w > n || w >= sizeof(ref))
		return;
	memcpy(ref, l, w);
	ref[w] = '\0';
	if (strstr(ref, "<none>") || strv_has(refs, ref))
		return;
	strv_add(refs, ref);
}

void
images_parse(const char *out, struct strv *refs)
{
	lines(out, image_line, refs);
}

static void
dir_line(const char *l, size_t n, void *arg)
{
	struct strv *dirs = arg;
	char d[1024];

	if (n == 0 || l[0] != '/' || n >= sizeof(d))
		return;
	memcpy(d, l, n);
	d[n] = '\0';
	while (n > 1 && d[n - 1] == '/')
		d[--n] = '\0';
	if (!strv_has(dirs, d))
		strv_add(dirs, d);
}

void
dirs_parse(const char *out, struct strv *dirs)
{
	lines(out, dir_line, dirs);
}
