/*
 * What the API refuses before it acts (lib/api/apiguard.c): a POST whose Host
 * is a DNS name (DNS rebinding) or whose Origin is another site, and a
 * /events?since= that is not a sequence number (issue 36, item 2: -1 was
 * read as 2^64 - 1, and since + 1 wrapped to 0).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apiguard.h"

static void
post_ok(const char *host, const char *origin)
{
	char err[ERRLEN] = "";

	if (apiguard_post_ok(host, origin, err, sizeof(err)) != 0)
		fail_msg("Host %s Origin %s refused: %s", host ? host : "-",
		    origin ? origin : "-", err);
}

static void
post_refused(const char *host, const char *origin, const char *needle)
{
	char err[ERRLEN] = "";

	if (apiguard_post_ok(host, origin, err, sizeof(err)) != -1)
		fail_msg("Host %s Origin %s accepted", host ? host : "-",
		    origin ? origin : "-");
	if (strstr(err, needle) == NULL)
		fail_msg("message %s: no \"%s\"", err, needle);
}

/* What legitimate clients send: curl, tandemctl, the page, tunnels. */
static void
test_hosts_accepted(void **state)
{
	(void)state;
	post_ok(NULL, NULL);			/* HTTP/1.0 without Host */
	post_ok("127.0.0.1:9100", NULL);	/* curl 127.0.0.1:9100 */
	post_ok("localhost:9100", NULL);	/* curl localhost:9100 */
	post_ok("LocalHost:9100", NULL);
	post_ok("localhost.:9100", NULL);
	post_ok("localhost", NULL);
	post_ok("127.0.0.1", NULL);
	post_ok("[::1]:9100", NULL);
	post_ok("[::1]", NULL);
	post_ok("10.77.0.254:9100", NULL);	/* a listen on another address */
	post_ok("192.168.110.32:8080", NULL);	/* a proxy's or tunnel's port */
	post_ok("localhost:18080", NULL);	/* ssh -L 18080:127.0.0.1:9100 */
	post_ok("tandem.localhost:9100", NULL);	/* RFC 6761 6.3 */
	post_ok("127.0.0.1:", NULL);		/* RFC 3986: empty port */
}

static void
test_hosts_refused(void **state)
{
	(void)state;
	/* DNS rebinding: a name the attacker's DNS points at 127.0.0.1 */
	post_refused("rebind.example:9100", NULL, "rebind.example:9100");
	post_refused("rebind.example", NULL, "DNS rebinding");
	post_refused("127.0.0.1.nip.io:9100", NULL, "Host");
	post_refused("localhost.example:9100", NULL, "Host");
	post_refused("notlocalhost:9100", NULL, "Host");
	post_refused("xlocalhost:9100", NULL, "Host");
	post_refused("head-node:9100", NULL, "Host");
	post_refused("", NULL, "Host");
	post_refused(":9100", NULL, "Host");
	post_refused("127.1:9100", NULL, "Host");	/* not canonical */
	post_refused("127.0.0.1:9100x", NULL, "Host");
	post_refused("127.0.0.1:123456", NULL, "Host");
	post_refused("[::1", NULL, "Host");
	post_refused("[::1]x", NULL, "Host");
	post_refused("[evil.example]:9100", NULL, "Host");
	post_refused("[fe80::1%25eth0]:9100", NULL, "Host");
	post_refused("127.0.0.1@evil.example", NULL, "Host");
}

static void
test_origin(void **state)
{
	(void)state;
	/* the page posting to the API it came from, directly or tunnelled */
	post_ok("127.0.0.1:9100", "http://127.0.0.1:9100");
	post_ok("localhost:18080", "http://localhost:18080");
	post_ok("LOCALHOST:18080", "http://localhost:18080");
	post_ok("[::1]:9100", "http://[::1]:9100");
	post_ok("127.0.0.1", "http://127.0.0.1:80");
	post_ok("127.0.0.1:80", "http://127.0.0.1");
	post_ok("127.0.0.1:443", "https://127.0.0.1");	/* a TLS proxy */
	/* another site's page, or none */
	post_refused("127.0.0.1:9100", "http://evil.example", "Origin "
	    "http://evil.example is not this API");
	post_refused("127.0.0.1:9100", "null", "Origin null");
	post_refused("127.0.0.1:9100", "http://127.0.0.1:9101", "Origin");
	post_refused("127.0.0.1:9100", "http://localhost:9100", "Origin");
	post_refused("127.0.0.1:9100", "http://127.0.0.1:9100/", "Origin");
	post_refused("127.0.0.1:9100", "http://127.0.0.1:91000", "Origin");
	post_refused("127.0.0.1:9100", "http://127.0.0.1", "Origin");
	post_refused("127.0.0.1:9100", "ftp://127.0.0.1:9100", "Origin");
	post_refused("127.0.0.1:9100", "", "Origin");
	post_refused("127.0.0.1:9100", "http://", "Origin");
	post_refused(NULL, "http://127.0.0.1:9100", "Origin");
	/* the Host rule comes first */
	post_refused("rebind.example:9100", "http://rebind.example:9100",
	    "DNS rebinding");
}

static void
host_ok(const char *host, const char *listen)
{
	char err[ERRLEN] = "";

	if (apiguard_host_ok(host, listen, err, sizeof(err)) != 0)
		fail_msg("Host %s (listen %s) refused: %s", host ? host : "-",
		    listen, err);
}

static void
host_refused(const char *host, const char *listen)
{
	char err[ERRLEN] = "";

	if (apiguard_host_ok(host, listen, err, sizeof(err)) != -1)
		fail_msg("Host %s (listen %s) accepted", host, listen);
	if (strstr(err, "DNS rebinding") == NULL || strstr(err, host) == NULL)
		fail_msg("message %s: no \"DNS rebinding\" or Host", err);
}

/*
 * Issue 43, item 4: every route (GET /status, /events, /metrics, / too),
 * not only POST, answers only a Host that names this API.
 */
static void
test_every_route_host(void **state)
{
	(void)state;
	host_ok(NULL, "127.0.0.1");		/* HTTP/1.0 */
	host_ok("127.0.0.1:9100", "127.0.0.1");
	host_ok("127.0.0.2:9100", "127.0.0.1");	/* all of 127/8 */
	host_ok("localhost:9100", "127.0.0.1");
	host_ok("localhost", "127.0.0.1");	/* tandemctl's socket, curl */
	host_ok("tandem.localhost:9100", "127.0.0.1");
	host_ok("[::1]:9100", "127.0.0.1");
	host_ok("localhost:18080", "127.0.0.1");	/* ssh -L */
	host_ok("10.77.0.254:9100", "10.77.0.254");	/* the listen address */
	host_ok("[fd00::5]:9100", "fd00::5");
	host_ok("[FD00:0::5]:9100", "fd00::5");	/* the same address */
	host_ok("10.77.0.254:9100", "0.0.0.0");	/* any, on a wildcard */
	host_ok("192.168.1.9:9100", "::");
	/* DNS rebinding: a name, wherever it points */
	host_refused("evil.example", "127.0.0.1");
	host_refused("evil.example:9100", "127.0.0.1");
	host_refused("evil.example:9100", "0.0.0.0");
	host_refused("127.0.0.1.nip.io:9100", "127.0.0.1");
	host_refused("head-node:9100", "10.77.0.254");
	host_refused("localhost.example:9100", "127.0.0.1");
	host_refused("", "127.0.0.1");
	host_refused("127.1:9100", "127.0.0.1");
	/* an address that is neither loopback nor the listen address */
	host_refused("10.77.0.253:9100", "10.77.0.254");
	host_refused("192.168.110.32:8080", "127.0.0.1");
	host_refused("[fd00::6]:9100", "fd00::5");
	host_refused("0.0.0.0:9100", "127.0.0.1");
}

static void
since_ok(const char *s, uint64_t want)
{
	char err[ERRLEN] = "";
	uint64_t v = 12345;

	if (apiguard_since(s, &v, err, sizeof(err)) != 0)
		fail_msg("since=%s refused: %s", s, err);
	assert_int_equal(v, want);
}

static void
since_refused(const char *s)
{
	char err[ERRLEN] = "";
	uint64_t v = 12345;

	if (apiguard_since(s, &v, err, sizeof(err)) != -1)
		fail_msg("since=%s accepted as %llu", s, (unsigned long long)v);
	assert_int_equal(v, 12345);
	assert_non_null(strstr(err, "since must be an event sequence number"));
}

static void
test_since(void **state)
{
	(void)state;
	since_ok("0", 0);
	since_ok("5", 5);
	since_ok("0005", 5);
	since_ok("19999999", 19999999);
	since_ok("9223372036854775807", INT64_MAX);
	/* the audit's -1, which strtoull read as 2^64 - 1 */
	since_refused("-1");
	since_refused("-0");
	since_refused("+5");
	since_refused("");
	since_refused(" 5");
	since_refused("5 ");
	since_refused("0x10");
	since_refused("1e3");
	since_refused("abc");
	since_refused("9223372036854775808");
	since_refused("18446744073709551615");
	since_refused("18446744073709551616");
	since_refused("99999999999999999999999999");
	since_refused("00000000000000000000005");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hosts_accepted),
		cmocka_unit_test(test_hosts_refused),
		cmocka_unit_test(test_origin),
		cmocka_unit_test(test_every_route_host),
		cmocka_unit_test(test_since),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
