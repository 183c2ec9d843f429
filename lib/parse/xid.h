/*
 * NVIDIA GPU faults as a node reports them (tests/unit/data/nvidia-xid/):
 * the driver's Xid lines in the kernel log, classified by NVIDIA's Xid
 * catalogue into what a rebuild fixes and what needs the GPU reset or the
 * node rebooted; and the uncorrectable ECC count nvidia-smi gives per GPU.
 * Pure: the daemon runs lib/plan/plan_hw.c's commands and passes the text in.
 */
#ifndef TANDEM_XID_H
#define TANDEM_XID_H

#include <stddef.h>

/* What NVIDIA's catalogue says to do ("Resolution Bucket (Immediate Action)"). */
enum xid_class {
	XID_FATAL,	/* RESET_GPU, RESTART_BM, reset-or-reboot workflows */
	XID_APP,	/* RESTART_APP: the application died; a rebuild fixes it */
	XID_INFO,	/* IGNORE: noted, nothing to do now */
	XID_UNKNOWN,	/* not in tandem's table: noted, never terminal */
};

#define XID_EVENTS_MAX	32
#define XID_LINE_MAX	300
#define XID_PCI_MAX	16

struct xid_event {
	int		 code;
	char		 pci[XID_PCI_MAX];	/* "0000:02:00"; "" unknown */
	double		 t;		/* Unix time from the line; 0 unknown */
	enum xid_class	 cls;
	unsigned long	 hash;		/* of the raw line, for xid_seen */
	char		 line[XID_LINE_MAX];	/* the kernel's words, UTF-8 */
};

enum klog_source { KLOG_UNKNOWN, KLOG_JOURNALCTL, KLOG_DMESG };

struct xid_scan {
	struct xid_event	 ev[XID_EVENTS_MAX];
	size_t			 n;
	size_t			 dropped;	/* beyond XID_EVENTS_MAX */
	enum klog_source	 source;	/* from the command's last line */
	int			 unreadable;	/* the log could not be read */
	char			 why[XID_LINE_MAX];	/* the tool's words */
};

/*
 * Reads what cmd_kernel_xid printed (lib/plan/plan_hw.c): journalctl -k
 * short-iso lines, dmesg --time-format iso lines, or dmesg -T / raw lines.
 * Lines with a time before SINCE (Unix seconds; 0: keep all) are left out.
 * One event per GPU and code: the driver repeats itself. Never fails: what
 * it cannot read it leaves out, and a log it was refused says so in
 * unreadable and why.
 */
void	xid_scan(const char *text, size_t len, double since, struct xid_scan *);
enum xid_class xid_classify(int code);
/* For Xid 154: the recovery action the driver asks for, from its text. */
enum xid_class xid_classify_line(int code, const char *line);
const char *xid_class_name(enum xid_class);
/* NVIDIA's short name of a code ("GPU has fallen off the bus"), or NULL. */
const char *xid_name(int code);
/* The worst event (fatal first, then the oldest); NULL when none. */
const struct xid_event *xid_worst(const struct xid_scan *);

/* Lines already reported, so that a line read twice is counted once. */
#define XID_SEEN_MAX	256
struct xid_seen {
	unsigned long	 h[XID_SEEN_MAX];
	size_t		 n;
	size_t		 next;
};
/* 1 when the event is new (and now remembered), 0 when seen before. */
int	xid_seen_add(struct xid_seen *, const struct xid_event *);

/* nvidia-smi --query-gpu=index,pci.bus_id,ecc.errors.uncorrected.volatile.total */
#define GPU_ECC_MAX	64
#define ECC_NA		(-1LL)	/* [N/A], [Not Supported]: no ECC (GB10) */

struct gpu_ecc {
	int		 index;
	char		 pci[XID_PCI_MAX];	/* normalised as Xid's */
	long long	 uncorrected;		/* or ECC_NA */
};

struct gpu_ecc_list {
	struct gpu_ecc	 g[GPU_ECC_MAX];
	size_t		 n;
};

/* Returns 0, or -1 with the line it could not read. */
int	gpu_ecc_parse(const char *text, size_t len, struct gpu_ecc_list *,
	    char *err, size_t errlen);
/* The GPU index of a PCI address ("0000:02:00"), or -1. */
int	gpu_ecc_index(const struct gpu_ecc_list *, const char *pci);
/*
 * Normalises "PCI:0000:02:00", "0000:02:00", "00000000:02:00.0" and
 * "0000000F:01:00.0" to "0000:02:00" / "000f:01:00". Returns 0, or -1
 * when the text is no PCI address.
 */
int	xid_pci_norm(const char *in, size_t inlen, char *out, size_t outlen);

/*
 * The gpu-xid diagnosis's message: node, GPU, code and the kernel's line,
 * e.g. "spark-2 GPU 0 (PCI 000f:01:00): Xid 79, GPU has fallen off the
 * bus: NVRM: Xid (PCI:000f:01:00): 79, ...". gpu is -1 when unknown.
 */
void	xid_describe(const struct xid_event *, const char *node, int gpu,
	    char *buf, size_t len);

#endif
