/*
 * The preflight's GPU question, asked of the engine (gpucheck.h): start a
 * throwaway container of the cluster's image with the GPUs, run `true` in
 * it, remove it. The image's own entrypoint (vllm serve) is replaced; no
 * network is set up; the label says whose it is, so the unrelated-workload
 * scan never takes it for a foreign container. --pull never: a node
 * without the image must not start pulling tens of GB from a registry
 * for a check (docker since 20.10 and podman answer "No such image" /
 * "image not known" instead, recorded in tests/unit/data).
 */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "quote.h"

char *
cmd_gpu_run(const struct config *cf)
{
	struct strv v;
	char *s;
	int podman = strcmp(cf->container.engine, "podman") == 0;

	if (!plan_wants_nvidia(cf))
		return NULL;
	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "run");
	strv_add(&v, "--rm");
	strv_add(&v, "--pull");
	strv_add(&v, "never");
	strv_add(&v, "--network");
	strv_add(&v, "none");
	strv_add(&v, "--label");
	strv_addf(&v, "tandem.cluster=%s", cf->name);
	strv_add(&v, "--label");
	strv_add(&v, "tandem.check=gpus");
	if (podman) {
		strv_add(&v, "--device");
		strv_add(&v, "nvidia.com/gpu=all");
	} else {
		strv_add(&v, "--gpus");
		strv_add(&v, "all");
	}
	strv_add(&v, "--entrypoint");
	strv_add(&v, "true");
	strv_add(&v, cf->container.image);
	s = shell_command(v.v);
	strv_free(&v);
	return s;
}
