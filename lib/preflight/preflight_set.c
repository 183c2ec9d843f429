/*
 * What every check of the preflight writes: a verdict into the table
 * (with its detail and fix), "could not tell" for an answer it does not
 * recognise, a command to send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight_int.h"
#include "utf8.h"

void
preflight_set_status(struct preflight *pf, size_t node, int check,
    enum pf_status s,
    const char *detail, const char *fix)
{
	struct pf_result *r = &pf->res[node][check];

	r->done = 1;
	r->status = s;
	r->ok = s == PFS_PASSED || s == PFS_NOT_CHECKED;
	utf8_copy(r->detail, sizeof(r->detail), detail);
	utf8_copy(r->fix, sizeof(r->fix), fix);
}

void
preflight_set(struct preflight *pf, size_t node, int check, int ok,
    const char *detail,
    const char *fix)
{
	preflight_set_status(pf, node, check, ok ? PFS_PASSED : PFS_FAILED,
	    detail, fix);
}

void
preflight_set_value(struct preflight *pf, size_t node, int check,
    const char *value)
{
	utf8_copy(pf->res[node][check].value, sizeof(pf->res[node][check].value),
	    value);
}

const char *
preflight_set_line1(const char *s, char *buf, size_t len)
{
	utf8_copyn(buf, len, s, strcspn(s, "\n"));
	return buf;
}

/*
 * An answer a check does not recognise: what was asked (cmd, freed here),
 * the tool's own words and "could not tell", with no fix
 * (recovery_preflight_diag makes it unrecognised-answer: retried). The
 * engine's own words for down or permission denied are recognised
 * whatever was asked: "not checked" with them, and the engine check says
 * what to do.
 */
void
preflight_set_unknown(struct preflight *pf, size_t node, int check, char *cmd,
    const struct cmd_result *r)
{
	const struct diag *d = diag_match(r->err, NULL, 0);
	char buf[400], line[300];

	if (d == NULL)
		d = diag_match(r->out, NULL, 0);
	if (d && (d->id == DIAG_ENGINE_DOWN || d->id ==
	    DIAG_ENGINE_PERMISSION)) {
		(void)diag_match(r->errlen ? r->err : r->out, line,
		    sizeof(line));
		utf8_fmt(buf, sizeof(buf), "not checked: %s", line);
		preflight_set(pf, node, check, 0, buf, NULL);
	} else {
		diag_unknown_excerpt(buf, sizeof(buf), cmd ? cmd : "?",
		    r->exit_code, r->out, r->err);
		preflight_set_status(pf, node, check, PFS_UNKNOWN, buf, NULL);
	}
	free(cmd);
}

void
preflight_set_cmd(struct pf_cmd **v, size_t *n, int tag, char *cmd)
{
	if (cmd == NULL)
		return;
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].tag = tag;
	(*v)[*n].cmd = cmd;
	(*n)++;
}
