#include <string.h>

#include "diagnose.h"
#include "gpucheck.h"
#include "utf8.h"

/* The line holding needle, whole. */
static void
line_of(const char *text, const char *hit, char *buf, size_t len)
{
	const char *b = hit;

	while (b > text && b[-1] != '\n')
		b--;
	utf8_copyn(buf, len, b, strcspn(b, "\n"));
}

enum gpu_verdict
gpucheck_verdict(int exit_code, const char *out, const char *err,
    const char *asked, char *detail, size_t detaillen, int *diag)
{
	const struct diag *d;
	const char *hit;
	char line[200];

	if (out == NULL)
		out = "";
	if (err == NULL)
		err = "";
	*diag = -1;
	if (exit_code == 0) {
		utf8_fmt(detail, detaillen, "works: %s", asked ? asked :
		    "run --gpus all");
		return GPU_WORKS;
	}
	/*
	 * docker: 'could not select device driver "" with capabilities:
	 * [[gpu]]' (moby daemon/errors.go, no hook on dockerd's PATH);
	 * podman 4: "unresolvable CDI devices nvidia.com/gpu=all" (no CDI
	 * spec yet: cdi-unresolvable, retried, as after a boot the spec
	 * comes when nvidia-cdi-refresh.service has run).
	 */
	d = diag_match(err, NULL, 0);
	if (d && (d->id == DIAG_NVIDIA_RUNTIME_MISSING ||
	    d->id == DIAG_CDI_UNRESOLVABLE)) {
		hit = strstr(err, "could not select device driver");
		if (hit == NULL)
			hit = strstr(err, "unresolvable CDI devices");
		line_of(err, hit ? hit : err, line, sizeof(line));
		utf8_fmt(detail, detaillen, "refused: %s", line);
		*diag = d->id;
		return GPU_REFUSED;
	}
	/*
	 * The hook is there and ran, but libnvidia-container could not talk
	 * to the driver: "nvidia-container-cli: initialization error: nvml
	 * error: driver not loaded" (NVIDIA/libnvidia-container), wrapped in
	 * runc's "error running hook #0".
	 */
	if ((hit = strstr(err, "nvidia-container-cli: initialization error"))
	    != NULL) {
		line_of(err, hit, line, sizeof(line));
		utf8_fmt(detail, detaillen, "driver: %s", line);
		*diag = DIAG_GPUS_MISSING;
		return GPU_DRIVER;
	}
	if (d && (d->id == DIAG_ENGINE_DOWN || d->id == DIAG_ENGINE_PERMISSION ||
	    d->id == DIAG_IMAGE_MISSING)) {
		/*
		 * The line that says so: docker's "Unable to find image"
		 * comes before the pull's refusal (image-pull-failed alone).
		 */
		(void)diag_match(err, line, sizeof(line));
		utf8_fmt(detail, detaillen, "not checked: %s", line);
		*diag = d->id;
		return GPU_ENGINE;
	}
	diag_unknown_excerpt(detail, detaillen, asked, exit_code, out, err);
	*diag = DIAG_UNRECOGNISED_ANSWER;
	return GPU_UNKNOWN;
}
