/*
 * The preflight's accelerator checks: the devices visible and healthy,
 * the memory free that --gpu-memory-utilization will ask (accel.h), and
 * the engine's path to NVIDIA GPUs (a throwaway container, its runtimes or
 * CDI specs: gpucheck.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight_int.h"
#include "utf8.h"

/* What cmd_gpu_run asks, for the check's lines. */
static void
gpu_asked(const struct config *cf, char *buf, size_t len)
{
	utf8_fmt(buf, len, "%s run %s", cf->container.engine,
	    strcmp(cf->container.engine, "podman") ? "--gpus all" :
	    "--device nvidia.com/gpu=all");
}

/*
 * The engine's answer to a container with the GPUs (gpucheck_verdict):
 * judged when the node is done, beside what the runtime list said.
 */
void
preflight_gpu_answer(struct preflight *pf, size_t node,
    const struct cmd_result *r)
{
	struct pf_gpu *g = &pf->gpu[node];
	char asked[80];

	gpu_asked(pf->cf, asked, sizeof(asked));
	g->answered = 1;
	g->verdict = gpucheck_verdict(r->exit_code, r->out, r->err, asked,
	    g->detail, sizeof(g->detail), &g->diag);
	if (g->verdict == GPU_UNKNOWN) {
		/* the command itself, for whoever runs it by hand */
		char *cmd = cmd_gpu_run(pf->cf);

		diag_unknown_excerpt(g->detail, sizeof(g->detail), cmd,
		    r->exit_code, r->out, r->err);
		free(cmd);
	}
}

/*
 * docker: the runtimes `docker info` lists; podman: the CDI specs of kind
 * nvidia.com/gpu (grep -l names the files; its exit status says nothing
 * here: 2 whenever one of the two directories is missing, even when the
 * other holds the spec). Information only: dockerd needs just NVIDIA's
 * hook for --gpus, so a list without nvidia fails nothing, and a list that
 * could not be read says nothing.
 */
void
preflight_gpu_runtimes(struct preflight *pf, size_t node,
    const struct cmd_result *r)
{
	struct pf_gpu *g = &pf->gpu[node];
	size_t k;

	if (r->error)
		return;
	if (strcmp(pf->cf->container.engine, "podman") == 0) {
		utf8_copy(g->list, sizeof(g->list), r->out);
		for (k = 0; g->list[k]; k++)
			if (g->list[k] == '\n')
				g->list[k] = g->list[k + 1] ? ' ' : '\0';
		g->listed = 1;
	} else if (r->exit_code == 0) {
		g->nvidia = docker_runtimes_nvidia(r->out, g->list,
		    sizeof(g->list));
		g->listed = 1;
	}
}

/* The nvidia check's line: the engine's verdict, the list beside it. */
void
preflight_gpu_settle(struct preflight *pf, size_t node)
{
	const struct config *cf = pf->cf;
	struct pf_gpu *g = &pf->gpu[node];
	char buf[400], list[260] = "";
	int podman = strcmp(cf->container.engine, "podman") == 0;

	if (!g->answered || pf->res[node][PF_NVIDIA].done)
		return;
	if (g->listed && podman)
		utf8_fmt(list, sizeof(list), "; CDI spec %s", g->list[0] ?
		    g->list : "none in /etc/cdi or /var/run/cdi");
	else if (g->listed)
		utf8_fmt(list, sizeof(list), "; docker info Runtimes: %s%s",
		    g->list, g->nvidia || g->verdict != GPU_WORKS ? "" :
		    " (no nvidia runtime: NVIDIA's hook serves --gpus)");
	if (g->listed)
		preflight_set_value(pf, node, PF_NVIDIA, g->list);
	switch (g->verdict) {
	case GPU_WORKS:
		utf8_fmt(buf, sizeof(buf), "%s%s", g->detail, list);
		preflight_set(pf, node, PF_NVIDIA, 1, buf, NULL);
		break;
	case GPU_REFUSED:
		utf8_fmt(buf, sizeof(buf), "%s%s", g->detail, list);
		preflight_set(pf, node, PF_NVIDIA, 0, buf, podman ? "install "
		    "nvidia-container-toolkit, then nvidia-ctk cdi generate "
		    "--output=/etc/cdi/nvidia.yaml" : "install "
		    "nvidia-container-toolkit (its hook on dockerd's PATH), "
		    "then nvidia-ctk runtime configure --runtime=docker and "
		    "systemctl restart docker");
		break;
	case GPU_DRIVER:
		if (g->diag == DIAG_CUDA_DRIVER_TOO_OLD) {
			char fix[300];

			gpucheck_cuda_fix(g->detail, g->driver, fix,
			    sizeof(fix));
			preflight_set(pf, node, PF_NVIDIA, 0, g->detail, fix);
			break;
		}
		preflight_set(pf, node, PF_NVIDIA, 0, g->detail,
		    "check the NVIDIA "
		    "driver on the node (nvidia-smi; a reboot after a driver "
		    "update), then tandemctl rebuild");
		break;
	case GPU_ENGINE:
		/*
		 * Not made: the engine down or refusing us, or no image to
		 * run. The engine's or the image's own check fails with those
		 * words and their fix; this column is "-", not a second ✗.
		 */
		preflight_set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED,
		    g->detail,
		    NULL);
		break;
	case GPU_UNKNOWN:
		preflight_set_status(pf, node, PF_NVIDIA, PFS_UNKNOWN,
		    g->detail, NULL);
		break;
	}
}

static enum pf_status
verdict_status(enum accel_verdict v)
{
	switch (v) {
	case AV_PASS:		return PFS_PASSED;
	case AV_FAIL:		return PFS_FAILED;
	case AV_NOT_CHECKED:	return PFS_NOT_CHECKED;
	case AV_UNKNOWN:	break;
	}
	return PFS_UNKNOWN;
}

/* What to do about an accelerator check that did not pass. */
static void
accel_fix(const struct config *cf, enum accel_query q, int check,
    const struct accel_info *ai, enum accel_verdict v, char *fix, size_t len)
{
	enum accel a = cf->container.accelerator;
	const char *tool = accel_tool(a);
	char *cmd;

	fix[0] = '\0';
	if (v == AV_FAIL && check == PF_GPUS)
		utf8_fmt(fix, len, "check the driver and the %s: %s",
		    accel_word(a, 1), a == ACCEL_ASCEND ? "npu-smi info (its "
		    "Health column)" : "nvidia-smi -L");
	else if (v == AV_FAIL)
		utf8_fmt(fix, len, "stop what holds the memory (%s lists it), "
		    "or lower --gpu-memory-utilization "
		    "(recovery.gpu_memory_utilization_steps lets tandem step "
		    "down)", tool);
	else if (v == AV_UNKNOWN && (cmd = cmd_accel(cf, q)) != NULL) {
		utf8_fmt(fix, len, "run %s on the node and see what it says; "
		    "tandem asks again", cmd);
		free(cmd);
	} else if (v == AV_NOT_CHECKED && ai->answer == AA_NO_TOOL)
		utf8_fmt(fix, len, "install %s with the driver, or set "
		    "container.accelerator to the nodes' devices (none: no "
		    "device checks)", tool);
}

/*
 * The devices column and the free memory, from the answers of the
 * accelerator's tool (accel.h): the devices it lists (their names, and
 * their health on Ascend), and whether every device has free the share
 * of its memory that the start's --gpu-memory-utilization asks. On Ascend
 * one answer, npu-smi info's, serves both.
 */
void
preflight_gpu_accel(struct preflight *pf, size_t node, int tag,
    const struct cmd_result *r)
{
	const struct config *cf = pf->cf;
	enum accel a = cf->container.accelerator;
	enum accel_query q = tag == PF_GPUS ? accel_devices_query(a) :
	    AQ_MEMORY;
	struct accel_info *ai = xmalloc(sizeof(*ai));
	enum accel_verdict v;
	char msg[200], fix[200];

	accel_parse(a, q, r->exit_code, r->out, r->outlen, r->err, ai);
	if (tag == PF_GPUS) {
		v = accel_devices(ai, msg, sizeof(msg));
		accel_fix(cf, q, PF_GPUS, ai, v, fix, sizeof(fix));
		preflight_set_status(pf, node, PF_GPUS, verdict_status(v), msg,
		    fix);
	}
	if (q == AQ_MEMORY) {
		/* cuda-driver-too-old's fix names it (preflight_gpu_settle) */
		if (node < pf->nnodes)
			utf8_copy(pf->gpu[node].driver,
			    sizeof(pf->gpu[node].driver), ai->driver);
		v = accel_free(ai, pf->gmu, msg, sizeof(msg));
		accel_fix(cf, q, PF_MEMORY, ai, v, fix, sizeof(fix));
		preflight_set_status(pf, node, PF_MEMORY, verdict_status(v),
		    msg, fix);
	}
	/* the NPUs' health, for /status's warnings (preflight_npu) */
	if (a == ACCEL_ASCEND && tag == PF_GPUS && node < pf->nnodes) {
		free(pf->hw[node].npu);
		pf->hw[node].npu = ai;
		return;
	}
	free(ai);
}

const struct accel_info *
preflight_npu(const struct preflight *pf, size_t node)
{
	return node < pf->nnodes ? pf->hw[node].npu : NULL;
}

void
preflight_gpu_cmds(struct preflight *pf, size_t node, struct pf_cmd **v,
    size_t *n)
{
	const struct config *cf = pf->cf;
	enum accel_query q = accel_devices_query(cf->container.accelerator);
	struct cmd_result none = { .exit_code = 0, .out = "", .err = "" };

	if (cf->container.accelerator == ACCEL_NONE) {
		preflight_gpu_accel(pf, node, PF_GPUS, &none);
		preflight_gpu_accel(pf, node, PF_MEMORY, &none);
		return;
	}
	preflight_set_cmd(v, n, PF_GPUS, cmd_accel(cf, q));
	if (q != AQ_MEMORY)
		preflight_set_cmd(v, n, PF_MEMORY, cmd_accel(cf, AQ_MEMORY));
}

/*
 * The GPU check runs the image: on a node that loads it first, the check
 * waits for the preflight after the load (the engine's "No such image"
 * now is no failure).
 */
void
preflight_gpu_after_load(struct preflight *pf, size_t node)
{
	const struct pf_gpu *g = &pf->gpu[node];

	if (g->answered && g->verdict == GPU_ENGINE && g->diag ==
	    DIAG_IMAGE_MISSING)
		preflight_set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED,
		    "not checked "
		    "yet: it runs the image, which is loaded first", NULL);
}

/*
 * Memory that is freed before the start: our own container still runs on
 * the node (a daemon restarted beside a cluster it did not adopt), and the
 * teardown removes it; or container.stop_foreign stops an unrelated
 * container first. Too little free memory now says nothing about the
 * start then: not checked, with what was read.
 */
void
preflight_gpu_own_memory(struct preflight *pf, size_t node)
{
	struct pf_result *r = &pf->res[node][PF_MEMORY];
	const struct workload *stopped = NULL;
	char buf[200];
	size_t i;

	if (r->status != PFS_FAILED)
		return;
	for (i = 0; pf->wl_known[node] && i < pf->wl[node].n; i++)
		if (pf->wl[node].w[i].kind == WL_CONTAINER &&
		    workload_stop_match(&pf->cf->container.stop_foreign,
		    pf->wl[node].w[i].name)) {
			stopped = &pf->wl[node].w[i];
			break;
		}
	if (pf->own_running[node])
		utf8_fmt(buf, sizeof(buf), "not checked: our container runs "
		    "here, its memory is freed by the teardown (read: %s)",
		    r->detail);
	else if (stopped)
		utf8_fmt(buf, sizeof(buf), "not checked: container.stop_foreign "
		    "stops %s first (read: %s)", stopped->name, r->detail);
	else
		return;
	preflight_set_status(pf, node, PF_MEMORY, PFS_NOT_CHECKED, buf, NULL);
}
