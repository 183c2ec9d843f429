/* Parsing the docker probe and events lines (formats.md, DOCKER CLI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dockerout.h"

#define ID "a531fe966e665bd124cafdbda5f3f76abc744e43489d3cca4602e9d8b0a84355"

static void
test_inspect(void **state)
{
	char id[80], plan[40];
	int running = -1;

	(void)state;
	assert_int_equal(docker_inspect_parse("true " ID "\n", &running, id,
	    sizeof(id), plan, sizeof(plan)), 0);
	assert_int_equal(running, 1);
	assert_string_equal(id, ID);
	assert_int_equal(docker_inspect_parse("false " ID, &running, id,
	    sizeof(id), plan, sizeof(plan)), 0);
	assert_int_equal(running, 0);
	assert_string_equal(plan, "");
	assert_int_equal(docker_inspect_parse("true " ID " 00ff00ff00ff00ff\n",
	    &running, id, sizeof(id), plan, sizeof(plan)), 0);
	assert_string_equal(plan, "00ff00ff00ff00ff");
	assert_int_equal(docker_inspect_parse("true " ID " <no value>\n",
	    &running, id, sizeof(id), plan, sizeof(plan)), 0);
	assert_string_equal(plan, "");
	/* the missing-container case prints an empty line */
	assert_int_equal(docker_inspect_parse("\n", &running, id, sizeof(id), plan,
	    sizeof(plan)),
	    -1);
	assert_int_equal(docker_inspect_parse("true <no value>\n", &running, id,
	    sizeof(id), plan, sizeof(plan)), -1);
	assert_int_equal(docker_inspect_parse("maybe " ID, &running, id,
	    sizeof(id), plan, sizeof(plan)), -1);
	assert_int_equal(docker_inspect_parse("true " ID " plan extra", &running,
	    id, sizeof(id), plan, sizeof(plan)), -1);
	assert_int_equal(docker_inspect_parse("true " ID ID, &running, id,
	    sizeof(id), plan, sizeof(plan)), -1);
}

static void
test_event(void **state)
{
	char a[32], id[80], name[160];

	(void)state;
	assert_int_equal(docker_event_parse("die " ID " vllm-head", a,
	    sizeof(a), id, sizeof(id), name, sizeof(name)), 0);
	assert_string_equal(a, "die");
	assert_string_equal(name, "vllm-head");
	assert_int_equal(docker_event_parse("exec_start: bash -c x", a,
	    sizeof(a), id, sizeof(id), name, sizeof(name)), -1);
	assert_int_equal(docker_event_parse("", a, sizeof(a), id, sizeof(id),
	    name, sizeof(name)), -1);
	assert_int_equal(docker_event_parse("die " ID, a, sizeof(a), id,
	    sizeof(id), name, sizeof(name)), -1);
	/* podman 4.3's words for the same events, as its stream prints them */
	assert_int_equal(docker_event_parse("died " ID " vllm-worker", a,
	    sizeof(a), id, sizeof(id), name, sizeof(name)), 0);
	assert_string_equal(a, "die");
	assert_string_equal(name, "vllm-worker");
	assert_int_equal(docker_event_parse("remove " ID " vllm-worker", a,
	    sizeof(a), id, sizeof(id), name, sizeof(name)), 0);
	assert_string_equal(a, "destroy");
	assert_int_equal(docker_event_parse("cleanup " ID " vllm-worker", a,
	    sizeof(a), id, sizeof(id), name, sizeof(name)), 0);
	assert_string_equal(a, "cleanup");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inspect),
		cmocka_unit_test(test_event),
	};

	return cmocka_run_group_tests_name("dockerout", tests, NULL, NULL);
}
