/*
 * The foreign-container scan: when Ray shows a node tandem did not start,
 * name the container behind it on any node instead of rebuilding again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

/*
 * The stale node came back right after a full rebuild: something other
 * than our containers runs Ray with a node's IP. Name it.
 */
struct foreign_scan {
	struct cluster	*cl;
	uint64_t	 epoch;
	int		 pending;
	struct sbuf	 found;
	char		 excerpt[300];
};

static void
on_foreign_ps(const struct ssh_result *r, void *arg)
{
	struct op *o = arg;
	struct foreign_scan *fs = o->ctx;
	struct cluster *cl = o->cl;
	const char *p = r->out, *nl;

	/* lines "NAME LABEL"; ours carry tandem.cluster=<name> */
	for (; r->exit_code == 0 && *p; p = nl + 1) {
		char name[160] = "", label[80] = "";

		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		if (sscanf(p, "%159s %79s", name, label) >= 1 && name[0] &&
		    strcmp(label, cl->cf->name) != 0)
			sbuf_addf(&fs->found, "%s%s on %s", fs->found.len ?
			    ", " : "", name, cl->nodes[o->node].conf->name);
		if (*nl == '\0')
			break;
	}
	free(o);
	if (--fs->pending > 0)
		return;
	if (fs->epoch == cl->epoch && !cl->stopping) {
		if (fs->found.len)
			fail_step(cl, DIAG_FOREIGN_CONTAINER, cl->cf->head,
			    fs->found.s);
		else
			fail_step(cl, DIAG_STALE_RAY_NODE, cl->cf->head,
			    fs->excerpt);
	}
	sbuf_free(&fs->found);
	free(fs);
}

void
scan_foreign(struct cluster *cl, const char *excerpt)
{
	struct foreign_scan *fs = xcalloc(1, sizeof(*fs));
	char *cmd;
	size_t i;

	fs->cl = cl;
	fs->epoch = cl->epoch;
	sbuf_init(&fs->found);
	utf8_fmt(fs->excerpt, sizeof(fs->excerpt), "%s", excerpt);
	cmd = cmd_foreign_ps(cl->cf);
	fs->pending = 1;
	for (i = 0; i < cl->nnodes; i++) {
		struct op *o = op_new(cl, i);

		o->ctx = fs;
		fs->pending++;
		if (sshc_exec(cl->nodes[i].ssh, cmd, cl->cf->probe.timeout_s,
		    on_foreign_ps, o) == -1) {
			free(o);
			fs->pending--;
		}
	}
	free(cmd);
	if (--fs->pending == 0) {
		fail_step(cl, DIAG_STALE_RAY_NODE, cl->cf->head, excerpt);
		sbuf_free(&fs->found);
		free(fs);
	}
}
