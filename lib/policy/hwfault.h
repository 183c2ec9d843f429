/*
 * One verdict per node on its accelerators' hardware, for the preflight
 * and after a failure: NVIDIA's Xid lines and ECC counts (lib/parse/xid.c), or
 * Ascend's npu-smi health column (lib/config/accel.c, helper h2's parser). What
 * is fatal stops the retries (gpu-xid); what is worth knowing is an event
 * or a warning; what could not be read is said as such, never as healthy.
 */
#ifndef TANDEM_HWFAULT_H
#define TANDEM_HWFAULT_H

#include <stddef.h>

#include "accel.h"
#include "xid.h"

enum hw_class {
	HW_OK,		/* nothing found */
	HW_NOTE,	/* an event (application Xid, informational, Warning) */
	HW_WARN,	/* a warning in /status (gpu-ecc, npu-health) */
	HW_FATAL,	/* gpu-xid: retries stop */
	HW_UNREAD,	/* the node would not say: an event, never a pass */
};

#define HW_FINDINGS_MAX	16

struct hw_finding {
	enum hw_class	 cls;
	int		 code;		/* the Xid, or 0 */
	int		 gpu;		/* GPU index / NPU ID; -1 unknown */
	char		 warning[24];	/* warnings[] code for HW_WARN */
	char		 msg[420];	/* node, device, code, the tool's words */
};

struct hw_report {
	enum hw_class		 worst;
	struct hw_finding	 f[HW_FINDINGS_MAX];
	size_t			 n;
	size_t			 dropped;
};

/*
 * NVIDIA: SCAN (NULL: not read) from cmd_kernel_xid, only the events new
 * to SEEN (NULL: all; they are added to it), and ECC (NULL: not read)
 * from cmd_gpu_ecc, which also names the GPU of an Xid by its address.
 */
void	hw_judge_nvidia(const char *node, const struct xid_scan *scan,
	    struct xid_seen *seen, const struct gpu_ecc_list *ecc,
	    struct hw_report *);
/*
 * Ascend: the health column of an AQ_MEMORY answer (npu-smi info).
 * Critical is fatal (npu-smi's "urgent alarm"); Alarm and Warning are a
 * warning; UNKNOWN, or no answer, is unread.
 */
void	hw_judge_ascend(const char *node, const struct accel_info *,
	    struct hw_report *);
/* The first fatal finding, or NULL. */
const struct hw_finding *hw_fatal(const struct hw_report *);
const char *hw_class_name(enum hw_class);

#endif
