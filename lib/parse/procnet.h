/*
 * Which socket listens on a TCP port, from the kernel's /proc/net/tcp and
 * /proc/net/tcp6 tables (proc(5)): tandemd and tandemctl init name the
 * program that holds the API's port (node_exporter's 9100 is tandem's
 * too) instead of "address in use". Pure: daemon/sys/portholder.c reads
 * the files and maps the socket's inode to a process.
 */
#ifndef TANDEM_PROCNET_H
#define TANDEM_PROCNET_H

#include <stdint.h>

/*
 * The inode of a socket in LISTEN state (st 0A) on port whose local
 * address clashes with addr: the same address, or the wildcard. addr is
 * an IPv4 address as struct in_addr's s_addr (network order), 0 for any;
 * in a tcp6 table (v6 set) every listener on the port clashes (a [::]
 * socket takes IPv4 too unless it is IPV6_V6ONLY, which the table does
 * not say). Returns 0 when none is listed; lines that are not the
 * kernel's format are skipped.
 */
unsigned long	procnet_listener(const char *table, int v6, uint32_t addr,
		    int port);

#endif
