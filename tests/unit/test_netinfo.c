/*
 * ip -j addr and the link speeds as iproute2 prints them (recorded on
 * Debian 12, and two DGX Sparks in iproute2 6.1's shape), and the choice
 * of the fast link: the subnet all nodes share, fastest first, never the
 * loopback or docker0, the management network only when nothing is
 * faster.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "netinfo.h"
#include "util.h"
#include "slurp.h"

#define DATA "tests/unit/data/"

static void
load(const char *file, const char *speeds, struct net_ifaces *ifs)
{
	char *t = slurp(file), err[ERRLEN];

	assert_int_equal(net_parse_ip_addr(t, strlen(t), ifs, err,
	    sizeof(err)), 0);
	free(t);
	if (speeds) {
		t = slurp(speeds);
		net_parse_speeds(t, ifs);
		free(t);
	}
}

static void
test_parse_recorded(void **state)
{
	struct net_ifaces ifs;
	const struct net_iface *f;

	(void)state;
	load(DATA "net-debian-12/ip-addr.out", DATA "net-debian-12/speeds.out",
	    &ifs);
	assert_int_equal(ifs.n, 4);
	f = net_iface_find(&ifs, "lo");
	assert_non_null(f);
	assert_true(f->loopback);
	assert_int_equal(f->speed, -1);
	f = net_iface_find(&ifs, "enp1s0f0np0");
	assert_non_null(f);
	assert_true(net_iface_up(f));
	assert_int_equal(f->mtu, 1500);
	assert_int_equal(f->speed, 10000);
	assert_string_equal(f->operstate, "UP");
	/* IPv4 only: the link-local IPv6 address is not kept */
	assert_int_equal(f->naddrs, 1);
	assert_string_equal(f->addrs[0].ip, "10.10.10.1");
	assert_int_equal(f->addrs[0].prefix, 24);
	assert_true(net_iface_has(f, "10.10.10.1"));
	assert_false(net_iface_has(f, "10.10.10.2"));
	f = net_iface_find(&ifs, "docker0");
	assert_non_null(f);
	assert_int_equal(f->speed, -1);	/* a bridge without ports: -1 */
	/* a bridge made a moment ago, no port yet: UNKNOWN, yet LOWER_UP */
	assert_string_equal(f->operstate, "UNKNOWN");
	assert_null(net_iface_find(&ifs, "eth0"));
	net_ifaces_free(&ifs);
}

static void
test_parse_states(void **state)
{
	struct net_ifaces ifs;
	char *t, err[ERRLEN];

	(void)state;
	/* set down: no UP; the peer down: UP but NO-CARRIER */
	t = slurp(DATA "net-debian-12/state-admin-down.out");
	assert_int_equal(net_parse_ip_addr(t, strlen(t), &ifs, err,
	    sizeof(err)), 0);
	assert_false(ifs.v[0].admin_up);
	assert_false(net_iface_up(&ifs.v[0]));
	net_ifaces_free(&ifs);
	free(t);
	t = slurp(DATA "net-debian-12/state-no-carrier.out");
	assert_int_equal(net_parse_ip_addr(t, strlen(t), &ifs, err,
	    sizeof(err)), 0);
	assert_true(ifs.v[0].admin_up);
	assert_false(ifs.v[0].carrier);
	net_ifaces_free(&ifs);
	free(t);
	/* not ip's JSON */
	assert_int_equal(net_parse_ip_addr("Device \"x\" does not exist.\n",
	    28, &ifs, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not ip -j addr output"));
	assert_int_equal(net_parse_ip_addr("{\"a\":1}", 7, &ifs, err,
	    sizeof(err)), -1);
	assert_int_equal(net_parse_ip_addr("[{\"ifname\":7},{\"mtu\":1}]", 24,
	    &ifs, err, sizeof(err)), 0);
	assert_int_equal(ifs.n, 0);
	net_ifaces_free(&ifs);
	/* issue 43: an IPv4 prefix beyond 32 (or below 0) is no subnet */
	{
		static const char j[] = "[{\"ifname\":\"e\",\"addr_info\":["
		    "{\"family\":\"inet\",\"local\":\"10.0.0.1\","
		    "\"prefixlen\":33},{\"family\":\"inet\",\"local\":"
		    "\"10.0.0.2\",\"prefixlen\":-1},{\"family\":\"inet\","
		    "\"local\":\"10.0.0.3\",\"prefixlen\":32}]}]";

		assert_int_equal(net_parse_ip_addr(j, strlen(j), &ifs, err,
		    sizeof(err)), 0);
		assert_int_equal(ifs.n, 1);
		assert_int_equal(ifs.v[0].naddrs, 1);
		assert_string_equal(ifs.v[0].addrs[0].ip, "10.0.0.3");
		net_ifaces_free(&ifs);
	}
}

static void
test_speed_values(void **state)
{
	(void)state;
	assert_int_equal(net_speed_value("200000\n"), 200000);
	assert_int_equal(net_speed_value("-1"), -1);
	assert_int_equal(net_speed_value("-"), -1);
	assert_int_equal(net_speed_value(""), -1);
	assert_int_equal(net_speed_value("4294967295"), -1);
	assert_int_equal(net_speed_value("10000x"), -1);
}

static void
test_subnets(void **state)
{
	char buf[24];

	(void)state;
	assert_true(net_same_subnet("10.10.10.1", "10.10.10.2", 24));
	assert_false(net_same_subnet("10.10.10.1", "10.10.11.2", 24));
	assert_true(net_same_subnet("169.254.3.1", "169.254.200.9", 16));
	assert_false(net_same_subnet("10.10.10.1", "nonsense", 24));
	assert_int_equal(net_subnet("10.10.10.7", 24, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "10.10.10.0/24");
	assert_int_equal(net_subnet("x", 24, buf, sizeof(buf)), -1);
	net_speed_label(200000, buf, sizeof(buf));
	assert_string_equal(buf, "200 Gb/s");
	net_speed_label(2500, buf, sizeof(buf));
	assert_string_equal(buf, "2.5 Gb/s");
	net_speed_label(-1, buf, sizeof(buf));
	assert_string_equal(buf, "speed unknown");
}

/* The DGX Spark guide's two nodes: the QSFP link, not the 10 GbE LAN. */
static void
test_choice_dgx_spark(void **state)
{
	struct net_ifaces h, w;
	struct link_node nodes[2];
	struct link_choice *c;
	size_t n, i;

	(void)state;
	load(DATA "net-dgx-spark/ip-addr-head.out",
	    DATA "net-dgx-spark/speeds-head.out", &h);
	load(DATA "net-dgx-spark/ip-addr-worker.out",
	    DATA "net-dgx-spark/speeds-worker.out", &w);
	nodes[0] = (struct link_node){ "spark-head", &h, "192.168.110.32" };
	nodes[1] = (struct link_node){ "spark-worker", &w, "192.168.110.97" };
	n = link_choices(nodes, 2, &c);
	/* the QSFP subnet, then the management LAN; docker0 never */
	assert_int_equal(n, 2);
	assert_string_equal(c[0].subnet, "10.10.10.0/24");
	assert_string_equal(c[0].end[0].ifname, "enp1s0f0np0");
	assert_string_equal(c[0].end[0].ip, "10.10.10.1");
	assert_string_equal(c[0].end[1].ip, "10.10.10.2");
	assert_int_equal(c[0].speed, 200000);
	assert_int_equal(c[0].mtu, 9000);
	assert_true(c[0].mtu_agree && c[0].all_up);
	assert_false(c[0].ssh);
	assert_string_equal(c[1].subnet, "192.168.110.0/24");
	assert_true(c[1].ssh);
	assert_int_equal(c[1].speed, 10000);
	for (i = 0; i < n; i++)
		assert_null(strstr(c[i].subnet, "172.17."));
	link_choices_free(c, n);
	net_ifaces_free(&h);
	net_ifaces_free(&w);
}

/* Hand-made nodes: one interface each, name, address/prefix, speed, up. */
static void
mk(struct net_ifaces *ifs, const char *name, const char *ip, int prefix,
    long speed, int up, int mtu)
{
	struct net_iface *f;

	ifs->v = xrealloc(ifs->v, (ifs->n + 1) * sizeof(*ifs->v));
	f = &ifs->v[ifs->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->admin_up = 1;
	f->carrier = up;
	f->mtu = mtu;
	f->speed = speed;
	f->addrs = xcalloc(1, sizeof(*f->addrs));
	snprintf(f->addrs[0].ip, sizeof(f->addrs[0].ip), "%s", ip);
	f->addrs[0].prefix = prefix;
	f->naddrs = 1;
}

static void
test_choice_rules(void **state)
{
	struct net_ifaces a = { NULL, 0 }, b = { NULL, 0 }, c3 = { NULL, 0 };
	struct link_node nodes[3];
	struct link_choice *c;
	size_t n;

	(void)state;
	/* equal speeds (the bed's veths): the subnet SSH does not use wins */
	mk(&a, "eth0", "10.77.7.1", 24, 10000, 1, 1500);
	mk(&a, "fast0", "10.10.17.1", 24, 10000, 1, 1500);
	mk(&b, "eth0", "10.77.7.2", 24, 10000, 1, 1500);
	mk(&b, "fast0", "10.10.17.2", 24, 10000, 1, 1500);
	nodes[0] = (struct link_node){ "a", &a, "10.77.7.1" };
	nodes[1] = (struct link_node){ "b", &b, "10.77.7.2" };
	n = link_choices(nodes, 2, &c);
	assert_int_equal(n, 2);
	assert_string_equal(c[0].end[0].ifname, "fast0");
	link_choices_free(c, n);
	/* a third node without the fast subnet: only the management one */
	mk(&c3, "eth0", "10.77.7.3", 24, 10000, 1, 1500);
	mk(&c3, "fast0", "10.10.99.3", 24, 10000, 1, 1500);
	nodes[2] = (struct link_node){ "c", &c3, NULL };
	n = link_choices(nodes, 3, &c);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].subnet, "10.77.7.0/24");
	link_choices_free(c, n);
	/* a link that is down ranks after one that is up, however fast */
	net_ifaces_free(&b);
	mk(&b, "eth0", "10.77.7.2", 24, 1000, 1, 1500);
	mk(&b, "fast0", "10.10.17.2", 24, 200000, 0, 9000);
	a.v[1].speed = 200000;
	n = link_choices(nodes, 2, &c);
	assert_int_equal(n, 2);
	assert_string_equal(c[0].end[0].ifname, "eth0");
	assert_false(c[1].all_up);
	assert_false(c[1].mtu_agree);
	link_choices_free(c, n);
	/* the same address on both: no link (docker0) */
	net_ifaces_free(&a);
	net_ifaces_free(&b);
	mk(&a, "docker0", "172.17.0.1", 16, -1, 1, 1500);
	mk(&b, "docker0", "172.17.0.1", 16, -1, 1, 1500);
	assert_int_equal(link_choices(nodes, 2, &c), 0);
	assert_null(c);
	net_ifaces_free(&a);
	net_ifaces_free(&b);
	net_ifaces_free(&c3);
}

/* Two interfaces of a node on one subnet (DGX Spark's twins on
 * link-local addresses): the faster one that is up, then the head's name. */
static void
test_choice_twins(void **state)
{
	struct net_ifaces a = { NULL, 0 }, b = { NULL, 0 };
	struct link_node nodes[2];
	struct link_choice *c;
	size_t n;

	(void)state;
	mk(&a, "enp1s0f0np0", "169.254.10.1", 16, 100000, 1, 1500);
	mk(&b, "enP2p1s0f0np0", "169.254.20.7", 16, 100000, 1, 1500);
	mk(&b, "enp1s0f0np0", "169.254.20.2", 16, 100000, 1, 1500);
	nodes[0] = (struct link_node){ "a", &a, NULL };
	nodes[1] = (struct link_node){ "b", &b, NULL };
	n = link_choices(nodes, 2, &c);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].end[1].ifname, "enp1s0f0np0");
	assert_string_equal(c[0].end[1].ip, "169.254.20.2");
	link_choices_free(c, n);
	net_ifaces_free(&a);
	net_ifaces_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_recorded),
		cmocka_unit_test(test_parse_states),
		cmocka_unit_test(test_speed_values),
		cmocka_unit_test(test_subnets),
		cmocka_unit_test(test_choice_dgx_spark),
		cmocka_unit_test(test_choice_rules),
		cmocka_unit_test(test_choice_twins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
