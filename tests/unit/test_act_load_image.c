/*
 * loading-image (act_load_image.c): a node without the image, or with
 * another build of its tag, loads its image_archive: the manifest read
 * first (the tag there), then the image config it names (the build: its
 * date and layer diff IDs, against the other nodes'), docker load, and
 * the tag checked to name that build after. The texts are docker 29's,
 * both image stores (tests/unit/data/docker-29*): the other nodes on the
 * classic store, the loading node on the containerd store, where the
 * image's ID is another digest for the same build.
 */
#include "act_harness.h"

#define HEAD	0
#define WORKER	1
#define TAG	"vllm/vllm-openai:cu130-nightly"
#define CD	"docker-29-containerd/"

static int
setup(void **state)
{
	char *classic = h_data("docker-29/image-identity.out");
	struct image_ident ref;

	(void)state;
	h_setup_file("etc/tandem.json");
	free(H.cf->nodes[WORKER].image_archive);
	H.cf->nodes[WORKER].image_archive = strdup("/var/lib/tandem/v.tar");
	/* what the preflight found on the head: the classic store's ID */
	assert_int_equal(image_ident_parse(classic, &ref), 0);
	h_set_image_load(WORKER, &ref);
	free(classic);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	h_teardown();
	return 0;
}

/* The worker's archive answers its manifest and its config, recorded. */
static void
manifest_and_config(const char *config)
{
	char *m = h_data(CD "save-manifest.json");
	char *c = config ? NULL : h_data(CD "config.json");

	h_answer(h_find(WORKER, "manifest.json"), 0, m, "");
	h_answer(h_find(WORKER, "blobs/sha256/6e79a4934b9a"), 0, config ?
	    config : c, "");
	free(m);
	free(c);
}

/*
 * The same build on the containerd store: another ID, the same date and
 * layers. Loaded, and the tag names the archive's build after.
 */
static void
test_loads(void **state)
{
	char *loaded = h_data(CD "image-identity-loaded.out");
	char *load = h_data(CD "load.out");

	(void)state;
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	assert_int_equal(h_count("manifest.json"), 1);
	manifest_and_config(NULL);
	h_answer(h_find(WORKER, "load -i"), 0, load, "");
	h_answer(h_find(WORKER, "{{range .RootFS.Layers}}"), 0, loaded, "");
	assert_true(h_reported(REPORT_EVENT, EV_IMAGE_LOADED));
	assert_int_equal(h_action(), A_TEARDOWN);
	assert_int_equal(h_load_here(WORKER), 0);
	free(loaded);
	free(load);
}

/* The archive holds another build than the other nodes run. */
static void
test_archive_other_build(void **state)
{
	char *cfg = h_data(CD "config.json");
	char *p = strstr(cfg, "\"created\":\"2026-01-07T10:00:00Z\"");

	(void)state;
	/* the same config a month later: another build (derived) */
	assert_non_null(p);
	memcpy(p, "\"created\":\"2026-02-01T08:30:00Z\"", 32);
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	manifest_and_config(cfg);
	assert_true(h_reported(REPORT_FAILED, DIAG_IMAGE_MISMATCH));
	assert_non_null(strstr(h_last()->text, "(2026-02-01T08:30:00Z), the "
	    "other nodes run 6e79a4934b9a (2026-01-07T10:00:00Z)"));
	assert_int_equal(h_count("load -i"), 0);
	assert_true(h_halted());
	free(cfg);
}

/* After the load the tag names another build: image-missing. */
static void
test_loaded_other(void **state)
{
	char *other = h_data(CD "image-identity-other.out");

	(void)state;
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	manifest_and_config(NULL);
	h_answer(h_find(WORKER, "load -i"), 0, "Loaded image: " TAG "\n", "");
	h_answer(h_find(WORKER, "{{range .RootFS.Layers}}"), 0, other, "");
	assert_true(h_reported(REPORT_FAILED, DIAG_IMAGE_MISSING));
	assert_non_null(strstr(h_last()->text, "is not its image"));
	free(other);
}

/* An image config tandem cannot read: could not tell, retried. */
static void
test_config_unknown(void **state)
{
	(void)state;
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	manifest_and_config("not a config\n");
	assert_true(h_reported(REPORT_FAILED, DIAG_UNRECOGNISED_ANSWER));
	assert_non_null(strstr(h_last()->text, "could not tell"));
	assert_false(h_halted());
	assert_int_equal(h_count("load -i"), 0);
}

/* podman's load fails in podman's name, not docker's. */
static void
test_load_fails(void **state)
{
	(void)state;
	free(H.cf->container.engine);
	H.cf->container.engine = strdup("podman");
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	manifest_and_config(NULL);
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
	char *m = h_data(CD "save-manifest.json");

	(void)state;
	h_enter(ST_DEGRADED, A_LOADING_IMAGE);
	H.down[WORKER] = 1;
	h_answer(h_find(WORKER, "manifest.json"), 0, m, "");
	assert_true(h_reported(REPORT_NODE_LOST, 0));
	assert_int_equal(h_action(), A_WAITING_FOR_NODES);
	free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_archive_other_build, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_loaded_other, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_config_unknown, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_load_fails, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_node_lost, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
