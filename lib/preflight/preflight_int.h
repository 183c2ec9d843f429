/*
 * What the preflight's files share (preflight.h is what its callers see):
 * preflight_steps.c drives the checks (commands out, answers in, a node
 * finished); preflight_set.c records a verdict or a command; the families
 * of checks are preflight_gpu.c (devices, memory, the nvidia path),
 * preflight_hw.c (Xid lines, ECC, the ray token), preflight_image.c (image
 * and model alike on every node), preflight_rdma.c (the link column).
 */
#ifndef PREFLIGHT_INT_H
#define PREFLIGHT_INT_H

#include "accel.h"
#include "dockerout.h"
#include "gpucheck.h"
#include "hwfault.h"
#include "plan.h"
#include "preflight.h"
#include "preflight_link.h"
#include "rdma.h"
#include "util.h"

/*
 * Not columns of the table: the unrelated-workload scan (only warnings,
 * workload.h) and whether the image archive is there (for
 * preflight_image_settle).
 */
#define PF_WORKLOADS	PF_COUNT
#define PF_ARCHIVE	(PF_COUNT + 1)
/* The engine's NVIDIA runtimes or CDI specs: shown beside the GPU check. */
#define PF_RUNTIMES	(PF_COUNT + 2)
/* issue 33: the GPU driver's kernel lines and ECC counts (in the devices
 * column), ray.auth_token_file on the node (in the ray port column) */
#define PF_XID		(PF_COUNT + 3)
#define PF_ECC		(PF_COUNT + 4)
#define PF_RAYTOKEN	(PF_COUNT + 5)
/* issue 47: the fast interface's RDMA ports (in the link column) */
#define PF_RDMA		(PF_COUNT + 6)

/* What those said, per node (preflight_hw_answer). */
struct pf_hw {
	double			 since;		/* Unix time; 0: this boot */
	struct xid_scan		*scan;		/* NULL: no answer */
	struct gpu_ecc_list	*ecc;		/* NULL: no answer */
	struct accel_info	*npu;		/* Ascend's npu-smi info; NULL */
	int			 token_missing;
	char			 token_said[120];
};

struct preflight {
	struct config		*cf;		/* a reference of ours */
	size_t			 nnodes;
	struct pf_result	(*res)[PF_COUNT];
	struct pf_image		*image;		/* per node */
	struct model_print	*model;		/* per node */
	/* the node whose image all should hold; -1 none */
	int			 image_ref;
	int			*own_running;	/* our container runs there */
	int			*port_held;	/* something listens on ray.port */
	struct workloads	*wl;		/* unrelated workloads, per node */
	int			*wl_known;
	int			*pending;	/* answers a node still owes; -1: not asked */
	size_t			 nodes_pending;
	int			 link_only;	/* preflight_new_link */
	unsigned		 only;		/* preflight_new_only's ask; 0 all */
	struct pf_link		 lk;		/* the fast link's rounds */
	int			 lk_set;	/* its results are in res */
	double			 gmu;		/* what the start will ask */
	struct pf_gpu		*gpu;		/* the nvidia check */
	struct pf_hw		*hw;		/* per node */
	struct rdma_state	*rdma;		/* per node */
	int			*rdma_asked;	/* 1 asked, 2 answered */
	int			 rdma_set;	/* judged into the link column */
};

/*
 * The nvidia check: the engine's answer to a throwaway container with the
 * GPUs (gpucheck.h), and its runtime list (docker) or CDI specs (podman)
 * as information, put together once the node answered (preflight_gpu_settle).
 */
struct pf_gpu {
	int		 answered;
	enum gpu_verdict verdict;
	int		 diag;		/* gpucheck's; -1: works */
	char		 detail[400];
	int		 listed;	/* the list answered */
	int		 nvidia;	/* docker: a runtime named nvidia */
	char		 list[200];
	char		 driver[32];	/* nvidia-smi's driver_version; "" */
};

/* preflight_set.c: a check's verdict into the table; detail, fix may be NULL */
void	 preflight_set_status(struct preflight *, size_t node, int check,
	    enum pf_status, const char *detail, const char *fix);
void	 preflight_set(struct preflight *, size_t node, int check, int ok,
	    const char *detail, const char *fix);
void	 preflight_set_value(struct preflight *, size_t node, int check,
	    const char *value);
/* s's first line, cut to len */
const char *preflight_set_line1(const char *s, char *buf, size_t len);
/* an answer the check does not recognise (cmd, what was asked, is freed) */
void	 preflight_set_unknown(struct preflight *, size_t node, int check,
	    char *cmd, const struct cmd_result *);
/* one more command (taken) to send, tagged with its check */
void	 preflight_set_cmd(struct pf_cmd **, size_t *n, int tag, char *cmd);

/* preflight_gpu.c */
void	 preflight_gpu_cmds(struct preflight *, size_t node, struct pf_cmd **,
	    size_t *n);
void	 preflight_gpu_answer(struct preflight *, size_t node,
	    const struct cmd_result *);
void	 preflight_gpu_runtimes(struct preflight *, size_t node,
	    const struct cmd_result *);
void	 preflight_gpu_accel(struct preflight *, size_t node, int tag,
	    const struct cmd_result *);
void	 preflight_gpu_settle(struct preflight *, size_t node);
void	 preflight_gpu_after_load(struct preflight *, size_t node);
void	 preflight_gpu_own_memory(struct preflight *, size_t node);

/* preflight_hw.c */
void	 preflight_hw_cmds(struct preflight *, size_t node, struct pf_cmd **,
	    size_t *n);
void	 preflight_hw_answer(struct preflight *, size_t node, int tag,
	    const struct cmd_result *);
void	 preflight_hw_finished(struct preflight *, size_t node);

/* preflight_image.c */
void	 preflight_image_answer(struct preflight *, size_t node,
	    const struct cmd_result *);
void	 preflight_image_model(struct preflight *, size_t node,
	    const struct cmd_result *);
void	 preflight_image_settle(struct preflight *);	/* every node in */
void	 preflight_image_settle_models(struct preflight *);

/* preflight_rdma.c */
void	 preflight_rdma_link_cmds(struct preflight *, size_t node,
	    struct pf_cmd **, size_t *n);
void	 preflight_rdma_settle(struct preflight *);
void	 preflight_rdma_link_settled(struct preflight *);

#endif
