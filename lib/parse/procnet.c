/*
 * /proc/net/tcp, as Linux's net/ipv4/tcp_ipv4.c (get_tcp4_sock) prints it:
 *   "%4d: %08X:%04X %08X:%04X %02X %08X:%08X %02X:%08lX %08X %5u %8d %lu"
 * sl, local address:port, remote address:port, state, tx:rx queue,
 * timer, retransmits, uid, timeout, inode. The address is the __be32 as
 * the host reads it, so parsing the hex into a uint32_t gives s_addr
 * back on any byte order. tcp6 (tcp_ipv6.c, get_tcp6_sock) prints the
 * address as four such words.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procnet.h"

#define TCP_LISTEN	0x0A	/* include/net/tcp_states.h */

unsigned long
procnet_listener(const char *table, int v6, uint32_t addr, int port)
{
	const char *line, *nl;
	char buf[512], laddr[40];
	unsigned int lport, st;
	unsigned long inode;
	int sl;

	for (line = table; line && *line; line = nl ? nl + 1 : NULL) {
		size_t l;

		nl = strchr(line, '\n');
		l = nl ? (size_t)(nl - line) : strlen(line);
		if (l >= sizeof(buf))
			continue;
		memcpy(buf, line, l);
		buf[l] = '\0';
		if (sscanf(buf, " %d: %39[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x "
		    "%*x:%*x %*x:%*x %*x %*u %*d %lu", &sl, laddr, &lport,
		    &st, &inode) != 5)
			continue;	/* the header line, or not the format */
		if (st != TCP_LISTEN || lport != (unsigned int)port ||
		    inode == 0 || strlen(laddr) != (v6 ? 32u : 8u))
			continue;
		if (!v6) {
			uint32_t a = (uint32_t)strtoul(laddr, NULL, 16);

			if (addr != 0 && a != 0 && a != addr)
				continue;
		}
		return inode;
	}
	return 0;
}
