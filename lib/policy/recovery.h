/*
 * Recovery policy (PRODUCT.md section 3, rules 4-5) as pure functions: the
 * gpu_memory_utilization ladder, the backoff with jitter, the hourly rebuild
 * cap, the probe hysteresis, and which diagnosis a failed check is. The
 * daemon passes the time and the random draw in; nothing here does I/O.
 */
#ifndef TANDEM_RECOVERY_H
#define TANDEM_RECOVERY_H

#include <math.h>
#include <stddef.h>

#include "config.h"
#include "diagnose.h"
#include "metrics.h"

/* Serving this long without a failure starts the backoff over. */
#define RECOVERY_STABLE_S	60
/* The window of recovery.max_rebuilds_per_hour. */
#define RECOVERY_HOUR_S		3600
/* --gpu-memory-utilization when neither vllm.args nor a step sets it. */
#define RECOVERY_GMU_DEFAULT	0.9

/*
 * The checks of a preflight (tandemctl check, tandemd before a rebuild).
 * PF_LINK the fast link (linkcheck.h); PF_GPUS is the devices column
 * (GPUs or NPUs, accel.h); PF_MEMORY their free memory against
 * --gpu-memory-utilization.
 */
enum pf_check { PF_SSH, PF_ENGINE, PF_IMAGE, PF_MODEL, PF_IFACE, PF_LINK,
	PF_GPUS, PF_MEMORY, PF_RAYPORT, PF_NAME, PF_NVIDIA, PF_COUNT };

/*
 * The remedy ladder. step -1 is the configured value; step i is
 * steps[i]. recovery_gmu is 0 for the configured value (nothing to add to
 * the command). recovery_next_gmu_step is the first step below the value
 * in force, or -1 when none is lower: the ladder ends there.
 */
double	recovery_gmu(const double *steps, size_t nsteps, int step);
/* The value vLLM runs with: the step's, else the configured, else 0.9. */
double	recovery_gmu_in_force(const double *steps, size_t nsteps, int step,
	    double configured);
int	recovery_next_gmu_step(const double *steps, size_t nsteps, int step,
	    double configured);

/*
 * The wait before retry number attempt (1, 2, ...): backoff_initial_s
 * doubling up to backoff_max_s, times a jitter of 0.75 to 1.25 drawn from
 * u in [0, 1], so that many clusters do not retry in step.
 */
double	recovery_backoff_s(double initial_s, double max_s, int attempt,
	    double u);

/*
 * The hourly cap. rebuilds is a ring of REBUILDS_HISTORY start times, n
 * the number ever noted; a start time of RECOVERY_FORGIVEN is one given
 * back. The times are the monotonic clock's (tandemd's remedy.c), which
 * starts near 0 at boot: 0 would still be in the hour on a node booted
 * less than an hour ago.
 */
#define RECOVERY_FORGIVEN	(-HUGE_VAL)
void	recovery_note_rebuild(double *rebuilds, size_t *n, double t);
void	recovery_forgive_last(double *rebuilds, size_t n);
/* Every start time given back: tandemctl resume after the cap. */
void	recovery_forgive_all(double *rebuilds, size_t n);
int	recovery_rebuilds_last_hour(const double *rebuilds, size_t n,
	    double now);
double	recovery_oldest_last_hour(const double *rebuilds, size_t n,
	    double now);
/*
 * When the next attempt may start: after the backoff, and when the hour
 * is full (*capped set), not before its oldest rebuild leaves the window.
 */
double	recovery_next_attempt(double now, double backoff_s,
	    const double *rebuilds, size_t n, int max_per_hour, int *capped);

/*
 * Hysteresis: a probe cycle that failed degrades the cluster only after
 * failures_to_degrade in a row; a container seen dead, or a stall (whose
 * verdict took probe.stall_readings readings already), needs no second
 * look. consecutive counts the failed cycle itself.
 */
int	recovery_check_degrades(int consecutive, int failures_to_degrade,
	    enum diag_code);
/* Whether the backoff's attempt count starts over. */
int	recovery_attempts_reset(int attempt, int serving, double serving_for_s);

/* Counts a failure by diagnosis for /metrics; a full table drops new ones. */
void	recovery_count_failure(struct fail_count *, size_t *n, size_t max,
	    enum diag_code);

/*
 * Which diagnosis a failed preflight check is, from its detail text. Only
 * a detail the check recognises maps to its diagnosis; any other is
 * DIAG_UNRECOGNISED_ANSWER, never a terminal one.
 */
enum diag_code	recovery_preflight_diag(enum pf_check, const char *detail);
/*
 * Whether a diagnosis steps recovery.gpu_memory_utilization_steps down:
 * only REMEDY_LOWER_GMU. kv-cache-no-memory wants the opposite.
 */
int		recovery_ladder_applies(const struct diag *);
/* Which diagnosis an SSH session refused for good is. */
enum diag_code	recovery_ssh_refused_diag(const char *why);

#endif
