/*
 * The preflight's command and verdict, below every part of it: the driver
 * (preflight_steps.c), the link's rounds (preflight_link.c), the RDMA column
 * and the runner all hand commands out and record results in these, so they
 * live under all of them and none calls up for them.
 */
#ifndef TANDEM_PREFLIGHT_CMD_H
#define TANDEM_PREFLIGHT_CMD_H

#include <stddef.h>

/*
 * What a check found. Only a check that was made and passed is "passed":
 * one that was not made (no tool on the node, container.accelerator none)
 * stops nothing but is never shown as passed, and an answer tandem could
 * not read is "could not tell": the daemon asks again, it never stops for
 * it.
 */
enum pf_status {
	PFS_PASSED,
	PFS_FAILED,
	PFS_NOT_CHECKED,
	PFS_UNKNOWN,
};

struct pf_result {
	int		 done;
	int		 ok;	/* stops no start: passed, or not checked */
	enum pf_status	 status;
	/* "-": not run (no session, or not here); room for what was asked
	   and the tool's words when tandem could not tell, and for the
	   link's two nodes and ping's words */
	char		 detail[400];
	char		 fix[320];
	char	 value[200];	/* what was found: image ID, runtimes, specs */
};

/*
 * One command to run on a node; its answer goes back with its tag (0 or
 * more: a runner's own tags can be negative).
 */
struct pf_cmd {
	int	 tag;
	size_t	 node;
	char	*cmd;
};

/* Frees n commands and their array (what preflight_commands handed out). */
void	preflight_cmds_free(struct pf_cmd *, size_t n);

#endif
