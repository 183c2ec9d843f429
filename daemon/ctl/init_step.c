/*
 * tandemctl init's steps: each runs its commands on every node at once
 * over the daemon's SSH client on a libuv loop; a step's commands all
 * answered, the loop stops and the next step starts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init_int.h"

void
init_step_done(struct init *in)
{
	if (--in->outstanding == 0)
		uv_stop(in->loop);
}

/* Runs the loop until the step's answers are all in. */
void
init_step_run(struct init *in)
{
	if (in->outstanding > 0)
		uv_run(in->loop, UV_RUN_DEFAULT);
}

struct ssh_params
init_step_params(struct inode *nd, const char *known_hosts)
{
	struct ssh_params p;

	memset(&p, 0, sizeof(p));
	p.host = nd->host;
	p.port = nd->port;
	p.user = nd->in->user;
	p.identity_file = nd->in->identity;
	p.known_hosts_file = known_hosts;
	p.connect_timeout_s = 5;
	p.keepalive_s = 5;
	return p;
}

/* Frees the sessions and lets their handles close. */
void
init_step_drop(struct init *in)
{
	size_t k;

	for (k = 0; k < in->n; k++)
		if (in->nodes[k].ssh) {
			sshc_free(in->nodes[k].ssh);
			in->nodes[k].ssh = NULL;
			in->nodes[k].up = 0;
		}
	uv_run(in->loop, UV_RUN_NOWAIT);
}
