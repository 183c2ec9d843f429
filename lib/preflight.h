/*
 * The preflight of every node, as pure functions (tandemctl check; tandemd
 * before its first rebuild): which commands each check runs (plan*.c
 * writes them) and the verdict on every answer. It runs nothing itself.
 * Whoever runs it asks preflight_commands for each node whose session is
 * up (or tells preflight_node_down), feeds every answer to
 * preflight_answer, and reads the results once preflight_complete: the
 * daemon's teardown action on the nodes' own sessions, tandemctl check on
 * sessions of its own. One owner, who frees it.
 */
#ifndef TANDEM_PREFLIGHT_H
#define TANDEM_PREFLIGHT_H

#include <stddef.h>

#include "config.h"
#include "diagnose.h"
#include "imagecheck.h"
#include "recovery.h"		/* enum pf_check */
#include "result.h"
#include "workload.h"
#include "xid.h"

struct preflight;

struct pf_result {
	int	 done;
	int	 ok;
	char	 detail[200];	/* "-": not run (no session, or not here) */
	char	 fix[200];
	char	 value[200];	/* what was found: image ID, runtimes, specs */
};

/* What the image check found on a node; load: tandemd loads the archive. */
struct pf_image {
	char	 id[IMAGE_ID_LEN];	/* "" absent */
	char	 created[40];
	int	 archive_ok;		/* image_archive readable there */
	int	 load;
};

/* One command to run on a node; its answer goes back with its tag. */
struct pf_cmd {
	int	 tag;
	char	*cmd;
};

/* Takes a reference on cf (config_ref): a reload may replace it meanwhile. */
struct preflight *preflight_new(struct config *);
void		 preflight_free(struct preflight *);
/*
 * The node's session is up: the commands to run there, each within
 * preflight_timeout_s. Returns how many, the list in *cmds (free it with
 * preflight_cmds_free). Returns 0 when the node needs none.
 */
size_t		 preflight_commands(struct preflight *, size_t node,
		    struct pf_cmd **cmds);
void		 preflight_cmds_free(struct pf_cmd *, size_t n);
double		 preflight_timeout_s(const struct config *);
/* The node cannot be reached: why (the SSH layer's words). */
void		 preflight_node_down(struct preflight *, size_t node,
		    const char *why);
void		 preflight_answer(struct preflight *, size_t node, int tag,
		    const struct cmd_result *);
/* Every node answered, and the image and model were compared. */
int		 preflight_complete(const struct preflight *);

const struct config	*preflight_config(const struct preflight *);
const struct pf_result	*preflight_result(const struct preflight *,
			    size_t node, int check);
const struct pf_image	*preflight_image(const struct preflight *,
			    size_t node);
/* The image ID every node should hold (bare hex), "" when none has it. */
const char		*preflight_image_ref(const struct preflight *);
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
/* The unrelated workloads the scan saw on the node; NULL: not seen. */
const struct workloads	*preflight_workloads(const struct preflight *,
			    size_t node);
/* only: a node's name, or NULL for every node */
int		 preflight_ok(const struct preflight *, const char *only);
/*
 * The first failed check, nodes and checks in order: its node, the
 * diagnosis it means, and "preflight CHECK: detail; fix: ..." in excerpt.
 * Returns 0 when every check passed.
 */
int		 preflight_failure(const struct preflight *, size_t *node,
		    enum diag_code *, char *excerpt, size_t len);
const char	*preflight_check_name(int);

#endif
