/*
 * The paths tandemd.service cannot see (lib/config/unitpaths.c): a key under
 * /root passes --check in a root shell and then "does not exist" for the
 * service (ProtectHome=yes); /tmp is the service's own (PrivateTmp=yes).
 * /etc/tandem, /rootfs or /homes are not hidden.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "unitpaths.h"

static void
test_hiding(void **state)
{
	const char *dir = NULL;

	(void)state;
	assert_string_equal(unit_hiding("/root/.ssh/id_ed25519", &dir),
	    "ProtectHome=yes");
	assert_string_equal(dir, "/root");
	assert_string_equal(unit_hiding("/home/op/key", NULL), "ProtectHome=yes");
	assert_string_equal(unit_hiding("/run/user/1000/tok", &dir),
	    "ProtectHome=yes");
	assert_string_equal(dir, "/run/user");
	assert_string_equal(unit_hiding("/var/tmp/k", NULL), "PrivateTmp=yes");
	assert_string_equal(unit_hiding("/tmp", NULL), "PrivateTmp=yes");
	assert_null(unit_hiding("/etc/tandem/id_ed25519", NULL));
	assert_null(unit_hiding("/rootfs/key", NULL));
	assert_null(unit_hiding("/homes/key", NULL));
	assert_null(unit_hiding("/run/tandem/api.sock", NULL));
	assert_null(unit_hiding(NULL, NULL));
}

static void
test_config(void **state)
{
	char path[] = "/root/.ssh/id_ed25519", kh[] = "/etc/tandem/known_hosts";
	char tok[] = "/home/op/api-token";
	struct config cf;
	struct strv w;

	(void)state;
	memset(&cf, 0, sizeof(cf));
	cf.ssh.identity_file = path;
	cf.ssh.known_hosts_file = kh;
	cf.api_token_file = tok;
	strv_init(&w);
	assert_int_equal(unit_hidden_paths(&cf, &w), 2);
	assert_non_null(strstr(w.v[0], "ssh.identity_file /root/.ssh/"
	    "id_ed25519: under /root"));
	assert_non_null(strstr(w.v[0], "(ProtectHome=yes)"));
	assert_non_null(strstr(w.v[1], "api_token_file /home/op/api-token"));
	strv_free(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hiding),
		cmocka_unit_test(test_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
