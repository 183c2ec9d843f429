/* The rebuild plan: golden files for both example configs, and details. */
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
#include "linkcheck.h"
#include "plan.h"
#include "quote.h"


#include "slurp.h"

static void
golden(const char *cfgpath, const char *goldpath)
{
	char err[ERRLEN];
	struct config *cf = conffile_load(cfgpath, err, sizeof(err));
	struct plan p;
	struct sbuf out;
	char *want;

	assert_non_null(cf);
	plan_rebuild(cf, 0, &p);
	sbuf_init(&out);
	plan_print(cf, &p, NULL, &out);
	if (getenv("UPDATE_GOLDEN")) {
		/*
		 * Comparing the file with what was just written would pass
		 * whatever the plan says: write it, and report the test
		 * skipped, not passed. git diff shows what changed.
		 */
		FILE *fp = fopen(goldpath, "w");

		assert_non_null(fp);
		assert_true(fputs(out.s, fp) >= 0);
		assert_int_equal(fclose(fp), 0);
		print_message("UPDATE_GOLDEN: wrote %s, not compared\n",
		    goldpath);
		sbuf_free(&out);
		plan_free(&p);
		config_free(cf);
		skip();
	}
	want = slurp(goldpath);
	assert_string_equal(out.s, want);
	free(want);
	sbuf_free(&out);
	plan_free(&p);
	config_free(cf);
}

static void
test_golden_ray(void **state)
{
	(void)state;
	golden("etc/tandem.json", "tests/golden/plan-ray.txt");
}

static void
test_golden_dp(void **state)
{
	(void)state;
	golden("etc/tandem-dp.json", "tests/golden/plan-dp.txt");
}

/*
 * Every command preflight runs on a node (tandemctl check), for docker and
 * for podman, per node of the example config: one golden file.
 */
static void
preflight_cmds(struct config *cf, struct sbuf *out)
{
	size_t i;
	char *s;

	sbuf_addf(out, "# engine %s\n", cf->container.engine);
	for (i = 0; i < cf->nnodes; i++) {
		sbuf_addf(out, "## node %s\n", cf->nodes[i].name);
#define ONE(e)	do { s = (e); sbuf_addf(out, "%s\n", s ? s : "(none)"); \
	free(s); } while (0)
		ONE(cmd_engine_info(cf));
		ONE(cmd_image_identity(cf));
		ONE(cmd_archive_present(cf, i));
		ONE(cmd_archive_manifest(cf, i));
		ONE(cmd_archive_config(cf, i, "blobs/sha256/0123456789abcdef"
		    "0123456789abcdef0123456789abcdef0123456789abcdef"));
		ONE(cmd_image_load(cf, i));
		ONE(cmd_model_fingerprint(cf));
		ONE(cmd_iface_addr(cf, i));
		ONE(cmd_accel(cf, AQ_LIST));
		ONE(cmd_accel(cf, AQ_MEMORY));
		ONE(cmd_name_owner(cf, i));
		ONE(cmd_ray_port(cf));
		ONE(cmd_nvidia_runtime(cf));
		ONE(cmd_gpu_run(cf));
		/* the link check: the interface, then a ping each size */
		ONE(cmd_link_state(cf, i));
		ONE(cmd_link_ping(cf, i, 1 - i, linkcheck_ping_size(1500)));
		ONE(cmd_link_ping(cf, i, 1 - i, 0));
#undef ONE
	}
}

static void
test_golden_preflight(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	const char *path = "tests/golden/preflight.txt";
	struct sbuf out;
	char *want;

	(void)state;
	assert_non_null(cf);
	/* the worker has its image archive, at a path that needs quoting */
	cf->nodes[1].image_archive = strdup("/var/lib/tandem/vllm image.tar");
	sbuf_init(&out);
	preflight_cmds(cf, &out);
	free(cf->container.engine);
	cf->container.engine = strdup("podman");
	preflight_cmds(cf, &out);
	assert_int_equal(plan_wants_nvidia(cf), 1);
	if (getenv("UPDATE_GOLDEN")) {
		/* writes the file; the next run compares */
		FILE *fp = fopen(path, "w");

		assert_non_null(fp);
		fputs(out.s, fp);
		fclose(fp);
	} else {
		want = slurp(path);
		assert_string_equal(out.s, want);
		free(want);
	}
	sbuf_free(&out);
	config_free(cf);
}

static const char *
find_cmd(const struct plan *p, size_t node, enum phase ph)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->cmds[i].node == node && p->cmds[i].phase == ph)
			return p->cmds[i].shell;
	return NULL;
}

static void
test_ladder_and_order(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	struct plan p;
	const char *s;
	size_t i;

	(void)state;
	assert_non_null(cf);
	plan_rebuild(cf, 0.5, &p);
	s = find_cmd(&p, cf->head, PH_VLLM);
	assert_non_null(s);
	assert_non_null(strstr(s, "--gpu-memory-utilization 0.5 "));
	assert_null(strstr(s, "0.60"));
	/* Teardown of every node comes before anything starts. */
	for (i = 0; i < cf->nnodes; i++)
		assert_int_equal(p.cmds[i].phase, PH_TEARDOWN);
	for (i = 1; i < p.n; i++)
		assert_true(p.cmds[i].phase >= p.cmds[i - 1].phase);
	plan_free(&p);
	config_free(cf);
}

static void
test_dp_worker(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem-dp.json", err,
	    sizeof(err));
	struct strv v;
	char *s;

	(void)state;
	assert_non_null(cf);
	strv_init(&v);
	plan_vllm_argv(cf, 1, 0, &v);
	s = shell_command(v.v);
	assert_non_null(strstr(s, "--headless --data-parallel-size 2 "
	    "--data-parallel-size-local 1 --data-parallel-start-rank 1 "
	    "--data-parallel-address 192.168.13.33 --data-parallel-rpc-port "
	    "13389 --seed 1024"));
	assert_null(strstr(s, "--api-server-count"));
	assert_null(strstr(s, "--port"));
	free(s);
	strv_free(&v);
	config_free(cf);
}

/* The docker run of one node of the config, as one shell string. */
static char *
run_of(const struct config *cf, size_t node)
{
	struct plan p;
	char *s = NULL;
	size_t i;

	plan_rebuild(cf, 0, &p);
	for (i = 0; i < p.n; i++)
		if (p.cmds[i].node == node && p.cmds[i].phase != PH_TEARDOWN)
			s = xstrdup(p.cmds[i].shell);
	plan_free(&p);
	return s;
}

/*
 * container.cache_dir (issue 47): each node's start mounts
 * cache_dir/KEY and the hub beside it, and points vLLM, inductor, Triton
 * and the hub there, unless nodes[].env sets the variable; KEY follows
 * image, model and vllm.args only; the mkdir is in the shell, not in what
 * the plan shows; the label hash does not move with the cache; "" is off.
 */
static void
test_cache(void **state)
{
	char err[ERRLEN], *s, *dir, *want;
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	uint64_t hash, key;
	struct plan p;
	struct kv *kv;

	(void)state;
	assert_non_null(cf);
	assert_string_equal(cf->container.cache_dir, "/var/cache/tandem");
	key = plan_cache_key(cf);
	dir = plan_cache_dir(cf);
	s = run_of(cf, 1);
	/* the prune and the mkdir before it: tandem's names, quoted paths */
	want = xprintf("c=/var/cache/tandem k=%s i=%.8s m=52428800; mkdir -p "
	    "-- \"$c/$k\" \"$c/huggingface\" 2>/dev/null; ", dir + 18,
	    dir + 18);
	assert_true(strncmp(s, want, strlen(want)) == 0);
	free(want);
	assert_non_null(strstr(s, "[ \"${n%-*}\" = \"$i\" ] || rm -rf -- "
	    "\"$e\";; esac; done; "));
	assert_non_null(strstr(s, "grep -xE '[0-9a-f]{8}-[0-9a-f]{8}' | "
	    "grep -vxF -- \"$k\" | head -n 1) && [ -n \"$o\" ]; do rm -rf -- "
	    "\"$c/$o\"; done; docker run "));
	assert_true(strlen(dir) == 18 + 17 && dir[18 + 8] == '-');
	want = xprintf(" -v %s:/var/cache/tandem -v /var/cache/tandem/"
	    "huggingface:/var/cache/tandem-hub -e VLLM_CACHE_ROOT=/var/cache/"
	    "tandem/vllm -e TORCHINDUCTOR_CACHE_DIR=/var/cache/tandem/inductor "
	    "-e TRITON_CACHE_DIR=/var/cache/tandem/triton -e HF_HOME=/var/cache/"
	    "tandem-hub ", dir);
	assert_non_null(strstr(s, want));
	free(want);
	free(s);
	plan_rebuild(cf, 0, &p);
	assert_null(strstr(p.cmds[p.n - 1].shown, "mkdir"));
	assert_null(strstr(p.cmds[p.n - 1].shown, "rm -rf"));
	plan_free(&p);

	/* the operator's own variable wins, on that node only */
	kv = xrealloc(cf->nodes[1].env.v, (cf->nodes[1].env.n + 1) *
	    sizeof(*kv));
	cf->nodes[1].env.v = kv;
	kv[cf->nodes[1].env.n].key = xstrdup("TRITON_CACHE_DIR");
	kv[cf->nodes[1].env.n++].val = xstrdup("/mine");
	s = run_of(cf, 1);
	assert_non_null(strstr(s, " -e TRITON_CACHE_DIR=/mine "));
	assert_null(strstr(s, "TRITON_CACHE_DIR=/var/cache"));
	assert_non_null(strstr(s, " -e VLLM_CACHE_ROOT=/var/cache/tandem/vllm "));
	free(s);
	plan_rebuild(cf, 0, &p);
	for (size_t i = 0; i < p.n; i++)
		if (p.cmds[i].phase == PH_HEAD)
			assert_non_null(strstr(p.cmds[i].shell,
			    "TRITON_CACHE_DIR=/var/cache/tandem/triton"));
	plan_free(&p);

	/* another flag: another key; the same three again: the same key */
	strv_add(&cf->vllm.args, "--enforce-eager");
	assert_int_not_equal(plan_cache_key(cf), key);
	free(cf->vllm.args.v[--cf->vllm.args.n]);
	cf->vllm.args.v[cf->vllm.args.n] = NULL;
	assert_int_equal(plan_cache_key(cf), key);
	{
		char *a = plan_cache_name(cf), *b;

		strv_add(&cf->vllm.args, "--enforce-eager");
		b = plan_cache_name(cf);
		assert_memory_equal(a, b, 9);	/* the same image's */
		assert_string_not_equal(a, b);
		free(b);
		free(cf->vllm.args.v[--cf->vllm.args.n]);
		cf->vllm.args.v[cf->vllm.args.n] = NULL;
		free(cf->container.image);
		cf->container.image = xstrdup("vllm/vllm-openai:v0.15.1");
		b = plan_cache_name(cf);
		assert_memory_not_equal(a, b, 8);	/* another image's */
		free(b);
		free(a);
	}

	/* moved or off: the label hash stays, the start has no cache */
	hash = plan_hash(cf);
	free(cf->container.cache_dir);
	cf->container.cache_dir = xstrdup("/srv/c");
	assert_int_equal(plan_hash(cf), hash);
	free(cf->container.cache_dir);
	cf->container.cache_dir = NULL;
	assert_int_equal(plan_hash(cf), hash);
	assert_null(plan_cache_dir(cf));
	s = run_of(cf, 1);
	assert_null(strstr(s, "mkdir"));
	assert_null(strstr(s, "rm -rf"));
	assert_null(strstr(s, "VLLM_CACHE_ROOT"));
	assert_null(strstr(s, "/var/cache/tandem"));
	free(s);
	free(dir);
	config_free(cf);
}

/*
 * Per node, by accelerator: the Ascend data-parallel guide's HCCL_IF_IP,
 * HCCL_SOCKET_IFNAME, TP_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME, as for
 * NVIDIA), ASCEND_RT_VISIBLE_DEVICES for the 8 davinci devices, no NCCL
 * variable and no --gpus; NVIDIA keeps NCCL_SOCKET_IFNAME and --gpus all;
 * none gets no --gpus.
 */
static void
test_accel_env(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem-dp.json", err,
	    sizeof(err));
	char *s;

	(void)state;
	assert_non_null(cf);
	assert_int_equal(cf->container.accelerator, ACCEL_ASCEND);
	s = run_of(cf, 1);
	assert_non_null(strstr(s, " -e VLLM_HOST_IP=192.168.13.34 -e "
	    "GLOO_SOCKET_IFNAME=enp67s0f0 -e HCCL_IF_IP=192.168.13.34 -e "
	    "HCCL_SOCKET_IFNAME=enp67s0f0 -e TP_SOCKET_IFNAME=enp67s0f0 -e "
	    "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 -e "
	    "PYTORCH_NPU_ALLOC_CONF="));
	assert_null(strstr(s, "NCCL"));
	assert_null(strstr(s, "--gpus"));
	free(s);
	s = run_of(cf, 0);
	assert_non_null(strstr(s, " -e HCCL_IF_IP=192.168.13.33 "));
	free(s);
	cf->container.accelerator = ACCEL_NONE;
	s = run_of(cf, 0);
	assert_non_null(strstr(s, " -e NCCL_SOCKET_IFNAME=enp67s0f0 "));
	assert_null(strstr(s, "HCCL_IF_IP"));
	free(s);
	config_free(cf);
	cf = conffile_load("etc/tandem.json", err, sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->container.accelerator, ACCEL_NVIDIA);
	s = run_of(cf, 1);
	assert_non_null(strstr(s, "docker run -d --gpus all "));
	assert_non_null(strstr(s, " -e NCCL_SOCKET_IFNAME=enp1s0f0np0 "));
	assert_null(strstr(s, "HCCL"));
	free(s);
	cf->container.accelerator = ACCEL_NONE;
	s = run_of(cf, 1);
	assert_null(strstr(s, "--gpus"));
	free(s);
	config_free(cf);
}

static void
test_plan_hash(void **state)
{
	char err[ERRLEN];
	struct config *a = conffile_load("etc/tandem.json", err, sizeof(err));
	struct config *b = conffile_load("etc/tandem.json", err, sizeof(err));
	struct plan p;

	(void)state;
	assert_true(plan_hash(a) == plan_hash(b));
	free(b->container.image);
	b->container.image = strdup("other/image:1");
	assert_true(plan_hash(a) != plan_hash(b));
	/* every container carries the hash of the config that started it */
	plan_rebuild(a, 0.5, &p);
	assert_non_null(strstr(p.cmds[a->nnodes].shell, "--label tandem.plan="));
	plan_free(&p);
	config_free(a);
	config_free(b);
}

/*
 * The label carries the plan format: what this tandem writes matches
 * itself; a format that hashes other text (every one before 3, which
 * derives Ascend's variables) is neither same nor other: an upgrade adopts
 * without comparing.
 */
static void
test_plan_label(void **state)
{
	const uint64_t h = 0xaf4fc3ab8a70b8daULL;
	static const struct {
		const char	*label;
		enum plan_match	 want;
	} cases[] = {
		/* formats before PLAN_HASH_SINCE: the bare hash is 1 */
		{ "af4fc3ab8a70b8da", PLAN_OTHER_FORMAT },
		{ "1:af4fc3ab8a70b8da", PLAN_OTHER_FORMAT },
		{ "2:af4fc3ab8a70b8da", PLAN_OTHER_FORMAT },
		{ "3:af4fc3ab8a70b8da", PLAN_OTHER_FORMAT },
		{ "4:af4fc3ab8a70b8db", PLAN_OTHER_CONFIG },
		/* a newer tandem's format */
		{ "5:af4fc3ab8a70b8da", PLAN_OTHER_FORMAT },
		{ "99999999999999999999:af4fc3ab8a70b8da", PLAN_OTHER_FORMAT },
		/* no label, one set by hand, or not tandem's shape */
		{ "", PLAN_OTHER_CONFIG },
		{ "mine", PLAN_OTHER_CONFIG },
		{ "af4fc3ab8a70b8d", PLAN_OTHER_CONFIG },
		{ "af4fc3ab8a70b8da0", PLAN_OTHER_CONFIG },
		{ "AF4FC3AB8A70B8DA", PLAN_OTHER_CONFIG },
		{ ":af4fc3ab8a70b8da", PLAN_OTHER_CONFIG },
		{ "0:af4fc3ab8a70b8da", PLAN_OTHER_CONFIG },
		{ "2x:af4fc3ab8a70b8da", PLAN_OTHER_CONFIG },
	};
	char label[PLAN_LABEL_MAX];
	size_t i;

	(void)state;
	plan_label(h, label, sizeof(label));
	assert_string_equal(label, "4:af4fc3ab8a70b8da");
	assert_int_equal(plan_label_match(label, h), PLAN_SAME);
	assert_int_equal(plan_label_match(label, h + 1), PLAN_OTHER_CONFIG);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (plan_label_match(cases[i].label, h) != cases[i].want)
			fail_msg("%s: %d, not %d", cases[i].label,
			    plan_label_match(cases[i].label, h), cases[i].want);
}

/* Each engine's own templates: podman 4 has neither .ServerVersion in
 * info nor .Action/.Actor in events, and fails on them; its rm -f waits
 * 10 s before it kills unless told not to; its ps has no .Label. */
static void
test_engine_templates(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	char *s;

	(void)state;
	assert_non_null(cf);
	s = cmd_engine_info(cf);
	assert_string_equal(s, "docker info --format '{{.ServerVersion}}'");
	free(s);
	s = cmd_teardown(cf, 0);
	assert_string_equal(s, "docker rm -f vllm-head");
	free(s);
	s = cmd_name_owner(cf, 1);
	assert_string_equal(s, "docker ps -a --filter 'name=^vllm-worker$' "
	    "--format '{{.Label \"tandem.cluster\"}} {{.Status}}'");
	free(s);
	free(cf->container.engine);
	cf->container.engine = strdup("podman");
	s = cmd_engine_info(cf);
	assert_string_equal(s, "podman info --format '{{.Version.Version}}'");
	free(s);
	s = cmd_events(cf, 1, 0);
	assert_string_equal(s, "podman events --filter type=container --filter "
	    "container=vllm-worker --format '{{.Status}} {{.ID}} {{.Name}}'");
	free(s);
	s = cmd_teardown(cf, 0);
	assert_string_equal(s, "podman rm -f -t 0 vllm-head");
	free(s);
	s = cmd_name_owner(cf, 1);
	assert_string_equal(s, "podman ps -a --filter 'name=^vllm-worker$' "
	    "--format '{{index .Labels \"tandem.cluster\"}} {{.Status}}'");
	free(s);
	config_free(cf);
}

/*
 * The events stream: a restart replays the gap with --since, as a duration
 * in whole seconds rounded up (the node's clock is the reference).
 */
static void
test_events(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	char *s;

	(void)state;
	assert_non_null(cf);
	s = cmd_events(cf, 1, 0);
	assert_string_equal(s, "docker events --filter type=container --filter "
	    "container=vllm-worker --format '{{.Action}} {{.Actor.ID}} "
	    "{{.Actor.Attributes.name}}'");
	free(s);
	s = cmd_events(cf, 1, 3.2);
	assert_non_null(strstr(s, "docker events --since 4s --filter "));
	free(s);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_ray),
		cmocka_unit_test(test_golden_dp),
		cmocka_unit_test(test_golden_preflight),
		cmocka_unit_test(test_ladder_and_order),
		cmocka_unit_test(test_dp_worker),
		cmocka_unit_test(test_plan_hash),
		cmocka_unit_test(test_plan_label),
		cmocka_unit_test(test_accel_env),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_engine_templates),
		cmocka_unit_test(test_events),
	};

	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
