/* The failure catalogue against realistic excerpts (real Ray, vLLM and docker texts; the DGX Spark guide). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "diagnose.h"
#include "utf8.h"

struct sample {
	const char	*text;
	const char	*code;
	int		 retryable;
};

static const struct sample samples[] = {
	{ "(APIServer pid=13) INFO 03-04 10:00:00 [ray_utils.py:352] No "
	  "current placement group found.\nERROR 03-04 [core.py:708] EngineCore "
	  "failed to start.\nRuntimeError: Every node should have a unique IP "
	  "address. Got 3 nodes with node ids ['a', 'b', 'c'] and 2 unique IP "
	  "addresses {'10.10.10.1', '10.10.10.2'}. Please check your network "
	  "configuration.\nRuntimeError: Engine core initialization failed.",
	  "stale-ray-node", 1 },
	{ "(RayWorkerWrapper pid=1978, ip=10.41.0.8) [rank9]:[W "
	  "ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a "
	  "(local) address. Using the loopback address as fallback.\n"
	  "RuntimeError: Gloo connectFullMesh failed with ... Connection "
	  "refused, remote=[127.0.0.1]:14215", "gloo-loopback", 0 },
	/* Ray 2.52's RAY_CHECK in authentication_token_loader.cc [derived] */
	{ "[2026-11-02 09:12:40,515 C 61 61] authentication_token_loader.cc:62: "
	  " Check failed: !result.hasError() RAY_AUTH_TOKEN_PATH is set but "
	  "file cannot be opened or is empty: /run/tandem/ray-auth-token",
	  "ray-token-missing", 0 },
	{ "ValueError: Free memory on device cuda:0 (7.34/15.49 GiB) on "
	  "startup is less than desired GPU memory utilization (0.8, 12.39 "
	  "GiB). Decrease GPU memory utilization or reduce GPU memory used by "
	  "other processes.", "gpu-memory-low", 1 },
	{ "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
	  "GiB. GPU 0 has a total capacity of 119.70 GiB", "cuda-oom", 1 },
	{ "ValueError: To serve at least one request with the models's max seq "
	  "len (262144), (13.11 GiB KV cache is needed, which is larger than "
	  "the available KV cache memory (11.82 GiB).", "kv-cache-too-small",
	  0 },
	{ "ValueError: Cannot provide a placement group requiring 4 GPUs "
	  "(placement_group_specs=[...]) within 1800 seconds.",
	  "placement-group", 0 },
	{ "ValueError: The checkpoint you are trying to load has model type "
	  "`qwen3_5_moe` but Transformers does not recognize this "
	  "architecture.", "arch-unsupported", 0 },
	{ "ValueError: Model architectures ['Qwen3_5MoeForCausalLM'] are not "
	  "supported for now.", "arch-unsupported", 0 },
	{ "ValueError: Invalid repository ID or local directory specified: "
	  "'/model/qwen3.5-122'.", "model-missing", 0 },
	{ "Unable to find image 'vllm/vllm-openai:cu130-nightly' locally\n"
	  "docker: Error response from daemon: pull access denied for "
	  "vllm/vllm-openai", "image-missing", 0 },
	/* podman 4.3, recorded on the real engine */
	{ "Error: inspecting object: vllm/vllm-openai:cu130-nightly: image not "
	  "known", "image-missing", 0 },
	{ "Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
	  " Is the docker daemon running?", "engine-down", 1 },
	{ "OSError: [Errno 98] error while attempting to bind on address "
	  "('0.0.0.0', 8000): address already in use", "port-in-use", 1 },
	/* Ray's giving up (gcs_utils.py); its retries' warnings: no_match */
	{ "2023-05-22 16:41:02,771 ERROR gcs_utils.py:213 -- Failed to connect "
	  "to GCS. Please check `gcs_server.out` for more details.",
	  "gcs-unreachable", 1 },
	{ "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/"
	  "ProcessGroupNCCL.cpp:1970, unhandled system error",
	  "nccl-error", 1 },
	{ "ray.exceptions.ActorDiedError: The actor died unexpectedly before "
	  "finishing this task.", "worker-lost", 1 },
	{ "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
	  "an issue.", "worker-lost", 1 },
	/* issue 29: tests/unit/data/vllm-log, docker-28.2-cli, docker-29 */
	{ "ValueError: No available memory for the cache blocks. Try "
	  "increasing `gpu_memory_utilization` when initializing the engine.",
	  "kv-cache-no-memory", 0 },
	{ "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might "
	  "be asynchronously reported at some other API call", "cuda-oom", 1 },
	{ "permission denied while trying to connect to the Docker daemon "
	  "socket at unix:///var/run/docker.sock: Get \"http://%2Fvar%2Frun%2F"
	  "docker.sock/v1.50/info\": dial unix /var/run/docker.sock: connect: "
	  "permission denied", "engine-permission", 0 },
	{ "permission denied while trying to connect to the docker API at "
	  "unix:///var/run/docker.sock", "engine-permission", 0 },
	{ "failed to connect to the docker API at unix:///var/run/docker.sock; "
	  "check if the path is correct and if the daemon is running: dial "
	  "unix /var/run/docker.sock: connect: no such file or directory",
	  "engine-down", 1 },
	/* issue 41 items 6 and 8: tests/unit/data/README.md, "issue 41" */
	{ "Error: setting up CDI devices: unresolvable CDI devices "
	  "nvidia.com/gpu=all", "cdi-unresolvable", 1 },
	{ "docker: Error response from daemon: CDI device injection failed: "
	  "unresolvable CDI devices nvidia.com/gpu=all\n\nRun 'docker run "
	  "--help' for more information", "cdi-unresolvable", 1 },
	{ "docker: Error response from daemon: failed to create task for "
	  "container: failed to create shim task: OCI runtime create failed: "
	  "runc create failed: unable to start container process: error during "
	  "container init: error running prestart hook #0: exit status 1, "
	  "stdout: , stderr: Auto-detected mode as 'legacy'\n"
	  "nvidia-container-cli: requirement error: unsatisfied condition: "
	  "cuda>=12.8, please update your driver to a newer version, or use an "
	  "earlier cuda container", "cuda-driver-too-old", 0 },
	{ "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; "
	  "43.24 GiB total capacity; 40.39 GiB already allocated; 764.23 MiB "
	  "free)", "npu-oom", 1 },
	{ "torch.OutOfMemoryError: NPU out of memory. Tried to allocate 674.00 "
	  "MiB", "npu-oom", 1 },
	{ "Unable to find image 'no/such:1' locally\ndocker: Error response "
	  "from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: "
	  "lookup registry-1.docker.io on 10.255.255.53:53: dial udp "
	  "10.255.255.53:53: connect: network is unreachable",
	  "image-pull-failed", 1 },
	{ "Unable to find image 'no/such:1' locally\ndocker: Error response "
	  "from daemon: pull access denied for no/such, repository does not "
	  "exist or may require 'docker login'", "image-missing", 0 },
};

static void
test_sample(void **state)
{
	/* the index, not a pointer: the table is const */
	const struct sample *s = &samples[(uintptr_t)*state];
	char ex[300];
	const struct diag *d = diag_match(s->text, ex, sizeof(ex));

	assert_non_null(d);
	assert_string_equal(d->code, s->code);
	assert_int_equal(d->retryable, s->retryable);
	/* The excerpt is the line that matched, without leading blanks. */
	assert_non_null(strstr(s->text, ex));
	assert_null(strchr(ex, '\n'));
}

static void
test_no_match(void **state)
{
	(void)state;
	assert_null(diag_match("INFO Application startup complete.\n"
	    "Loading safetensors checkpoint shards: 100% Completed", NULL, 0));
	assert_null(diag_match("", NULL, 0));
	assert_null(diag_match(NULL, NULL, 0));
	/*
	 * Issue 41 item 8: warnings after which the process goes on. torch's
	 * Gloo fallback (a run continues over loopback) and Ray's retries
	 * (a worker that waits for a head still starting).
	 */
	assert_null(diag_match("(RayWorkerWrapper pid=1978, ip=10.41.0.8) "
	    "[rank9]:[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve "
	    "hostname to a (local) address. Using the loopback address as "
	    "fallback. Manually set the network interface to bind to with "
	    "GLOO_SOCKET_IFNAME.\nINFO Application startup complete.", NULL, 0));
	assert_null(diag_match("[2026-05-16 14:11:34,979 W 103990 103990] "
	    "rpc_client.h:153: Failed to connect to GCS at address "
	    "10.15.3.158:6379 within 5 seconds.\n[2026-05-16 14:12:04,981 W "
	    "103990 103990] gcs_client.cc:205: Failed to get cluster ID from "
	    "GCS server: TimedOut: Timed out while waiting for GCS to become "
	    "available.", NULL, 0));
	/* docker's note before a pull that worked: not why run failed */
	assert_null(diag_match("Unable to find image 'vllm/vllm-openai:v0.11.0' "
	    "locally\nv0.11.0: Pulling from vllm/vllm-openai\nStatus: "
	    "Downloaded newer image for vllm/vllm-openai:v0.11.0\ndocker: "
	    "Error response from daemon: Conflict. The container name "
	    "\"/vllm-head\" is already in use", NULL, 0));
}

/*
 * issue 15: the excerpt went into /status cut at a byte length, splitting
 * "é"; jansson refused it and tandemd crashed. At every buffer size the
 * excerpt is valid UTF-8 and never ends inside a character.
 */
static void
test_excerpt_utf8(void **state)
{
	char text[1024], ex[300];
	size_t len, k;

	(void)state;
	len = (size_t)snprintf(text, sizeof(text), "Cannot connect to the "
	    "Docker daemon at unix:///var/run/docker.sock. Is the docker "
	    "daemon running?\xff ");
	for (k = 0; k < 300 && len + 3 < sizeof(text); k++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		    "\xc3\xa9");
	snprintf(text + len, sizeof(text) - len, "\xff\nnext line");
	for (k = 1; k <= sizeof(ex); k++) {
		const struct diag *d = diag_match(text, ex, k);

		assert_non_null(d);
		assert_string_equal(d->code, "engine-down");
		assert_true(strlen(ex) < k);
		assert_true(utf8_valid(ex));
	}
	assert_non_null(strstr(ex, "running?\xef\xbf\xbd \xc3\xa9"));
	assert_null(strchr(ex, '\n'));
}

static void
test_catalogue_complete(void **state)
{
	static const char *const required[] = { "stale-ray-node",
	    "gloo-loopback", "gpu-memory-low", "kv-cache-no-memory", "cuda-oom", "placement-group",
	    "arch-unsupported", "model-missing", "image-missing", "engine-down",
	    "ssh-auth", "host-key", "port-in-use", "kv-cache-too-small",
	    "startup-timeout", "worker-lost", NULL };
	size_t i;

	(void)state;
	for (i = 0; required[i]; i++) {
		const struct diag *d = diag_find(required[i]);

		assert_non_null(d);
		assert_true(strlen(d->message) > 10);
		assert_true(strlen(d->remedy) > 10);
	}
	assert_null(diag_find("no-such-code"));
	assert_int_equal(diag_find("gpu-memory-low")->action, REMEDY_LOWER_GMU);
	assert_int_equal(diag_find("host-key")->retryable, 0);
	assert_int_equal(diag_find("ssh-auth")->retryable, 0);
}

/*
 * The wire names are the API: /status, /metrics, /events and the docs use
 * them, so each code keeps exactly the name it has; and the catalogue entry
 * of each code is that code's, in the enum's order (the match order).
 */
static void
test_codes_and_names(void **state)
{
	static const char *const wire[DIAG_COUNT] = { "stale-ray-node",
	    "gloo-loopback", "gpu-memory-low", "kv-cache-no-memory", "cuda-oom",
	    "kv-cache-too-small", "placement-group", "arch-unsupported",
	    "model-missing", "nvidia-runtime-missing", "ray-token-missing",
	    "image-missing", "engine-permission", "engine-down", "port-in-use",
	    "gcs-unreachable", "nccl-error", "worker-lost",
	    "cdi-unresolvable", "cuda-driver-too-old", "npu-oom",
	    "image-pull-failed", "ssh-auth",
	    "host-key", "node-unreachable", "ray-incomplete",
	    "startup-timeout", "vllm-exited", "container-died",
	    "generation-failed", "gpu-not-released", "image-mismatch",
	    "model-mismatch", "interface-wrong",
	    "link-down", "link-unreachable", "mtu-mismatch",
	    "gpus-missing", "foreign-container", "placement-group-wait",
	    "unrecognised-answer", "generation-stalled", "gpu-xid",
	    "engine-ready-timeout", "node-ip-mismatch", "model-unreadable",
	    "vllm-unauthorized", "vllm-model-name",
	    "rebuild-limit" };
	int c;

	(void)state;
	assert_int_equal(diag_count(), DIAG_COUNT);
	for (c = 0; c < DIAG_COUNT; c++) {
		const struct diag *d = diag_get((enum diag_code)c);

		assert_non_null(wire[c]);
		assert_string_equal(diag_code_name((enum diag_code)c), wire[c]);
		assert_non_null(d);
		assert_ptr_equal(d, diag_at((size_t)c));
		assert_int_equal(d->id, c);
		assert_string_equal(d->code, wire[c]);
		assert_ptr_equal(diag_find(wire[c]), d);
		assert_true(strlen(d->message) > 10);
		assert_true(strlen(d->remedy) > 10);
	}
	assert_null(diag_get((enum diag_code)DIAG_COUNT));
}

int
main(void)
{
	struct CMUnitTest tests[sizeof(samples) / sizeof(samples[0]) + 4];
	size_t i;

	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		struct CMUnitTest t = cmocka_unit_test_prestate(test_sample,
		    (void *)(uintptr_t)i);

		t.name = samples[i].code;
		tests[i] = t;
	}
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_no_match);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_excerpt_utf8);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_catalogue_complete);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_codes_and_names);
	return _cmocka_run_group_tests("diagnose", tests, i, NULL, NULL);
}
