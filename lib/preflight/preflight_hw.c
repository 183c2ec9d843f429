/*
 * The preflight's hardware checks (issue 33): the GPU driver's Xid lines
 * and ECC counts in the devices column, ray.auth_token_file on the node in
 * the ray port column.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight_int.h"
#include "utf8.h"

/*
 * Issue 33: what a rebuild cannot fix, found before one starts. NVIDIA:
 * the driver's Xid lines in the kernel log since pf_hw.since, and the GPUs'
 * bus ids and uncorrectable ECC counts (lib/parse/xid.c, lib/policy/hwfault.c): a
 * fatal Xid fails the devices column, as gpu-xid. With Ray's token
 * authentication on, ray.auth_token_file must be a file with something in
 * it on every node (docker would mount a directory in its place): else the
 * ray port column fails, as ray-token-missing.
 */
void
preflight_hw_since(struct preflight *pf, size_t node, double since)
{
	if (node < pf->nnodes)
		pf->hw[node].since = since;
}

const struct xid_scan *
preflight_xid(const struct preflight *pf, size_t node,
    const struct gpu_ecc_list **ecc)
{
	*ecc = node < pf->nnodes ? pf->hw[node].ecc : NULL;
	return node < pf->nnodes ? pf->hw[node].scan : NULL;
}

void
preflight_hw_cmds(struct preflight *pf, size_t node, struct pf_cmd **v,
    size_t *n)
{
	const struct config *cf = pf->cf;

	if (cf->container.accelerator == ACCEL_NVIDIA) {
		preflight_set_cmd(v, n, PF_XID,
		    cmd_kernel_xid(pf->hw[node].since));
		preflight_set_cmd(v, n, PF_ECC, cmd_gpu_ecc());
	}
	preflight_set_cmd(v, n, PF_RAYTOKEN, cmd_ray_token_present(cf));
}

void
preflight_hw_answer(struct preflight *pf, size_t node, int tag,
    const struct cmd_result *r)
{
	struct pf_hw *h = &pf->hw[node];
	char line[100];

	switch (tag) {
	case PF_XID:
		if (h->scan == NULL)
			h->scan = xmalloc(sizeof(*h->scan));
		xid_scan(r->out, r->outlen, h->since, h->scan);
		break;
	case PF_ECC:
		/* no nvidia-smi, or a GPU without ECC: nothing to name GPUs by */
		if (h->ecc == NULL)
			h->ecc = xcalloc(1, sizeof(*h->ecc));
		if (r->exit_code != 0 || gpu_ecc_parse(r->out, r->outlen, h->ecc,
		    line, sizeof(line)) != 0)
			h->ecc->n = 0;
		break;
	case PF_RAYTOKEN:
		h->token_missing = r->exit_code != 0;
		utf8_fmt(h->token_said, sizeof(h->token_said), "%s",
		    preflight_set_line1(r->err, line, sizeof(line)));
		break;
	}
}

/* The node answered everything: these verdicts outrank the columns'. */
void
preflight_hw_finished(struct preflight *pf, size_t node)
{
	const struct config *cf = pf->cf;
	struct pf_hw *h = &pf->hw[node];
	const struct hw_finding *f;
	struct hw_report *rep;
	char buf[200];

	if (h->token_missing) {
		utf8_fmt(buf, sizeof(buf), "ray.auth_token_file %s: missing or "
		    "empty%s%s", cf->ray.auth_token_file, h->token_said[0] ?
		    ": " : "", h->token_said);
		preflight_set(pf, node, PF_RAYPORT, 0, buf,
		    "copy the token file to the "
		    "same path on every node (chmod 600)");
	}
	if (h->scan == NULL)
		return;
	rep = xmalloc(sizeof(*rep));
	hw_judge_nvidia(cf->nodes[node].name, h->scan, NULL, h->ecc, rep);
	if ((f = hw_fatal(rep)) != NULL) {
		utf8_fmt(buf, sizeof(buf), "fatal GPU fault: %s", f->msg);
		preflight_set(pf, node, PF_GPUS, 0, buf,
		    "drain the node, reset the GPU "
		    "(nvidia-smi -r) or reboot it, then tandemctl resume");
	}
	free(rep);
}
