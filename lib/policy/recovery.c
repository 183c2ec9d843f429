#include <math.h>
#include <stdlib.h>
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
		rebuilds[(n - 1) % REBUILDS_HISTORY] = RECOVERY_FORGIVEN;
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
		rebuilds[i] = RECOVERY_FORGIVEN;
}

static size_t
rebuilds_kept(size_t n)
{
	return n < REBUILDS_HISTORY ? n : REBUILDS_HISTORY;
}

int
recovery_rebuilds_last_hour(const double *rebuilds, size_t n, double now)
{
	size_t i;
	int count = 0;

	for (i = 0; i < rebuilds_kept(n); i++)
		if (now - rebuilds[i] < RECOVERY_HOUR_S)
			count++;
	return count;
}

double
recovery_oldest_last_hour(const double *rebuilds, size_t n, double now)
{
	double oldest = now;
	size_t i;

	for (i = 0; i < rebuilds_kept(n); i++)
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
	 * (lib/policy/stall.c): a second cycle would only add an interval.
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

/*
 * An engine-level answer names its own cause whatever was asked: the
 * engine is down, or the socket refused ssh.user.
 */
static int
engine_level(const char *d, enum diag_code *code)
{
	const struct diag *m = diag_match(d, NULL, 0);

	if (m && (m->id == DIAG_ENGINE_DOWN || m->id == DIAG_ENGINE_PERMISSION)) {
		*code = m->id;
		return 1;
	}
	return 0;
}

static int
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * Only an answer tandem recognises may become a check's diagnosis (and so
 * a terminal one): each check has the details it knows, written by the
 * preflight from the tool's words. Anything else is "could not tell"
 * (DIAG_UNRECOGNISED_ANSWER, retried): a query the engine rejected ("not
 * checked: template: ..."), a command that failed in a way nobody
 * expected. The engine-level answers (down, permission denied) name their
 * cause from any check.
 */
enum diag_code
recovery_preflight_diag(enum pf_check check, const char *d)
{
	enum diag_code code;

	if (d == NULL)
		d = "";
	switch (check) {
	case PF_SSH:
		return strstr(d, "host key") || strstr(d, "known_hosts") ?
		    DIAG_HOST_KEY : strstr(d, "authentication") ?
		    DIAG_SSH_AUTH : DIAG_NODE_UNREACHABLE;
	case PF_COUNT:
		break;
	default:
		if (engine_level(d, &code))
			return code;
		break;
	}
	switch (check) {
	case PF_SSH:
		break;
	case PF_ENGINE:
		/* only the recognised texts above say the engine is down */
		break;
	case PF_IMAGE:
		/* a node that differs from the others: preflight says "differs" */
		if (starts(d, "differs"))
			return DIAG_IMAGE_MISMATCH;
		if (starts(d, "absent") && (diag_match(d, NULL, 0) ==
		    diag_get(DIAG_IMAGE_MISSING) || strstr(d, "no such image")))
			return DIAG_IMAGE_MISSING;
		break;
	case PF_MODEL:
		if (starts(d, "differs"))
			return DIAG_MODEL_MISMATCH;
		if (starts(d, "config.json missing") ||
		    (starts(d, "directory missing") && (strstr(d,
		    "No such file or directory") || strstr(d, "can't cd"))))
			return DIAG_MODEL_MISSING;
		break;
	case PF_IFACE:
		if (starts(d, "does not carry") || starts(d,
		    "no such interface"))
			return DIAG_INTERFACE_WRONG;
		break;
	case PF_LINK:
		/* the link check writes its finding's code first
		 * (preflight_link.c); could not tell has none */
		if (starts(d, "link-down: "))
			return DIAG_LINK_DOWN;
		if (starts(d, "link-unreachable: "))
			return DIAG_LINK_UNREACHABLE;
		if (starts(d, "mtu-mismatch: "))
			return DIAG_MTU_MISMATCH;
		if (starts(d, "interface-wrong: "))
			return DIAG_INTERFACE_WRONG;
		/* preflight_steps.c's RDMA verdict, in the link column */
		if (starts(d, "rdma-port-down: "))
			return DIAG_RDMA_PORT_DOWN;
		if (starts(d, "rdma-gid-missing: "))
			return DIAG_RDMA_GID_MISSING;
		if (starts(d, "rdma-link-layer-mixed: "))
			return DIAG_RDMA_LINK_LAYER_MIXED;
		break;
	case PF_GPUS:
		/* accel_devices's two failures: none listed, one not healthy */
		if ((starts(d, "no ") && strstr(d, " visible")) ||
		    strstr(d, ", not healthy: "))
			return DIAG_GPUS_MISSING;
		/* preflight_steps.c's verdict on an Xid of the fatal class */
		if (starts(d, "fatal GPU fault: "))
			return DIAG_GPU_XID;
		break;
	case PF_MEMORY:
		/* accel_free's refusal; the ladder's remedy asks less */
		if (strstr(d, " GiB free, less than --gpu-memory-utilization "))
			return DIAG_GPU_MEMORY_LOW;
		break;
	case PF_RAYPORT:
		if (starts(d, "held by another process"))
			return DIAG_PORT_IN_USE;
		if (starts(d, "ray.auth_token_file ") && strstr(d,
		    ": missing or empty"))
			return DIAG_RAY_TOKEN_MISSING;
		break;
	case PF_NAME:
		if (strstr(d, "not started by tandem"))
			return DIAG_FOREIGN_CONTAINER;
		break;
	case PF_NVIDIA:
		/*
		 * A recognised "no" (gpucheck.c): the engine's own refusal of
		 * --gpus or of the CDI device, or the hook's report that the
		 * driver does not answer. A runtime list without nvidia is no
		 * failure (the hook alone serves --gpus), and "not checked:
		 * ..." is none of them.
		 */
		/* the GPU run needs the image: the image check says so too */
		if (starts(d, "not checked") && diag_match(d, NULL, 0) ==
		    diag_get(DIAG_IMAGE_MISSING))
			return DIAG_IMAGE_MISSING;
		if (starts(d, "refused") && diag_match(d, NULL, 0) ==
		    diag_get(DIAG_NVIDIA_RUNTIME_MISSING))
			return DIAG_NVIDIA_RUNTIME_MISSING;
		if (starts(d, "refused") && diag_match(d, NULL, 0) ==
		    diag_get(DIAG_CDI_UNRESOLVABLE))
			return DIAG_CDI_UNRESOLVABLE;
		if (starts(d, "driver: ") && strstr(d,
		    "nvidia-container-cli: initialization error"))
			return DIAG_GPUS_MISSING;
		if (starts(d, "driver: ") && strstr(d,
		    "nvidia-container-cli: requirement error"))
			return DIAG_CUDA_DRIVER_TOO_OLD;
		break;
	case PF_COUNT:
		break;
	}
	return DIAG_UNRECOGNISED_ANSWER;
}

int
recovery_ladder_applies(const struct diag *d)
{
	return d != NULL && d->action == REMEDY_LOWER_GMU;
}

enum diag_code
recovery_ssh_refused_diag(const char *why)
{
	return strstr(why, "host key") || strstr(why, "known_hosts") ?
	    DIAG_HOST_KEY : DIAG_SSH_AUTH;
}
