/*
 * The fast link, proven before any container starts: on every node the
 * configured ifname exists, is up and carries the node's ip; the MTUs
 * agree; every node reaches every peer's ip over it with a packet of the
 * MTU's size that may not be fragmented. Ray and Gloo would otherwise time
 * out on a broken link after minutes; this says which pair of nodes and
 * what to do in seconds. Pure: the preflight runs cmd_link_state and
 * cmd_link_ping (plan_init.c) and hands their answers in.
 */
#ifndef TANDEM_LINKCHECK_H
#define TANDEM_LINKCHECK_H

#include <stddef.h>

#include "diagnose.h"

/* What cmd_link_state said of the node's ifname. */
enum link_state_v {
	LS_OK,		/* exists, up with a carrier, carries ip */
	LS_MISSING,	/* no such interface */
	LS_NO_ADDR,	/* exists, without the node's ip */
	LS_ADMIN_DOWN,	/* set down (no UP flag) */
	LS_NO_CARRIER,	/* up, but no carrier: cable, transceiver, peer */
	LS_UNKNOWN,	/* an answer not understood */
};

struct link_state {
	enum link_state_v	 v;
	int			 mtu;		/* 0: not known */
	long			 speed;		/* Mb/s; -1 unknown */
	char			 detail[240];	/* what was seen, for a person */
};

/*
 * Judges cmd_link_state's answer for the interface ifname that should
 * carry ip: the exit status, stdout and stderr (NUL-terminated).
 */
void	linkcheck_state(int exit_code, const char *out, const char *err,
	    const char *ifname, const char *ip, struct link_state *);

/* What one ping (cmd_link_ping) said. */
enum ping_v {
	PING_OK,	/* a reply came */
	PING_LOST,	/* sent, no reply */
	PING_TOO_BIG,	/* refused on the sender: larger than its MTU */
	PING_NO_DEVICE,	/* the interface is not there */
	PING_NO_ROUTE,	/* the interface is down or has no address */
	PING_MISSING,	/* no ping on the node */
	PING_UNKNOWN,	/* an answer not understood */
	PING_NOT_ASKED,	/* (for callers) no answer to judge */
};

struct ping_res {
	enum ping_v	 v;
	int		 mtu;		/* "mtu=1500" of a local error; 0 */
	char		 words[200];	/* the tool's own line that decided */
};

void	linkcheck_ping(int exit_code, const char *out, const char *err,
	    struct ping_res *);
/* The -s of a ping that fills an MTU: its IPv4 and ICMP headers, 28. */
int	linkcheck_ping_size(int mtu);

/* Everything the link check asked, for all n nodes. */
struct linkcheck_in {
	size_t				 n;
	const char *const		*name;	/* per node */
	const char *const		*ifname;
	const char *const		*ip;
	const struct link_state		*state;	/* per node */
	/*
	 * [from * n + to], the diagonal unused: big is the ping at the
	 * sender's MTU with DF set; small the 56-byte one, asked where big
	 * got no reply (NULL, or PING_NOT_ASKED, when not asked).
	 */
	const struct ping_res		*big;
	const struct ping_res		*small;
};

struct link_finding {
	/* DIAG_LINK_DOWN, _LINK_UNREACHABLE, _MTU_MISMATCH, _INTERFACE_WRONG */
	enum diag_code	 code;
	/* an answer not understood, or not asked: retry, never terminal */
	int		 could_not_tell;
	size_t		 a, b;		/* the nodes concerned; b == a: one */
	char		 message[400];
	char		 fix[400];
};

/*
 * The first failure of the link check: each node's interface, then the
 * MTUs, then every pair. Returns 0 when the link is proven, 1 with f set.
 */
int	linkcheck_judge(const struct linkcheck_in *, struct link_finding *f);
/*
 * One node's line for the preflight's table: "enp1s0f0np0 up, 200 Gb/s,
 * MTU 9000", or what is wrong with it.
 */
void	linkcheck_node_detail(const struct link_state *, const char *ifname,
	    char *buf, size_t len);

#endif
