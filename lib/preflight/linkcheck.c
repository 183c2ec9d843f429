/*
 * The link check's verdicts from what `ip -j addr show dev IF` and iputils'
 * ping print (recorded in tests/unit/data/net-debian-12; ping's texts are
 * the same in iputils 20211215, 20221126 and 20240117: ping/ping_common.c
 * finish() "N packets transmitted, N received", ping/ping.c
 * ping4_receive_error_msg "local error: message too long, mtu=N").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linkcheck.h"
#include "netinfo.h"
#include "utf8.h"

/* The first line of s, trimmed, into buf. */
static void
first_line(const char *s, char *buf, size_t len)
{
	while (*s == ' ' || *s == '\n')
		s++;
	utf8_copyn(buf, len, s, strcspn(s, "\n"));
}

void
linkcheck_state(int exit_code, const char *out, const char *err,
    const char *ifname, const char *ip, struct link_state *st)
{
	struct net_ifaces ifs;
	const struct net_iface *ifc;
	const char *sp;
	char why[160], have[120] = "";
	size_t i;

	memset(st, 0, sizeof(*st));
	st->speed = -1;
	if (exit_code != 0 && strstr(err, "does not exist")) {
		/* ip: Device "IF" does not exist. */
		first_line(err, why, sizeof(why));
		st->v = LS_MISSING;
		utf8_fmt(st->detail, sizeof(st->detail), "no interface %s (%s)",
		    ifname, why);
		return;
	}
	if (exit_code != 0 || net_parse_ip_addr(out, strlen(out), &ifs, why,
	    sizeof(why)) == -1) {
		first_line(exit_code != 0 && *err ? err : out, why,
		    sizeof(why));
		st->v = LS_UNKNOWN;
		utf8_fmt(st->detail, sizeof(st->detail), "could not tell: ip "
		    "answered exit %d: %s", exit_code, why[0] ? why :
		    "nothing");
		return;
	}
	if ((sp = strstr(out, "\nspeed ")) != NULL)
		st->speed = net_speed_value(sp + 7);
	if ((ifc = net_iface_find(&ifs, ifname)) == NULL) {
		st->v = LS_UNKNOWN;
		utf8_fmt(st->detail, sizeof(st->detail), "could not tell: ip "
		    "did not list %s", ifname);
		net_ifaces_free(&ifs);
		return;
	}
	st->mtu = ifc->mtu;
	for (i = 0; i < ifc->naddrs; i++) {
		size_t l = strlen(have);

		snprintf(have + l, sizeof(have) - l, "%s%s/%d", l ? " " : "",
		    ifc->addrs[i].ip, ifc->addrs[i].prefix);
	}
	if (!ifc->admin_up) {
		st->v = LS_ADMIN_DOWN;
		utf8_fmt(st->detail, sizeof(st->detail), "%s is down (set "
		    "down: no UP flag, state %s)", ifname, ifc->operstate);
	} else if (!ifc->carrier) {
		st->v = LS_NO_CARRIER;
		utf8_fmt(st->detail, sizeof(st->detail), "%s has no carrier "
		    "(NO-CARRIER, state %s): the cable, the transceiver or the "
		    "port at the other end is down", ifname, ifc->operstate);
	} else if (!net_iface_has(ifc, ip)) {
		st->v = LS_NO_ADDR;
		utf8_fmt(st->detail, sizeof(st->detail), "%s does not carry %s "
		    "(it has %s)", ifname, ip, have[0] ? have : "no IPv4 "
		    "address");
	} else
		st->v = LS_OK;
	net_ifaces_free(&ifs);
}

/*
 * An IPv4 packet is at most 65535 bytes whatever the MTU (lo's is 65536:
 * ping -M do -s 65508 there says "local error: message too long,
 * mtu=65535", recorded with iputils 20221126).
 */
int
linkcheck_ping_size(int mtu)
{
	if (mtu > 65535)
		mtu = 65535;
	return mtu > 28 + 8 ? mtu - 28 : 56;
}

/* The line of text that holds needle, into buf; 1 when found. */
static int
line_with(const char *text, const char *needle, char *buf, size_t len)
{
	const char *hit = strstr(text, needle), *s;

	if (hit == NULL)
		return 0;
	for (s = hit; s > text && s[-1] != '\n'; s--)
		;
	first_line(s, buf, len);
	return 1;
}

void
linkcheck_ping(int exit_code, const char *out, const char *err,
    struct ping_res *r)
{
	const char *m;
	char sum[200];
	long tx, rx;

	memset(r, 0, sizeof(*r));
	/* the summary: "1 packets transmitted, 1 received, ..." */
	if (line_with(out, " packets transmitted, ", sum, sizeof(sum)) &&
	    sscanf(sum, "%ld packets transmitted, %ld received", &tx, &rx) ==
	    2) {
		if (rx > 0 && exit_code == 0) {
			r->v = PING_OK;
			utf8_copy(r->words, sizeof(r->words), sum);
			return;
		}
		if ((m = strstr(err, "message too long, mtu=")) != NULL) {
			r->v = PING_TOO_BIG;
			r->mtu = atoi(m + 22);
			line_with(err, "message too long", r->words,
			    sizeof(r->words));
			return;
		}
		/* an ICMP "Frag needed and DF set (mtu = N)" from a router */
		m = strstr(out, "Frag needed and DF set (mtu = ");
		if (m != NULL) {
			r->v = PING_TOO_BIG;
			r->mtu = atoi(m + 30);
			line_with(out, "Frag needed", r->words,
			    sizeof(r->words));
			return;
		}
		r->v = PING_LOST;
		utf8_copy(r->words, sizeof(r->words), sum);
		return;
	}
	if (exit_code == 127 || (exit_code != 0 && strstr(err, "not found"))) {
		r->v = PING_MISSING;
		first_line(err, r->words, sizeof(r->words));
		return;
	}
	if (line_with(err, "SO_BINDTODEVICE", r->words, sizeof(r->words)) ||
	    line_with(err, "unknown iface", r->words, sizeof(r->words))) {
		r->v = PING_NO_DEVICE;
		return;
	}
	if (line_with(err, "Network is unreachable", r->words,
	    sizeof(r->words)) || line_with(err, "Cannot assign requested",
	    r->words, sizeof(r->words))) {
		r->v = PING_NO_ROUTE;
		return;
	}
	r->v = PING_UNKNOWN;
	first_line(*err ? err : out, r->words, sizeof(r->words));
	if (r->words[0] == '\0')
		snprintf(r->words, sizeof(r->words), "exit %d and nothing said",
		    exit_code);
}

static void
finding(struct link_finding *f, enum diag_code code, size_t a, size_t b)
{
	memset(f, 0, sizeof(*f));
	f->code = code;
	f->a = a;
	f->b = b;
}

/* 1 with f set when node k's interface is not fit for the link. */
static int
judge_state(const struct linkcheck_in *in, size_t k, struct link_finding *f)
{
	const struct link_state *st = &in->state[k];
	const char *nm = in->name[k], *ifn = in->ifname[k];

	switch (st->v) {
	case LS_OK:
		return 0;
	case LS_MISSING:
	case LS_NO_ADDR:
		finding(f, DIAG_INTERFACE_WRONG, k, k);
		utf8_fmt(f->message, sizeof(f->message), "%s: %s", nm,
		    st->detail);
		utf8_fmt(f->fix, sizeof(f->fix), "set nodes[].ifname of %s to "
		    "the interface that carries %s (ip -o addr on %s), or run "
		    "tandemctl init again", nm, in->ip[k], nm);
		return 1;
	case LS_ADMIN_DOWN:
		finding(f, DIAG_LINK_DOWN, k, k);
		utf8_fmt(f->message, sizeof(f->message), "%s: %s", nm,
		    st->detail);
		utf8_fmt(f->fix, sizeof(f->fix), "on %s: ip link set %s up, "
		    "and find what set it down (its netplan or NetworkManager "
		    "config)", nm, ifn);
		return 1;
	case LS_NO_CARRIER:
		finding(f, DIAG_LINK_DOWN, k, k);
		utf8_fmt(f->message, sizeof(f->message), "%s: %s", nm,
		    st->detail);
		utf8_fmt(f->fix, sizeof(f->fix), "check the cable of %s's %s "
		    "and the port it plugs into (ip link show %s on both ends "
		    "must say LOWER_UP)", nm, ifn, ifn);
		return 1;
	case LS_UNKNOWN:
		finding(f, DIAG_LINK_DOWN, k, k);
		f->could_not_tell = 1;
		utf8_fmt(f->message, sizeof(f->message), "%s: %s", nm,
		    st->detail);
		utf8_fmt(f->fix, sizeof(f->fix), "tandem asks again; on %s: "
		    "ip addr show dev %s", nm, ifn);
		return 1;
	}
	return 0;
}

/* 1 with f set when two nodes' interfaces have different MTUs. */
static int
judge_mtus(const struct linkcheck_in *in, struct link_finding *f)
{
	size_t k, lo = 0, hi = 0;

	for (k = 1; k < in->n; k++) {
		if (in->state[k].mtu < in->state[lo].mtu)
			lo = k;
		if (in->state[k].mtu > in->state[hi].mtu)
			hi = k;
	}
	if (in->state[lo].mtu == in->state[hi].mtu)
		return 0;
	finding(f, DIAG_MTU_MISMATCH, hi, lo);
	utf8_fmt(f->message, sizeof(f->message), "the fast link's MTU differs: "
	    "%s %s %d, %s %s %d (packets above %d bytes from %s to %s are "
	    "lost)", in->name[hi], in->ifname[hi], in->state[hi].mtu,
	    in->name[lo], in->ifname[lo], in->state[lo].mtu, in->state[lo].mtu,
	    in->name[hi], in->name[lo]);
	utf8_fmt(f->fix, sizeof(f->fix), "give every node's fast interface one "
	    "MTU: on %s ip link set %s mtu %d (and in its netplan file, so it "
	    "stays), or %d on %s", in->name[lo], in->ifname[lo],
	    in->state[hi].mtu, in->state[lo].mtu, in->name[hi]);
	return 1;
}

static const struct ping_res *
at(const struct ping_res *v, const struct linkcheck_in *in, size_t from,
    size_t to)
{
	return v ? &v[from * in->n + to] : NULL;
}

/* 1 with f set when from does not reach to over the link. */
static int
judge_pair(const struct linkcheck_in *in, size_t a, size_t b,
    struct link_finding *f)
{
	const struct ping_res *big = at(in->big, in, a, b);
	const struct ping_res *small = at(in->small, in, a, b);
	const char *an = in->name[a], *bn = in->name[b], *ifn = in->ifname[a];
	int mtu = in->state[a].mtu;

	/*
	 * No ping on the sender: not checked, as the preflight does without
	 * nvidia-smi or ss; the node's line says so (preflight_link.c). A
	 * retry would not install it, and the cluster may serve without.
	 */
	if (big == NULL || big->v == PING_OK || big->v == PING_MISSING)
		return 0;
	if (big->v == PING_NOT_ASKED || big->v == PING_UNKNOWN) {
		finding(f, DIAG_LINK_UNREACHABLE, a, b);
		f->could_not_tell = 1;
		utf8_fmt(f->message, sizeof(f->message), "could not tell "
		    "whether %s reaches %s (%s) over %s: %s", an, bn, in->ip[b],
		    ifn, big->v == PING_NOT_ASKED ? "not asked" : big->words);
		utf8_fmt(f->fix, sizeof(f->fix), "tandem asks again; on %s: "
		    "ping -I %s %s", an, ifn, in->ip[b]);
		return 1;
	}
	if (big->v == PING_TOO_BIG || (small && small->v == PING_OK)) {
		finding(f, DIAG_MTU_MISMATCH, a, b);
		utf8_fmt(f->message, sizeof(f->message), "%s reaches %s (%s) "
		    "over %s with small packets but not with %d bytes that may "
		    "not be fragmented (MTU %d): %s", an, bn, in->ip[b], ifn,
		    linkcheck_ping_size(mtu), mtu, big->words);
		utf8_fmt(f->fix, sizeof(f->fix), "something between %s and %s "
		    "takes less than MTU %d (a switch port, a VLAN, the peer): "
		    "raise it there, or give both nodes' %s the MTU the path "
		    "carries (ip link set %s mtu N)", an, bn, mtu, ifn, ifn);
		return 1;
	}
	finding(f, DIAG_LINK_UNREACHABLE, a, b);
	utf8_fmt(f->message, sizeof(f->message), "%s cannot reach %s (%s) over "
	    "%s: %s", an, bn, in->ip[b], ifn, big->words);
	utf8_fmt(f->fix, sizeof(f->fix), "check the fast link between %s and "
	    "%s: the cable or the switch port and its VLAN, both addresses "
	    "on one subnet, no firewall dropping ICMP; on %s: ping -I %s %s",
	    an, bn, an, ifn, in->ip[b]);
	return 1;
}

int
linkcheck_judge(const struct linkcheck_in *in, struct link_finding *f)
{
	size_t a, b;

	for (a = 0; a < in->n; a++)
		if (judge_state(in, a, f))
			return 1;
	if (in->n > 1 && judge_mtus(in, f))
		return 1;
	for (a = 0; a < in->n; a++)
		for (b = 0; b < in->n; b++)
			if (a != b && judge_pair(in, a, b, f))
				return 1;
	return 0;
}

void
linkcheck_node_detail(const struct link_state *st, const char *ifname,
    char *buf, size_t len)
{
	char speed[32];

	if (st->v != LS_OK) {
		utf8_copy(buf, len, st->detail);
		return;
	}
	net_speed_label(st->speed, speed, sizeof(speed));
	utf8_fmt(buf, len, "%s up, %s, MTU %d", ifname, speed, st->mtu);
}
