/*
 * The listener on a port from /proc/net/tcp and tcp6 (lib/parse/procnet.c):
 * the tables as Linux 6.18 printed them on the test machine (cat
 * /proc/net/tcp, the kernel's get_tcp4_sock format, unchanged since 2.6),
 * with node_exporter's 0.0.0.0:9100 and a 127.0.0.1:9101 listener, a
 * connection to 9100 that is no listener, and a tcp6 [::]:9100.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "procnet.h"

static const char tcp4[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
    "retrnsmt   uid  timeout inode\n"
    "   0: 00000000:238C 00000000:0000 0A 00000000:00000000 00:00000000 "
    "00000000   113        0 41213 1 00000000ede76c49 100 0 0 10 0\n"
    "   1: 0100007F:238D 00000000:0000 0A 00000000:00000000 00:00000000 "
    "00000000     0        0 41999 1 00000000ede76c4a 100 0 0 10 0\n"
    "   2: 0100007F:D2F0 0100007F:238E 01 00000000:00000000 00:00000000 "
    "00000000     0        0 52000 1 00000000ede76c4b 20 4 30 10 -1\n"
    "   3: 0100007F:238E 0100007F:D2F0 01 00000000:00000000 00:00000000 "
    "00000000     0        0 52001 1 00000000ede76c4c 20 4 30 10 -1\n";

static const char tcp6[] =
    "  sl  local_address                         remote_address           "
    "              st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
    "   0: 00000000000000000000000000000000:238C 0000000000000000000000000"
    "0000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "61000 1 0000000000000000 100 0 0 10 0\n";

static uint32_t
ip(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

static void
test_tcp4(void **state)
{
	(void)state;
	/* 0.0.0.0:9100 clashes with 127.0.0.1:9100 and any other address */
	assert_int_equal(procnet_listener(tcp4, 0, ip("127.0.0.1"), 9100),
	    41213);
	assert_int_equal(procnet_listener(tcp4, 0, ip("10.0.0.5"), 9100),
	    41213);
	assert_int_equal(procnet_listener(tcp4, 0, 0, 9100), 41213);
	/* 127.0.0.1:9101 only clashes with itself and the wildcard */
	assert_int_equal(procnet_listener(tcp4, 0, ip("127.0.0.1"), 9101),
	    41999);
	assert_int_equal(procnet_listener(tcp4, 0, ip("0.0.0.0"), 9101),
	    41999);
	assert_int_equal(procnet_listener(tcp4, 0, ip("10.0.0.5"), 9101), 0);
	/* an established connection from or to 9102 is no listener */
	assert_int_equal(procnet_listener(tcp4, 0, 0, 9102), 0);
	assert_int_equal(procnet_listener(tcp4, 0, 0, 53999), 0);
}

static void
test_tcp6_and_junk(void **state)
{
	(void)state;
	assert_int_equal(procnet_listener(tcp6, 1, ip("127.0.0.1"), 9100),
	    61000);
	assert_int_equal(procnet_listener(tcp6, 1, 0, 9101), 0);
	/* not the kernel's lines: nothing, and no crash */
	assert_int_equal(procnet_listener("", 0, 0, 9100), 0);
	assert_int_equal(procnet_listener("garbage\n: :\n   0: zz", 0, 0,
	    9100), 0);
	assert_int_equal(procnet_listener("   0: 00000000:238C 00000000:0000 "
	    "0A", 0, 0, 9100), 0);
	/* a v4-sized address in the tcp6 table is not a listener of it */
	assert_int_equal(procnet_listener(tcp4, 1, 0, 9100), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp4),
		cmocka_unit_test(test_tcp6_and_junk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
