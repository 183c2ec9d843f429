/*
 * The preflight's link column: the fast link's rounds (preflight_link.c)
 * judged into it once every node answered, and the fast interface's RDMA
 * ports (issue 47).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight_int.h"
#include "utf8.h"

/* The link column's first questions: the interface, and its RDMA ports. */
void
preflight_rdma_link_cmds(struct preflight *pf, size_t node, struct pf_cmd **v,
    size_t *n)
{
	preflight_set_cmd(v, n, PF_LINK, cmd_link_state(pf->cf, node));
	preflight_set_cmd(v, n, PF_RDMA, cmd_rdma_state(pf->cf, node));
	pf->rdma_asked[node] = 1;
}

static void
rdma_fail(struct preflight *pf, size_t node, enum diag_code code,
    const char *what)
{
	char buf[400];

	utf8_fmt(buf, sizeof(buf), "%s: %s", diag_code_name(code), what);
	preflight_set(pf, node, PF_LINK, 0, buf, diag_get(code)->remedy);
}

/*
 * Every node's RDMA answer in (or the node not asked), and the link
 * judged: a node whose link passed but whose RDMA port is down or
 * carries no RoCE v2 GID for its address fails the link column with the
 * RDMA diagnosis; so does a second link layer among the nodes. A node
 * without RDMA passes as it did. Once.
 */
void
preflight_rdma_settle(struct preflight *pf)
{
	const struct config *cf = pf->cf;
	struct pf_result *r;
	char buf[300];
	size_t i, first = (size_t)-1;

	if (!pf->lk_set || pf->rdma_set)
		return;
	for (i = 0; i < pf->nnodes; i++)
		if (pf->rdma_asked[i] == 1 && pf->pending[i] > 0)
			return;
	pf->rdma_set = 1;
	for (i = 0; i < pf->nnodes; i++) {
		const struct rdma_state *st = &pf->rdma[i];

		r = &pf->res[i][PF_LINK];
		if (pf->rdma_asked[i] != 2 || st->v == RDMA_NONE || !r->ok ||
		    r->status != PFS_PASSED)
			continue;
		rdma_describe(st, cf->nodes[i].ifname, cf->nodes[i].ip, buf,
		    sizeof(buf));
		switch (st->v) {
		case RDMA_OK:
			if (first == (size_t)-1)
				first = i;
			else if (strcmp(st->link_layer, pf->rdma[first].
			    link_layer) != 0) {
				char both[400];

				utf8_fmt(both, sizeof(both), "%s %s %s, %s %s "
				    "%s", cf->nodes[first].name, pf->rdma[first].
				    dev, pf->rdma[first].link_layer, cf->nodes[i].
				    name, st->dev, st->link_layer);
				rdma_fail(pf, i, DIAG_RDMA_LINK_LAYER_MIXED,
				    both);
				break;
			}
			/* the value for the API, the detail for tandemctl check */
			utf8_fmt(r->value + strlen(r->value), sizeof(r->value) -
			    strlen(r->value), "%sRDMA %s", r->value[0] ? "; " :
			    "", buf);
			utf8_fmt(r->detail + strlen(r->detail), sizeof(r->detail) -
			    strlen(r->detail), "; RDMA %s", buf);
			break;
		case RDMA_PORT_DOWN:
			rdma_fail(pf, i, DIAG_RDMA_PORT_DOWN, buf);
			break;
		case RDMA_GID_MISSING:
			rdma_fail(pf, i, DIAG_RDMA_GID_MISSING, buf);
			break;
		case RDMA_UNKNOWN:
			/* asked again, never terminal */
			preflight_set_status(pf, i, PF_LINK, PFS_UNKNOWN, buf,
			    NULL);
			break;
		case RDMA_NONE:
			break;
		}
	}
}

/*
 * The link check judged, or given up because a node could not be asked:
 * its column, once. Given up, it says nothing ("-"): the node's ssh
 * check says why.
 */
void
preflight_rdma_link_settled(struct preflight *pf)
{
	size_t i;

	if (pf->lk.phase != LK_DONE || pf->lk_set)
		return;
	pf->lk_set = 1;
	for (i = 0; i < pf->nnodes; i++)
		if (pf->lk.ran)
			pflink_result(&pf->lk, pf->cf, i, &pf->res[i][PF_LINK]);
		else if (!pf->res[i][PF_LINK].done)
			preflight_set(pf, i, PF_LINK, 0, "-", NULL);
	preflight_rdma_settle(pf);
}
