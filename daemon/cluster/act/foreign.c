/*
 * The foreign-container scan: when Ray shows a node tandem did not start
 * (or the stale node comes back right after a full rebuild), something
 * other than our containers runs Ray with a node's IP. Ask every node's
 * engine which containers run there, and name the one that is not ours,
 * instead of rebuilding again. A sub-step of whichever action found it;
 * its ops are that action's (tag TAG_FOREIGN).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_env.h"

void
foreign_scan(struct action *a, struct foreign_scan *fs, const char *excerpt)
{
	const struct config *cf = act_cf(a);
	char *cmd;
	size_t i;

	if (fs->running)
		return;
	fs->running = 1;
	fs->pending = 0;
	sbuf_free(&fs->found);
	sbuf_init(&fs->found);
	utf8_fmt(fs->excerpt, sizeof(fs->excerpt), "%s", excerpt);
	cmd = cmd_foreign_ps(cf);
	for (i = 0; i < cf->nnodes; i++)
		if (op_ssh(&a->own, i, TAG_FOREIGN, 0, cmd,
		    cf->probe.timeout_s, TS_COUNT) == 0)
			fs->pending++;
	free(cmd);
	if (fs->pending == 0) {
		fs->running = 0;
		action_fail(a, DIAG_STALE_RAY_NODE, cf->head, excerpt);
	}
}

void
foreign_answer(struct action *a, struct foreign_scan *fs, const struct op *o,
    const struct cmd_result *r)
{
	const struct config *cf = act_cf(a);
	const char *p = r->out, *nl;

	/* lines "NAME LABEL"; ours carry tandem.cluster=<name> */
	for (; r->exit_code == 0 && *p; p = nl + 1) {
		char name[160] = "", label[80] = "";

		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		if (sscanf(p, "%159s %79s", name, label) >= 1 && name[0] &&
		    strcmp(label, cf->name) != 0)
			sbuf_addf(&fs->found, "%s%s on %s", fs->found.len ?
			    ", " : "", name, cf->nodes[o->node].name);
		if (*nl == '\0')
			break;
	}
	if (--fs->pending > 0)
		return;
	fs->running = 0;
	if (fs->found.len)
		action_fail(a, DIAG_FOREIGN_CONTAINER, cf->head,
		    fs->found.s);
	else
		action_fail(a, DIAG_STALE_RAY_NODE, cf->head, fs->excerpt);
}

void
foreign_free(struct foreign_scan *fs)
{
	sbuf_free(&fs->found);
}
