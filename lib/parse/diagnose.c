#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "utf8.h"

/* Most specific first: a log often carries a generic line after the cause. */
static const struct diag catalogue[] = {
	{ DIAG_STALE_RAY_NODE, "stale-ray-node",
	  { "Every node should have a unique IP address", NULL },
	  "Ray lists more nodes than there are node IPs: a stale Ray node from "
	  "a container that was restarted alone",
	  "tandem rebuilds head and workers together; if it recurs, remove "
	  "foreign containers running Ray on the named node", 1,
	  REMEDY_REBUILD },
	/*
	 * torch's "Unable to resolve hostname to a (local) address. Using
	 * the loopback address as fallback." (ProcessGroupGloo.cpp) is a
	 * warning after which runs go on (a single-node group works over
	 * loopback): only Gloo's own failure to connect stops them.
	 */
	{ DIAG_GLOO_LOOPBACK, "gloo-loopback",
	  { "Gloo connectFullMesh failed", NULL },
	  "Gloo/NCCL fell back to the loopback address instead of the "
	  "high-speed interface",
	  "check nodes[].ifname names the interface that carries nodes[].ip on "
	  "every node (tandem sets GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME and "
	  "VLLM_HOST_IP from them)", 0, REMEDY_NONE },
	{ DIAG_GPU_MEMORY_LOW, "gpu-memory-low",
	  { "on startup is less than desired GPU memory utilization", NULL },
	  "free accelerator memory is below what --gpu-memory-utilization asks "
	  "for",
	  "lower --gpu-memory-utilization (on DGX Spark: 0.90 fails, 0.60 starts), "
	  "list lower values in recovery.gpu_memory_utilization_steps, or stop "
	  "other processes using the GPUs or NPUs", 1, REMEDY_LOWER_GMU },
	/*
	 * vLLM's KV cache check (vllm/v1/core/kv_cache_utils.py): the weights
	 * and the profiled activations took all that
	 * --gpu-memory-utilization allows. A lower value makes it worse, so
	 * the ladder must not step down; the fix goes the other way.
	 */
	{ DIAG_KV_CACHE_NO_MEMORY, "kv-cache-no-memory",
	  { "No available memory for the cache blocks", NULL },
	  "the model leaves no GPU memory for the KV cache within "
	  "--gpu-memory-utilization",
	  "raise --gpu-memory-utilization in vllm.args (or lower "
	  "--max-model-len); a lower value makes it worse, so tandem does not "
	  "step recovery.gpu_memory_utilization_steps down for it", 0,
	  REMEDY_RAISE_GMU },
	/*
	 * PyTorch's two texts: the caching allocator's OutOfMemoryError
	 * ("CUDA out of memory. Tried to allocate ...") and a CUDA call that
	 * failed outside it (c10/cuda/CUDAException.cpp: "CUDA error: " and
	 * cudaGetErrorString, "out of memory"), as a RuntimeError or, since
	 * torch 2.8, torch.AcceleratorError.
	 */
	{ DIAG_CUDA_OOM, "cuda-oom",
	  { "CUDA out of memory", "torch.OutOfMemoryError",
	    "torch.cuda.OutOfMemoryError", "CUDA error: out of memory",
	    NULL },
	  "CUDA ran out of memory while loading or warming up the model",
	  "lower --gpu-memory-utilization or --max-model-len, or free the GPU",
	  1, REMEDY_LOWER_GMU },
	/*
	 * The V1 check's text, and vLLM <= 0.10's (the V0 engine's
	 * _verify_args in vllm/engine/llm_engine.py and V1's first
	 * check_enough_kv_cache_memory): the same failure, the same fix.
	 */
	{ DIAG_KV_CACHE_TOO_SMALL, "kv-cache-too-small",
	  { "larger than the available KV cache memory",
	    "is larger than the maximum number of tokens that can be stored "
	    "in KV cache", NULL },
	  "--max-model-len needs more KV cache than the GPU memory leaves",
	  "lower --max-model-len in vllm.args (the DGX Spark guide uses 2048) or "
	  "raise "
	  "--gpu-memory-utilization", 0, REMEDY_NONE },
	/*
	 * vLLM gave up on its placement group (vllm/v1/executor/ray_utils.py
	 * _wait_until_pg_ready, about 2,550 s after it began), or the
	 * placement group it was given has fewer GPUs than the parallel size
	 * (initialize_ray_cluster's ValueError). Its early signs, "Waiting
	 * for creating a placement group" and the warning "The number of
	 * required GPUs exceeds ...", are not failures: lib/policy/pgwait.c.
	 */
	{ DIAG_PLACEMENT_GROUP, "placement-group",
	  { "Cannot provide a placement group",
	    "in the placement group. Required number of devices", NULL },
	  "Ray never had enough GPUs for the tensor/pipeline parallel size",
	  "make --tensor-parallel-size x --pipeline-parallel-size equal the GPUs "
	  "in the cluster (ray.expect_gpus), and check every node joined Ray", 0,
	  REMEDY_NONE },
	{ DIAG_ARCH_UNSUPPORTED, "arch-unsupported",
	  { "does not recognize this architecture",
	    "are not supported for now", NULL },
	  "the container image does not support this model's architecture",
	  "use an image that supports the model (on DGX Spark: "
	  "vllm/vllm-openai:cu130-nightly for qwen3_5_moe, not "
	  "nvcr.io/nvidia/vllm 26.01/26.02)", 0, REMEDY_NONE },
	{ DIAG_MODEL_MISSING, "model-missing",
	  { "Invalid repository ID or local directory specified",
	    "does not appear to have a file named config.json", NULL },
	  "the model path does not exist inside the container",
	  "check vllm.model and container.volumes; the model directory must be "
	  "present at the same path on every node", 0, REMEDY_NONE },
	/* the CDI device's refusal is cdi-unresolvable: retried */
	{ DIAG_NVIDIA_RUNTIME_MISSING, "nvidia-runtime-missing",
	  { "could not select device driver", NULL },
	  "the container engine cannot hand the GPUs to a container: the "
	  "NVIDIA container toolkit is not set up for it",
	  "install nvidia-container-toolkit on the node; for docker run "
	  "nvidia-ctk runtime configure --runtime=docker and systemctl restart "
	  "docker, for podman nvidia-ctk cdi generate "
	  "--output=/etc/cdi/nvidia.yaml", 0, REMEDY_NONE },
	/*
	 * Ray 2.52's token loader (authentication_token_loader.cc): the
	 * token file tandem mounts is missing or empty on the node (docker
	 * makes a directory of a missing -v source), or no token at all.
	 */
	{ DIAG_RAY_TOKEN_MISSING, "ray-token-missing",
	  { "RAY_AUTH_TOKEN_PATH is set but file cannot be opened or is empty",
	    "Token authentication is enabled but Ray couldn't find an "
	    "authentication token", NULL },
	  "Ray's token authentication is on but the node has no token in "
	  "ray.auth_token_file",
	  "copy the token file to the same path on every node (chmod 600; if "
	  "docker made a directory there, remove it first), then tandemctl "
	  "rebuild", 0, REMEDY_NONE },
	/*
	 * The refusals: the pull's own (docker: "pull access denied",
	 * moby's "manifest unknown"), or --pull never's. docker's "Unable
	 * to find image 'X' locally" comes before a pull that may work:
	 * image-pull-failed when the pull then fails some other way.
	 */
	{ DIAG_IMAGE_MISSING, "image-missing",
	  { "pull access denied", "No such image", "image not known",
	    "manifest unknown", NULL },
	  "the container image is not present",
	  "docker pull (or docker load) the image on every node; keep an "
	  "offline copy (docker save) for when the registry is out of reach",
	  0, REMEDY_NONE },
	/*
	 * The docker client's own words (moby client/request.go): docker 28
	 * and older "... to the Docker daemon socket at unix://...: Get ...:
	 * dial unix ...: connect: permission denied", docker 29 "... to the
	 * docker API at unix:///var/run/docker.sock". A retry cannot fix it.
	 */
	{ DIAG_ENGINE_PERMISSION, "engine-permission",
	  { "permission denied while trying to connect to the Docker daemon",
	    "permission denied while trying to connect to the docker API",
	    NULL },
	  "ssh.user may not use the container engine: its socket refused the "
	  "connection (permission denied)",
	  "add ssh.user to the docker group on the node (usermod -aG docker "
	  "USER; new logins get it), or log in as root; for a rootless docker "
	  "set DOCKER_HOST to the user's socket in its environment; then "
	  "tandemctl rebuild", 0, REMEDY_NONE },
	/*
	 * docker 29 says "failed to connect to the docker API at ...; check
	 * if the path is correct and if the daemon is running" when the
	 * socket is not there (moby client/request.go, os.ErrNotExist).
	 */
	{ DIAG_ENGINE_DOWN, "engine-down",
	  { "Cannot connect to the Docker daemon", "Is the docker daemon "
	    "running?", "Cannot connect to Podman",
	    "check if the path is correct and if the daemon is running",
	    NULL },
	  "the container engine does not answer",
	  "start the engine (systemctl start docker); tandem waits and rebuilds",
	  1, REMEDY_REBUILD },
	{ DIAG_PORT_IN_USE, "port-in-use",
	  { "Address already in use", "address already in use", NULL },
	  "a port vLLM or Ray needs is held by another process",
	  "free the port (vllm.port, ray.port) on the node or change it in the "
	  "config", 1, REMEDY_REBUILD },
	/*
	 * Ray's "Failed to connect to GCS at address A within 5 seconds"
	 * (rpc_client.h) and "Failed to get cluster ID from GCS server"
	 * (gcs_client.cc) are RAY_LOG(WARNING)s it prints while it retries;
	 * its giving up is "Failed to connect to GCS." (gcs_utils.py's
	 * error, RaySystemError's message).
	 */
	{ DIAG_GCS_UNREACHABLE, "gcs-unreachable",
	  { "Failed to connect to GCS.", NULL },
	  "a Ray worker cannot reach the head's GCS",
	  "check the high-speed network between the nodes and ray.port", 1,
	  REMEDY_REBUILD },
	{ DIAG_NCCL_ERROR, "nccl-error",
	  { "NCCL error", "ncclSystemError", "ncclInternalError", NULL },
	  "NCCL failed between the nodes", "check the high-speed links and "
	  "NCCL_SOCKET_IFNAME; tandem rebuilds", 1, REMEDY_REBUILD },
	{ DIAG_WORKER_LOST, "worker-lost",
	  { "ActorDiedError", "EngineDeadError", "RayWorkerWrapper died",
	    "died unexpectedly" },
	  "a vLLM worker died while serving", "tandem rebuilds every node", 1,
	  REMEDY_REBUILD },
	/* issue 41 items 6 and 8 (tests/unit/data/README.md has the texts) */
	/*
	 * The engine found no CDI spec for the device (podman "Error:
	 * setting up CDI devices: unresolvable CDI devices ...", docker
	 * "CDI device injection failed: unresolvable CDI devices ...", moby
	 * daemon/cdi.go). After a reboot the engine may start before
	 * nvidia-cdi-refresh.service writes the spec, so it is retried.
	 */
	{ DIAG_CDI_UNRESOLVABLE, "cdi-unresolvable",
	  { "unresolvable CDI devices", NULL },
	  "the container engine found no CDI spec for the GPUs (not written "
	  "yet after a boot, or older than the toolkit)",
	  "tandem retries with backoff; if it persists, run nvidia-ctk cdi "
	  "generate --output=/etc/cdi/nvidia.yaml on the node (or enable "
	  "nvidia-cdi-refresh.service)", 1, REMEDY_REBUILD },
	/*
	 * libnvidia-container's check of the image's NVIDIA_REQUIRE_CUDA:
	 * "nvidia-container-cli: requirement error: unsatisfied condition:
	 * cuda>=12.8, please update your driver to a newer version, or use
	 * an earlier cuda container". The driver stays as old on a retry.
	 */
	{ DIAG_CUDA_DRIVER_TOO_OLD, "cuda-driver-too-old",
	  { "nvidia-container-cli: requirement error", NULL },
	  "the node's NVIDIA driver is older than the CUDA the image needs",
	  "install a driver that supports the CUDA version after cuda>= in "
	  "the excerpt (nvidia-smi shows the driver's own as CUDA Version), "
	  "or use an image built for the driver's CUDA; then tandemctl "
	  "rebuild", 0, REMEDY_NONE },
	/*
	 * torch_npu's allocator: "RuntimeError: NPU out of memory. Tried to
	 * allocate 2.00 GiB (NPU 0; 43.24 GiB total capacity; ...)", or
	 * torch.OutOfMemoryError with the same words: as CUDA's, the ladder
	 * steps down.
	 */
	{ DIAG_NPU_OOM, "npu-oom",
	  { "NPU out of memory", NULL },
	  "the NPU ran out of memory while loading or warming up the model",
	  "lower --gpu-memory-utilization or --max-model-len, or free the NPU",
	  1, REMEDY_LOWER_GMU },
	/*
	 * docker's "Unable to find image 'X' locally" and then a pull that
	 * failed without the registry's refusal (no network, a registry
	 * down): a later pull may work. The refusals are image-missing,
	 * matched before this.
	 */
	{ DIAG_IMAGE_PULL_FAILED, "image-pull-failed",
	  { "Unable to find image", NULL },
	  "the container image is not present and pulling it failed",
	  "tandem retries with backoff; docker pull (or docker load) the "
	  "image on the node, or set container.image_archive", 1,
	  REMEDY_REBUILD },
	/* Detected by tandem itself, matched by code only. */
	{ DIAG_SSH_AUTH, "ssh-auth", { NULL },
	  "SSH refused the key", "install the key from ssh.identity_file in the "
	  "node's authorized_keys for ssh.user; tandem logs in again every "
	  "recovery.recheck_s and rebuilds once it is accepted", 0,
	  REMEDY_NONE },
	{ DIAG_HOST_KEY, "host-key", { NULL },
	  "the node's SSH host key is unknown or changed",
	  "verify the node, then update ssh.known_hosts_file (ssh-keyscan -p "
	  "PORT HOST); tandem logs in again every recovery.recheck_s and "
	  "rebuilds once the key matches", 0, REMEDY_NONE },
	{ DIAG_NODE_UNREACHABLE, "node-unreachable", { NULL },
	  "a node does not answer SSH", "tandem waits for it and rebuilds when "
	  "every node answers", 1, REMEDY_REBUILD },
	{ DIAG_RAY_INCOMPLETE, "ray-incomplete", { NULL },
	  "ray status did not show every node and GPU in time",
	  "check that every worker reaches the head's ray.port over the "
	  "high-speed network", 1, REMEDY_REBUILD },
	{ DIAG_STARTUP_TIMEOUT, "startup-timeout", { NULL },
	  "vLLM did not become ready within vllm.ready_timeout_s",
	  "look at the log (vllm.log_file in the head container); raise "
	  "vllm.ready_timeout_s for large models", 1, REMEDY_REBUILD },
	{ DIAG_VLLM_EXITED, "vllm-exited", { NULL },
	  "vllm serve exited", "see the log excerpt; tandem rebuilds", 1,
	  REMEDY_REBUILD },
	{ DIAG_CONTAINER_DIED, "container-died", { NULL },
	  "a cluster container stopped", "tandem rebuilds every node", 1,
	  REMEDY_REBUILD },
	{ DIAG_GENERATION_FAILED, "generation-failed", { NULL },
	  "a one-token completion failed while /health answered",
	  "tandem rebuilds every node (vLLM's /health stays 200 while its Ray "
	  "workers are dead)", 1, REMEDY_REBUILD },
	/* GPUs or NPUs: the excerpt names the device (accel_held) */
	{ DIAG_GPU_NOT_RELEASED, "gpu-not-released", { NULL },
	  "accelerator memory is still held after teardown",
	  "stop the processes the node's nvidia-smi or npu-smi info lists", 1,
	  REMEDY_REBUILD },
	{ DIAG_IMAGE_MISMATCH, "image-mismatch", { NULL },
	  "the nodes hold different builds of the image (same tag, another "
	  "ID)",
	  "put the same build on every node: docker pull it again, or docker "
	  "load -i ARCHIVE on the odd node (container.image_archive lets "
	  "tandem do that); then tandemctl rebuild", 0, REMEDY_NONE },
	{ DIAG_MODEL_MISMATCH, "model-mismatch", { NULL },
	  "the model directory differs between the nodes",
	  "copy the same model to every node (rsync -a from the head), then "
	  "tandemctl rebuild", 0, REMEDY_NONE },
	{ DIAG_INTERFACE_WRONG, "interface-wrong", { NULL },
	  "nodes[].ifname does not carry nodes[].ip",
	  "set nodes[].ifname to the interface that carries nodes[].ip "
	  "(ip -o addr on the node)", 0, REMEDY_NONE },
	{ DIAG_LINK_DOWN, "link-down", { NULL },
	  "a node's fast interface (nodes[].ifname) is down: set down, or no "
	  "carrier (cable, transceiver, the port at the other end)",
	  "ip link set IFNAME up on the node, or check the cable and the peer "
	  "port until ip link show IFNAME says LOWER_UP; tandem checks again "
	  "before each rebuild", 1, REMEDY_REBUILD },
	{ DIAG_LINK_UNREACHABLE, "link-unreachable", { NULL },
	  "a node cannot reach a peer's ip over the fast link, although SSH "
	  "reaches both",
	  "check the cable or switch port and VLAN between the two nodes, that "
	  "both addresses are on one subnet, and that no firewall drops ICMP "
	  "(ping -I IFNAME PEER on the node); tandem checks again before each "
	  "rebuild", 1, REMEDY_REBUILD },
	{ DIAG_MTU_MISMATCH, "mtu-mismatch", { NULL },
	  "the fast link's MTU differs between nodes, or something between "
	  "them drops packets of that size: NCCL and Gloo would hang on large "
	  "messages",
	  "give every node's fast interface one MTU (ip link set IFNAME mtu N, "
	  "and in its netplan or NetworkManager config), one the switch ports "
	  "carry too; then tandemctl rebuild", 0, REMEDY_NONE },
	{ DIAG_GPUS_MISSING, "gpus-missing", { NULL },
	  "nvidia-smi or npu-smi shows no device, or one that is not healthy",
	  "check the driver and the devices (nvidia-smi -L; npu-smi info, its "
	  "Health column)", 0, REMEDY_NONE },
	{ DIAG_FOREIGN_CONTAINER, "foreign-container", { NULL },
	  "a container tandem did not start holds our container's name, or "
	  "runs Ray with a node's address",
	  "remove it (docker rm -f NAME) or set nodes[].container_name; then "
	  "tandemctl rebuild", 0, REMEDY_NONE },
	/*
	 * vLLM waits for a placement group Ray cannot give now (lib/policy/pgwait.c
	 * decides from vLLM's log and ray status): a retry, which tears down
	 * every node, frees what holds the GPUs.
	 */
	{ DIAG_PLACEMENT_GROUP_WAIT, "placement-group-wait", { NULL },
	  "vLLM waits for a Ray placement group that Ray cannot give",
	  "tandem rebuilds every node; if it recurs, check every node joined "
	  "Ray with its GPUs (ray status) and that --tensor-parallel-size x "
	  "--pipeline-parallel-size fits ray.expect_gpus", 1, REMEDY_REBUILD },
	/*
	 * A command answered something tandem does not understand: never a
	 * terminal diagnosis (PRODUCT.md section 3, rule 6). The excerpt says
	 * what was asked and what came back (diag_unknown_excerpt).
	 */
	{ DIAG_UNRECOGNISED_ANSWER, "unrecognised-answer", { NULL },
	  "tandem could not tell what an answer means",
	  "tandem retries with backoff; if it persists, run the command it "
	  "names on the node and report the output", 1, REMEDY_REBUILD },
	{ DIAG_GENERATION_STALLED, "generation-stalled", { NULL },
	  "requests were running and vLLM made no token for probe.stall_s "
	  "while /health answered",
	  "tandem rebuilds every node (a collective hang between the nodes "
	  "leaves /health at 200); if it recurs, look at the fast link and "
	  "NCCL/HCCL in the evidence bundle (tandemctl bundle)", 1,
	  REMEDY_REBUILD },
	{ DIAG_GPU_XID, "gpu-xid", { NULL },
	  "a GPU reported a fault that a rebuild cannot fix (an NVIDIA Xid "
	  "that needs the GPU reset or the node rebooted)",
	  "reboot the node: tandem sees its new boot id and rebuilds by "
	  "itself; or reset the GPU (nvidia-smi -r -i N), then tandemctl "
	  "resume", 0, REMEDY_NONE },
	/* vLLM configured other than the guides' recipe (issue 41) -------- */
	/*
	 * vLLM's API server waits VLLM_ENGINE_READY_TIMEOUT_S (vllm/envs.py,
	 * 600 s) for its engine cores, then exits (vllm/v1/engine/
	 * core_client.py, MPClient). tandem sets the variable to
	 * vllm.ready_timeout_s unless the operator set it: this is a value
	 * the operator chose, too short for the load; the same load would
	 * time out again. The second text is the same wait before the
	 * variable existed (a fixed 600 s, vllm-project/vllm#27444) and
	 * before #35616 worded it anew.
	 */
	{ DIAG_ENGINE_READY_TIMEOUT, "engine-ready-timeout",
	  { "Timed out waiting for engine core processes to start",
	    "Timed out waiting for engines to send initial message", NULL },
	  "vLLM gave up waiting for its engine cores to load the model "
	  "(VLLM_ENGINE_READY_TIMEOUT_S)",
	  "raise both VLLM_ENGINE_READY_TIMEOUT_S (container.env or "
	  "nodes[].env; remove it and tandem sets it to vllm.ready_timeout_s) "
	  "and vllm.ready_timeout_s above the model's load time (vLLM before "
	  "0.11.1 waits a fixed 600 s: use a newer image); then tandemctl "
	  "rebuild", 0, REMEDY_NONE },
	/*
	 * vLLM's Ray executor's check "Every node should have a unique IP
	 * address. Got N nodes ... and M unique IP addresses" in the other
	 * direction (diag_match tells them apart): more addresses than Ray
	 * nodes, so the processes on one node disagree on its address
	 * (VLLM_HOST_IP against the address Ray registered). No rebuild
	 * changes that.
	 */
	{ DIAG_NODE_IP_MISMATCH, "node-ip-mismatch", { NULL },
	  "vLLM's workers report more IP addresses than there are Ray nodes: "
	  "on some node VLLM_HOST_IP is not the address Ray knows the node by",
	  "make nodes[].ip the address of nodes[].ifname on each node and "
	  "remove VLLM_HOST_IP from container.env and nodes[].env (tandem sets "
	  "it from nodes[].ip); then tandemctl rebuild", 0, REMEDY_NONE },
	{ DIAG_MODEL_UNREADABLE, "model-unreadable", { NULL },
	  "vLLM could not read the model's config from the Hugging Face hub "
	  "(vllm.model is a hub ID)",
	  "tandem retries; if it persists, check the nodes reach "
	  "huggingface.co (or HF_ENDPOINT), that HF_TOKEN grants a gated "
	  "model, and the ID in vllm.model", 1, REMEDY_REBUILD },
	/*
	 * vLLM's AuthenticationMiddleware (vllm serve --api-key, or
	 * VLLM_API_KEY) answers every /v1 path without the key 401
	 * {"error": "Unauthorized"}; /health stays open, so vLLM looks up.
	 */
	{ DIAG_VLLM_UNAUTHORIZED, "vllm-unauthorized", { NULL },
	  "vLLM wants an API key tandem does not have (its /v1 answered 401)",
	  "give tandem vLLM's key: --api-key in vllm.args, VLLM_API_KEY in "
	  "container.env or nodes[].env, or vllm.api_key_file when vLLM gets "
	  "it another way; then tandemctl rebuild", 0, REMEDY_NONE },
	/*
	 * --served-model-name: vLLM knows the model by those names only and
	 * answers a request for any other 404 "The model `X` does not
	 * exist." (vllm/entrypoints/openai/serving_engine.py).
	 */
	{ DIAG_VLLM_MODEL_NAME, "vllm-model-name", { NULL },
	  "vLLM serves the model under another name than the one tandem asks "
	  "for",
	  "name the model once, as vllm.served_model_name or the first "
	  "--served-model-name in vllm.args (tandem asks with it); then "
	  "tandemctl rebuild", 0, REMEDY_NONE },
	/*
	 * RDMA on nodes[].ifname (lib/parse/rdma.c): NCCL over RoCE needs an
	 * ACTIVE port and the GID index that carries the node's address;
	 * without them it falls back to sockets or hangs. Not retried: a
	 * read-only recheck of the link (recheck.c) sees the port come up.
	 */
	{ DIAG_RDMA_PORT_DOWN, "rdma-port-down", { NULL },
	  "the RDMA port of a node's fast interface is not ACTIVE",
	  "check the port (rdma link show; cat /sys/class/infiniband/DEV/"
	  "ports/N/state): the cable, the switch port, the subnet manager on "
	  "InfiniBand; tandem checks again and starts once it is ACTIVE", 0,
	  REMEDY_NONE },
	{ DIAG_RDMA_GID_MISSING, "rdma-gid-missing", { NULL },
	  "the RDMA port of a node's fast interface has no RoCE v2 GID for "
	  "nodes[].ip",
	  "give nodes[].ifname the address nodes[].ip (the kernel adds its "
	  "RoCE v2 GID then; show_gids lists them), or set nodes[].ip to the "
	  "address the port carries; then tandemctl rebuild", 0, REMEDY_NONE },
	{ DIAG_RDMA_LINK_LAYER_MIXED, "rdma-link-layer-mixed", { NULL },
	  "the nodes' RDMA ports use different link layers (Ethernet on one, "
	  "InfiniBand on another): NCCL cannot join them",
	  "put every node's fast interface on one link layer (mlxconfig "
	  "LINK_TYPE_P1, or the cabling), or pick nodes[].ifname on one "
	  "fabric; then tandemctl rebuild", 0, REMEDY_NONE },
	{ DIAG_REBUILD_LIMIT, "rebuild-limit", { NULL },
	  "recovery.max_rebuilds_per_hour reached",
	  "tandem retries when the hour allows; look at the diagnosis history "
	  "in /events", 1, REMEDY_REBUILD },
};

#define NCAT (sizeof(catalogue) / sizeof(catalogue[0]))
#define NPAT (sizeof(catalogue[0].patterns) / sizeof(catalogue[0].patterns[0]))
_Static_assert(NCAT == DIAG_COUNT, "one catalogue entry per diagnosis code");

static void
copy_line(const char *text, const char *hit, char *out, size_t outlen)
{
	const char *s = hit, *e = hit;
	size_t n;

	while (s > text && s[-1] != '\n')
		s--;
	while (*e && *e != '\n')
		e++;
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	n = (size_t)(e - s);
	utf8_copyn(out, outlen, s, n);
}

/*
 * Whether an entry that matches is not why the process failed: torch's
 * "torch.OutOfMemoryError" (cuda-oom) also opens torch_npu's "NPU out of
 * memory" (npu-oom, later); docker's "Unable to find image" before a pull
 * that worked ("Status: Downloaded newer image for X", the docker CLI's
 * jsonmessage) is not why a run failed.
 */
static int
yields(size_t i, const char *text)
{
	switch (catalogue[i].id) {
	case DIAG_CUDA_OOM:
		return strstr(text, "NPU out of memory") != NULL;
	case DIAG_IMAGE_PULL_FAILED:
		return strstr(text, "Status: Downloaded newer image") != NULL ||
		    strstr(text, "Status: Image is up to date") != NULL;
	default:
		return 0;
	}
}

/*
 * "Every node should have a unique IP address. Got N nodes with node ids
 * [...] and M unique IP addresses {...}" (vllm/v1/executor/ray_executor.py,
 * earlier vllm/executor/ray_distributed_executor.py: n_nodes != n_ips).
 * N > M: two Ray nodes share an address, a stale Ray node (a rebuild
 * clears it). N < M: one node's processes report two addresses. 1 for the
 * latter; 0 when the numbers are not there (older texts end at the
 * first sentence) or say the former.
 */
static int
more_ips_than_nodes(const char *hit)
{
	const char *got = strstr(hit, "Got "), *eol = strchr(hit, '\n');
	const char *and, *ips;
	long nodes, addrs;
	char *end;

	if (got == NULL || (eol && got > eol))
		return 0;
	nodes = strtol(got + 4, &end, 10);
	if (end == got + 4 || strncmp(end, " nodes", 6) != 0)
		return 0;
	ips = strstr(end, " unique IP addresses");
	if (ips == NULL || (eol && ips > eol))
		return 0;
	for (and = ips; and > end && and[-1] >= '0' && and[-1] <= '9'; and--)
		;
	if (and == ips)
		return 0;
	addrs = strtol(and, NULL, 10);
	return nodes < addrs;
}

const struct diag *
diag_match(const char *text, char *excerpt, size_t excerptlen)
{
	size_t i, j;
	const char *hit;

	if (text == NULL)
		return NULL;
	for (i = 0; i < NCAT; i++) {
		if (yields(i, text))
			continue;
		for (j = 0; j < NPAT && catalogue[i].patterns[j]; j++) {
			if ((hit = strstr(text, catalogue[i].patterns[j]))) {
				if (excerpt && excerptlen)
					copy_line(text, hit, excerpt,
					    excerptlen);
				if (catalogue[i].id == DIAG_STALE_RAY_NODE &&
				    more_ips_than_nodes(hit))
					return &catalogue[DIAG_NODE_IP_MISMATCH];
				return &catalogue[i];
			}
		}
	}
	return NULL;
}

const struct diag *
diag_get(enum diag_code c)
{
	return (size_t)c < NCAT ? &catalogue[c] : NULL;
}

const struct diag *
diag_find(const char *code)
{
	size_t i;

	for (i = 0; i < NCAT; i++)
		if (strcmp(catalogue[i].code, code) == 0)
			return &catalogue[i];
	return NULL;
}

size_t
diag_count(void)
{
	return NCAT;
}

const struct diag *
diag_at(size_t i)
{
	return i < NCAT ? &catalogue[i] : NULL;
}

/* No default: -Wswitch makes a code without a name a build error. */
const char *
diag_code_name(enum diag_code c)
{
	switch (c) {
	case DIAG_STALE_RAY_NODE:
		return "stale-ray-node";
	case DIAG_GLOO_LOOPBACK:
		return "gloo-loopback";
	case DIAG_GPU_MEMORY_LOW:
		return "gpu-memory-low";
	case DIAG_KV_CACHE_NO_MEMORY:
		return "kv-cache-no-memory";
	case DIAG_CUDA_OOM:
		return "cuda-oom";
	case DIAG_KV_CACHE_TOO_SMALL:
		return "kv-cache-too-small";
	case DIAG_PLACEMENT_GROUP:
		return "placement-group";
	case DIAG_ARCH_UNSUPPORTED:
		return "arch-unsupported";
	case DIAG_MODEL_MISSING:
		return "model-missing";
	case DIAG_NVIDIA_RUNTIME_MISSING:
		return "nvidia-runtime-missing";
	case DIAG_RAY_TOKEN_MISSING:
		return "ray-token-missing";
	case DIAG_IMAGE_MISSING:
		return "image-missing";
	case DIAG_ENGINE_PERMISSION:
		return "engine-permission";
	case DIAG_ENGINE_DOWN:
		return "engine-down";
	case DIAG_PORT_IN_USE:
		return "port-in-use";
	case DIAG_GCS_UNREACHABLE:
		return "gcs-unreachable";
	case DIAG_NCCL_ERROR:
		return "nccl-error";
	case DIAG_WORKER_LOST:
		return "worker-lost";
	case DIAG_CDI_UNRESOLVABLE:
		return "cdi-unresolvable";
	case DIAG_CUDA_DRIVER_TOO_OLD:
		return "cuda-driver-too-old";
	case DIAG_NPU_OOM:
		return "npu-oom";
	case DIAG_IMAGE_PULL_FAILED:
		return "image-pull-failed";
	case DIAG_SSH_AUTH:
		return "ssh-auth";
	case DIAG_HOST_KEY:
		return "host-key";
	case DIAG_NODE_UNREACHABLE:
		return "node-unreachable";
	case DIAG_RAY_INCOMPLETE:
		return "ray-incomplete";
	case DIAG_STARTUP_TIMEOUT:
		return "startup-timeout";
	case DIAG_VLLM_EXITED:
		return "vllm-exited";
	case DIAG_CONTAINER_DIED:
		return "container-died";
	case DIAG_GENERATION_FAILED:
		return "generation-failed";
	case DIAG_GPU_NOT_RELEASED:
		return "gpu-not-released";
	case DIAG_IMAGE_MISMATCH:
		return "image-mismatch";
	case DIAG_MODEL_MISMATCH:
		return "model-mismatch";
	case DIAG_INTERFACE_WRONG:
		return "interface-wrong";
	case DIAG_LINK_DOWN:
		return "link-down";
	case DIAG_LINK_UNREACHABLE:
		return "link-unreachable";
	case DIAG_MTU_MISMATCH:
		return "mtu-mismatch";
	case DIAG_GPUS_MISSING:
		return "gpus-missing";
	case DIAG_FOREIGN_CONTAINER:
		return "foreign-container";
	case DIAG_PLACEMENT_GROUP_WAIT:
		return "placement-group-wait";
	case DIAG_UNRECOGNISED_ANSWER:
		return "unrecognised-answer";
	case DIAG_GENERATION_STALLED:
		return "generation-stalled";
	case DIAG_GPU_XID:
		return "gpu-xid";
	case DIAG_ENGINE_READY_TIMEOUT:
		return "engine-ready-timeout";
	case DIAG_NODE_IP_MISMATCH:
		return "node-ip-mismatch";
	case DIAG_MODEL_UNREADABLE:
		return "model-unreadable";
	case DIAG_VLLM_UNAUTHORIZED:
		return "vllm-unauthorized";
	case DIAG_VLLM_MODEL_NAME:
		return "vllm-model-name";
	case DIAG_RDMA_PORT_DOWN:
		return "rdma-port-down";
	case DIAG_RDMA_GID_MISSING:
		return "rdma-gid-missing";
	case DIAG_RDMA_LINK_LAYER_MIXED:
		return "rdma-link-layer-mixed";
	case DIAG_REBUILD_LIMIT:
		return "rebuild-limit";
	}
	return "?";
}

void
diag_format(const struct diag *d, const char *node, const char *excerpt,
    char *buf, size_t len)
{
	utf8_fmt(buf, len, "%s%s%s%s%s%s", d->message, node ? " on " : "",
	    node ? node : "", excerpt && *excerpt ? ": " : "",
	    excerpt ? excerpt : "", d->retryable ? "" : " (retries stopped)");
}

void
diag_unknown_excerpt(char *buf, size_t len, const char *asked, int exit_code,
    const char *out, const char *err)
{
	static const char tail[] = ") is not one tandem knows: could not tell";
	const char *said = err && *err ? err : out ? out : "";
	char line[240], cut[240], head[400], status[32] = "";
	size_t room, n;

	if (len == 0)
		return;
	while (*said == '\n' || *said == ' ')
		said++;
	utf8_copyn(line, sizeof(line), said, strcspn(said, "\r\n"));
	if (exit_code >= 0)
		snprintf(status, sizeof(status), "exit %d, ", exit_code);
	utf8_fmt(head, sizeof(head), "asked `%s`, the answer (%s",
	    asked ? asked : "?", status);
	if (line[0] == '\0')
		utf8_copy(line, sizeof(line), "no output");
	/*
	 * What the tool said is cut to fit, not "could not tell": a reader
	 * (and the preflight's 200-byte detail) keeps the verdict.
	 */
	n = strlen(head) + strlen(tail) + 1;
	room = len > n ? len - n : 0;
	if (strlen(line) > room && room > 3) {
		/* "..." in its place, after a whole character */
		n = utf8_copyn(cut, room - 3 + 1, line, strlen(line));
		memcpy(cut + n, "...", 4);
		memcpy(line, cut, n + 4);
	}
	utf8_fmt(buf, len, "%s%s%s", head, line, tail);
}
