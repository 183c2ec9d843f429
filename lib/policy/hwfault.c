/*
 * The fatal class is NVIDIA's catalogue's (lib/parse/xid.c), and for Ascend
 * npu-smi's own word for the worst: Critical ("紧急告警", urgent alarm,
 * Huawei's npu-smi reference). A GPU with uncorrectable ECC errors since
 * its driver loaded still runs (NVIDIA: contained errors offline the
 * page; row remapping applies at the next reset), so it is a warning to
 * reset when convenient, not a reason to stop.
 */
#include <stdio.h>
#include <string.h>

#include "hwfault.h"
#include "utf8.h"

const char *
hw_class_name(enum hw_class c)
{
	switch (c) {
	case HW_OK:
		return "ok";
	case HW_NOTE:
		return "note";
	case HW_WARN:
		return "warning";
	case HW_FATAL:
		return "fatal";
	case HW_UNREAD:
		return "unread";
	}
	return "?";
}

static struct hw_finding *
add(struct hw_report *r, enum hw_class cls, int code, int gpu)
{
	struct hw_finding *f;

	/* fatal outranks all; an unread node outranks only a note */
	static const int rank[] = { [HW_OK] = 0, [HW_NOTE] = 1,
	    [HW_UNREAD] = 2, [HW_WARN] = 3, [HW_FATAL] = 4 };

	if (rank[cls] > rank[r->worst])
		r->worst = cls;
	if (r->n == HW_FINDINGS_MAX) {
		r->dropped++;
		return NULL;
	}
	f = &r->f[r->n++];
	memset(f, 0, sizeof(*f));
	f->cls = cls;
	f->code = code;
	f->gpu = gpu;
	return f;
}

static enum hw_class
of_xid(enum xid_class c)
{
	switch (c) {
	case XID_FATAL:
		return HW_FATAL;
	case XID_APP:
	case XID_INFO:
	case XID_UNKNOWN:
		return HW_NOTE;
	}
	return HW_NOTE;
}

void
hw_judge_nvidia(const char *node, const struct xid_scan *scan,
    struct xid_seen *seen, const struct gpu_ecc_list *ecc,
    struct hw_report *r)
{
	struct hw_finding *f;
	size_t i;

	memset(r, 0, sizeof(*r));
	if (scan && scan->unreadable && (f = add(r, HW_UNREAD, 0, -1)))
		utf8_fmt(f->msg, sizeof(f->msg), "%s: the kernel log could "
		    "not be read for GPU faults (%s): could not tell", node,
		    scan->why);
	for (i = 0; scan && i < scan->n; i++) {
		const struct xid_event *e = &scan->ev[i];
		int gpu = ecc ? gpu_ecc_index(ecc, e->pci) : -1;
		char what[400];

		if (seen && !xid_seen_add(seen, e))
			continue;
		xid_describe(e, node, gpu, what, sizeof(what));
		if ((f = add(r, of_xid(e->cls), e->code, gpu)) == NULL)
			continue;
		utf8_fmt(f->msg, sizeof(f->msg), "%s (%s)", what,
		    xid_class_name(e->cls));
	}
	for (i = 0; ecc && i < ecc->n; i++) {
		if (ecc->g[i].uncorrected <= 0)
			continue;	/* none, or [N/A]: no ECC (GB10) */
		if ((f = add(r, HW_WARN, 0, ecc->g[i].index)) == NULL)
			continue;
		snprintf(f->warning, sizeof(f->warning), "gpu-ecc");
		utf8_fmt(f->msg, sizeof(f->msg), "%s GPU %d (PCI %s): %lld "
		    "uncorrectable ECC error%s since the driver loaded; reset "
		    "the GPU when convenient (nvidia-smi -r -i %d)", node,
		    ecc->g[i].index, ecc->g[i].pci, ecc->g[i].uncorrected,
		    ecc->g[i].uncorrected == 1 ? "" : "s", ecc->g[i].index);
	}
}

void
hw_judge_ascend(const char *node, const struct accel_info *a,
    struct hw_report *r)
{
	struct hw_finding *f;
	size_t i;

	memset(r, 0, sizeof(*r));
	if (a == NULL || a->answer != AA_READ) {
		if ((f = add(r, HW_UNREAD, 0, -1)))
			utf8_fmt(f->msg, sizeof(f->msg), "%s: npu-smi did not "
			    "say how its NPUs are (%s): could not tell", node,
			    a && a->said[0] ? a->said : "no answer");
		return;
	}
	for (i = 0; i < a->ndev; i++) {
		const struct accel_dev *d = &a->dev[i];
		enum hw_class c;

		if (d->chip != 0 || strcmp(d->health, "OK") == 0)
			continue;	/* health is the NPU's, on chip 0 */
		if (strcmp(d->health, "Critical") == 0)
			c = HW_FATAL;
		else if (strcmp(d->health, "Alarm") == 0 ||
		    strcmp(d->health, "Warning") == 0)
			c = HW_WARN;
		else
			c = HW_UNREAD;
		if ((f = add(r, c, 0, d->id)) == NULL)
			continue;
		if (c == HW_WARN)
			snprintf(f->warning, sizeof(f->warning), "npu-health");
		utf8_fmt(f->msg, sizeof(f->msg), "%s NPU %d%s%s: npu-smi says "
		    "health %s%s", node, d->id, d->name[0] ? " " : "", d->name,
		    d->health[0] ? d->health : "(empty)", c == HW_FATAL ?
		    ": drain the node and reset the NPU or reboot the node" :
		    "");
	}
}

const struct hw_finding *
hw_fatal(const struct hw_report *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->f[i].cls == HW_FATAL)
			return &r->f[i];
	return NULL;
}
