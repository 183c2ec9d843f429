/*
 * The HTTP API server's one place of state, on the daemon's loop
 * (httpd_start / httpd_stop), and which listener a connection came by.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd_int.h"

struct httpd_state httpd_state;

/* tandemctl's Unix socket, which only root and group tandem can open. */
int
httpd_state_via_socket(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_DAEMON);

	return ci != NULL && httpd_state.l[L_UNIX].mhd != NULL &&
	    ci->daemon == httpd_state.l[L_UNIX].mhd;
}
