/*
 * What every file of the SSH client asks of libssh2 outside a session's
 * own state: its start, a session's last error, whether a send waits,
 * which errors end a session; and a session's parameters from the config
 * with the deadline of each connection phase.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ssh_int.h"

int
sshc_ssh_init(void)
{
	return libssh2_init(0);
}

const char *
ssh_errmsg(LIBSSH2_SESSION *s)
{
	char *msg = NULL;

	if (s == NULL)
		return "no session";
	libssh2_session_last_error(s, &msg, NULL, 0);
	return msg ? msg : "unknown libssh2 error";
}

int
ssh_send_pending(LIBSSH2_SESSION *s)
{
	/* set by a short send, cleared once a send completes (transport.c) */
	return (libssh2_session_block_directions(s) &
	    LIBSSH2_SESSION_BLOCK_OUTBOUND) != 0;
}

int
ssh_session_error(int rc)
{
	return rc == LIBSSH2_ERROR_SOCKET_SEND ||
	    rc == LIBSSH2_ERROR_SOCKET_RECV ||
	    rc == LIBSSH2_ERROR_SOCKET_DISCONNECT ||
	    rc == LIBSSH2_ERROR_SOCKET_TIMEOUT ||
	    rc == LIBSSH2_ERROR_TIMEOUT || rc == LIBSSH2_ERROR_DECRYPT ||
	    rc == LIBSSH2_ERROR_BAD_USE;
}

/*
 * A node that accepts TCP and then stalls (sshd stopped or overloaded, an
 * AuthorizedKeysCommand, PAM module or DNS lookup that hangs) is called
 * unreachable with the phase it hung in, and the loop never waits on it.
 */
uint64_t
ssh_phase_limit_ms(const struct ssh_params *p)
{
	return (uint64_t)(p->connect_timeout_s * 1000);
}

void
ssh_params_of(const struct config *cf, size_t node, struct ssh_params *p)
{
	p->host = cf->nodes[node].ssh_host;
	p->port = cf->nodes[node].ssh_port;
	p->user = cf->ssh.user;
	p->identity_file = cf->ssh.identity_file;
	p->known_hosts_file = cf->ssh.known_hosts_file;
	p->connect_timeout_s = cf->ssh.connect_timeout_s;
	p->keepalive_s = cf->ssh.keepalive_s;
}
