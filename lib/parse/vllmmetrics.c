/*
 * vLLM's own counters, read per engine. The names are exact: the counter
 * vllm:generation_tokens_total has a sibling vllm:generation_tokens_created
 * (its creation time, a Unix timestamp) that a prefix match would add in,
 * and vllm:request_generation_tokens_* is a histogram of something else.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "promtext.h"
#include "util.h"
#include "vllmmetrics.h"

enum series { S_RUNNING, S_WAITING, S_GEN, S_PROMPT };

static const struct {
	const char	*name;
	unsigned	 bit;
	int		 gauge;
} wanted[] = {
	[S_RUNNING] = { "vllm:num_requests_running", VM_RUNNING, 1 },
	[S_WAITING] = { "vllm:num_requests_waiting", VM_WAITING, 1 },
	[S_GEN] = { "vllm:generation_tokens_total", VM_GEN, 0 },
	[S_PROMPT] = { "vllm:prompt_tokens_total", VM_PROMPT, 0 },
};

static double *
slot(struct vllm_engine *e, enum series s)
{
	switch (s) {
	case S_RUNNING:
		return &e->running;
	case S_WAITING:
		return &e->waiting;
	case S_GEN:
		return &e->gen_tokens;
	case S_PROMPT:
		return &e->prompt_tokens;
	}
	return &e->running;
}

static struct vllm_engine *
engine(struct vllm_reading *r, const char *id)
{
	size_t i;

	for (i = 0; i < r->nengines; i++)
		if (strcmp(r->engines[i].id, id) == 0)
			return &r->engines[i];
	if (r->nengines == VLLM_ENGINES_MAX) {
		r->engines_dropped++;
		return NULL;
	}
	memset(&r->engines[r->nengines], 0, sizeof(r->engines[0]));
	snprintf(r->engines[r->nengines].id, VLLM_ENGINE_ID_MAX, "%s", id);
	return &r->engines[r->nengines++];
}

static int
on_sample(const struct prom_sample *s, void *arg)
{
	struct vllm_reading *r = arg;
	char id[VLLM_ENGINE_ID_MAX];
	struct vllm_engine *e;
	size_t i;
	double *v;

	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		if (prom_name_is(s, wanted[i].name))
			break;
	if (i == sizeof(wanted) / sizeof(wanted[0]))
		return 0;
	if (!isfinite(s->value) || s->value < 0) {
		r->bad_values++;
		return 0;
	}
	prom_label(s, "engine", id, sizeof(id));
	if ((e = engine(r, id)) == NULL) {
		/* summed below all the same, never kept apart */
		r->have |= wanted[i].bit;
		if (i == S_RUNNING)
			r->running += s->value;
		return 0;
	}
	v = slot(e, (enum series)i);
	/*
	 * Multiprocess mode gives a gauge without a multiprocess_mode one
	 * series per process (label pid) for the same engine: the largest
	 * says whether the engine has work. Counters there are summed by
	 * prometheus_client already; a second series of one adds.
	 */
	if (!(e->have & wanted[i].bit))
		*v = s->value;
	else if (wanted[i].gauge)
		*v = s->value > *v ? s->value : *v;
	else
		*v += s->value;
	e->have |= wanted[i].bit;
	return 0;
}

int
vllm_metrics_parse(const char *text, size_t len, struct vllm_reading *r,
    char *err, size_t errlen)
{
	struct prom_stats st;
	size_t i;

	memset(r, 0, sizeof(*r));
	prom_parse(text, len, on_sample, r, &st);
	r->lines = st.lines;
	r->bad_lines = st.bad;
	for (i = 0; i < r->nengines; i++) {
		const struct vllm_engine *e = &r->engines[i];

		r->have |= e->have;
		r->running += e->running;
		r->waiting += e->waiting;
		r->gen_tokens += e->gen_tokens;
		r->prompt_tokens += e->prompt_tokens;
	}
	if (!(r->have & (VM_RUNNING | VM_GEN))) {
		seterr(err, errlen, "no vllm:num_requests_running or "
		    "vllm:generation_tokens_total in %zu lines (%zu samples)",
		    st.lines, st.samples);
		return -1;
	}
	return 0;
}

const struct vllm_engine *
vllm_reading_engine(const struct vllm_reading *r, const char *id)
{
	size_t i;

	for (i = 0; i < r->nengines; i++)
		if (strcmp(r->engines[i].id, id) == 0)
			return &r->engines[i];
	return NULL;
}
