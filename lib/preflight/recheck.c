#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "recheck.h"
#include "recovery.h"
#include "utf8.h"

/*
 * Each stopping diagnosis and the preflight's questions that found it.
 * No default: a new diagnosis code is a build error until it is decided
 * here. The diagnoses without a question: retried anyway (retryable), or
 * nothing the preflight asks can see them change: vLLM's and Ray's own
 * findings on the model and vllm.args (a reload rebuilds), an Xid that
 * stays in the kernel log until the node reboots and SSH refusing the key
 * or host key (both asked otherwise: recheck_kind), and the NVIDIA check,
 * which runs a container.
 */
unsigned
recheck_asks(enum diag_code code)
{
	switch (code) {
	case DIAG_MTU_MISMATCH:
	case DIAG_LINK_DOWN:
	/* the link question reads the RDMA ports too: one that comes up */
	case DIAG_RDMA_PORT_DOWN:
	case DIAG_RDMA_GID_MISSING:
	case DIAG_RDMA_LINK_LAYER_MIXED:
	case DIAG_LINK_UNREACHABLE:
		return PFA_LINK;
	case DIAG_INTERFACE_WRONG:
		return PFA_IFACE | PFA_LINK;
	case DIAG_IMAGE_MISSING:
	case DIAG_IMAGE_MISMATCH:
		return PFA_IMAGE;
	case DIAG_MODEL_MISSING:
	case DIAG_MODEL_MISMATCH:
		return PFA_MODEL;
	case DIAG_RAY_TOKEN_MISSING:
		return PFA_RAYTOKEN;
	case DIAG_FOREIGN_CONTAINER:
		return PFA_NAME;
	case DIAG_ENGINE_PERMISSION:
		return PFA_ENGINE;
	case DIAG_STALE_RAY_NODE:
	case DIAG_NODE_IP_MISMATCH:
	case DIAG_ENGINE_READY_TIMEOUT:
	case DIAG_MODEL_UNREADABLE:
	case DIAG_VLLM_UNAUTHORIZED:
	case DIAG_VLLM_MODEL_NAME:
	case DIAG_GLOO_LOOPBACK:
	case DIAG_GPU_MEMORY_LOW:
	case DIAG_KV_CACHE_NO_MEMORY:
	case DIAG_CUDA_OOM:
	case DIAG_KV_CACHE_TOO_SMALL:
	case DIAG_PLACEMENT_GROUP:
	case DIAG_ARCH_UNSUPPORTED:
	case DIAG_NVIDIA_RUNTIME_MISSING:
	case DIAG_ENGINE_DOWN:
	case DIAG_PORT_IN_USE:
	case DIAG_GCS_UNREACHABLE:
	case DIAG_NCCL_ERROR:
	case DIAG_WORKER_LOST:
	/* issue 41: three retried; the driver's CUDA, the NVIDIA check's */
	case DIAG_CDI_UNRESOLVABLE:
	case DIAG_CUDA_DRIVER_TOO_OLD:
	case DIAG_NPU_OOM:
	case DIAG_IMAGE_PULL_FAILED:
	case DIAG_SSH_AUTH:
	case DIAG_HOST_KEY:
	case DIAG_NODE_UNREACHABLE:
	case DIAG_RAY_INCOMPLETE:
	case DIAG_STARTUP_TIMEOUT:
	case DIAG_VLLM_EXITED:
	case DIAG_CONTAINER_DIED:
	case DIAG_GENERATION_FAILED:
	case DIAG_GPU_NOT_RELEASED:
	case DIAG_GPUS_MISSING:
	case DIAG_PLACEMENT_GROUP_WAIT:
	case DIAG_UNRECOGNISED_ANSWER:
	case DIAG_GENERATION_STALLED:
	case DIAG_GPU_XID:
	case DIAG_REBUILD_LIMIT:
		break;
	}
	return 0;
}

enum recheck_kind
recheck_kind(enum diag_code code)
{
	if (recheck_asks(code))
		return RK_PREFLIGHT;
	switch (code) {
	case DIAG_SSH_AUTH:
	case DIAG_HOST_KEY:
		return RK_LOGIN;
	case DIAG_GPU_XID:
		return RK_BOOT;
	default:
		return RK_NONE;
	}
}

const char *
recheck_what(enum diag_code code)
{
	unsigned a = recheck_asks(code);

	switch (recheck_kind(code)) {
	case RK_LOGIN:
		return "ssh login";
	case RK_BOOT:
		return "boot id";
	default:
		break;
	}

	if (a & PFA_IFACE)
		return "interface and link";
	if (a & PFA_LINK)
		return "link";
	if (a & PFA_IMAGE)
		return "image";
	if (a & PFA_MODEL)
		return "model";
	if (a & PFA_RAYTOKEN)
		return "ray token";
	if (a & PFA_NAME)
		return "name free";
	if (a & PFA_ENGINE)
		return "engine";
	return "none";
}

int
recheck_boot_id(const char *out, char *id, size_t len)
{
	size_t i;

	if (out == NULL || len < 37)
		return -1;
	for (i = 0; i < 36; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? out[i] != '-' : !isxdigit((unsigned char)out[i]))
			return -1;
	}
	if (out[36] != '\0' && out[36] != '\n')
		return -1;
	memcpy(id, out, 36);
	id[36] = '\0';
	return 0;
}

/* A diagnosis that says nothing about the fault: asked again. */
static int
untold(enum diag_code d)
{
	return d == DIAG_UNRECOGNISED_ANSWER || d == DIAG_NODE_UNREACHABLE ||
	    d == DIAG_SSH_AUTH || d == DIAG_HOST_KEY;
}

enum recheck_verdict
recheck_judge(const struct preflight *pf, size_t *node, enum diag_code *code,
    char *finding, size_t len)
{
	const struct config *cf = preflight_config(pf);
	const struct pf_result *r;
	enum recheck_verdict v = RCV_CLEARED;
	enum diag_code d;
	size_t i;
	int c, pass;

	/* a cause named outranks could not tell, as in preflight_failure */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < cf->nnodes; i++)
			for (c = 0; c < PF_COUNT; c++) {
				r = preflight_result(pf, i, c);
				if (r->ok)
					continue;
				/* "-": not run there; the ssh column says why */
				if (r->detail[0] == '-') {
					v = RCV_UNTOLD;
					continue;
				}
				d = r->status == PFS_UNKNOWN ?
				    DIAG_UNRECOGNISED_ANSWER :
				    recovery_preflight_diag((enum pf_check)c,
				    r->detail);
				if (pass == 0 && untold(d))
					continue;
				*node = i;
				*code = d;
				utf8_fmt(finding, len, "%s: %s",
				    preflight_check_name(c), r->detail);
				return untold(d) ? RCV_UNTOLD : RCV_STILL;
			}
	if (v == RCV_UNTOLD) {
		*node = 0;
		*code = DIAG_NODE_UNREACHABLE;
		utf8_fmt(finding, len, "a node could not be asked");
	}
	return v;
}
