/*
 * The preflight's driver (preflight_run.h): what preflight_steps.c says is due,
 * handed to the runner's send; a command that cannot go is answered as its
 * node's session down, as the transport would have.
 */
#include "preflight_run.h"
#include "result.h"

static void
send_cmds(const struct pf_runner *r, struct pf_cmd *cmds, size_t k)
{
	size_t j;

	for (j = 0; j < k; j++)
		if (r->send(r->ctx, &cmds[j]) == -1) {
			struct cmd_result down = { .exit_code = -1, .out = "",
			    .err = "", .error = "ssh: session down" };

			preflight_answer(r->pf, cmds[j].node, cmds[j].tag,
			    &down);
		}
	preflight_cmds_free(cmds, k);
}

void
preflight_run_more(const struct pf_runner *r)
{
	struct pf_cmd *cmds;
	size_t k;

	while ((k = preflight_more(r->pf, &cmds)) > 0)
		send_cmds(r, cmds, k);
}

void
preflight_run_node(const struct pf_runner *r, size_t node, int up,
    const char *why)
{
	struct pf_cmd *cmds;
	size_t k;

	if (!up) {
		preflight_node_down(r->pf, node, why);
		return;
	}
	k = preflight_commands(r->pf, node, &cmds);
	send_cmds(r, cmds, k);
}

void
preflight_run_answer(const struct pf_runner *r, size_t node, int tag,
    const struct cmd_result *res)
{
	preflight_answer(r->pf, node, tag, res);
	preflight_run_more(r);
}
