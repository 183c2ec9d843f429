#include <math.h>
#include <string.h>

#include "recovery.h"
#include "utf8.h"

double
recovery_gmu(const double *steps, size_t nsteps, int step)
{
	if (step < 0 || (size_t)step >= nsteps)
		return 0;
	return steps[step];
}

double
recovery_gmu_in_force(const double *steps, size_t nsteps, int step,
    double configured)
{
	double cur = recovery_gmu(steps, nsteps, step);

	if (cur == 0)
		cur = configured > 0 ? configured : RECOVERY_GMU_DEFAULT;
	return cur;
}

int
recovery_next_gmu_step(const double *steps, size_t nsteps, int step,
    double configured)
{
	double cur = recovery_gmu_in_force(steps, nsteps, step, configured);
	size_t i;

	/* a step equal to the value in force would change nothing */
	for (i = 0; i < nsteps; i++)
		if (steps[i] < cur - 1e-9)
			return (int)i;
	return -1;
}

double
recovery_backoff_s(double initial_s, double max_s, int attempt, double u)
{
	double delay = initial_s * pow(2, attempt - 1);

	/* the jitter comes after the cap: a long wait is spread out too */
	delay = fmin(delay, max_s);
	return delay * (0.75 + 0.5 * u);
}

void
recovery_note_rebuild(double *rebuilds, size_t *n, double t)
{
	rebuilds[*n % REBUILDS_HISTORY] = t;
	(*n)++;
}

/*
 * A rebuild that stopped because a node went away is given back to the
 * cap: waiting for a rebooting node is the contract (rule 2), not a failed
 * attempt, and must not leave the daemon waiting an hour once the node is
 * back.
 */
void
recovery_forgive_last(double *rebuilds, size_t n)
{
	if (n > 0)
		rebuilds[(n - 1) % REBUILDS_HISTORY] = 0;
}

/*
 * tandemctl resume after the cap, the operator's "I fixed it": the hour's
 * rebuilds are given back, so the next failure is retried at once.
 */
void
recovery_forgive_all(double *rebuilds, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < REBUILDS_HISTORY; i++)
		rebuilds[i] = 0;
}

static size_t
held(size_t n)
{
	return n < REBUILDS_HISTORY ? n : REBUILDS_HISTORY;
}

int
recovery_rebuilds_last_hour(const double *rebuilds, size_t n, double now)
{
	size_t i;
	int count = 0;

	for (i = 0; i < held(n); i++)
		if (now - rebuilds[i] < RECOVERY_HOUR_S)
			count++;
	return count;
}

double
recovery_oldest_last_hour(const double *rebuilds, size_t n, double now)
{
	double oldest = now;
	size_t i;

	for (i = 0; i < held(n); i++)
		if (now - rebuilds[i] < RECOVERY_HOUR_S && rebuilds[i] < oldest)
			oldest = rebuilds[i];
	return oldest;
}

double
recovery_next_attempt(double now, double backoff_s, const double *rebuilds,
    size_t n, int max_per_hour, int *capped)
{
	double next = now + backoff_s;

	*capped = recovery_rebuilds_last_hour(rebuilds, n, now) >=
	    max_per_hour;
	if (*capped)
		next = fmax(next, recovery_oldest_last_hour(rebuilds, n, now) +
		    RECOVERY_HOUR_S);
	return next;
}

int
recovery_check_degrades(int consecutive, int failures_to_degrade,
    enum diag_code code)
{
	/*
	 * A dead container needs no second look; nor does a stall, whose
	 * verdict already took probe.stall_readings readings in a row
	 * (lib/stall.c): a second cycle would only add an interval.
	 */
	return consecutive >= failures_to_degrade ||
	    code == DIAG_CONTAINER_DIED || code == DIAG_GENERATION_STALLED;
}

int
recovery_attempts_reset(int attempt, int serving, double serving_for_s)
{
	return serving && attempt && serving_for_s > RECOVERY_STABLE_S;
}

void
recovery_count_failure(struct fail_count *f, size_t *n, size_t max,
    enum diag_code code)
{
	const char *name = diag_code_name(code);
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp(f[i].reason, name) == 0)
			break;
	if (i == *n) {
		if (i == max)
			return;
		utf8_fmt(f[i].reason, sizeof(f[i].reason), "%s", name);
		(*n)++;
	}
	f[i].n++;
}

enum diag_code
recovery_preflight_diag(enum pf_check check, const char *d)
{
	switch (check) {
	case PF_SSH:
		return strstr(d, "host key") || strstr(d, "known_hosts") ?
		    DIAG_HOST_KEY : strstr(d, "authentication") ?
		    DIAG_SSH_AUTH : DIAG_NODE_UNREACHABLE;
	case PF_ENGINE:		return DIAG_ENGINE_DOWN;
	/* a node that differs from the others: preflight says "differs" */
	case PF_IMAGE:		return strstr(d, "differs") ?
				    DIAG_IMAGE_MISMATCH : DIAG_IMAGE_MISSING;
	case PF_MODEL:		return strstr(d, "differs") ?
				    DIAG_MODEL_MISMATCH : DIAG_MODEL_MISSING;
	case PF_IFACE:		return DIAG_INTERFACE_WRONG;
	case PF_GPUS:		return DIAG_GPUS_MISSING;
	case PF_RAYPORT:	return DIAG_PORT_IN_USE;
	case PF_NAME:		return DIAG_FOREIGN_CONTAINER;
	case PF_NVIDIA:		return DIAG_NVIDIA_RUNTIME_MISSING;
	case PF_COUNT:		break;
	}
	return DIAG_VLLM_EXITED;
}

enum diag_code
recovery_ssh_refused_diag(const char *why)
{
	return strstr(why, "host key") || strstr(why, "known_hosts") ?
	    DIAG_HOST_KEY : DIAG_SSH_AUTH;
}
