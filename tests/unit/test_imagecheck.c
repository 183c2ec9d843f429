/*
 * The image and model checks' parsers: image inspect with its date, the
 * manifest.json of docker save and podman save (as the bed's engines write
 * them, and docker 25's OCI layout), the reference ID the nodes should
 * share, and the model fingerprint's comparison.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "imagecheck.h"

#define H1 "6fbc003f34b64d2ea9db3ffb536e10fcc49a67cf8f1e039bbd2ae82392fc5951"
#define H2 "20cfc4c663f35f40fc0e53148d911fcc9f36f09dfbdd6bdba5ed977b7d85220b"
#define TAG "vllm/vllm-openai:cu130-nightly"

static void
test_inspect(void **state)
{
	char id[IMAGE_ID_LEN], created[40];

	(void)state;
	assert_int_equal(image_inspect_parse("sha256:" H1
	    " 2026-01-07T10:00:00.123Z\n", id, sizeof(id), created,
	    sizeof(created)), 0);
	assert_string_equal(id, H1);
	assert_string_equal(created, "2026-01-07T10:00:00.123Z");
	/* podman: bare hex and a Go time */
	assert_int_equal(image_inspect_parse(H2 " 2026-01-07 10:00:00 +0000 "
	    "UTC\n", id, sizeof(id), created, sizeof(created)), 0);
	assert_string_equal(id, H2);
	assert_string_equal(created, "2026-01-07 10:00:00 +0000 UTC");
	assert_int_equal(image_inspect_parse("", id, sizeof(id), created,
	    sizeof(created)), -1);
	assert_int_equal(image_inspect_parse("Error: No such image\n", id,
	    sizeof(id), created, sizeof(created)), -1);
	assert_int_equal(image_inspect_parse("sha256:6fbc 2026\n", id,
	    sizeof(id), created, sizeof(created)), -1);
}

static void
test_manifest(void **state)
{
	char id[IMAGE_ID_LEN], other[160];

	(void)state;
	/* docker save, legacy layout (the bed's docker.io) */
	assert_int_equal(archive_manifest_id("[{\"Config\":\"" H1 ".json\","
	    "\"RepoTags\":[\"" TAG "\"],\"Layers\":[]},{\"Config\":\"" H2
	    ".json\",\"RepoTags\":[\"nvcr.io/nvidia/vllm:26.01-py3\"]}]", TAG,
	    id, sizeof(id), other, sizeof(other)), 0);
	assert_string_equal(id, H1);
	/* docker 25+: OCI blobs */
	assert_int_equal(archive_manifest_id("[{\"Config\":\"blobs/sha256/" H2
	    "\",\"RepoTags\":[\"" TAG "\"]}]", TAG, id, sizeof(id), other,
	    sizeof(other)), 0);
	assert_string_equal(id, H2);
	/* podman names an image it did not pull localhost/... */
	assert_int_equal(archive_manifest_id("[{\"Config\":\"" H2 ".json\","
	    "\"RepoTags\":[\"nvcr.io/nvidia/vllm:26.01-py3\",\"localhost/" TAG
	    "\"]}]", TAG, id, sizeof(id), other, sizeof(other)), 0);
	assert_string_equal(id, H2);
	assert_int_equal(archive_manifest_id("[{\"Config\":\"" H2 ".json\","
	    "\"RepoTags\":[\"docker.io/" TAG "\"]}]", TAG, id, sizeof(id),
	    other, sizeof(other)), 0);
	/* another tag: which ones, for the diagnosis */
	assert_int_equal(archive_manifest_id("[{\"Config\":\"" H2 ".json\","
	    "\"RepoTags\":[\"nvcr.io/nvidia/vllm:26.01-py3\"]}]", TAG, id,
	    sizeof(id), other, sizeof(other)), 1);
	assert_string_equal(other, "nvcr.io/nvidia/vllm:26.01-py3");
	/* a bad Config is no ID */
	assert_int_equal(archive_manifest_id("[{\"Config\":\"x.json\","
	    "\"RepoTags\":[\"" TAG "\"]}]", TAG, id, sizeof(id), other,
	    sizeof(other)), 1);
	assert_int_equal(archive_manifest_id("not json", TAG, id, sizeof(id),
	    other, sizeof(other)), -1);
	assert_int_equal(archive_manifest_id("{}", TAG, id, sizeof(id), other,
	    sizeof(other)), -1);
	assert_int_equal(archive_manifest_id("[]", TAG, id, sizeof(id), other,
	    sizeof(other)), 1);
	assert_string_equal(other, "no tags");
}

static void
test_reference(void **state)
{
	const char *two_same[] = { "a", "a" };
	const char *split[] = { "a", "b" };
	const char *three[] = { "b", "a", "a" };
	const char *head_missing[] = { "", "b" };
	const char *none[] = { "", "" };

	(void)state;
	assert_int_equal(image_reference(two_same, 2, 0), 0);
	/* no majority: the head's */
	assert_int_equal(image_reference(split, 2, 1), 1);
	assert_int_equal(image_reference(split, 2, 0), 0);
	/* the majority over the head */
	assert_int_equal(image_reference(three, 3, 0), 1);
	assert_int_equal(image_reference(head_missing, 2, 0), 1);
	assert_int_equal(image_reference(none, 2, 0), -1);
}

#define PRINT "f 5 config.json\nf 100 model-00001.safetensors\n" \
	"f 7 tokenizer.json\nc 111 5 ./config.json\nc 222 7 ./tokenizer.json\n"

static void
test_model(void **state)
{
	struct model_print a, b;
	char names[200];

	(void)state;
	model_print_parse(PRINT, &a);
	assert_int_equal(a.n, 3);
	assert_true(model_print_has(&a, "config.json"));
	assert_false(model_print_has(&a, "x"));
	/* the same files in another order */
	model_print_parse("f 7 tokenizer.json\nf 100 model-00001.safetensors\n"
	    "f 5 config.json\nc 222 7 ./tokenizer.json\nc 111 5 ./config.json\n",
	    &b);
	assert_int_equal(model_print_diff(&a, &b, names, sizeof(names)), 0);
	assert_string_equal(names, "");
	model_print_free(&b);
	/* config.json edited (same size, another checksum), a shard missing,
	 * one more file */
	model_print_parse("f 5 config.json\nf 7 tokenizer.json\nf 1 extra\n"
	    "c 999 5 ./config.json\nc 222 7 ./tokenizer.json\ngarbage\n", &b);
	assert_int_equal(model_print_diff(&a, &b, names, sizeof(names)), 3);
	assert_string_equal(names, "config.json, model-00001.safetensors, "
	    "extra");
	model_print_free(&b);
	/* a shard of another size */
	model_print_parse("f 5 config.json\nf 101 model-00001.safetensors\n"
	    "f 7 tokenizer.json\nc 111 5 ./config.json\nc 222 7 "
	    "./tokenizer.json\n", &b);
	assert_int_equal(model_print_diff(&a, &b, names, sizeof(names)), 1);
	assert_string_equal(names, "model-00001.safetensors");
	model_print_free(&b);
	/* nothing at all */
	model_print_parse("", &b);
	assert_int_equal(b.n, 0);
	assert_int_equal(model_print_diff(&a, &b, names, sizeof(names)), 3);
	model_print_free(&b);
	model_print_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inspect),
		cmocka_unit_test(test_manifest),
		cmocka_unit_test(test_reference),
		cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests_name("imagecheck", tests, NULL, NULL);
}
