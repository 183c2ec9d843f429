#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "pgwait.h"
#include "utf8.h"

#define WAIT_SIGN	"Waiting for creating a placement group of specs for "
/*
 * vLLM formats both with current_platform.ray_device_key (ray_utils.py):
 * "GPU", or vllm-ascend's "NPU" (vllm_ascend/platform.py).
 */
#define SHORT_SIGN	"exceeds the total number of available GPUs in the " \
			"placement group."
#define SHORT_SIGN_NPU	"exceeds the total number of available NPUs in the " \
			"placement group."

static void
keep_line(const char *log, const char *hit, struct pg_sign *s)
{
	const char *b = hit;

	while (b > log && b[-1] != '\n')
		b--;
	utf8_copyn(s->line, sizeof(s->line), b, strcspn(b, "\n"));
}

/*
 * "specs=[{'GPU': 1.0, 'node:10.0.0.1': 0.001}, {'GPU': 1.0}]": 2 GPUs;
 * Ascend's bundles ask 'NPU'.
 */
static int
spec_gpus(const char *line)
{
	static const char *const keys[] = { "'GPU': ", "'NPU': " };
	const char *start = strstr(line, "specs=[");
	const char *end, *p;
	double sum = 0;
	size_t k;

	if (start == NULL)
		return 0;
	end = strchr(start, ']');
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (p = strstr(start, keys[k]); p && (!end || p < end);
		    p = strstr(p + 1, keys[k]))
			sum += atof(p + 7);
	return (int)(sum + 0.5);
}

/* Whether a line after the last sign shows vLLM went on. */
static int
moved_on(const char *after)
{
	const char *l = after, *e;

	for (; *l; l = *e ? e + 1 : e) {
		const char *b = l;

		e = l + strcspn(l, "\n");
		while (b < e && (*b == ' ' || *b == '\t' || *b == '\r'))
			b++;
		if (b == e)
			continue;
		/* the Ray driver's autoscaler events, printed while it waits */
		if (strncmp(b, "(autoscaler ", 12) == 0)
			continue;
		return 1;
	}
	return 0;
}

void
pg_scan(const char *log, struct pg_sign *s)
{
	const char *p, *last = NULL;

	memset(s, 0, sizeof(*s));
	s->waited_s = -1;
	if (log == NULL)
		return;
	for (p = strstr(log, WAIT_SIGN); p; p = strstr(p + 1, WAIT_SIGN)) {
		int n = atoi(p + strlen(WAIT_SIGN));
		int g;

		s->seen = 1;
		if (n > s->waited_s)
			s->waited_s = n;
		keep_line(log, p, s);
		if ((g = spec_gpus(s->line)) > 0)
			s->need_gpus = g;
		last = p;
	}
	/* The warning is vLLM's only sign before the first 10 s wait ends. */
	if ((p = strstr(log, SHORT_SIGN)) != NULL ||
	    (p = strstr(log, SHORT_SIGN_NPU)) != NULL) {
		s->seen = s->warned = 1;
		if (s->waited_s < 0)
			keep_line(log, p, s);
		if (last == NULL || p > last)
			last = p;
	}
	if (last && moved_on(last + strcspn(last, "\n"))) {
		s->seen = 0;
		s->over = 1;
	}
	if ((p = strstr(log, "Cannot provide a placement group")) != NULL ||
	    (p = strstr(log, "in the placement group. Required number of "
	    "devices")) != NULL) {
		s->seen = s->failed = 1;
		keep_line(log, p, s);
	}
}

enum pg_state
pg_verdict(const struct pg_sign *s, const struct raystatus *rs, int need_gpus,
    double sign_age_s, double limit_s, char *why, size_t whylen)
{
	int need = s->need_gpus > 0 ? s->need_gpus : need_gpus;
	double free_gpus;

	if (whylen)
		why[0] = '\0';
	if (!s->seen)
		return PG_NONE;
	if (s->failed) {
		utf8_copy(why, whylen, s->line);
		return PG_FAILED;
	}
	if (rs && need > 0 && rs->gpus + 1e-9 < need) {
		utf8_fmt(why, whylen, "it needs %d GPUs and ray status shows %g "
		    "on %d nodes (%s)", need, rs->gpus, rs->alive_nodes,
		    s->line);
		return PG_SHORT;
	}
	free_gpus = rs ? rs->gpus - rs->gpus_used : 0;
	if (rs && need > 0 && free_gpus + 1e-9 < need && (rs->gpus_used > 0 ||
	    rs->pending_pgs > 0)) {
		utf8_fmt(why, whylen, "it needs %d GPUs; ray status shows %g of "
		    "%g in use%s (%s)", need, rs->gpus_used, rs->gpus,
		    rs->pending_pgs > 1 ? " and another pending placement "
		    "group" : "", s->line);
		return PG_HELD;
	}
	if (sign_age_s >= limit_s) {
		/*
		 * GPUs free and still no group: the first bundle asks for
		 * node:<driver ip> (VLLM_HOST_IP), which no Ray node has when
		 * Ray knows the head by another address.
		 */
		if (rs && rs->pending_pgs > 0 && need > 0 && free_gpus + 1e-9 >=
		    need)
			utf8_fmt(why, whylen, "for %.0f s; ray status shows %g GPUs "
			    "free and the placement group pending: its first "
			    "bundle asks for node:<VLLM_HOST_IP>, which must be "
			    "the address Ray knows the head by (%s)", sign_age_s,
			    free_gpus, s->line);
		else
			utf8_fmt(why, whylen, "for %.0f s since vLLM's first sign; "
			    "vLLM itself gives up only after about 2550 s (%s)",
			    sign_age_s, s->line);
		return PG_TOO_LONG;
	}
	return PG_WAITING;
}

int
pg_diag(enum pg_state st)
{
	switch (st) {
	case PG_NONE:
	case PG_WAITING:
		return -1;
	case PG_SHORT:
	case PG_HELD:
	case PG_TOO_LONG:
		return DIAG_PLACEMENT_GROUP_WAIT;
	case PG_FAILED:
		return DIAG_PLACEMENT_GROUP;
	}
	return -1;
}
