/*
 * Generation that stalls while /health says 200 (a collective hang between
 * the nodes): fed vLLM's own counters reading after reading, it says when
 * an engine has had work and made no token for probe.stall_s over at
 * least probe.stall_readings readings in a row. An engine that still
 * produces tokens, however slowly, is never stalled; nor is one with
 * nothing to do. Pure: the daemon passes the readings and the times in.
 */
#ifndef TANDEM_STALL_H
#define TANDEM_STALL_H

#include <stddef.h>

#include "vllmmetrics.h"

enum stall_verdict {
	STALL_OK,	/* every engine made tokens or had nothing to do */
	STALL_SUSPECT,	/* an engine with work made no token since last */
	STALL_STALLED,	/* ... for stall_s and stall_readings readings */
	STALL_NOINFO,	/* the reading has no token counter */
};

struct stall_engine {
	char	 id[VLLM_ENGINE_ID_MAX];
	double	 tokens;	/* generated + prompt, the last reading */
	double	 progress_t;	/* when it last made a token or was idle */
	double	 token_t;	/* when a reading last saw new tokens; 0 */
	int	 quiet;		/* readings in a row with work, no token */
	int	 seen;		/* still in the last reading */
};

struct stall_state {
	struct stall_engine	 e[VLLM_ENGINES_MAX];
	size_t			 n;
	double			 last_t;	/* 0: no reading yet */
	unsigned long		 resets;	/* counters that went back */
};

/* What the worst engine of the last reading looked like. */
struct stall_report {
	enum stall_verdict	 verdict;
	char			 engine[VLLM_ENGINE_ID_MAX];
	double			 pending;	/* running + waiting there */
	double			 quiet_s;	/* since its last token */
	int			 quiet_readings;
	int			 reset;		/* a counter went back now */
};

void	stall_init(struct stall_state *);
/*
 * One reading taken at NOW (monotonic seconds). A token counter lower
 * than the last (vLLM restarted) starts that engine over; so does a clock
 * that went back. Engines that left the reading are forgotten.
 */
enum stall_verdict stall_feed(struct stall_state *,
	    const struct vllm_reading *, double now, double stall_s,
	    int stall_readings, struct stall_report *);
/*
 * Whether a reading at or after T saw new tokens on some engine: a
 * one-token completion that timed out behind real traffic while tokens
 * kept coming is a saturated engine, not a dead one.
 */
int	stall_tokens_since(const struct stall_state *, double t);
/* "generation-stalled"'s message: engine, work, how long, how many. */
void	stall_describe(const struct stall_report *, char *buf, size_t len);
const char *stall_verdict_name(enum stall_verdict);

#endif
