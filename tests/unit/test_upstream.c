/*
 * The real tools as they are upstream (issue 29), on the texts recorded or
 * written from their sources in tests/unit/data/ (README.md there says
 * which): vLLM's answers and logs, Ray's two autoscaler formats, docker's
 * two image stores, the GPU question asked of the engine, and the answers
 * tandem does not know.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "accel.h"
#include "conffile.h"
#include "config.h"
#include "diagnose.h"
#include "gpucheck.h"
#include "imagecheck.h"
#include "pgwait.h"
#include "plan.h"
#include "raystatus.h"
#include "recovery.h"
#include "util.h"
#include "utf8.h"
#include "vllmapi.h"
#include "slurp.h"

#define DATA "tests/unit/data/"

static char *
data(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), DATA "%s/%s", dir, name);
	return slurp(path);
}

static int
data_int(const char *dir, const char *name)
{
	char *s = data(dir, name);
	int v = atoi(s);

	free(s);
	return v;
}

/* vLLM ------------------------------------------------------------------ */

static const char *const vllm_versions[] = { "vllm-0.6-0.10.0",
    "vllm-0.10.1-0.15" };

/*
 * A model without a chat template: chat answers 400 naming the template
 * in either body shape, and /v1/completions proves generation.
 */
static void
test_vllm_base_model(void **state)
{
	char why[300], *body;
	size_t v;

	(void)state;
	for (v = 0; v < 2; v++) {
		body = data(vllm_versions[v], "chat-no-template.body");
		assert_int_equal(vllm_gen_verdict(GEN_CHAT, data_int(
		    vllm_versions[v], "chat-no-template.status"), body, why,
		    sizeof(why)), GEN_NO_TEMPLATE);
		assert_non_null(strstr(why, "HTTP 400: As of transformers v4.44, "
		    "default chat template is no longer allowed"));
		/* the same answer to a completion is vLLM's error, no more */
		assert_int_equal(vllm_gen_verdict(GEN_COMPLETIONS, 400, body, why,
		    sizeof(why)), GEN_ERROR);
		free(body);
		body = data(vllm_versions[v], "completions.body");
		assert_int_equal(vllm_gen_verdict(GEN_COMPLETIONS, data_int(
		    vllm_versions[v], "completions.status"), body, why,
		    sizeof(why)), GEN_OK);
		/* a text_completion is not a chat completion */
		assert_int_equal(vllm_gen_verdict(GEN_CHAT, 200, body, why,
		    sizeof(why)), GEN_UNKNOWN);
		free(body);
	}
	/* another 400 is not the template's */
	body = data("vllm-0.10.1-0.15", "chat-too-long.body");
	assert_int_equal(vllm_gen_verdict(GEN_CHAT, 400, body, why,
	    sizeof(why)), GEN_ERROR);
	assert_non_null(strstr(why, "maximum context length"));
	free(body);
	/* engine dead: 500 with an empty body; garbage; no answer */
	assert_int_equal(vllm_gen_verdict(GEN_COMPLETIONS, 500, "", why,
	    sizeof(why)), GEN_ERROR);
	assert_int_equal(vllm_gen_verdict(GEN_COMPLETIONS, 404,
	    "<html>nginx</html>", why, sizeof(why)), GEN_UNKNOWN);
	assert_string_equal(why, "HTTP 404: <html>nginx</html>");
	assert_int_equal(vllm_gen_verdict(GEN_COMPLETIONS, 0, NULL, why,
	    sizeof(why)), GEN_ERROR);
	assert_string_equal(gen_endpoint_path(GEN_COMPLETIONS),
	    "/v1/completions");
	assert_string_equal(gen_endpoint_name(GEN_CHAT), "chat/completions");
}

static void
test_vllm_bodies(void **state)
{
	char *b;

	(void)state;
	b = vllm_completion_body("/model/x \"q\"");
	assert_string_equal(b, "{\"model\":\"/model/x \\\"q\\\"\",\"prompt\":"
	    "\"ping\",\"max_tokens\":1,\"temperature\":0}");
	free(b);
	b = vllm_chat_body("m");
	assert_non_null(strstr(b, "\"messages\":[{\"role\":\"user\","
	    "\"content\":\"ping\"}]"));
	free(b);
}

struct logcase {
	const char	*file;
	const char	*code;
	int		 retryable;
	int		 ladder;	/* steps gpu_memory_utilization down */
};

/* vLLM's failures at start, matched by the catalogue. */
static void
test_vllm_logs(void **state)
{
	static const struct logcase c[] = {
		{ "cache-blocks.log", "kv-cache-no-memory", 0, 0 },
		{ "cuda-error-oom.log", "cuda-oom", 1, 1 },
		{ "accelerator-error-oom.log", "cuda-oom", 1, 1 },
		{ "cuda-oom.log", "cuda-oom", 1, 1 },
		{ "pg-wait-2550s.log", "placement-group", 0, 0 },
		{ "pg-given-too-small.log", "placement-group", 0, 0 },
	};
	char ex[300];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *log = data("vllm-log", c[i].file);
		const struct diag *d = diag_match(log, ex, sizeof(ex));

		assert_non_null(d);
		assert_string_equal(d->code, c[i].code);
		assert_int_equal(d->retryable, c[i].retryable);
		assert_int_equal(recovery_ladder_applies(d), c[i].ladder);
		free(log);
	}
	/* the remedy goes the other way, and the ladder never steps */
	assert_int_equal(diag_get(DIAG_KV_CACHE_NO_MEMORY)->action,
	    REMEDY_RAISE_GMU);
	assert_non_null(strstr(diag_get(DIAG_KV_CACHE_NO_MEMORY)->remedy,
	    "raise --gpu-memory-utilization"));
	/* the early signs alone are not a diagnosis */
	{
		char *log = data("vllm-log", "pg-wait-30s.log");

		assert_null(diag_match(log, NULL, 0));
		free(log);
		log = data("vllm-log", "pg-warning.log");
		assert_null(diag_match(log, NULL, 0));
		free(log);
	}
}

static struct raystatus
ray_key(const char *file, const char *key)
{
	struct raystatus rs;
	char err[128], *t = data("ray-2.4x-2.5x", file);

	assert_int_equal(raystatus_parse_key(t, key, &rs, err, sizeof(err)),
	    0);
	free(t);
	return rs;
}

static struct raystatus
ray(const char *file)
{
	return ray_key(file, "GPU");
}

/*
 * Issue 41 item 4: Ray on Ascend. vllm-ascend's platform sets
 * ray_device_key "NPU": Ray lists " 0.0/16.0 NPU", vLLM's bundles ask
 * {'NPU': 1.0} and its warning says "required NPUs". tandem counts the
 * accelerator's own key (accel_ray_key).
 */
static void
test_ray_npu(void **state)
{
	struct raystatus rs, two;
	struct pg_sign s;
	char why[400], *log;

	(void)state;
	assert_string_equal(accel_ray_key(ACCEL_ASCEND), "NPU");
	assert_string_equal(accel_ray_key(ACCEL_NVIDIA), "GPU");
	rs = ray_key("v1-ready-npu.out", accel_ray_key(ACCEL_ASCEND));
	assert_int_equal(rs.alive_nodes, 2);
	assert_true(rs.gpus == 16.0 && rs.gpus_used == 0);
	/* read as GPUs, as before: none, and tandem waited for ever */
	assert_true(ray("v1-ready-npu.out").gpus == 0);
	rs = ray_key("v1-serving-npu.out", "NPU");
	assert_true(rs.gpus == 16.0 && rs.gpus_used == 16.0);
	assert_true(rs.gpus_pg_reserved == 16.0);
	/* an NVIDIA cluster's status read for NPUs has none */
	assert_true(ray_key("v1-ready.out", "NPU").gpus == 0);

	log = data("vllm-log", "pg-wait-npu.log");
	pg_scan(log, &s);
	free(log);
	assert_true(s.seen && s.warned && !s.failed);
	assert_int_equal(s.waited_s, 30);
	assert_int_equal(s.need_gpus, 2);
	two = ray_key("v1-ready-npu.out", "NPU");
	two.gpus = 1;
	assert_int_equal(pg_verdict(&s, &two, 16, 30, 300, why, sizeof(why)),
	    PG_SHORT);
	assert_non_null(strstr(why, "it needs 2 "));
}

/*
 * Issue 41 item 7: an archive without manifest.json (an OCI layout). tar
 * says so in its own words (recorded, GNU tar 1.34), the engine loads it
 * and says what it loaded (docker-29/load.out recorded; the untagged and
 * podman forms as the README quotes them).
 */
static void
test_oci_archive(void **state)
{
	char other[200], *t;

	(void)state;
	t = data("tar-1.34", "oci-layout-manifest.err");
	assert_true(archive_no_manifest(t));
	free(t);
	assert_false(archive_no_manifest("tar: /srv/vllm.tar: Cannot open: No "
	    "such file or directory"));
	assert_false(archive_no_manifest(NULL));
	t = data("docker-29", "load.out");
	assert_int_equal(image_load_parse(t, "vllm/vllm-openai:cu130-nightly",
	    other, sizeof(other)), 0);
	assert_int_equal(image_load_parse(t, "docker.io/vllm/vllm-openai:"
	    "cu130-nightly", other, sizeof(other)), 0);
	assert_int_equal(image_load_parse(t, "vllm/vllm-openai:v0.11.0", other,
	    sizeof(other)), 1);
	assert_string_equal(other, "vllm/vllm-openai:cu130-nightly");
	free(t);
	/* an OCI archive without a name: the engine gives only the ID */
	assert_int_equal(image_load_parse("Loaded image ID: sha256:0123abcd\n",
	    "vllm/vllm-openai:cu130-nightly", other, sizeof(other)), 1);
	assert_string_equal(other, "an untagged image sha256:0123abcd");
	/* podman: its full names, one or several */
	assert_int_equal(image_load_parse("Getting image source signatures\n"
	    "Loaded image: docker.io/vllm/vllm-openai:cu130-nightly\n",
	    "vllm/vllm-openai:cu130-nightly", other, sizeof(other)), 0);
	assert_int_equal(image_load_parse("Loaded image(s): localhost/a:1,"
	    "docker.io/vllm/vllm-openai:cu130-nightly\n",
	    "vllm/vllm-openai:cu130-nightly", other, sizeof(other)), 0);
	assert_int_equal(image_load_parse("open /srv/x.tar: no such file\n",
	    "vllm/vllm-openai:cu130-nightly", other, sizeof(other)), -1);
	assert_int_equal(image_load_parse("", "a:1", other, sizeof(other)), -1);
}

/* The placement-group wait, from vLLM's schedule and ray status. */
static void
test_pg_wait(void **state)
{
	struct pg_sign s;
	struct raystatus full, one, held, v2idle;
	char why[400], *log;

	(void)state;
	full = ray("v1-ready.out");
	one = ray("v1-one-node.out");
	held = ray("v2-pg-held.out");
	v2idle = ray("v2-idle.out");

	pg_scan("INFO ... Application startup complete.", &s);
	assert_int_equal(pg_verdict(&s, &full, 2, 0, 300, why, sizeof(why)),
	    PG_NONE);
	assert_int_equal(pg_diag(PG_NONE), -1);

	/* the warning alone: vLLM has not waited yet */
	log = data("vllm-log", "pg-warning.log");
	pg_scan(log, &s);
	free(log);
	assert_true(s.seen && s.warned && !s.failed);
	assert_int_equal(s.waited_s, -1);
	/* Ray has every GPU free: keep waiting (a node still joining) */
	assert_int_equal(pg_verdict(&s, &full, 2, 5, 300, why, sizeof(why)),
	    PG_WAITING);
	assert_int_equal(pg_verdict(&s, &v2idle, 2, 5, 300, why, sizeof(why)),
	    PG_WAITING);
	/* one node left Ray: named at once */
	assert_int_equal(pg_verdict(&s, &one, 2, 5, 300, why, sizeof(why)),
	    PG_SHORT);
	assert_non_null(strstr(why, "it needs 2 GPUs and ray status shows 1 on "
	    "1 nodes"));
	assert_int_equal(pg_diag(PG_SHORT), DIAG_PLACEMENT_GROUP_WAIT);

	/* the schedule's first two lines: 10 and 30 s, 2 GPUs in the specs */
	log = data("vllm-log", "pg-wait-30s.log");
	pg_scan(log, &s);
	free(log);
	assert_true(s.seen && !s.warned);
	assert_int_equal(s.waited_s, 30);
	assert_int_equal(s.need_gpus, 2);
	assert_non_null(strstr(s.line, "for 30 seconds"));
	/* the GPUs held by another placement group: named at once */
	assert_int_equal(pg_verdict(&s, &held, 0, 1, 300, why, sizeof(why)),
	    PG_HELD);
	assert_non_null(strstr(why, "2 of 2 in use"));
	/* no ray status: only the bound names it */
	assert_int_equal(pg_verdict(&s, NULL, 2, 299, 300, why, sizeof(why)),
	    PG_WAITING);
	assert_int_equal(pg_verdict(&s, NULL, 2, 300, 300, why, sizeof(why)),
	    PG_TOO_LONG);
	assert_non_null(strstr(why, "about 2550 s"));
	assert_int_equal(pg_diag(PG_TOO_LONG), DIAG_PLACEMENT_GROUP_WAIT);
	assert_true(diag_get(DIAG_PLACEMENT_GROUP_WAIT)->retryable);

	/*
	 * A wait that ended: the worker joined late, vLLM got its group and
	 * went on. Its GPUs in use are its own: no sign. Ray's autoscaler
	 * lines during the wait do not end it.
	 */
	log = data("vllm-log", "pg-wait-30s.log");
	{
		char *more = xprintf("%s(autoscaler +40s) Tip: use `ray status` to "
		    "view detailed cluster status.\n", log);

		pg_scan(more, &s);
		assert_true(s.seen && !s.over);
		free(more);
		more = xprintf("%s(EngineCore_DP0 pid=90) INFO 03-04 10:00:41 "
		    "[gpu_model_runner.py:4021] Starting to load model /m...\n",
		    log);
		pg_scan(more, &s);
		assert_true(!s.seen && s.over);
		assert_int_equal(pg_verdict(&s, &held, 2, 400, 300, why,
		    sizeof(why)), PG_NONE);
		free(more);
	}
	free(log);

	/* vLLM's own end, after the wait begun at 1270 s: 2550 s */
	log = data("vllm-log", "pg-wait-2550s.log");
	pg_scan(log, &s);
	free(log);
	assert_int_equal(s.waited_s, 2550);
	assert_true(s.failed);
	assert_int_equal(pg_verdict(&s, &full, 2, 0, 300, why, sizeof(why)),
	    PG_FAILED);
	assert_int_equal(pg_diag(PG_FAILED), DIAG_PLACEMENT_GROUP);
	assert_non_null(strstr(why, "Cannot provide a placement group"));
}

/*
 * The schedule itself: ray.wait timeouts of 10, 20, 40, ... s with the
 * 1800 s test between them (ray_utils.py _wait_until_pg_ready), replayed:
 * the log lines fall at 10, 30, ..., 2550 s and the error comes at 2550 s.
 */
static void
test_pg_schedule(void **state)
{
	static const int want[] = { 10, 30, 70, 150, 310, 630, 1270, 2550 };
	int t = 0, interval = 10, n = 0;

	(void)state;
	while (t < 1800) {
		t += interval;		/* ray.wait(timeout=wait_interval) */
		interval *= 2;
		assert_true(n < 8);
		assert_int_equal(t, want[n++]);	/* logger.info(..., t) */
	}
	assert_int_equal(n, 8);
	assert_int_equal(t, 2550);	/* ray.get(timeout=0) raises here */
}

/* Ray ------------------------------------------------------------------- */

static void
test_ray_formats(void **state)
{
	struct raystatus rs;

	(void)state;
	rs = ray("v1-ready.out");
	assert_int_equal(rs.alive_nodes, 2);
	assert_int_equal(rs.active_nodes, 2);
	assert_int_equal(rs.idle_nodes, 0);
	assert_false(rs.autoscaler_v2);
	assert_true(rs.gpus == 2.0 && rs.gpus_used == 0);
	rs = ray("v1-serving.out");
	assert_true(rs.gpus == 2.0 && rs.gpus_used == 2.0);
	assert_true(rs.gpus_pg_reserved == 2.0);
	rs = ray("v1-healthy-old.out");
	assert_int_equal(rs.alive_nodes, 2);
	assert_true(rs.gpus == 2.0);
	/* v2: before vLLM starts every node is idle, and alive */
	rs = ray("v2-idle.out");
	assert_true(rs.autoscaler_v2);
	assert_int_equal(rs.active_nodes, 0);
	assert_int_equal(rs.idle_nodes, 2);
	assert_int_equal(rs.alive_nodes, 2);
	assert_true(rs.gpus == 2.0);
	rs = ray("v2-idle-kuberay.out");
	assert_int_equal(rs.alive_nodes, 2);
	rs = ray("v2-mixed.out");
	assert_int_equal(rs.active_nodes, 1);
	assert_int_equal(rs.idle_nodes, 1);
	assert_int_equal(rs.alive_nodes, 2);
	rs = ray("v2-serving.out");
	assert_int_equal(rs.alive_nodes, 2);
	assert_true(rs.gpus_used == 2.0);
	assert_int_equal(rs.nfailures, 0);
	/* a node died: one alive, its failure line, the group pending */
	rs = ray("v2-node-died.out");
	assert_int_equal(rs.alive_nodes, 1);
	assert_true(rs.gpus == 1.0);
	assert_int_equal(rs.nfailures, 1);
	assert_string_equal(rs.failures[0].node_type, "gpu-group");
	assert_string_equal(rs.failures[0].cause, "NodeTerminated");
	assert_string_equal(rs.failures[0].detail, "ip: 10.10.10.2");
	assert_int_equal(rs.pending_pgs, 1);
	rs = ray("v2-pg-held.out");
	assert_int_equal(rs.pending_pgs, 1);
	{
		char err[128], *t = data("ray-2.4x-2.5x", "no-status.out");

		assert_int_equal(raystatus_parse(t, &rs, err, sizeof(err)), -1);
		assert_string_equal(err, "ray status: no cluster status yet");
		free(t);
	}
}

/* docker's image stores ------------------------------------------------- */

static struct image_ident
ident(const char *dir, const char *file)
{
	struct image_ident im;
	char *t = data(dir, file);

	assert_int_equal(image_ident_parse(t, &im), 0);
	free(t);
	return im;
}

static void
test_image_stores(void **state)
{
	struct image_ident classic, c8d, loaded, other, env, arch, rec, all[3];
	char path[200], other_tags[200], id[IMAGE_ID_LEN], created[48], *t;

	(void)state;
	classic = ident("docker-29", "image-identity.out");
	c8d = ident("docker-29-containerd", "image-identity.out");
	/* the IDs differ: the config digest against the index digest */
	assert_string_not_equal(classic.id, c8d.id);
	/* and yet one build */
	assert_true(image_ident_same(&classic, &c8d));
	assert_int_equal(c8d.nlayers, 3);
	/* another build of the tag, and an ENV-only rebuild, differ */
	other = ident("docker-29-containerd", "image-identity-other.out");
	env = ident("docker-29", "image-identity-env-only.out");
	assert_false(image_ident_same(&classic, &other));
	assert_false(image_ident_same(&classic, &env));
	/* the archive of the containerd node: manifest.json -> the config */
	t = data("docker-29-containerd", "save-manifest.json");
	assert_int_equal(archive_manifest_config(t, "vllm/vllm-openai:cu130-"
	    "nightly", path, sizeof(path), other_tags, sizeof(other_tags)), 0);
	/* the manifest's config is the classic store's ID, not the c8d one */
	assert_int_equal(archive_manifest_id(t, "docker.io/vllm/vllm-openai:"
	    "cu130-nightly", id, sizeof(id), other_tags, sizeof(other_tags)),
	    0);
	assert_string_equal(id, classic.id);
	assert_string_not_equal(id, c8d.id);
	free(t);
	assert_int_equal(strncmp(path, "blobs/sha256/", 13), 0);
	t = data("docker-29-containerd", "config.json");
	assert_int_equal(image_config_ident(t, path, &arch), 0);
	free(t);
	assert_string_equal(arch.id, classic.id);
	/* what the archive holds is what both stores show */
	assert_true(image_ident_same(&arch, &c8d));
	assert_true(image_ident_same(&arch, &classic));
	assert_false(image_ident_same(&arch, &other));
	/* loaded into a containerd store: still the same build */
	loaded = ident("docker-29-containerd", "image-identity-loaded.out");
	assert_true(image_ident_same(&arch, &loaded));
	/* nodes on both stores: one build, no odd one out */
	all[0] = classic;
	all[1] = c8d;
	all[2] = other;
	assert_int_equal(image_ident_reference(all, 3, 2), 0);
	memset(&all[2], 0, sizeof(all[2]));	/* a node without the image */
	assert_int_equal(image_ident_reference(all, 3, 2), 0);
	/* the old inspect line reads the c8d ID as any other */
	t = data("docker-29-containerd", "image-id.out");
	assert_int_equal(image_inspect_parse(t, id, sizeof(id), created,
	    sizeof(created)), 0);
	assert_string_equal(id, c8d.id);
	free(t);
	/* recorded on dockerd 20.10: the classic store, an old save */
	rec = ident("docker-20.10.24", "image-identity.out");
	assert_int_equal(rec.nlayers, 1);
	t = data("docker-20.10.24", "save-manifest.out");
	assert_int_equal(archive_manifest_config(t, "vllm/vllm-openai:cu130-"
	    "nightly", path, sizeof(path), other_tags, sizeof(other_tags)), 0);
	assert_int_equal(strncmp(path, rec.id, 64), 0);
	assert_string_equal(path + 64, ".json");
	free(t);
	/* malformed */
	assert_int_equal(image_ident_parse("sha256:abc|x|", &rec), -1);
	assert_int_equal(image_ident_parse("template: :1: oops", &rec), -1);
	assert_int_equal(image_config_ident("{\"rootfs\":{}}", NULL, &rec), -1);
	assert_int_equal(image_config_ident("nope", NULL, &rec), -1);
}

#define HEX64	"0123456789abcdef0123456789abcdef" \
		"0123456789abcdef0123456789abcdef"

/* The dates the two stores print compare without trailing zeros. */
static void
test_image_created(void **state)
{
	struct image_ident a, b;

	(void)state;
	assert_int_equal(image_ident_parse("sha256:" "0123456789abcdef0123456789"
	    "abcdef0123456789abcdef0123456789abcdef|2026-01-07T10:00:00.500000000"
	    "Z|sha256:aa,", &a), 0);
	assert_int_equal(image_ident_parse("0123456789abcdef0123456789abcdef0123"
	    "456789abcdef0123456789abcdef|2026-01-07T10:00:00.5Z|sha256:aa,",
	    &b), 0);
	assert_string_equal(a.created, "2026-01-07T10:00:00.5Z");
	assert_true(image_ident_same(&a, &b));
	assert_int_equal(image_ident_parse("0123456789abcdef0123456789abcdef0123"
	    "456789abcdef0123456789abcdef|2026-01-07T10:00:00.000Z|sha256:aa,",
	    &b), 0);
	assert_string_equal(b.created, "2026-01-07T10:00:00Z");
	/* podman prints Go's time.Time String(); an offset is UTC too */
	assert_int_equal(image_ident_parse(HEX64 "|2026-01-07 10:00:00.5 "
	    "+0000 UTC|sha256:aa,", &b), 0);
	assert_string_equal(b.created, "2026-01-07T10:00:00.5Z");
	assert_true(image_ident_same(&a, &b));
	assert_int_equal(image_ident_parse(HEX64 "|2026-01-07 12:00:00.5 "
	    "+0200 CEST|sha256:aa,", &b), 0);
	assert_string_equal(b.created, "2026-01-07T10:00:00.5Z");
	assert_int_equal(image_ident_parse(HEX64 "|2026-01-07T05:30:00.500"
	    "-04:30|sha256:aa,", &b), 0);
	assert_string_equal(b.created, "2026-01-07T10:00:00.5Z");
	/* a date in no known shape is kept, and equals only itself */
	assert_int_equal(image_ident_parse(HEX64 "|last Tuesday|sha256:aa,",
	    &b), 0);
	assert_string_equal(b.created, "last Tuesday");
	assert_false(image_ident_same(&a, &b));
}

/* The commands, every value quoted, a config path checked. */
static void
test_image_commands(void **state)
{
	char err[ERRLEN], *cmd;
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));

	(void)state;
	assert_non_null(cf);
	cmd = cmd_image_identity(cf);
	assert_string_equal(cmd, "docker image inspect --format "
	    "'{{.Id}}|{{.Created}}|{{range .RootFS.Layers}}{{.}},{{end}}' "
	    "vllm/vllm-openai:cu130-nightly");
	free(cmd);
	/* no archive configured: nothing to read */
	assert_null(cmd_archive_config(cf, 0, "blobs/sha256/0123456789abcdef0123"
	    "456789abcdef0123456789abcdef0123456789abcdef"));
	cmd = cmd_gpu_run(cf);
	assert_string_equal(cmd, "docker run --rm --pull never --network none "
	    "--label tandem.cluster=spark --label tandem.check=gpus --gpus all "
	    "--entrypoint true vllm/vllm-openai:cu130-nightly");
	free(cmd);
	config_free(cf);
}

/* The GPU question, answered by the engine. */
static void
test_gpu_run(void **state)
{
	static const struct {
		const char		*dir;
		const char		*name;
		enum gpu_verdict	 v;
		int			 diag;
	} c[] = {
		{ "docker-20.10.24", "gpus-run-ok", GPU_WORKS, -1 },
		/* the hook alone: no nvidia runtime listed, GPUs work */
		{ "docker-20.10.24", "gpus-run-unlisted", GPU_WORKS, -1 },
		{ "docker-20.10.24", "gpus-run-off", GPU_REFUSED,
		  DIAG_NVIDIA_RUNTIME_MISSING },
		{ "docker-28", "run-gpus-off", GPU_REFUSED,
		  DIAG_NVIDIA_RUNTIME_MISSING },
		/* no CDI spec (yet): retried (issue 41 item 6) */
		{ "podman-4.3", "gpus-run-off", GPU_REFUSED,
		  DIAG_CDI_UNRESOLVABLE },
		{ "docker-28", "gpus-run-driver", GPU_DRIVER, DIAG_GPUS_MISSING },
		/* the driver older than the image's CUDA: no retry helps */
		{ "docker-28", "gpus-run-cuda-old", GPU_DRIVER,
		  DIAG_CUDA_DRIVER_TOO_OLD },
		{ "docker-28", "run-image-missing", GPU_ENGINE,
		  DIAG_IMAGE_MISSING },
		/* --pull never: no pull for a check, the engine's own words */
		{ "docker-28.2-cli", "gpus-run-no-pull", GPU_ENGINE,
		  DIAG_IMAGE_MISSING },
		{ "docker-20.10.24", "gpus-run-no-pull", GPU_ENGINE,
		  DIAG_IMAGE_MISSING },
		{ "podman-4.3", "gpus-run-no-pull", GPU_ENGINE,
		  DIAG_IMAGE_MISSING },
		{ "docker-28", "engine-down", GPU_ENGINE, DIAG_ENGINE_DOWN },
		{ "docker-28.2-cli", "permission-denied-ps", GPU_ENGINE,
		  DIAG_ENGINE_PERMISSION },
		{ "docker-29", "permission-denied-info", GPU_ENGINE,
		  DIAG_ENGINE_PERMISSION },
		{ "docker-20.10.24", "info-template-error", GPU_UNKNOWN,
		  DIAG_UNRECOGNISED_ANSWER },
	};
	char name[80], detail[300];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *out, *err;
		int rc, diag;

		snprintf(name, sizeof(name), "%s.out", c[i].name);
		out = data(c[i].dir, name);
		snprintf(name, sizeof(name), "%s.err", c[i].name);
		err = data(c[i].dir, name);
		snprintf(name, sizeof(name), "%s.rc", c[i].name);
		rc = data_int(c[i].dir, name);
		assert_int_equal(gpucheck_verdict(rc, out, err, "docker run "
		    "--gpus all", detail, sizeof(detail), &diag), c[i].v);
		assert_int_equal(diag, c[i].diag);
		assert_true(utf8_valid(detail));
		/* what the preflight's check makes of that detail */
		if (c[i].v != GPU_WORKS)
			assert_int_equal(recovery_preflight_diag(PF_NVIDIA,
			    detail), c[i].diag);
		free(out);
		free(err);
	}
}

/*
 * cuda-driver-too-old's fix names both versions (issue 41 item 8): the
 * image's requirement from the hook's recorded line, the node's driver
 * with the CUDA NVIDIA's table gives its branch.
 */
static void
test_gpu_cuda_fix(void **state)
{
	char *out = data("docker-28", "gpus-run-cuda-old.out");
	char *err = data("docker-28", "gpus-run-cuda-old.err");
	char detail[400], fix[320];
	int diag;

	(void)state;
	assert_int_equal(gpucheck_verdict(data_int("docker-28",
	    "gpus-run-cuda-old.rc"), out, err, "docker run --gpus all", detail,
	    sizeof(detail), &diag), GPU_DRIVER);
	assert_int_equal(diag, DIAG_CUDA_DRIVER_TOO_OLD);
	gpucheck_cuda_fix(detail, "535.104.05", fix, sizeof(fix));
	assert_string_equal(fix, "driver 535.104.05 supports CUDA 12.2; the "
	    "image needs cuda>=12.8: update the driver or use an image built "
	    "for CUDA 12.2, then tandemctl rebuild");
	/* a branch the table does not hold: the driver alone */
	gpucheck_cuda_fix(detail, "610.10", fix, sizeof(fix));
	assert_string_equal(fix, "driver 610.10; the image needs cuda>=12.8: "
	    "update the driver or use an image built for the driver's CUDA, "
	    "then tandemctl rebuild");
	/* the memory query did not answer: said so, the image's still named */
	gpucheck_cuda_fix(detail, "", fix, sizeof(fix));
	assert_non_null(strstr(fix, "version not read"));
	assert_non_null(strstr(fix, "cuda>=12.8"));
	assert_string_equal(gpucheck_driver_cuda("580.95.05"), "13.0");
	assert_string_equal(gpucheck_driver_cuda("570.124.06"), "12.8");
	assert_string_equal(gpucheck_driver_cuda("550.54.14"), "12.4");
	assert_string_equal(gpucheck_driver_cuda("470.256.02"), "11.4");
	assert_null(gpucheck_driver_cuda("390.157"));
	assert_null(gpucheck_driver_cuda("[N/A]"));
	assert_null(gpucheck_driver_cuda(NULL));
	free(out);
	free(err);
}

/* Engine answers: permission denied, the engine gone, a template. */
static void
test_engine_answers(void **state)
{
	static const struct {
		const char	*dir;
		const char	*name;
		const char	*code;	/* NULL: nothing the catalogue knows */
	} c[] = {
		{ "docker-20.10.24", "permission-denied-ps.err",
		  "engine-permission" },
		/* the 20.10 CLI's info: a template error, not the permission */
		{ "docker-20.10.24", "permission-denied-info.err", NULL },
		{ "docker-28.2-cli", "permission-denied-info.err",
		  "engine-permission" },
		{ "docker-29", "permission-denied-info.err", "engine-permission" },
		{ "docker-29", "engine-missing.err", "engine-down" },
		{ "docker-20.10.24", "info-template-error.err", NULL },
		{ "docker-28.2-cli", "info-template-error.err", NULL },
		{ "docker-29", "info-template-error.err", NULL },
		{ "podman-4.3", "info-template-error.err", NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *t = data(c[i].dir, c[i].name);
		const struct diag *d = diag_match(t, NULL, 0);

		if (c[i].code) {
			assert_non_null(d);
			assert_string_equal(d->code, c[i].code);
			/* a retry cannot give ssh.user the socket */
			assert_int_equal(d->retryable, d->id != DIAG_ENGINE_PERMISSION);
		} else
			assert_null(d);
		free(t);
	}
}

/*
 * Every preflight check fed an answer it does not know: "could not tell",
 * retried, never a terminal diagnosis; the engine-level answers name
 * their cause from any check.
 */
static void
test_preflight_unknown(void **state)
{
	static const char *const unknown[] = {
		"not checked: template: :1:2: executing \"\" at <.Nope>: can't "
		"evaluate field Nope in type system.info",
		"absent: template: :1:2: executing \"\" at <.Id>: oops",
		"Error: unsupported template",
		"\xff\xfe garbage",
		"",
	};
	char *perm = data("docker-28.2-cli", "permission-denied-info.err");
	char *down = data("docker-20.10.24", "engine-down.err");
	char *tmpl = data("docker-20.10.24", "permission-denied-info.err");
	char buf[300];
	size_t i;
	int c;

	(void)state;
	for (c = PF_ENGINE; c < PF_COUNT; c++) {
		for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
			enum diag_code code = recovery_preflight_diag(
			    (enum pf_check)c, unknown[i]);

			assert_int_equal(code, DIAG_UNRECOGNISED_ANSWER);
			assert_true(diag_get(code)->retryable);
		}
		utf8_fmt(buf, sizeof(buf), "not checked: %s", perm);
		assert_int_equal(recovery_preflight_diag((enum pf_check)c, buf),
		    DIAG_ENGINE_PERMISSION);
		utf8_fmt(buf, sizeof(buf), "not checked: %s", down);
		assert_int_equal(recovery_preflight_diag((enum pf_check)c, buf),
		    DIAG_ENGINE_DOWN);
		/* the incident: a template error is not nvidia-runtime-missing */
		utf8_fmt(buf, sizeof(buf), "not checked: %s", tmpl);
		assert_int_equal(recovery_preflight_diag((enum pf_check)c, buf),
		    DIAG_UNRECOGNISED_ANSWER);
	}
	free(perm);
	free(down);
	free(tmpl);
}

/* What "could not tell" says, and the node named once. */
static void
test_messages(void **state)
{
	char ex[300], msg[600], *err;
	size_t i;

	(void)state;
	err = data("docker-20.10.24", "info-template-error.err");
	diag_unknown_excerpt(ex, sizeof(ex), "docker info --format "
	    "'{{range $k, $v := .Runtimes}}{{println $k}}{{end}}'", 1, "\n", err);
	free(err);
	assert_string_equal(ex, "asked `docker info --format '{{range $k, $v := "
	    ".Runtimes}}{{println $k}}{{end}}'`, the answer (exit 1, template: "
	    ":1:2: executing \"\" at <.Nope>: can't evaluate field Nope in type "
	    "system.info) is not one tandem knows: could not tell");
	diag_format(diag_get(DIAG_UNRECOGNISED_ANSWER), "node1", ex, msg,
	    sizeof(msg));
	assert_int_equal(strncmp(msg, "tandem could not tell what an answer "
	    "means on node1: asked `docker info", 65), 0);
	assert_null(strstr(msg, "retries stopped"));
	/* garbage: first line only, valid UTF-8 */
	diag_unknown_excerpt(ex, sizeof(ex), "x", 125, "", "\xff\xc0\xaf oops\n"
	    "second line");
	assert_true(utf8_valid(ex));
	assert_null(strstr(ex, "second line"));
	diag_unknown_excerpt(ex, sizeof(ex), "x", -1, "", "");
	assert_string_equal(ex, "asked `x`, the answer (no output) is not one "
	    "tandem knows: could not tell");
	/* a long line is cut, the verdict kept (the preflight's 200 bytes) */
	{
		char small[200];

		diag_unknown_excerpt(small, sizeof(small), "docker run --gpus "
		    "all", 125, "", "docker: Error response from daemon: "
		    "failed to create task for container: failed to create "
		    "shim task: OCI runtime create failed: runc create failed: "
		    "unable to start container process: something new");
		assert_true(strlen(small) < sizeof(small));
		assert_non_null(strstr(small, "...) is not one tandem knows: "
		    "could not tell"));
		assert_int_equal(strncmp(small, "asked `docker run --gpus "
		    "all`, the answer (exit 125, docker: Error response", 73),
		    0);
	}
	/* no catalogue message names "the node": set_diag adds " on NODE" */
	for (i = 0; i < diag_count(); i++)
		assert_null(strstr(diag_at(i)->message, "on the node"));
	diag_format(diag_get(DIAG_ENGINE_DOWN), "node1", "Cannot connect",
	    msg, sizeof(msg));
	assert_string_equal(msg, "the container engine does not answer on "
	    "node1: Cannot connect");
	diag_format(diag_get(DIAG_ENGINE_PERMISSION), NULL, NULL, msg,
	    sizeof(msg));
	assert_non_null(strstr(msg, "(retries stopped)"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vllm_base_model),
		cmocka_unit_test(test_vllm_bodies),
		cmocka_unit_test(test_vllm_logs),
		cmocka_unit_test(test_pg_wait),
		cmocka_unit_test(test_pg_schedule),
		cmocka_unit_test(test_ray_formats),
		cmocka_unit_test(test_ray_npu),
		cmocka_unit_test(test_oci_archive),
		cmocka_unit_test(test_image_stores),
		cmocka_unit_test(test_image_created),
		cmocka_unit_test(test_image_commands),
		cmocka_unit_test(test_gpu_run),
		cmocka_unit_test(test_gpu_cuda_fix),
		cmocka_unit_test(test_engine_answers),
		cmocka_unit_test(test_preflight_unknown),
		cmocka_unit_test(test_messages),
	};

	return cmocka_run_group_tests_name("upstream", tests, NULL, NULL);
}
