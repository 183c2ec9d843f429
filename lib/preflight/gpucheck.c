#include <ctype.h>
#include <stdlib.h>
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
	/*
	 * The hook ran and refused the image: "nvidia-container-cli:
	 * requirement error: unsatisfied condition: cuda>=X" (the image's
	 * NVIDIA_REQUIRE_CUDA against the driver's CUDA). No retry helps;
	 * the preflight must say so, since the start that would is never
	 * reached while the preflight cannot tell.
	 */
	if (d && d->id == DIAG_CUDA_DRIVER_TOO_OLD &&
	    (hit = strstr(err, "nvidia-container-cli: requirement error"))
	    != NULL) {
		line_of(err, hit, line, sizeof(line));
		utf8_fmt(detail, detaillen, "driver: %s", line);
		*diag = d->id;
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

/*
 * NVIDIA's CUDA Toolkit release notes, table 3 "CUDA Toolkit and
 * Corresponding Driver Versions" (Linux, the toolkit's GA driver): a
 * driver branch supports the CUDA of the first row at or below it, which
 * its nvidia-smi shows as "CUDA Version: X" (tests/unit/data/README.md).
 */
static const struct {
	int		 branch;
	const char	*cuda;
} cuda_of_branch[] = {
	{ 580, "13.0" }, { 575, "12.9" }, { 570, "12.8" }, { 565, "12.7" },
	{ 560, "12.6" }, { 555, "12.5" }, { 550, "12.4" }, { 545, "12.3" },
	{ 535, "12.2" }, { 530, "12.1" }, { 525, "12.0" }, { 520, "11.8" },
	{ 515, "11.7" }, { 510, "11.6" }, { 495, "11.5" }, { 470, "11.4" },
	{ 465, "11.3" }, { 460, "11.2" }, { 455, "11.1" }, { 450, "11.0" },
};

const char *
gpucheck_driver_cuda(const char *driver)
{
	char *end;
	long b;
	size_t i;

	if (driver == NULL || !isdigit((unsigned char)driver[0]))
		return NULL;
	b = strtol(driver, &end, 10);
	if (*end != '.' && *end != '\0')
		return NULL;
	/* a branch newer than the table: its CUDA is not known here */
	if (b >= 590)
		return NULL;
	for (i = 0; i < sizeof(cuda_of_branch) / sizeof(cuda_of_branch[0]);
	    i++)
		if (b >= cuda_of_branch[i].branch)
			return cuda_of_branch[i].cuda;
	return NULL;
}

void
gpucheck_cuda_fix(const char *detail, const char *driver, char *fix,
    size_t len)
{
	const char *hit = detail ? strstr(detail, "cuda>=") : NULL;
	const char *cuda = gpucheck_driver_cuda(driver);
	char need[40] = "a newer CUDA", drv[80];

	if (hit)
		utf8_copyn(need, sizeof(need), hit, strcspn(hit, ", :;\n"));
	if (driver && driver[0] && cuda)
		utf8_fmt(drv, sizeof(drv), "driver %s supports CUDA %s", driver,
		    cuda);
	else if (driver && driver[0])
		utf8_fmt(drv, sizeof(drv), "driver %s", driver);
	else
		utf8_fmt(drv, sizeof(drv), "the driver (its version not read: "
		    "nvidia-smi)");
	utf8_fmt(fix, len, "%s; the image needs %s: update the driver or use "
	    "an image built for %s%s, then tandemctl rebuild", drv, need,
	    cuda ? "CUDA " : "the driver's CUDA", cuda ? cuda : "");
}
