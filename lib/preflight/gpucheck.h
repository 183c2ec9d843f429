/*
 * Whether the engine can hand the GPUs to a container, asked of the engine
 * itself: a throwaway `docker run --rm --gpus all --entrypoint true IMAGE`
 * (podman: `--device nvidia.com/gpu=all`), cmd_gpu_run in lib/plan/plan_gpu.c.
 *
 * dockerd needs only NVIDIA's hook for --gpus: it looks for
 * nvidia-container-runtime-hook on its PATH (moby
 * daemon/devices_nvidia_linux.go); `nvidia-ctk runtime configure`, which
 * registers the "nvidia" runtime `docker info` lists, is optional. A node
 * without that runtime entry but with the hook works, so a runtime list
 * cannot say a node is broken; the engine's answer to --gpus can.
 */
#ifndef TANDEM_GPUCHECK_H
#define TANDEM_GPUCHECK_H

#include <stddef.h>

enum gpu_verdict {
	GPU_WORKS,	/* the container started with the GPUs */
	GPU_REFUSED,	/* the engine's own refusal: no toolkit / no CDI spec */
	GPU_DRIVER,	/* the hook ran and the driver did not answer */
	GPU_ENGINE,	/* an engine-level answer (down, permission, no image) */
	GPU_UNKNOWN,	/* an answer tandem does not know: could not tell */
};

/*
 * The verdict of cmd_gpu_run's exit status, stdout and stderr. detail
 * gets the preflight's line: "works: ...", "refused: <the engine's
 * line>", "driver: ...", the engine's line, or "could not tell: ...".
 * *diag gets the diagnosis code of a failure (enum diag_code), -1 when it
 * works.
 */
enum gpu_verdict gpucheck_verdict(int exit_code, const char *out,
		    const char *err, const char *asked, char *detail,
		    size_t detaillen, int *diag);

/*
 * cuda-driver-too-old's fix, naming both versions: the image's
 * requirement from the hook's line in detail ("cuda>=12.8") and the
 * node's driver (nvidia-smi's driver_version, "" unread) with the CUDA
 * it supports (NVIDIA's table, gpucheck_driver_cuda). "driver 535.104.05
 * supports CUDA 12.2; the image needs cuda>=12.8: update the driver or use
 * an image built for CUDA 12.2, then tandemctl rebuild".
 */
void		 gpucheck_cuda_fix(const char *detail, const char *driver,
		    char *fix, size_t len);
/*
 * The newest CUDA a driver supports ("12.2" for 535.104.05), from its
 * branch (the number before the first dot); NULL for a branch the table
 * does not hold.
 */
const char	*gpucheck_driver_cuda(const char *driver);

#endif
