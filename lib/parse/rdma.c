/*
 * cmd_rdma_state's answer (rdma.h). Its lines, tab-separated:
 *   port DEV N STATE LINK_LAYER      ports/N/state, ports/N/link_layer
 *   gid DEV N K GID TYPE NDEV        ports/N/gids/K, gid_attrs/types/K,
 *                                    gid_attrs/ndevs/K
 *   none                             no /sys/class/infiniband
 * The texts are the kernel's (tests/unit/data/README.md, "RDMA"): a
 * port's state "4: ACTIVE" (ib_port_state, drivers/infiniband/core/
 * sysfs.c), a type "RoCE v2" or "IB/RoCE v1" (ib_cache_gid_type_str).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rdma.h"
#include "utf8.h"

#define FIELDS_MAX	8

int
rdma_ipv4_gid(const char *ip, char *gid, size_t len)
{
	unsigned a, b, c, d;
	char end;

	if (ip == NULL || sscanf(ip, "%3u.%3u.%3u.%3u%c", &a, &b, &c, &d,
	    &end) != 4 || a > 255 || b > 255 || c > 255 || d > 255)
		return -1;
	if (snprintf(gid, len, "0000:0000:0000:0000:0000:ffff:%02x%02x:"
	    "%02x%02x", a, b, c, d) >= (int)len)
		return -1;
	return 0;
}

/* Splits line (changed in place) at tabs; returns the field count. */
static int
split(char *line, char **f)
{
	int n = 0;
	char *p = line;

	while (n < FIELDS_MAX) {
		f[n++] = p;
		if ((p = strchr(p, '\t')) == NULL)
			break;
		*p++ = '\0';
	}
	return n;
}

static int
active(const char *state)
{
	/* "4: ACTIVE"; the number alone would do, the word is for people */
	return strstr(state, "ACTIVE") != NULL &&
	    strstr(state, "ACTIVE_DEFER") == NULL;
}

struct port_seen {
	char	dev[RDMA_DEV_MAX];
	int	port;
	char	state[32];
	char	layer[32];
	int	gid;		/* the RoCE v2 index for the ip; -1 none */
};

#define PORTS_MAX	16

static struct port_seen *
port_of(struct port_seen *ps, size_t n, const char *dev, int port)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ps[i].port == port && strcmp(ps[i].dev, dev) == 0)
			return &ps[i];
	return NULL;
}

static void
unknown(struct rdma_state *st, const char *said)
{
	st->v = RDMA_UNKNOWN;
	utf8_copy(st->said, sizeof(st->said), said);
}

static int	infiniband(const struct port_seen *);

/*
 * On InfiniBand the GID is the port's GUID, not an address: NCCL's own
 * index (0) is right, and only the HCA is passed.
 */
static void
take(struct rdma_state *st, enum rdma_verdict v, const struct port_seen *p)
{
	st->v = v;
	utf8_copy(st->dev, sizeof(st->dev), p->dev);
	st->port = p->port;
	utf8_copy(st->state, sizeof(st->state), p->state);
	utf8_copy(st->link_layer, sizeof(st->link_layer), p->layer);
	st->gid_index = v == RDMA_OK && !infiniband(p) ? p->gid : -1;
}

static int
infiniband(const struct port_seen *p)
{
	return strcasecmp(p->layer, "InfiniBand") == 0;
}

void
rdma_parse(int rc, const char *out, const char *ip, const char *ifname,
    struct rdma_state *st)
{
	struct port_seen ps[PORTS_MAX], *p;
	char want[64], *text, *line, *save = NULL, *f[FIELDS_MAX];
	size_t n = 0, i;
	int nf, k, port;

	memset(st, 0, sizeof(*st));
	st->gid_index = -1;
	if (rc != 0) {
		unknown(st, out && out[0] ? out : "the command failed");
		return;
	}
	if (rdma_ipv4_gid(ip, want, sizeof(want)) == -1)
		want[0] = '\0';
	text = strdup(out ? out : "");
	if (text == NULL) {
		unknown(st, "out of memory");
		return;
	}
	for (line = strtok_r(text, "\n", &save); line;
	    line = strtok_r(NULL, "\n", &save)) {
		char raw[sizeof(st->said)];

		utf8_copy(raw, sizeof(raw), line);
		nf = split(line, f);
		if (nf == 1 && strcmp(f[0], "none") == 0) {
			;	/* no tree: as no device on ifname, below */
		} else if (nf == 5 && strcmp(f[0], "port") == 0) {
			port = atoi(f[2]);
			if (n == PORTS_MAX || port_of(ps, n, f[1], port))
				continue;
			p = &ps[n++];
			utf8_copy(p->dev, sizeof(p->dev), f[1]);
			p->port = port;
			utf8_copy(p->state, sizeof(p->state), f[3]);
			utf8_copy(p->layer, sizeof(p->layer), f[4]);
			p->gid = -1;
		} else if (nf == 7 && strcmp(f[0], "gid") == 0) {
			p = port_of(ps, n, f[1], atoi(f[2]));
			k = atoi(f[3]);
			/* the lowest index wins: show_gids lists them so */
			if (p && want[0] && strcasecmp(f[4], want) == 0 &&
			    strcmp(f[5], "RoCE v2") == 0 && (f[6][0] == '\0' ||
			    strcmp(f[6], ifname) == 0) &&
			    (p->gid == -1 || k < p->gid))
				p->gid = k;
		} else {
			unknown(st, raw);
			free(text);
			return;
		}
	}
	free(text);
	if (n == 0) {
		st->v = RDMA_NONE;
		return;
	}
	/*
	 * An ACTIVE port that carries the address. InfiniBand needs no GID;
	 * an IPv6 fast link is not looked up (NCCL's own choice stays).
	 */
	for (i = 0; i < n; i++)
		if (active(ps[i].state) && (ps[i].gid >= 0 ||
		    infiniband(&ps[i]) || want[0] == '\0')) {
			take(st, RDMA_OK, &ps[i]);
			return;
		}
	for (i = 0; i < n; i++)
		if (active(ps[i].state)) {
			take(st, RDMA_GID_MISSING, &ps[i]);
			return;
		}
	take(st, RDMA_PORT_DOWN, &ps[0]);
}

void
rdma_describe(const struct rdma_state *st, const char *ifname, const char *ip,
    char *buf, size_t len)
{
	switch (st->v) {
	case RDMA_NONE:
		utf8_fmt(buf, len, "no RDMA device on %s", ifname);
		return;
	case RDMA_UNKNOWN:
		utf8_fmt(buf, len, "RDMA on %s: could not read \"%s\"", ifname,
		    st->said);
		return;
	case RDMA_OK:
		if (st->gid_index >= 0)
			utf8_fmt(buf, len, "%s port %d GID index %d (RoCE v2, "
			    "%s)", st->dev, st->port, st->gid_index,
			    st->link_layer);
		else
			utf8_fmt(buf, len, "%s port %d (%s)", st->dev, st->port,
			    st->link_layer);
		return;
	case RDMA_PORT_DOWN:
		utf8_fmt(buf, len, "%s port %d of %s is \"%s\", not ACTIVE",
		    st->dev, st->port, ifname, st->state);
		return;
	case RDMA_GID_MISSING:
		utf8_fmt(buf, len, "%s port %d of %s has no RoCE v2 GID for %s",
		    st->dev, st->port, ifname, ip);
		return;
	}
	utf8_copy(buf, len, "?");
}
