/*
 * Who holds a TCP port here: the socket from /proc/self/net/tcp{,6}
 * (lib/parse/procnet.c), its process from /proc/PID/fd. tandemd says it when it
 * cannot listen, tandemctl init before it picks the API's port.
 */
#ifndef TANDEM_PORTHOLDER_H
#define TANDEM_PORTHOLDER_H

#include <stddef.h>
#include <sys/types.h>

struct port_holder {
	int	 found;		/* a listener is in the kernel's table */
	pid_t	 pid;		/* 0: its process is not one we may see */
	char	 comm[32];	/* /proc/PID/comm: "node_exporter" */
	int	 tandemd;	/* it is a tandemd */
};

/* host: an IPv4 or IPv6 address, as tandem.json's listen has it. */
void	port_holder_find(const char *host, int port, struct port_holder *);

/*
 * The holder in words for a message: "node_exporter (pid 812)", "another
 * tandemd (pid 812)", or, where /proc/PID/fd of other users' processes
 * is hidden, "a program this user cannot see (as root, ss -ltnp names
 * it)".
 */
const char *port_holder_words(const struct port_holder *, char *buf,
	    size_t len);

#endif
