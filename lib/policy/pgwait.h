/*
 * vLLM's placement-group wait, judged from its log and `ray status` while
 * tandem waits for vLLM (the wait-vllm step).
 *
 * vLLM (vllm/v1/executor/ray_utils.py, _wait_until_pg_ready) waits for its
 * placement group with ray.wait timeouts of 10, 20, 40, ... s and logs
 * "Waiting for creating a placement group of specs for N seconds" after
 * each, so at about 10, 30, 70, 150, 310, 630, 1270 and 2550 s. It checks
 * PG_WAIT_TIMEOUT (1800 s) only between waits, so the wait that starts at
 * 1270 s runs to 2550 s and only then does it raise "Cannot provide a
 * placement group". tandem's vllm.ready_timeout_s (1800) comes first, so
 * waiting for that error would say startup-timeout and never name the
 * cause. Before waiting, initialize_ray_cluster warns "The number of
 * required GPUs exceeds the total number of available GPUs in the
 * placement group." when Ray has fewer GPUs than the parallel size: a sign
 * too, not a failure (vLLM waits on purpose, for a cluster still joining).
 *
 * tandem starts vLLM only once ray status showed ray.expect_gpus, so any
 * wait for the placement group means the GPUs are gone or held:
 *   - a sign, and ray status shows fewer GPUs than vLLM needs: a node left
 *     Ray (or expect_gpus is below the parallel size): named at once;
 *   - a sign, and Ray has the GPUs but they are held (used, or another
 *     pending placement group): named at once;
 *   - a sign and no ray status to tell: named once the first sign is
 *     limit_s old (probe.ray_wait_timeout_s, the time tandem gives Ray to
 *     show every GPU);
 *   - vLLM's own final error, or its ValueError for a placement group it
 *     was given: placement-group, as the catalogue says.
 *
 * Rechecked against vLLM's current executor (issue 41): _wait_until_pg_ready
 * is unchanged, but it runs in the engine core before the core reports
 * ready, and from 0.11.1 the API server waits for that report only
 * VLLM_ENGINE_READY_TIMEOUT_S (600 s, vllm/v1/engine/core_client.py): left
 * at vLLM's default, the API server would exit at 600 s ("Timed out waiting
 * for engine core processes to start", engine-ready-timeout) long before
 * the 2,550 s above. tandem sets the variable to vllm.ready_timeout_s
 * (lib/plan.c), so the order above holds again: the signs are named within
 * limit_s, then tandem's own deadline. vLLM 0.24 (issue #48031) awaits the
 * load before that wait begins, so there the variable bounds nothing.
 */
#ifndef TANDEM_PGWAIT_H
#define TANDEM_PGWAIT_H

#include <stddef.h>

#include "raystatus.h"

enum pg_state {
	PG_NONE,	/* no sign of a placement-group wait */
	PG_WAITING,	/* a sign; nothing decided yet: keep waiting */
	PG_SHORT,	/* Ray has fewer GPUs than vLLM asks for */
	PG_HELD,	/* Ray has them, but they are held */
	PG_TOO_LONG,	/* waiting longer than the limit */
	PG_FAILED,	/* vLLM gave up: placement-group */
};

struct pg_sign {
	int	 seen;		/* a sign is in the log */
	int	 waited_s;	/* the largest "for N seconds" logged, or -1 */
	int	 need_gpus;	/* GPUs in the specs, 0 when not logged */
	int	 warned;	/* "The number of required GPUs exceeds ..." */
	int	 failed;	/* "Cannot provide a placement group" */
	int	 over;		/* vLLM logged on after its last sign: it got it */
	char	 line[240];	/* the last sign line, for the message */
};

/*
 * Reads vLLM's log (the tail tandem has) for the signs. A wait that ended
 * (vLLM logged something else after its last sign; Ray's "(autoscaler
 * +Ns)" lines about the waiting request do not count) is no sign: the
 * placement group came, and its GPUs in use are vLLM's own.
 */
void		pg_scan(const char *log, struct pg_sign *);
/*
 * The verdict. rs is the latest ray status (NULL when none parsed since
 * vLLM started); need_gpus the parallel size (TP x PP), used when the log
 * does not say; sign_age_s how long ago tandem first saw a sign; limit_s
 * the bound. why gets the message's excerpt for the diagnosis.
 */
enum pg_state	pg_verdict(const struct pg_sign *, const struct raystatus *rs,
		    int need_gpus, double sign_age_s, double limit_s, char *why,
		    size_t whylen);
/* The diagnosis of a state: -1 for PG_NONE and PG_WAITING. */
int		pg_diag(enum pg_state);

#endif
