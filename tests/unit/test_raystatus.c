/* ray status parsing on the outputs of formats.md section 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "raystatus.h"

static const char recent[] =
    "======== Autoscaler status: 2026-04-16 03:57:11.622696 ========\n"
    "Node status\n"
    "---------------------------------------------------------------\n"
    "Active:\n"
    " 1 node_adc07b94671c73d96f502962459d1f516a779e3808377fbde1e5e1b2\n"
    " 1 node_09617c712f01827029c992ee84fd56531d7f205b7a25c704cdadb6cf\n"
    "Pending:\n (no pending nodes)\nRecent failures:\n (no failures)\n\n"
    "Resources\n"
    "---------------------------------------------------------------\n"
    "Total Usage:\n 0.0/40.0 CPU\n"
    " 2.0/2.0 GPU (2.0 used of 2.0 reserved in placement groups)\n"
    " 0B/166.80GiB memory\n 0B/71.48GiB object_store_memory\n\n"
    "From request_resources:\n (none)\nPending Demands:\n"
    " (no resource demands)\n";

static const char older[] =
    "======== Autoscaler status: 2024-06-24 10:00:00.123456 ========\n"
    "Node status\n"
    "---------------------------------------------------------------\n"
    "Healthy:\n 1 node_aa\n"
    "Pending:\n (no pending nodes)\nRecent failures:\n (no failures)\n\n"
    "Resources\n"
    "---------------------------------------------------------------\n"
    "Usage:\n 0.0/20.0 CPU\n 0.0/1.0 GPU (0.0 used of 1.0 reserved in "
    "placement groups)\n 0B/150.00GiB memory\n\n"
    "Demands:\n {'CPU': 1.0} * 1, {'GPU': 2.0} * 1 (PACK): 1+ pending "
    "placement groups\n";

static void
test_recent(void **state)
{
	struct raystatus rs;
	char err[128];

	(void)state;
	assert_int_equal(raystatus_parse(recent, &rs, err, sizeof(err)), 0);
	assert_int_equal(rs.alive_nodes, 2);
	assert_true(rs.gpus == 2.0);
	assert_true(rs.gpus_used == 2.0);
	assert_true(rs.cpus == 40.0);
	assert_int_equal(rs.pending_pgs, 0);
}

static void
test_older_labels(void **state)
{
	struct raystatus rs;
	char err[128];

	(void)state;
	assert_int_equal(raystatus_parse(older, &rs, err, sizeof(err)), 0);
	assert_int_equal(rs.alive_nodes, 1);
	assert_true(rs.gpus == 1.0);
	assert_int_equal(rs.pending_pgs, 1);
}

static void
test_not_status(void **state)
{
	struct raystatus rs;
	char err[128];

	(void)state;
	assert_int_equal(raystatus_parse("No cluster status. It may take a "
	    "few seconds for the Ray internal services to start up.\n", &rs,
	    err, sizeof(err)), -1);
	assert_string_equal(err, "ray status: no cluster status yet");
	assert_int_equal(raystatus_parse("ConnectionError: Could not find any "
	    "running Ray instance.\n", &rs, err, sizeof(err)), -1);
	assert_string_equal(err, "ray status: not a status report");
	assert_int_equal(raystatus_parse("", &rs, err, sizeof(err)), -1);
}

static void
test_no_active(void **state)
{
	struct raystatus rs;
	char err[128];

	(void)state;
	assert_int_equal(raystatus_parse("======== Autoscaler status: x "
	    "========\nActive:\n (no active nodes)\nTotal Usage:\n 0.0/0.0 "
	    "GPU\n", &rs, err, sizeof(err)), 0);
	assert_int_equal(rs.alive_nodes, 0);
	assert_true(rs.gpus == 0);
}

/*
 * Issue 43 item 9: two counts that fit an int each summed past INT_MAX (a
 * signed overflow, a negative node count). An answer with such counts is
 * one tandem cannot read ("could not tell"), never a count.
 */
static void
test_count_overflow(void **state)
{
	struct raystatus rs;
	char err[128];

	(void)state;
	assert_int_equal(raystatus_parse("======== Autoscaler status: x "
	    "========\nActive:\n 1192559076 node_x\n 1192559076 node_x\n",
	    &rs, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "count"));
	assert_int_equal(raystatus_parse("======== Autoscaler status: x "
	    "========\nIdle:\n 99999999999999999999 node_x\n", &rs, err,
	    sizeof(err)), -1);
	assert_int_equal(raystatus_parse("======== Autoscaler status: x "
	    "========\nDemands:\n {'GPU': 2.0} * 1 (PACK): 2147483647+ pending "
	    "placement groups\n {'GPU': 2.0} * 1 (PACK): 2147483647+ pending "
	    "placement groups\n", &rs, err, sizeof(err)), -1);
	/* a large cluster still reads */
	assert_int_equal(raystatus_parse("======== Autoscaler status: x "
	    "========\nActive:\n 600000 node_x\nIdle:\n 400000 node_y\n", &rs,
	    err, sizeof(err)), 0);
	assert_int_equal(rs.alive_nodes, 1000000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recent),
		cmocka_unit_test(test_older_labels),
		cmocka_unit_test(test_not_status),
		cmocka_unit_test(test_no_active),
		cmocka_unit_test(test_count_overflow),
	};

	return cmocka_run_group_tests_name("raystatus", tests, NULL, NULL);
}
