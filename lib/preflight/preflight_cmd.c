/*
 * The preflight's commands freed (preflight_cmd.h): the lowest part of the
 * preflight, which the driver, the link's rounds and the runner call down to.
 */
#include <stdlib.h>

#include "preflight_cmd.h"

void
preflight_cmds_free(struct pf_cmd *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].cmd);
	free(v);
}
