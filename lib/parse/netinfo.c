/*
 * `ip -j addr` and the link speeds, parsed; the fast link chosen from them.
 * The JSON is iproute2's (ip/ipaddress.c print_linkinfo, print_addrinfo:
 * the same keys in 5.15 on Ubuntu 22.04, DGX OS 6, and 6.1 on Debian 12
 * and Ubuntu 24.04, DGX OS 7); tests/unit/data/net-* holds what they print.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netinfo.h"
#include "util.h"

static int
has_flag(json_t *flags, const char *want)
{
	json_t *f;
	size_t i;

	json_array_foreach(flags, i, f)
		if (json_is_string(f) &&
		    strcmp(json_string_value(f), want) == 0)
			return 1;
	return 0;
}

static void
copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

static void
parse_addrs(json_t *info, struct net_iface *ifc)
{
	json_t *a;
	size_t i;

	json_array_foreach(info, i, a) {
		const char *fam = json_string_value(json_object_get(a,
		    "family"));
		const char *local = json_string_value(json_object_get(a,
		    "local"));
		json_t *pl = json_object_get(a, "prefixlen");
		struct in_addr in;

		/* an IPv4 prefix is 0..32: "/33" is no subnet (issue 43) */
		if (fam == NULL || strcmp(fam, "inet") != 0 || local == NULL ||
		    !json_is_integer(pl) || json_integer_value(pl) < 0 ||
		    json_integer_value(pl) > 32 ||
		    inet_pton(AF_INET, local, &in) != 1)
			continue;
		ifc->addrs = xrealloc(ifc->addrs, (ifc->naddrs + 1) *
		    sizeof(*ifc->addrs));
		copy(ifc->addrs[ifc->naddrs].ip, NET_IPLEN, local);
		ifc->addrs[ifc->naddrs].prefix = (int)json_integer_value(pl);
		ifc->naddrs++;
	}
}

int
net_parse_ip_addr(const char *text, size_t len, struct net_ifaces *out,
    char *err, size_t errlen)
{
	json_error_t je;
	json_t *root, *o;
	size_t i;

	memset(out, 0, sizeof(*out));
	/* ip prints one line; a shell may have added more after it */
	root = json_loadb(text, len, JSON_DISABLE_EOF_CHECK, &je);
	if (!json_is_array(root)) {
		seterr(err, errlen, "not ip -j addr output: %s", root ? "not a "
		    "JSON array" : je.text);
		json_decref(root);
		return -1;
	}
	out->v = xcalloc(json_array_size(root) + 1, sizeof(*out->v));
	json_array_foreach(root, i, o) {
		struct net_iface *ifc = &out->v[out->n];
		const char *name = json_string_value(json_object_get(o,
		    "ifname"));
		json_t *flags = json_object_get(o, "flags");
		json_t *mtu = json_object_get(o, "mtu");

		if (name == NULL || strlen(name) >= NET_IFNAMSIZ)
			continue;
		copy(ifc->name, sizeof(ifc->name), name);
		ifc->admin_up = has_flag(flags, "UP");
		ifc->carrier = has_flag(flags, "LOWER_UP") &&
		    !has_flag(flags, "NO-CARRIER");
		ifc->loopback = has_flag(flags, "LOOPBACK");
		copy(ifc->operstate, sizeof(ifc->operstate),
		    json_string_value(json_object_get(o, "operstate")));
		ifc->mtu = json_is_integer(mtu) ? (int)json_integer_value(mtu) :
		    0;
		ifc->speed = -1;
		parse_addrs(json_object_get(o, "addr_info"), ifc);
		out->n++;
	}
	json_decref(root);
	return 0;
}

long
net_speed_value(const char *s)
{
	char *end;
	long v;

	while (*s == ' ')
		s++;
	v = strtol(s, &end, 10);
	/* old kernels print -1 as unsigned: 4294967295 (SPEED_UNKNOWN) */
	if (end == s || (*end && *end != '\n' && *end != ' ') || v <= 0 ||
	    v >= 4294967295L)
		return -1;
	return v;
}

size_t
net_parse_speeds(const char *text, struct net_ifaces *ifs)
{
	const char *p = text, *nl;
	size_t got = 0, i;

	for (; p && *p; p = nl ? nl + 1 : NULL) {
		char name[NET_IFNAMSIZ];
		size_t n = strcspn(p, " \n");

		nl = strchr(p, '\n');
		if (n == 0 || n >= sizeof(name) || p[n] != ' ')
			continue;
		memcpy(name, p, n);
		name[n] = '\0';
		for (i = 0; i < ifs->n; i++)
			if (strcmp(ifs->v[i].name, name) == 0) {
				ifs->v[i].speed = net_speed_value(p + n + 1);
				got += ifs->v[i].speed > 0;
			}
	}
	return got;
}

void
net_ifaces_free(struct net_ifaces *ifs)
{
	size_t i;

	for (i = 0; i < ifs->n; i++)
		free(ifs->v[i].addrs);
	free(ifs->v);
	memset(ifs, 0, sizeof(*ifs));
}

const struct net_iface *
net_iface_find(const struct net_ifaces *ifs, const char *name)
{
	size_t i;

	for (i = 0; i < ifs->n; i++)
		if (strcmp(ifs->v[i].name, name) == 0)
			return &ifs->v[i];
	return NULL;
}

int
net_iface_has(const struct net_iface *ifc, const char *ip)
{
	size_t i;

	for (i = 0; i < ifc->naddrs; i++)
		if (strcmp(ifc->addrs[i].ip, ip) == 0)
			return 1;
	return 0;
}

int
net_iface_up(const struct net_iface *ifc)
{
	return ifc->admin_up && ifc->carrier;
}

static int
addr_of(const char *ip, uint32_t *v)
{
	struct in_addr in;

	if (inet_pton(AF_INET, ip, &in) != 1)
		return -1;
	*v = ntohl(in.s_addr);
	return 0;
}

static uint32_t
mask(int prefix)
{
	return prefix <= 0 ? 0 : prefix >= 32 ? 0xffffffffu :
	    ~((1u << (32 - prefix)) - 1);
}

int
net_same_subnet(const char *a, const char *b, int prefix)
{
	uint32_t x, y;

	if (addr_of(a, &x) == -1 || addr_of(b, &y) == -1)
		return 0;
	return (x & mask(prefix)) == (y & mask(prefix));
}

int
net_subnet(const char *ip, int prefix, char *buf, size_t len)
{
	uint32_t x;
	struct in_addr in;
	char s[NET_IPLEN];

	if (addr_of(ip, &x) == -1)
		return -1;
	in.s_addr = htonl(x & mask(prefix));
	inet_ntop(AF_INET, &in, s, sizeof(s));
	snprintf(buf, len, "%s/%d", s, prefix);
	return 0;
}

void
net_speed_label(long mbps, char *buf, size_t len)
{
	if (mbps <= 0)
		snprintf(buf, len, "speed unknown");
	else if (mbps >= 1000 && mbps % 1000 == 0)
		snprintf(buf, len, "%ld Gb/s", mbps / 1000);
	else if (mbps >= 1000)
		snprintf(buf, len, "%.1f Gb/s", (double)mbps / 1000);
	else
		snprintf(buf, len, "%ld Mb/s", mbps);
}

/* Which of two interfaces on one subnet is the better end: b over a? */
static int
better_end(const struct net_iface *a, const struct net_iface *b,
    const char *headname)
{
	if (a == NULL)
		return 1;
	if (net_iface_up(a) != net_iface_up(b))
		return net_iface_up(b);
	if (a->speed != b->speed)
		return b->speed > a->speed;
	/* the same name as the head's: nodes of one model are cabled alike */
	if ((strcmp(a->name, headname) == 0) !=
	    (strcmp(b->name, headname) == 0))
		return strcmp(b->name, headname) == 0;
	return b->mtu > a->mtu;
}

static void
set_end(struct link_end *e, const struct net_iface *ifc, const char *ip)
{
	copy(e->ifname, sizeof(e->ifname), ifc->name);
	copy(e->ip, sizeof(e->ip), ip);
	e->mtu = ifc->mtu;
	e->speed = ifc->speed;
	e->up = net_iface_up(ifc);
}

/*
 * The candidate of the head's address hip/prefix on interface hif: on each
 * other node its best interface on the subnet. 0 and the choice filled in,
 * or -1 when a node has none, or two nodes share an address.
 */
static int
candidate(const struct link_node *nodes, size_t n, const struct net_iface *hif,
    const struct net_addr *ha, struct link_choice *c)
{
	size_t k, i, j;

	memset(c, 0, sizeof(*c));
	c->end = xcalloc(n, sizeof(*c->end));
	c->n = n;
	set_end(&c->end[0], hif, ha->ip);
	for (k = 1; k < n; k++) {
		const struct net_iface *best = NULL;
		const char *bip = NULL;

		for (i = 0; i < nodes[k].ifs->n; i++) {
			const struct net_iface *ifc = &nodes[k].ifs->v[i];

			if (ifc->loopback)
				continue;
			for (j = 0; j < ifc->naddrs; j++)
				if (net_same_subnet(ifc->addrs[j].ip, ha->ip,
				    ha->prefix) && better_end(best, ifc,
				    hif->name)) {
					best = ifc;
					bip = ifc->addrs[j].ip;
				}
		}
		if (best == NULL)
			goto none;
		set_end(&c->end[k], best, bip);
	}
	/* docker0 is 172.17.0.1/16 everywhere: one address is no link */
	for (k = 0; k < n; k++)
		for (i = k + 1; i < n; i++)
			if (strcmp(c->end[k].ip, c->end[i].ip) == 0)
				goto none;
	net_subnet(ha->ip, ha->prefix, c->subnet, sizeof(c->subnet));
	c->speed = c->end[0].speed;
	c->mtu = c->end[0].mtu;
	c->mtu_agree = c->all_up = 1;
	for (k = 0; k < n; k++) {
		if (c->end[k].speed <= 0 || c->speed <= 0)
			c->speed = -1;
		else if (c->end[k].speed < c->speed)
			c->speed = c->end[k].speed;
		if (c->end[k].mtu != c->mtu)
			c->mtu_agree = 0;
		if (c->end[k].mtu < c->mtu)
			c->mtu = c->end[k].mtu;
		c->all_up &= c->end[k].up;
		if (nodes[k].ssh_ip &&
		    strcmp(nodes[k].ssh_ip, c->end[k].ip) == 0)
			c->ssh = 1;
	}
	return 0;
none:
	free(c->end);
	memset(c, 0, sizeof(*c));
	return -1;
}

/* Best first; qsort is not stable, so the head's order decides ties. */
struct ranked {
	struct link_choice	 c;
	size_t			 order;
};

static int
cmp_choice(const void *pa, const void *pb)
{
	const struct ranked *ra = pa, *rb = pb;
	const struct link_choice *a = &ra->c, *b = &rb->c;

	if (a->all_up != b->all_up)
		return b->all_up - a->all_up;
	if (a->speed != b->speed)
		return b->speed > a->speed ? 1 : -1;
	if (a->ssh != b->ssh)
		return a->ssh - b->ssh;
	if (a->mtu != b->mtu)
		return b->mtu - a->mtu;
	return ra->order < rb->order ? -1 : ra->order > rb->order;
}

size_t
link_choices(const struct link_node *nodes, size_t n, struct link_choice **out)
{
	struct ranked *r = NULL;
	size_t nr = 0, i, j;

	*out = NULL;
	if (n == 0)
		return 0;
	for (i = 0; i < nodes[0].ifs->n; i++) {
		const struct net_iface *hif = &nodes[0].ifs->v[i];

		if (hif->loopback)
			continue;
		for (j = 0; j < hif->naddrs; j++) {
			struct link_choice c;

			if (candidate(nodes, n, hif, &hif->addrs[j], &c) == -1)
				continue;
			r = xrealloc(r, (nr + 1) * sizeof(*r));
			r[nr].c = c;
			r[nr].order = nr;
			nr++;
		}
	}
	if (nr == 0)
		return 0;
	qsort(r, nr, sizeof(*r), cmp_choice);
	*out = xcalloc(nr, sizeof(**out));
	for (i = 0; i < nr; i++)
		(*out)[i] = r[i].c;
	free(r);
	return nr;
}

void
link_choices_free(struct link_choice *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(c[i].end);
	free(c);
}
