/*
 * Where vLLM's start-up time went, from its own log lines (issue 47): the
 * weights' load, the model's load, torch.compile, CUDA-graph capture and
 * the engine's whole init (profile, KV cache, warm-up), each as vLLM
 * timed it. The texts and the releases that print them are in
 * tests/unit/data/README.md (vllm-phases/). No I/O.
 */
#ifndef TANDEM_VLLMPHASES_H
#define TANDEM_VLLMPHASES_H

#include <stddef.h>

enum vllm_phase {
	VP_LOAD_WEIGHTS,	/* "Loading weights took X seconds" */
	VP_MODEL_LOAD,		/* "Model loading took X GiB ... Y seconds" */
	VP_COMPILE,		/* "torch.compile takes/took X s in total" */
	VP_GRAPH_CAPTURE,	/* "Graph capturing finished in X secs" */
	VP_INIT_ENGINE,		/* "init engine (...) took X seconds" */
	VP_COUNT
};

/* One timed line: which phase, how long, and whose. */
struct vllm_phase_line {
	enum vllm_phase	 phase;
	double		 seconds;
	/*
	 * The node's address when Ray forwarded the line from another node's
	 * worker ("(RayWorkerWrapper pid=N, ip=A)"); "" when the line is the
	 * log's own node's (Ray names no ip for a worker on the driver's).
	 */
	char		 ip[64];
};

/* The phase's name, as the metric's and /rebuilds/last's phase label. */
const char	*vllm_phase_name(enum vllm_phase);

/* One line (no newline needed); 1 when it is a timed phase, else 0. */
int	vllmphases_line(const char *line, size_t len, struct vllm_phase_line *);

/*
 * Every timed line of a log text, in order, to fn; returns how many. A
 * line cut off at either end of the text (a tail) is read as it is.
 */
size_t	vllmphases_scan(const char *text, size_t len,
	    void (*fn)(const struct vllm_phase_line *, void *), void *arg);

#endif
