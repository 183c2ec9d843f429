/*
 * vLLM's timed start-up lines (vllmphases.h). Each is found by its fixed
 * words, and the figure vLLM printed with %.2f, %.6f or %.0f is read
 * after them; the words that changed between releases are each matched
 * (tests/unit/data/README.md, vllm-phases/).
 */
#include <stdlib.h>
#include <string.h>

#include "vllmphases.h"

static const char *const phase_names[VP_COUNT] = {
	[VP_LOAD_WEIGHTS] = "load_weights",
	[VP_MODEL_LOAD] = "model_load",
	[VP_COMPILE] = "torch_compile",
	[VP_GRAPH_CAPTURE] = "graph_capture",
	[VP_INIT_ENGINE] = "init_engine",
};

/*
 * The words before the figure; skip, when not NULL, is what stands
 * between them and the figure (the GiB of "Model loading took X GiB
 * [memory] and Y seconds": the seconds follow the last " and ").
 */
static const struct pattern {
	enum vllm_phase	 phase;
	const char	*words;
	const char	*skip;
} patterns[] = {
	{ VP_LOAD_WEIGHTS, "Loading weights took ", NULL },
	{ VP_MODEL_LOAD, "Model loading took ", " and " },
	{ VP_COMPILE, "torch.compile takes ", NULL },
	{ VP_COMPILE, "torch.compile took ", NULL },
	{ VP_GRAPH_CAPTURE, "Graph capturing finished in ", NULL },
	{ VP_INIT_ENGINE, "init engine (profile, create kv cache, warmup "
	    "model) took ", NULL },
};

const char *
vllm_phase_name(enum vllm_phase p)
{
	return (unsigned)p < VP_COUNT ? phase_names[p] : "unknown";
}

static const char *
find_in(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle), i;

	if (n == 0 || n > len)
		return NULL;
	for (i = 0; i + n <= len; i++)
		if (s[i] == needle[0] && memcmp(s + i, needle, n) == 0)
			return s + i;
	return NULL;
}

/* A figure as vLLM's printf-style formats write it: digits[.digits]. */
static int
read_seconds(const char *p, const char *end, double *out)
{
	char num[32];
	size_t n = 0;
	int dot = 0;

	while (p < end && n + 1 < sizeof(num) && ((*p >= '0' && *p <= '9') ||
	    (*p == '.' && !dot))) {
		dot |= *p == '.';
		num[n++] = *p++;
	}
	if (n == 0 || num[0] == '.')
		return 0;
	num[n] = '\0';
	*out = strtod(num, NULL);
	return *out >= 0 && *out < 1e7;	/* no start-up takes 115 days */
}

/* "(RayWorkerWrapper pid=N, ip=A) ...": A, when the line begins so. */
static void
ray_ip(const char *line, size_t len, char *ip, size_t ipsz)
{
	const char *close, *at, *end;
	size_t n;

	ip[0] = '\0';
	if (len == 0 || line[0] != '(' ||
	    (close = memchr(line, ')', len)) == NULL)
		return;
	if ((at = find_in(line, (size_t)(close - line), "ip=")) == NULL)
		return;
	at += 3;
	for (end = at; end < close && *end != ',' && *end != ' '; end++)
		;
	n = (size_t)(end - at);
	if (n == 0 || n >= ipsz)
		return;
	memcpy(ip, at, n);
	ip[n] = '\0';
}

int
vllmphases_line(const char *line, size_t len, struct vllm_phase_line *out)
{
	const char *end = line + len;
	size_t i;

	for (i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		const struct pattern *pt = &patterns[i];
		const char *p = find_in(line, len, pt->words), *q;

		if (p == NULL)
			continue;
		p += strlen(pt->words);
		if (pt->skip) {
			/* the last " and " of the line: the seconds follow */
			if (find_in(p, (size_t)(end - p), pt->skip) == NULL)
				return 0;
			while ((q = find_in(p, (size_t)(end - p), pt->skip)))
				p = q + strlen(pt->skip);
		}
		if (!read_seconds(p, end, &out->seconds))
			return 0;
		out->phase = pt->phase;
		ray_ip(line, len, out->ip, sizeof(out->ip));
		return 1;
	}
	return 0;
}

size_t
vllmphases_scan(const char *text, size_t len,
    void (*fn)(const struct vllm_phase_line *, void *), void *arg)
{
	const char *p = text, *end = text + len;
	size_t found = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct vllm_phase_line pl;

		if (vllmphases_line(p, (size_t)(le - p), &pl)) {
			found++;
			if (fn)
				fn(&pl, arg);
		}
		p = nl ? nl + 1 : end;
	}
	return found;
}
