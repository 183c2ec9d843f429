/*
 * The preflight of every node, as pure functions (tandemctl check; tandemd
 * before its first rebuild, and its link check before every rebuild):
 * which commands each check runs (plan*.c writes them) and the verdict on
 * every answer. It runs nothing itself. Whoever runs it asks
 * preflight_commands for each node whose session is up (or tells
 * preflight_node_down), feeds every answer to preflight_answer, sends
 * what preflight_more hands out after each (the link check's pings, which
 * need every node's interface first), and reads the results once
 * preflight_complete: the daemon's teardown action on the nodes' own
 * sessions, tandemctl check on sessions of its own. One owner, who frees
 * it.
 */
#ifndef TANDEM_PREFLIGHT_H
#define TANDEM_PREFLIGHT_H

#include <stddef.h>

#include "config.h"
#include "diagnose.h"
#include "imagecheck.h"
#include "preflight_cmd.h"
#include "rdma.h"
#include "recovery.h"		/* enum pf_check */
#include "result.h"
#include "workload.h"
#include "xid.h"

struct preflight;

/*
 * What the image check found on a node; load: tandemd loads the archive.
 * Nodes compare by ident (imagecheck.h): the ID is the config digest on
 * docker's classic store and podman, the index digest on the containerd
 * store, so IDs compare only within one store.
 */
struct pf_image {
	char			 id[IMAGE_ID_LEN];	/* "" absent */
	char			 created[48];
	struct image_ident	 ident;
	int			 archive_ok;	/* image_archive there */
	int			 load;
};

/* Takes a reference on cf (config_ref): a reload may replace it meanwhile. */
struct preflight *preflight_new(struct config *);
/*
 * Only the fast link's check (lib/preflight/linkcheck.c), every other check "-":
 * tandemd's before each rebuild once the full preflight has passed.
 */
struct preflight *preflight_new_link(struct config *);
/* 1 for a preflight_new_link one */
int		 preflight_link_only(const struct preflight *);
/*
 * What a recheck asks (preflight_new_only): the read-only questions of
 * the checks, each the same command and verdict as in the full preflight.
 * None starts a container or changes a node.
 */
enum pf_ask {
	PFA_LINK = 1 << 0,	/* ip link, addresses, pings: the link column */
	PFA_IFACE = 1 << 1,	/* ip addr of nodes[].ifname */
	PFA_IMAGE = 1 << 2,	/* image inspect (and the archive's test) */
	PFA_MODEL = 1 << 3,	/* the model directory's fingerprint */
	PFA_RAYTOKEN = 1 << 4,	/* ray.auth_token_file on the node */
	PFA_NAME = 1 << 5,	/* who holds the container's name */
	PFA_ENGINE = 1 << 6,	/* the engine's version */
};
/*
 * Only the checks of ask (a mask of enum pf_ask), every other column "not
 * checked" with detail "-": tandemd's recheck while the retries are
 * stopped (lib/preflight/recheck.h). Image and model are still compared across the
 * nodes once every node answered.
 */
struct preflight *preflight_new_only(struct config *, unsigned ask);
/*
 * The --gpu-memory-utilization the start will ask, for the free-memory
 * check: the daemon's remedy ladder may be on a step below the configured
 * value. By default the configured value (else vLLM's 0.9).
 */
void		 preflight_set_gmu(struct preflight *, double gmu);
void		 preflight_free(struct preflight *);
/*
 * The node's session is up: the commands to run there, each within
 * preflight_timeout_s. Returns how many, the list in *cmds (free it with
 * preflight_cmds_free). Returns 0 when the node needs none.
 */
size_t		 preflight_commands(struct preflight *, size_t node,
		    struct pf_cmd **cmds);
/*
 * What became due since the last call, on any node (pf_cmd.node): the
 * link check's pings once every node's interface answered, the small
 * pings where a full-size one got no reply. Ask after every answer (and
 * after preflight_node_down); 0 mostly.
 */
size_t		 preflight_more(struct preflight *, struct pf_cmd **cmds);
double		 preflight_timeout_s(const struct config *);
/*
 * How long tandemctl reload and apply wait for a change's verdict: the
 * check on the nodes (two rounds of questions, each up to
 * preflight_timeout_s, so never under 2 * probe.timeout_s), at least
 * floor_s.
 */
double		 preflight_verdict_timeout_s(const struct config *,
		    double floor_s);
/* The node cannot be reached: why (the SSH layer's words). */
void		 preflight_node_down(struct preflight *, size_t node,
		    const char *why);
void		 preflight_answer(struct preflight *, size_t node, int tag,
		    const struct cmd_result *);
/*
 * Every node answered, the image and model were compared, and the link
 * check was judged (or could not run: a node was not asked).
 */
int		 preflight_complete(const struct preflight *);

const struct config	*preflight_config(const struct preflight *);
const struct pf_result	*preflight_result(const struct preflight *,
			    size_t node, int check);
const struct pf_image	*preflight_image(const struct preflight *,
			    size_t node);
/* The image every node should hold; NULL when none has it. */
const struct image_ident *preflight_image_ref(const struct preflight *);
/*
 * The GPU driver's kernel lines read from Unix time since (tandemd's
 * cursor; 0, the default, reads this boot's whole log), and what the node
 * said: the Xid lines, and its GPUs' bus ids and ECC counts (NULL: not
 * asked or no answer).
 */
void		 preflight_hw_since(struct preflight *, size_t node,
		    double since);
const struct xid_scan	*preflight_xid(const struct preflight *,
			    size_t node, const struct gpu_ecc_list **ecc);
/*
 * Ascend: what npu-smi info said on the node (the devices check), whose
 * health words hwcheck turns into warnings; NULL: not asked or not Ascend.
 */
struct accel_info;
const struct accel_info	*preflight_npu(const struct preflight *,
			    size_t node);
/*
 * What the node's fast interface has of RDMA (lib/parse/rdma.h): its
 * device, port and the RoCE v2 GID index of nodes[].ip, for the start's
 * NCCL_IB_HCA and NCCL_IB_GID_INDEX; NULL: not asked or no answer.
 */
const struct rdma_state	*preflight_rdma(const struct preflight *,
			    size_t node);
/* The unrelated workloads the scan saw on the node; NULL: not seen. */
const struct workloads	*preflight_workloads(const struct preflight *,
			    size_t node);
/* only: a node's name, or NULL for every node */
int		 preflight_ok(const struct preflight *, const char *only);
/*
 * The first failed check, nodes and checks in order: its node, the
 * diagnosis it means, and "preflight CHECK: detail; fix: ..." in excerpt.
 * A check that could not tell is ACCEL_COULD_NOT_TELL, retried. Returns 0
 * when every check passed or was not made.
 */
int		 preflight_failure(const struct preflight *, size_t *node,
		    enum diag_code *, char *excerpt, size_t len);
const char	*preflight_check_name(int);
/* "passed", "failed", "not checked", "could not tell" */
const char	*preflight_status_name(enum pf_status);

#endif
