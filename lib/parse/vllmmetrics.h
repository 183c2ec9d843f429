/*
 * What tandem reads in vLLM's GET /metrics (tests/unit/data/vllm-metrics/
 * and formats.md section 8): the requests running and waiting and the
 * token counters, per engine (label "engine", one per data-parallel rank;
 * none before the V1 engine) and summed over engines.
 */
#ifndef TANDEM_VLLMMETRICS_H
#define TANDEM_VLLMMETRICS_H

#include <stddef.h>

/* More engines than this in one server are summed but not kept apart. */
#define VLLM_ENGINES_MAX	64
#define VLLM_ENGINE_ID_MAX	16

/* Which series a reading had. */
#define VM_RUNNING	0x01
#define VM_WAITING	0x02
#define VM_GEN		0x04
#define VM_PROMPT	0x08

struct vllm_engine {
	char		 id[VLLM_ENGINE_ID_MAX];	/* "" : no engine label */
	unsigned	 have;
	double		 running;
	double		 waiting;
	double		 gen_tokens;
	double		 prompt_tokens;
};

struct vllm_reading {
	struct vllm_engine	 engines[VLLM_ENGINES_MAX];
	size_t			 nengines;
	size_t			 engines_dropped;	/* beyond the array */
	unsigned		 have;		/* any engine had it */
	double			 running;	/* sums over every engine */
	double			 waiting;
	double			 gen_tokens;
	double			 prompt_tokens;
	size_t			 lines;
	size_t			 bad_lines;	/* neither sample nor comment */
	size_t			 bad_values;	/* NaN, Inf or negative: ignored */
};

/*
 * Reads a /metrics body of LEN bytes. Returns 0, or -1 with a message when
 * the body has neither vllm:num_requests_running nor
 * vllm:generation_tokens_total (not vLLM, or vLLM run with
 * --disable-log-stats, which registers no vllm: metric at all).
 */
int	vllm_metrics_parse(const char *text, size_t len,
	    struct vllm_reading *, char *err, size_t errlen);
/* The engine's entry in a reading, or NULL. */
const struct vllm_engine *vllm_reading_engine(const struct vllm_reading *,
	    const char *id);

#endif
