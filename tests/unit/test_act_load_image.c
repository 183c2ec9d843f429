/*
 * loading-image (act_load_image.c): a node without the image, or with
 * another build of its tag, loads its image_archive: the manifest read
 * first (the tag there, with the ID the other nodes hold), docker load,
 * and the tag checked to name that ID after.
 */
#include "act_harness.h"

#define HEAD	0
#define WORKER	1
#define ID	"b3aaad7f6261b566a631907124ffb4227e26089cbb6a986cc891bef0267ee56c"
#define OTHER	"20cfc4c663f3b7a4a0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7"
#define TAG	"vllm/vllm-openai:cu130-nightly"

static int
setup(void **state)
{
	(void)state;
	h_setup_file("etc/tandem.json");
	free(H.cl->cf->nodes[WORKER].image_archive);
	H.cl->cf->nodes[WORKER].image_archive = strdup("/var/lib/tandem/v.tar");
	H.cl->nodes[WORKER].load_image = 1;
	snprintf(H.cl->image_ref, sizeof(H.cl->image_ref), "%s", ID);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	h_teardown();
	return 0;
}

static void
test_loads(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	assert_int_equal(h_count("manifest.json"), 1);
	h_answer(h_find(WORKER, "manifest.json"), 0, "[{\"Config\":\"" ID
	    ".json\",\"RepoTags\":[\"" TAG "\"],\"Layers\":[]}]", "");
	h_answer(h_find(WORKER, "load -i"), 0,
	    "Loaded image: " TAG "\n", "");
	h_answer(h_find(WORKER, "image inspect"), 0, "sha256:" ID
	    " 2026-04-01T10:00:00Z\n", "");
	assert_true(h_reported(REPORT_EVENT, EV_IMAGE_LOADED));
	assert_int_equal(H.cl->fsm.action, A_TEARDOWN);
	assert_int_equal(H.cl->nodes[WORKER].load_image, 0);
}

/* The archive holds another build than the other nodes run. */
static void
test_archive_other_build(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	h_answer(h_find(WORKER, "manifest.json"), 0, "[{\"Config\":\"" OTHER
	    ".json\",\"RepoTags\":[\"" TAG "\"],\"Layers\":[]}]", "");
	assert_true(h_reported(REPORT_FAILED, DIAG_IMAGE_MISMATCH));
	assert_int_equal(h_count("load -i"), 0);
	assert_true(H.cl->fsm.halted);
}

/* podman's load fails in podman's name, not docker's. */
static void
test_load_fails(void **state)
{
	(void)state;
	free(H.cl->cf->container.engine);
	H.cl->cf->container.engine = strdup("podman");
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	h_answer(h_find(WORKER, "manifest.json"), 0, "[{\"Config\":\"" ID
	    ".json\",\"RepoTags\":[\"" TAG "\"],\"Layers\":[]}]", "");
	h_answer(h_find(WORKER, "load -i"), 125, "",
	    "Error: payload does not match any of the supported image "
	    "formats\n");
	assert_true(h_reported(REPORT_FAILED, DIAG_IMAGE_MISSING));
	assert_non_null(strstr(h_last()->text, "podman load failed: Error: "
	    "payload"));
}

/* The node went away during the load: waited for, not diagnosed. */
static void
test_node_lost(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	H.down[WORKER] = 1;
	h_answer(h_find(WORKER, "manifest.json"), 0, "[{\"Config\":\"" ID
	    ".json\",\"RepoTags\":[\"" TAG "\"],\"Layers\":[]}]", "");
	assert_true(h_reported(REPORT_NODE_LOST, 0));
	assert_int_equal(H.cl->fsm.action, A_WAITING_FOR_NODES);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_archive_other_build, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_load_fails, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_node_lost, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
