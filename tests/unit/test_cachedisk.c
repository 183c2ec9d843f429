/* tandemctl check's cache line: du and df as they print (cachedisk.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cachedisk.h"

/* GNU coreutils 9 du -sk and df -Pk, as run here */
static void
test_du_df(void **state)
{
	struct cache_disk cd;
	char line[300];

	(void)state;
	assert_int_equal(cache_disk_parse("13107200\t/var/cache/tandem\n"
	    "Filesystem     1024-blocks      Used Available Capacity Mounted on\n"
	    "/dev/nvme0n1p2  3844640564 812345678 2836778886      23% /\n",
	    &cd), 0);
	assert_int_equal(cd.used_kib, 13107200);
	assert_int_equal(cd.avail_kib, 2836778886LL);
	assert_string_equal(cd.mount, "/");
	cache_disk_format(&cd, "/var/cache/tandem", 50, line, sizeof(line));
	assert_string_equal(line, "12.5 GiB in /var/cache/tandem (bound 50 "
	    "GiB), 2705.4 GiB free on /");
}

/* no directory yet: du says nothing, the probe "-"; a mount with a space
 * and a control character */
static void
test_absent_and_odd(void **state)
{
	struct cache_disk cd;
	char line[300];

	(void)state;
	assert_int_equal(cache_disk_parse("-\n"
	    "Filesystem 1024-blocks Used Available Capacity Mounted on\n"
	    "tmpfs 1024 0 1024 0% /srv/my \x1b[2Jdisk\n", &cd), 0);
	assert_int_equal(cd.used_kib, -1);
	assert_int_equal(cd.avail_kib, 1024);
	assert_string_equal(cd.mount, "/srv/my \xef\xbf\xbd[2Jdisk");
	cache_disk_format(&cd, "/c", 1, line, sizeof(line));
	assert_string_equal(line, "none yet in /c (bound 1 GiB), 0.0 GiB free "
	    "on /srv/my \xef\xbf\xbd[2Jdisk");
	assert_int_equal(cache_disk_parse("", &cd), -1);
	assert_int_equal(cache_disk_parse(NULL, &cd), -1);
	assert_int_equal(cache_disk_parse("garbage\nmore garbage here\n", &cd),
	    -1);
	cache_disk_format(&cd, "/c", 50, line, sizeof(line));
	assert_string_equal(line, "none yet in /c (bound 50 GiB), free disk "
	    "unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_du_df),
		cmocka_unit_test(test_absent_and_odd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
