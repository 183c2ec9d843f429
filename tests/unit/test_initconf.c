/*
 * tandemctl init's decisions on what two DGX Sparks say (the DGX Spark
 * Ray guide's cluster): the config it writes passes tandemd --check's
 * parser, with the QSFP link, TP 2, the image and model on both nodes;
 * and each thing that stops it says what to do. The parsers of the
 * nodes' answers on the tools' formats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"
#include "initconf.h"
#include "util.h"
#include "slurp.h"

#define DATA "tests/unit/data/net-dgx-spark/"
#define IMG "vllm/vllm-openai:cu130-nightly"
#define MODEL "/model/qwen3.5-122"

static void
mknode(struct init_node *nn, const char *host, const char *role,
    const char *mgmt)
{
	char path[256], *t, err[ERRLEN];

	memset(nn, 0, sizeof(*nn));
	nn->ssh_host = host;
	nn->ssh_port = 22;
	snprintf(path, sizeof(path), "hostname spark-%s\nssh 192.168.110.5 "
	    "50022 %s 22\n/usr/bin/docker\n/usr/bin/nvidia-smi\n", role, mgmt);
	assert_int_equal(facts_parse(path, &nn->facts), 0);
	snprintf(path, sizeof(path), DATA "ip-addr-%s.out", role);
	t = slurp(path);
	assert_int_equal(net_parse_ip_addr(t, strlen(t), &nn->ifs, err,
	    sizeof(err)), 0);
	free(t);
	snprintf(path, sizeof(path), DATA "speeds-%s.out", role);
	t = slurp(path);
	net_parse_speeds(t, &nn->ifs);
	free(t);
	nn->gpus = gpus_parse("GPU 0: NVIDIA GB10 (UUID: GPU-8f3a2c1e-0b7d-4e59-"
	    "9a61-2d4c5e6f7a8b)\n", nn->gpu_name, sizeof(nn->gpu_name));
	/* the guide's node: 40 GiB of 119.7 held by other programs */
	nn->gpu_free = gpu_free_share("122573, 40960\n");
	nn->engine = "docker";
	snprintf(nn->engine_version, sizeof(nn->engine_version), "28.5.2");
	strv_init(&nn->images);
	images_parse(IMG " 4f1d2c3b4a59\nnvcr.io/nvidia/vllm:26.01-py3 "
	    "0a1b2c3d4e5f\n<none>:<none> 77aa88bb99cc\nubuntu:24.04 "
	    "1234567890ab\n", &nn->images);
	strv_init(&nn->model_dirs);
	dirs_parse(MODEL "\n", &nn->model_dirs);
	nn->model_found = 1;
	nn->model_files = 42;
	nn->model_bytes = 250LL << 30;
}

static const struct init_opts opts = {
	.name = "spark", .user = "root",
	.identity_file = "/etc/tandem/id_ed25519",
	.known_hosts_file = "/etc/tandem/known_hosts",
	.token_file = "/etc/tandem/api-token", .image = IMG,
	.head_is_local = 1,
};

static void
test_parsers(void **state)
{
	struct node_facts f;
	struct strv v;
	char name[64];

	(void)state;
	assert_int_equal(facts_parse("hostname spark-1\nssh 10.77.7.254 41234 "
	    "10.77.7.1 22\n/usr/bin/docker\n/var/tmp/bin/nvidia-smi\n", &f), 0);
	assert_string_equal(f.hostname, "spark-1");
	assert_string_equal(f.ssh_ip, "10.77.7.1");
	assert_true(f.docker && f.nvidia_smi);
	assert_false(f.podman || f.npu_smi);
	assert_int_equal(facts_parse("bash: read: error\n", &f), -1);
	assert_int_equal(gpus_parse("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-"
	    "x)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-y)\n", name,
	    sizeof(name)), 2);
	assert_string_equal(name, "NVIDIA H100 80GB HBM3");
	assert_int_equal(gpus_parse("No devices were found\n", name,
	    sizeof(name)), 0);
	assert_int_equal(gpus_parse("", name, sizeof(name)), 0);
	/* issue 43 item 6: "GPU 00:" ending the answer sent strstr past
	 * the buffer (an exact-size heap copy, so SAN=1 sees an over-read) */
	{
		char *t = xstrdup("GPU 00:");

		assert_int_equal(gpus_parse(t, name, sizeof(name)), 1);
		assert_string_equal(name, "");
		free(t);
		t = xstrdup("\n\nGPU 5t2\xa1te:");
		assert_int_equal(gpus_parse(t, name, sizeof(name)), 1);
		free(t);
		t = xstrdup("GPU 0:NVIDIA GB10");
		assert_int_equal(gpus_parse(t, name, sizeof(name)), 1);
		assert_string_equal(name, "NVIDIA GB10");
		free(t);
	}
	/* nvidia-smi --query-gpu=memory.total,memory.used, nounits: MiB */
	assert_true(gpu_free_share("81559, 0\n81559, 40779\n") > 0.49 &&
	    gpu_free_share("81559, 0\n81559, 40779\n") < 0.51);
	assert_true(gpu_free_share("[N/A], [N/A]\n") < 0);
	assert_true(gpu_free_share("[Not Supported], [Not Supported]\n") < 0);
	assert_true(gpu_free_share("") < 0);
	assert_true(gpu_free_share("100, 200\n") < 0);
	/* recorded on the bed's docker 20.10.24 */
	{
		char *t = slurp("tests/unit/data/docker-20.10.24/image-ls.out");

		strv_init(&v);
		images_parse(t, &v);
		assert_int_equal(v.n, 2);
		assert_true(strv_has(&v, "vllm/vllm-openai:cu130-nightly"));
		assert_true(strv_has(&v, "nvcr.io/nvidia/vllm:26.01-py3"));
		strv_free(&v);
		free(t);
	}
	strv_init(&v);
	images_parse("a:1 x\na:1 y\n<none>:<none> z\nb:2 w", &v);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.v[1], "b:2");
	strv_free(&v);
	strv_init(&v);
	dirs_parse("/model/a/\n/model/a\nrelative\n\n/models/b/c\n", &v);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.v[0], "/model/a");
	strv_free(&v);
}

static void
test_dgx_spark(void **state)
{
	struct init_node n[2];
	struct init_plan p;
	struct strv errs;
	struct config *cf;
	char *text, *m, err[ERRLEN];

	(void)state;
	mknode(&n[0], "192.168.110.32", "head", "192.168.110.32");
	mknode(&n[1], "192.168.110.97", "worker", "192.168.110.97");
	strv_init(&errs);
	m = init_pick_model(n, 2, &opts, &errs);
	assert_string_equal(m, MODEL);
	assert_int_equal(errs.n, 0);
	init_derive(n, 2, &opts, m, &p);
	assert_int_equal(p.errors.n, 0);
	assert_non_null(p.config);
	assert_int_equal(p.tp, 2);
	assert_string_equal(p.links[p.link].subnet, "10.10.10.0/24");
	text = json_dumps(p.config, JSON_INDENT(2));
	cf = config_parse(text, "tandem.json", err, sizeof(err));
	if (cf == NULL)
		fail_msg("%s\n%s", err, text);
	assert_int_equal(cf->nnodes, 2);
	assert_string_equal(cf->nodes[0].name, "spark-head");
	assert_string_equal(cf->nodes[0].ip, "10.10.10.1");
	assert_string_equal(cf->nodes[1].ip, "10.10.10.2");
	assert_string_equal(cf->nodes[1].ifname, "enp1s0f0np0");
	assert_string_equal(cf->nodes[1].ssh_host, "192.168.110.97");
	assert_string_equal(cf->container.image, IMG);
	assert_string_equal(cf->container.volumes.v[0], "/model:/model");
	assert_int_equal(cf->ray.expect_gpus, 2);
	/* the guide's 0.60 where vLLM's 0.90 fails, then one step lower */
	assert_true(cf->vllm.gpu_memory_utilization > 0.599 &&
	    cf->vllm.gpu_memory_utilization < 0.601);
	assert_int_equal(cf->recovery.ngmu_steps, 2);
	assert_true(cf->recovery.gmu_steps[1] > 0.499 &&
	    cf->recovery.gmu_steps[1] < 0.501);
	assert_string_equal(cf->vllm.url, "http://127.0.0.1:8000");
	config_free(cf);
	free(text);
	init_plan_free(&p);

	/* tandemd elsewhere: vLLM probed at the head's fast address */
	{
		struct init_opts o = opts;

		o.head_is_local = 0;
		o.link = "192.168.110.0/24";
		init_derive(n, 2, &o, m, &p);
		assert_non_null(p.config);
		assert_string_equal(json_string_value(json_object_get(
		    json_object_get(p.config, "vllm"), "url")),
		    "http://192.168.110.32:8000");
		/* the management network by --link: said in what is left */
		assert_non_null(strstr(p.todo.v[0], "the network SSH uses"));
		init_plan_free(&p);
		/* the operator's own vllm.args after --: theirs win */
		{
			char *extra[] = { (char *)(uintptr_t)"--max-model-len",
			    (char *)(uintptr_t)"2048",
			    (char *)(uintptr_t)"--gpu-memory-utilization=0.5" };

			o.vllm_args = extra;
			o.nvllm_args = 3;
			init_derive(n, 2, &o, m, &p);
			text = json_dumps(json_object_get(json_object_get(
			    p.config, "vllm"), "args"), JSON_COMPACT);
			assert_string_equal(text, "[\"--tensor-parallel-size\","
			    "\"2\",\"--max-model-len\",\"2048\","
			    "\"--gpu-memory-utilization=0.5\"]");
			free(text);
			init_plan_free(&p);
			o.nvllm_args = 0;
		}
		/* GPU memory not reported: no value, the ladder from 0.9 */
		n[1].gpu_free = -1;
		o.link = NULL;
		init_derive(n, 2, &o, m, &p);
		assert_int_equal(json_array_size(json_object_get(json_object_get(
		    p.config, "vllm"), "args")), 2);
		assert_int_equal(json_array_size(json_object_get(json_object_get(
		    p.config, "recovery"), "gpu_memory_utilization_steps")), 4);
		init_plan_free(&p);
	}
	free(m);
	strv_free(&errs);
	init_node_free(&n[0]);
	init_node_free(&n[1]);
}

static int
has(const struct strv *v, const char *needle)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (strstr(v->v[i], needle))
			return 1;
	return 0;
}

static void
test_refusals(void **state)
{
	struct init_node n[2];
	struct init_plan p;
	struct init_opts o = opts;
	struct strv errs;

	(void)state;
	mknode(&n[0], "h", "head", "192.168.110.32");
	mknode(&n[1], "w", "worker", "192.168.110.97");
	/* two vLLM images on both and no --image */
	o.image = NULL;
	init_derive(n, 2, &o, MODEL, &p);
	assert_null(p.config);
	assert_true(has(&p.errors, "several vLLM images are on every node ("
	    "nvcr.io/nvidia/vllm:26.01-py3, " IMG "): pass --image REF"));
	init_plan_free(&p);
	/* --image missing on one node */
	o.image = "vllm/vllm-openai:v0.11.0";
	init_derive(n, 2, &o, MODEL, &p);
	assert_true(has(&p.errors, "image vllm/vllm-openai:v0.11.0 is not on "
	    "h: docker pull"));
	init_plan_free(&p);
	o.image = IMG;
	/* the model missing on the worker */
	n[1].model_found = 0;
	init_derive(n, 2, &o, MODEL, &p);
	assert_true(has(&p.errors, "model " MODEL " is not on w"));
	init_plan_free(&p);
	n[1].model_found = 1;
	/* GPUs differ; no GPU; NPUs */
	n[1].gpus = 2;
	init_derive(n, 2, &o, MODEL, &p);
	assert_true(has(&p.errors, "h has 1 GPUs, w 2"));
	init_plan_free(&p);
	n[1].gpus = 0;
	n[1].facts.nvidia_smi = 0;
	n[1].facts.npu_smi = 1;
	init_derive(n, 2, &o, MODEL, &p);
	assert_true(has(&p.errors, "w has Ascend NPUs"));
	init_plan_free(&p);
	n[1].gpus = 1;
	/* another engine */
	n[1].engine = "podman";
	init_derive(n, 2, &o, MODEL, &p);
	assert_true(has(&p.errors, "h runs docker, w runs podman"));
	init_plan_free(&p);
	n[1].engine = "docker";
	/* a --link no shared subnet has */
	o.link = "wlP9s9";
	init_derive(n, 2, &o, MODEL, &p);
	assert_true(has(&p.errors, "--link wlP9s9"));
	init_plan_free(&p);
	o.link = NULL;
	/* several model dirs, none */
	strv_init(&errs);
	dirs_parse("/model/b\n", &n[0].model_dirs);
	dirs_parse("/model/b\n", &n[1].model_dirs);
	assert_null(init_pick_model(n, 2, &o, &errs));
	assert_true(has(&errs, "several model directories are on every node "
	    "(/model/b, " MODEL ")"));
	strv_free(&errs);
	strv_init(&errs);
	init_node_free(&n[1]);
	mknode(&n[1], "w", "worker", "192.168.110.97");
	strv_free(&n[1].model_dirs);
	strv_init(&n[1].model_dirs);
	assert_null(init_pick_model(n, 2, &o, &errs));
	assert_true(has(&errs, "no model directory"));
	strv_free(&errs);
	init_node_free(&n[0]);
	init_node_free(&n[1]);
}

/*
 * The .deb's empty conffile and make install's copy of the example are no
 * one's config: init replaces them without --force; one byte changed is
 * someone's edit.
 */
static void
test_replaceable(void **state)
{
	char *t = slurp("etc/tandem.json"), *dp = slurp("etc/tandem-dp.json");
	const struct init_example ex[] = {
		{ "etc/tandem.json", (const unsigned char *)t, strlen(t) },
		{ "etc/tandem-dp.json", (const unsigned char *)dp, strlen(dp) },
	};
	char *edited = xstrdup(t);

	(void)state;
	assert_int_equal(init_conf_replaceable("", 0, ex, 2), INIT_CONF_EMPTY);
	assert_int_equal(init_conf_replaceable(t, strlen(t), ex, 2), 0);
	assert_int_equal(init_conf_replaceable(dp, strlen(dp), ex, 2), 1);
	edited[strlen(edited) / 2] ^= 1;
	assert_int_equal(init_conf_replaceable(edited, strlen(edited), ex, 2),
	    INIT_CONF_OWN);
	/* the example with a line added, or cut short, is an edit too */
	assert_int_equal(init_conf_replaceable(t, strlen(t) - 1, ex, 2),
	    INIT_CONF_OWN);
	assert_int_equal(init_conf_replaceable("\n", 1, ex, 2), INIT_CONF_OWN);
	free(edited);
	free(t);
	free(dp);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parsers),
		cmocka_unit_test(test_dgx_spark),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_replaceable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
