/*
 * A node's network as `ip -j addr` and /sys/class/net/IF/speed tell it, and
 * the choice of the fast link among the subnets every node shares: the
 * interface NCCL, Gloo and Ray must use (the DGX Spark Ray guide's
 * enp1s0f0np0 on 10.10.10.x, not the management LAN). Pure: tandemctl init
 * and the link check (linkcheck.c) hand in what the nodes printed.
 */
#ifndef TANDEM_NETINFO_H
#define TANDEM_NETINFO_H

#include <stddef.h>

#define NET_IFNAMSIZ	16	/* IFNAMSIZ: 15 characters and the NUL */
#define NET_IPLEN	16	/* a dotted IPv4 address and the NUL */

struct net_addr {
	char	 ip[NET_IPLEN];
	int	 prefix;
};

struct net_iface {
	char		 name[NET_IFNAMSIZ];
	int		 admin_up;	/* flags: UP (ip link set up) */
	int		 carrier;	/* flags: LOWER_UP, not NO-CARRIER */
	int		 loopback;	/* flags: LOOPBACK */
	char		 operstate[16];	/* UP, DOWN, LOWERLAYERDOWN, UNKNOWN */
	int		 mtu;
	long		 speed;		/* Mb/s; -1 when the driver cannot tell */
	struct net_addr	*addrs;		/* IPv4 only: tandem's ip is IPv4 */
	size_t		 naddrs;
};

struct net_ifaces {
	struct net_iface	*v;
	size_t			 n;
};

/*
 * `ip -j addr [show dev IF]` (iproute2 4.13 and later: a JSON array, one
 * object per interface). Returns 0, or -1 with a message in err when the
 * text is not that array; objects without an ifname are left out.
 */
int	net_parse_ip_addr(const char *json, size_t len, struct net_ifaces *,
	    char *err, size_t errlen);
/*
 * Lines "IFNAME SPEED" (cmd_net_speeds): sets the speed of each interface
 * named. "-", "-1", an empty or unreadable value (a link down, a virtual
 * device: the kernel says EINVAL or -1) leave -1. Returns how many
 * interfaces got a speed.
 */
size_t	net_parse_speeds(const char *text, struct net_ifaces *);
/* The speed value of one line "speed N" or "N"; -1 when unknown. */
long	net_speed_value(const char *s);
void	net_ifaces_free(struct net_ifaces *);
const struct net_iface *net_iface_find(const struct net_ifaces *,
	    const char *name);
/* Whether the interface carries ip (IPv4, any prefix). */
int	net_iface_has(const struct net_iface *, const char *ip);
/* Up for traffic: set up and with a carrier. */
int	net_iface_up(const struct net_iface *);

/* Whether a and b fall in one subnet of prefix bits. */
int	net_same_subnet(const char *a, const char *b, int prefix);
/* "10.10.10.0/24" for ip/prefix; -1 when ip is not an IPv4 address. */
int	net_subnet(const char *ip, int prefix, char *buf, size_t len);

/* What the fast-link choice knows of one node. */
struct link_node {
	const char		*name;
	const struct net_ifaces	*ifs;
	const char		*ssh_ip;	/* its address SSH reached; NULL */
};

/* One subnet every node shares, with the interface each node has on it. */
struct link_end {
	char	 ifname[NET_IFNAMSIZ];
	char	 ip[NET_IPLEN];
	int	 mtu;
	long	 speed;
	int	 up;
};

struct link_choice {
	char		 subnet[24];	/* "10.10.10.0/24", the head's prefix */
	struct link_end	*end;		/* one per node, in the nodes' order */
	size_t		 n;
	long		 speed;		/* the slowest end's; -1 unknown */
	int		 mtu;		/* the smallest end's */
	int		 mtu_agree;
	int		 all_up;
	int		 ssh;		/* SSH reaches a node on this subnet */
};

/*
 * Every subnet all n nodes share (the head, nodes[0], decides the
 * subnets; on each other node the best interface with an address in it,
 * each node's address its own), best first: all ends up, then the fastest
 * slowest end, then not the subnet SSH uses (the management network) when
 * another is as fast, then the larger MTU. Loopback and addresses every
 * node has alike (docker0's 172.17.0.1) are never links. Returns how many
 * (0: no shared subnet), the array in *out (free with link_choices_free).
 */
size_t	link_choices(const struct link_node *nodes, size_t n,
	    struct link_choice **out);
void	link_choices_free(struct link_choice *, size_t);
/* "200 Gb/s", "10 Gb/s", "100 Mb/s", "speed unknown" */
void	net_speed_label(long mbps, char *buf, size_t len);

#endif
