/*
 * The link check's verdicts on what ip and ping printed on Debian 12
 * (tests/unit/data/net-debian-12, record-net): each node's interface, the
 * MTUs, every pair; each failure a named diagnosis naming the nodes, with
 * the fix; an answer not understood never a terminal one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "linkcheck.h"
#include "util.h"
#include "slurp.h"

#define DATA "tests/unit/data/net-debian-12/"
#define IF "enp1s0f0np0"

struct rec {
	char	*out;
	char	*err;
	int	 rc;
};

static void
load(const char *name, struct rec *r)
{
	char path[256], *rc;

	snprintf(path, sizeof(path), DATA "%s.out", name);
	r->out = slurp(path);
	snprintf(path, sizeof(path), DATA "%s.err", name);
	r->err = slurp(path);
	snprintf(path, sizeof(path), DATA "%s.rc", name);
	rc = slurp(path);
	r->rc = atoi(rc);
	free(rc);
}

static void
state_of(const char *name, const char *ip, struct link_state *st)
{
	struct rec r;

	load(name, &r);
	linkcheck_state(r.rc, r.out, r.err, IF, ip, st);
	free(r.out);
	free(r.err);
}

static void
ping_of(const char *name, struct ping_res *p)
{
	struct rec r;

	load(name, &r);
	linkcheck_ping(r.rc, r.out, r.err, p);
	free(r.out);
	free(r.err);
}

static void
test_states(void **state)
{
	struct link_state st;
	char buf[240];

	(void)state;
	state_of("state-up", "10.10.10.1", &st);
	assert_int_equal(st.v, LS_OK);
	assert_int_equal(st.mtu, 1500);
	assert_int_equal(st.speed, 10000);
	linkcheck_node_detail(&st, IF, buf, sizeof(buf));
	assert_string_equal(buf, IF " up, 10 Gb/s, MTU 1500");
	state_of("state-mtu9000", "10.10.10.2", &st);
	assert_int_equal(st.v, LS_OK);
	assert_int_equal(st.mtu, 9000);
	state_of("state-missing", "10.10.10.1", &st);
	assert_int_equal(st.v, LS_MISSING);
	assert_non_null(strstr(st.detail, "Device \"enp1s0f1np1\" does not "
	    "exist."));
	state_of("state-admin-down", "10.10.10.1", &st);
	assert_int_equal(st.v, LS_ADMIN_DOWN);
	assert_int_equal(st.speed, -1);
	state_of("state-no-carrier", "10.10.10.1", &st);
	assert_int_equal(st.v, LS_NO_CARRIER);
	assert_non_null(strstr(st.detail, "NO-CARRIER"));
	state_of("state-no-addr", "10.10.10.1", &st);
	assert_int_equal(st.v, LS_NO_ADDR);
	assert_non_null(strstr(st.detail, "does not carry 10.10.10.1 (it has "
	    "no IPv4 address)"));
	/* the right interface, the wrong ip */
	state_of("state-up", "10.10.10.9", &st);
	assert_int_equal(st.v, LS_NO_ADDR);
	assert_non_null(strstr(st.detail, "it has 10.10.10.1/24"));
	/* what ip never prints: could not tell, with the words */
	linkcheck_state(0, "garbage\n", "", IF, "10.10.10.1", &st);
	assert_int_equal(st.v, LS_UNKNOWN);
	assert_non_null(strstr(st.detail, "could not tell"));
	linkcheck_state(255, "", "ssh: the channel closed\n", IF,
	    "10.10.10.1", &st);
	assert_int_equal(st.v, LS_UNKNOWN);
	assert_non_null(strstr(st.detail, "the channel closed"));
	linkcheck_state(0, "[]\n", "", IF, "10.10.10.1", &st);
	assert_int_equal(st.v, LS_UNKNOWN);
}

static void
test_pings(void **state)
{
	struct ping_res p;

	(void)state;
	ping_of("ping-ok", &p);
	assert_int_equal(p.v, PING_OK);
	assert_string_equal(p.words, "1 packets transmitted, 1 received, 0% "
	    "packet loss, time 0ms");
	ping_of("ping-big-ok", &p);
	assert_int_equal(p.v, PING_OK);
	ping_of("ping-lost", &p);
	assert_int_equal(p.v, PING_LOST);
	ping_of("ping-no-carrier", &p);
	assert_int_equal(p.v, PING_LOST);
	ping_of("ping-big-local-mtu", &p);
	assert_int_equal(p.v, PING_TOO_BIG);
	assert_int_equal(p.mtu, 1500);
	assert_string_equal(p.words, "ping: local error: message too long, "
	    "mtu=1500");
	/* from the 9000 end to the 1500 end: lost on the way */
	ping_of("ping-big-lost", &p);
	assert_int_equal(p.v, PING_LOST);
	ping_of("ping-admin-down", &p);
	assert_int_equal(p.v, PING_NO_ROUTE);
	ping_of("ping-no-device", &p);
	assert_int_equal(p.v, PING_NO_DEVICE);
	assert_string_equal(p.words, "ping: SO_BINDTODEVICE enp1s0f1np1: No "
	    "such device");
	linkcheck_ping(127, "", "sh: 1: ping: not found\n", &p);
	assert_int_equal(p.v, PING_MISSING);
	linkcheck_ping(2, "", "ping: something new\n", &p);
	assert_int_equal(p.v, PING_UNKNOWN);
	assert_string_equal(p.words, "ping: something new");
	linkcheck_ping(1, "", "", &p);
	assert_int_equal(p.v, PING_UNKNOWN);
	/* an ICMP error from a router on the way (iputils pr_icmph) */
	linkcheck_ping(1, "From 10.10.10.254 icmp_seq=1 Frag needed and DF set "
	    "(mtu = 1500)\n\n--- 10.10.10.2 ping statistics ---\n1 packets "
	    "transmitted, 0 received, +1 errors, 100% packet loss, time 0ms\n",
	    "", &p);
	assert_int_equal(p.v, PING_TOO_BIG);
	assert_int_equal(p.mtu, 1500);
	assert_int_equal(linkcheck_ping_size(9000), 8972);
	assert_int_equal(linkcheck_ping_size(1500), 1472);
	assert_int_equal(linkcheck_ping_size(0), 56);
	/* lo's 65536: no IPv4 packet is larger than 65535 */
	assert_int_equal(linkcheck_ping_size(65536), 65507);
}

static const char *const names[3] = { "node1", "node2", "node3" };
static const char *const ifnames[3] = { IF, IF, IF };
static const char *const ips[3] = { "10.10.10.1", "10.10.10.2",
	"10.10.10.3" };

/* Three nodes all fine, then one thing broken at a time. */
struct bed {
	struct link_state	st[3];
	struct ping_res		big[9], small[9];
	struct linkcheck_in	in;
};

static void
bed_ok(struct bed *b)
{
	size_t i;

	memset(b, 0, sizeof(*b));
	for (i = 0; i < 3; i++)
		state_of("state-up", ips[i], &b->st[i]);
	/* state-up is node1's: the others carry their own address */
	for (i = 1; i < 3; i++) {
		b->st[i].v = LS_OK;
		b->st[i].mtu = 1500;
	}
	for (i = 0; i < 9; i++) {
		ping_of("ping-big-ok", &b->big[i]);
		b->small[i].v = PING_NOT_ASKED;
	}
	b->in = (struct linkcheck_in){ 3, names, ifnames, ips, b->st, b->big,
	    b->small };
}

static void
test_judge(void **state)
{
	struct bed b;
	struct link_finding f;

	(void)state;
	bed_ok(&b);
	assert_int_equal(linkcheck_judge(&b.in, &f), 0);

	/* node2's end down: link-down naming node2, with the fix */
	bed_ok(&b);
	state_of("state-no-carrier", ips[1], &b.st[1]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_LINK_DOWN);
	assert_false(f.could_not_tell);
	assert_int_equal(f.a, 1);
	assert_non_null(strstr(f.message, "node2: " IF " has no carrier"));
	assert_non_null(strstr(f.fix, "check the cable of node2's " IF));
	bed_ok(&b);
	state_of("state-admin-down", ips[2], &b.st[2]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_LINK_DOWN);
	assert_string_equal(f.fix, "on node3: ip link set " IF " up, and find "
	    "what set it down (its netplan or NetworkManager config)");

	/* no such interface, no address: interface-wrong */
	bed_ok(&b);
	state_of("state-missing", ips[1], &b.st[1]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_INTERFACE_WRONG);
	bed_ok(&b);
	state_of("state-no-addr", ips[0], &b.st[0]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_INTERFACE_WRONG);

	/* MTU 9000 on node2 only: mtu-mismatch naming both ends */
	bed_ok(&b);
	state_of("state-mtu9000", ips[1], &b.st[1]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_MTU_MISMATCH);
	assert_int_equal(f.a, 1);
	assert_int_equal(f.b, 0);
	assert_non_null(strstr(f.message, "node2 " IF " 9000, node1 " IF
	    " 1500"));
	assert_non_null(strstr(f.fix, "on node1 ip link set " IF " mtu 9000"));

	/* node3 does not answer node1: link-unreachable, the pair named */
	bed_ok(&b);
	ping_of("ping-lost", &b.big[0 * 3 + 2]);
	ping_of("ping-lost", &b.small[0 * 3 + 2]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_LINK_UNREACHABLE);
	assert_int_equal(f.a, 0);
	assert_int_equal(f.b, 2);
	assert_string_equal(f.message, "node1 cannot reach node3 (10.10.10.3) "
	    "over " IF ": 1 packets transmitted, 0 received, 100% packet "
	    "loss, time 0ms");
	assert_non_null(strstr(f.fix, "ping -I " IF " 10.10.10.3"));
	/* the small one not asked: still unreachable */
	b.small[2].v = PING_NOT_ASKED;
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_LINK_UNREACHABLE);

	/* small packets pass, full ones with DF do not: the path's MTU */
	bed_ok(&b);
	ping_of("ping-big-lost", &b.big[1 * 3 + 0]);
	ping_of("ping-ok", &b.small[1 * 3 + 0]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_MTU_MISMATCH);
	assert_non_null(strstr(f.message, "node2 reaches node1 (10.10.10.1) "
	    "over " IF " with small packets but not with 1472 bytes"));
	/* refused on the sender itself */
	bed_ok(&b);
	ping_of("ping-big-local-mtu", &b.big[1]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_MTU_MISMATCH);

	/* not understood, not asked, no ping: could not tell */
	bed_ok(&b);
	linkcheck_ping(2, "", "ping: something new\n", &b.big[5]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_true(f.could_not_tell);
	assert_non_null(strstr(f.message, "could not tell whether node2 "
	    "reaches node3"));
	assert_non_null(strstr(f.message, "ping: something new"));
	bed_ok(&b);
	b.big[3].v = PING_NOT_ASKED;
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_true(f.could_not_tell);
	/* no ping on node1: its pairs not checked, as without nvidia-smi */
	bed_ok(&b);
	linkcheck_ping(127, "", "sh: 1: ping: not found\n", &b.big[1]);
	assert_int_equal(b.big[1].v, PING_MISSING);
	assert_int_equal(linkcheck_judge(&b.in, &f), 0);
	bed_ok(&b);
	linkcheck_state(0, "x", "", IF, ips[0], &b.st[0]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_true(f.could_not_tell);

	/* without small pings at all */
	bed_ok(&b);
	b.in.small = NULL;
	ping_of("ping-lost", &b.big[7]);
	assert_int_equal(linkcheck_judge(&b.in, &f), 1);
	assert_int_equal(f.code, DIAG_LINK_UNREACHABLE);
	assert_int_equal(f.a, 2);
	assert_int_equal(f.b, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_pings),
		cmocka_unit_test(test_judge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
