/*
 * RDMA on a node's fast interface, as the kernel's sysfs shows it
 * (Documentation/ABI/stable/sysfs-class-infiniband; rdma-core's show_gids
 * reads the same files): lib/plan/plan_init.c's cmd_rdma_state prints, for
 * every port of a device whose netdev is nodes[].ifname, the port's state
 * and link layer and its GID table (index, GID, type, netdev). Which
 * index carries the node's IPv4 address as RoCE v2 differs per node and
 * can move after a reboot: NCCL_IB_GID_INDEX is found per node, never set
 * once for the cluster. Pure: the daemon passes the command's output in.
 */
#ifndef TANDEM_RDMA_H
#define TANDEM_RDMA_H

#include <stddef.h>

enum rdma_verdict {
	RDMA_NONE,		/* no RDMA there: nothing changes */
	RDMA_OK,		/* an ACTIVE port with a RoCE v2 GID for the ip */
	RDMA_PORT_DOWN,		/* the interface's RDMA port(s) not ACTIVE */
	RDMA_GID_MISSING,	/* ACTIVE, but no RoCE v2 GID for the ip */
	RDMA_UNKNOWN,		/* an answer tandem could not read */
};

#define RDMA_DEV_MAX	64

struct rdma_state {
	enum rdma_verdict v;
	char		 dev[RDMA_DEV_MAX];	/* "rocep1s0f0": NCCL_IB_HCA */
	int		 port;
	int		 gid_index;		/* NCCL_IB_GID_INDEX; -1 none */
	char		 state[32];		/* "4: ACTIVE" as sysfs says */
	char		 link_layer[32];	/* "Ethernet", "InfiniBand" */
	char		 said[160];		/* RDMA_UNKNOWN: the line */
};

/*
 * The GID an IPv4 address has in a RoCE GID table (IPv4-mapped IPv6,
 * ::ffff:a.b.c.d, written as sysfs writes it). 0 on success; -1 when ip
 * is not a dotted IPv4 address (an IPv6 fast link: not looked up).
 */
int	rdma_ipv4_gid(const char *ip, char *gid, size_t len);
/*
 * Reads cmd_rdma_state's output (exit status rc) for the node's ip and
 * ifname into st. Never fails: what it cannot read is RDMA_UNKNOWN.
 */
void	rdma_parse(int rc, const char *out, const char *ip, const char *ifname,
	    struct rdma_state *st);
/* "rocep1s0f0 port 1 GID index 3 (RoCE v2, Ethernet)" and the like */
void	rdma_describe(const struct rdma_state *, const char *ifname,
	    const char *ip, char *buf, size_t len);

#endif
