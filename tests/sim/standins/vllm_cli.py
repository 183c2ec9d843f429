"""vllm stand-in: `vllm serve` that fails where the real one fails, with the
real texts (formats.md sections 3, 5-10), and otherwise loads over a
configurable time and serves the OpenAI API: with --api-key (or
VLLM_API_KEY, or simctl vllm-api-key) /v1 wants the key; /v1/models lists
the --served-model-name names (or simctl vllm-served-name's); the API
server gives up on a load longer than VLLM_ENGINE_READY_TIMEOUT_S.

Checks, in the order the real start-up meets them: API port bindable, model
path present, architecture supported by the image, Ray cluster reachable,
enough GPUs for the placement group, one IP per Ray node, Gloo interface
variables, free GPU memory for --gpu-memory-utilization, KV cache large
enough for --max-model-len. Speed model: one decode step for the whole
batch takes t(b) = 44 ms x (1 + b/14.4) (fitted to the DGX Spark guide's load-test table), scaled
by the bed's time factor, so throughput grows with concurrency.
"""

import hashlib
import json
import math
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import simlib as S
import ray_cli

NODE = os.environ.get("SIM_NODE", "")
PID = os.getpid()
VERSION = "0.15.1"
UNSUPPORTED = {"qwen3_5_moe": ("nvcr.io/nvidia/vllm:26.01-py3", "nvcr.io/nvidia/vllm:26.02-py3")}
KV_TOKENS_PER_GIB = 20000


def now_tag():
    return time.strftime("%m-%d %H:%M:%S")


def log(level, where, msg, who=None):
    prefix = "(%s) " % who if who else "(APIServer pid=%d) " % PID
    sys.stdout.write("%s%s %s [%s] %s\n" % (prefix, level, now_tag(), where, msg))
    sys.stdout.flush()


def die(lines, code=1):
    for line in lines:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    os._exit(code)


def parse(args):
    o = {"model": None, "tp": 1, "pp": 1, "backend": None, "host": "0.0.0.0", "port": 8000,
         "gmu": 0.9, "served": None, "served_all": [], "api_key": None,
         "max_model_len": None, "dp_size": 1, "dp_local": None,
         "dp_address": None, "dp_rpc_port": 13345, "dp_start_rank": 0, "headless": False,
         "api_servers": None, "seed": 0}
    names = {"--tensor-parallel-size": "tp", "-tp": "tp", "--pipeline-parallel-size": "pp",
             "-pp": "pp", "--distributed-executor-backend": "backend", "--host": "host",
             "--port": "port", "--gpu-memory-utilization": "gmu",
             "--served-model-name": "served", "--max-model-len": "max_model_len",
             "--data-parallel-size": "dp_size", "--data-parallel-size-local": "dp_local",
             "--data-parallel-address": "dp_address", "--data-parallel-rpc-port": "dp_rpc_port",
             "--data-parallel-start-rank": "dp_start_rank", "--api-server-count": "api_servers",
             "--seed": "seed", "--api-key": "api_key"}
    ints = {"tp", "pp", "port", "max_model_len", "dp_size", "dp_local", "dp_rpc_port",
            "dp_start_rank", "api_servers", "seed"}
    i = 0
    while i < len(args):
        a = args[i]
        key, val = a, None
        if a.startswith("--") and "=" in a:
            key, val = a.split("=", 1)
        if key == "--headless":
            o["headless"] = True
        elif key in names:
            if val is None:
                i += 1
                val = args[i] if i < len(args) else ""
            k = names[key]
            if k == "served":
                # nargs="+" (cli_args.py): every name up to the next flag
                o["served_all"] = [val]
                while i + 1 < len(args) and not args[i + 1].startswith("-"):
                    i += 1
                    o["served_all"].append(args[i])
            try:
                o[k] = int(val) if k in ints else (float(val) if k == "gmu" else val)
            except ValueError:
                die(["vllm serve: error: argument %s: invalid %s value: '%s'"
                     % (key, "int" if k in ints else "float", val)], 2)
        elif not a.startswith("-") and o["model"] is None:
            o["model"] = a
        elif a.startswith("-") and i + 1 < len(args) and not args[i + 1].startswith("-") \
                and "=" not in a:
            i += 1  # a flag we pass through, with its value
        i += 1
    if o["dp_local"] is None:
        o["dp_local"] = o["dp_size"]
    return o


def api_key(o):
    """The key vLLM wants on /v1: simctl vllm-api-key (given some way tandem
    cannot see), else --api-key, else VLLM_API_KEY (the flag first, as
    0.10+ api_server.py has it)."""
    forced = S.read_json(S.path("vllm_api_key.json"))
    return forced or o["api_key"] or os.environ.get("VLLM_API_KEY") or None


def served_names(o):
    """/v1/models' ids: simctl vllm-served-name, else --served-model-name's
    names, else the model path."""
    forced = S.read_json(S.path("vllm_served_name.json"))
    return [forced] if forced else (o["served_all"] or [o["model"]])


# When the API server began to wait for its engine cores (common_start).
READY_T0 = [0.0]


def engine_ready_wait():
    """VLLM_ENGINE_READY_TIMEOUT_S (vllm/envs.py): how long the API server
    waits for its engine cores. A value set in the container is a duration
    tandem chose on the bed's clock, taken as it is; vLLM's own default,
    600 s, is a duration of the real tool, scaled."""
    v = os.environ.get("VLLM_ENGINE_READY_TIMEOUT_S")
    try:
        return float(int(v)) if v else S.scaled(600.0)
    except ValueError:
        die(["ValueError: invalid literal for int() with base 10: '%s'" % v])


def engine_ready_check():
    """The API server gives up on its engine cores (core_client.py MPClient,
    the wording of vllm-project/vllm#35616) and the whole serve exits."""
    wait = engine_ready_wait()
    if time.time() - READY_T0[0] <= wait:
        return
    die(["(APIServer pid=%d) Traceback (most recent call last):" % PID,
         '(APIServer pid=%d)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/'
         'core_client.py", line 611, in __init__' % PID,
         "(APIServer pid=%d) TimeoutError: Timed out waiting for engine core processes to "
         "start. This is often caused by slow weight loading for large models. Waited %ds "
         "(configured by VLLM_ENGINE_READY_TIMEOUT_S). To increase the timeout, set the "
         "environment variable: VLLM_ENGINE_READY_TIMEOUT_S=<seconds>" % (PID, int(wait))])


def host_path(p):
    """Maps a container path through the -v volumes to the node's files."""
    for v in json.loads(os.environ.get("SIM_VOLUMES", "[]")):
        parts = v.split(":")
        if len(parts) >= 2 and (p == parts[1] or p.startswith(parts[1].rstrip("/") + "/")):
            return S.node_dir(NODE, "fs") + parts[0] + p[len(parts[1]):]
    return S.node_dir(NODE, "fs") + p


def node_by_ip(ip):
    for n in S.sim()["nodes"]:
        if n["ip"] == ip:
            return n["name"]
    return None


def check_model(o):
    # The node's /model is bind-mounted by the bed; the mapping is the
    # fallback for paths outside it.
    cfg = S.read_json(os.path.join(o["model"], "config.json"))
    if cfg is None:
        cfg = S.read_json(os.path.join(host_path(o["model"]), "config.json"))
    if cfg is None:
        die(["Traceback (most recent call last):",
             '  File "/usr/local/bin/vllm", line 10, in <module>',
             "    sys.exit(main())",
             "ValueError: Invalid repository ID or local directory specified: '%s'." % o["model"],
             "Please verify the following requirements:",
             "1. Provide a valid Hugging Face repository ID.",
             "2. Specify a local directory that contains a recognized configuration file.",
             "   - For Hugging Face models: ensure the presence of a 'config.json'.",
             "   - For Mistral models: ensure the presence of a 'params.json'."])
    mt = cfg.get("model_type", "")
    if os.environ.get("SIM_IMAGE") in UNSUPPORTED.get(mt, ()):
        die(["Traceback (most recent call last):", "  ...",
             "ValueError: The checkpoint you are trying to load has model type `%s` but "
             "Transformers does not recognize this architecture. This could be because of an "
             "issue with the checkpoint, or because your version of Transformers is out of date."
             % mt, "",
             "You can update Transformers with the command `pip install --upgrade transformers`."])
    return cfg


def check_gloo(ip_label):
    if ray_cli.gloo_ok():
        return
    time.sleep(max(0.1, S.scaled(5.0)))
    w = "RayWorkerWrapper pid=%d, ip=%s" % (PID + 1, ip_label)
    die(["(%s) [rank1]:[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a "
         "(local) address. Using the loopback address as fallback. Manually set the network "
         "interface to bind to with GLOO_SOCKET_IFNAME. (function operator())" % w,
         "(%s) [rank1]:[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with "
         "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error" % w,
         "[rank0] Gloo connectFullMesh failed ... timed out connecting: SO_ERROR: Connection "
         "refused, remote=[127.0.0.1]:14215",
         "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/"
         "tcp/pair.cc:144] no error",
         "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
         "proc(s): {}"])


def check_memory(nodename, ip, gpu, gmu, who):
    # The bed frees a dead holder's memory when it has seen it dead for
    # release_delay(); the real driver counts from the death, and vLLM's
    # imports take longer than that: let a death just seen run its course.
    if S.gpu_holds(nodename) and any(f.startswith("dead-") for f in
                                    os.listdir(S.node_dir(nodename, "gpu"))):
        time.sleep(S.release_delay() + 0.05)
    total = S.gpu_total_gib(nodename)
    free = S.gpu_free_gib(nodename, gpu)
    want = math.ceil(total * gmu * 100) / 100
    if free < want:
        prefix = "(%s) " % who if who else ""
        die([prefix + "ERROR %s [core.py:708] EngineCore failed to start." % now_tag(),
             prefix + "ValueError: Free memory on device cuda:%d (%.2f/%.2f GiB) on startup is "
             "less than desired GPU memory utilization (%s, %.2f GiB). Decrease GPU memory "
             "utilization or reduce GPU memory used by other processes."
             % (gpu, free, total, gmu, want),
             "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
             "proc(s): {}"])


def check_kv(o, cfg):
    total = S.gpu_total_gib(NODE)
    weights = float(cfg.get("sim_weights_gib_per_gpu", 30.0))
    if S.node(NODE).get("npus"):
        weights /= len(devices(o))	# tensor parallel: a share per NPU
    kv_gib = max(0.0, total * o["gmu"] - weights)
    max_tokens = int(kv_gib * KV_TOKENS_PER_GIB)
    need = o["max_model_len"] or int(cfg.get("max_position_embeddings", 32768))
    if need > max_tokens:
        die(["ERROR %s [core.py:708] EngineCore failed to start." % now_tag(),
             "ValueError: To serve at least one request with the models's max seq len (%d), "
             "(%.2f GiB KV cache is needed, which is larger than the available KV cache memory "
             "(%.2f GiB). Based on the available memory, the estimated maximum model length is "
             "%d. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
             "initializing the engine." % (need, need / KV_TOKENS_PER_GIB, kv_gib, max_tokens),
             "RuntimeError: Engine core initialization failed. See root cause above."])
    return max_tokens, need


def load_time():
    v = S.read_json(S.path("slow_load.json"))
    if v is not None:
        return float(v)
    return S.scaled(float(S.sim().get("load_s", 20.0)))


def start_error(when, who):
    """simctl vllm-start-error: PyTorch's "CUDA error: out of memory" while
    the weights load, or vLLM's "No available memory for the cache blocks"
    (max-seq-len: vLLM <= 0.10's "The model's max seq len (N) is larger
    than the maximum number of tokens ...") when the KV cache is sized
    (tests/unit/data/vllm-log/)."""
    kind = S.read_json(S.path("vllm_start_error.json"))
    prefix = "(%s) " % who if who else ""
    if kind == "cuda-error-oom" and when == "load":
        die([prefix + "ERROR %s [core.py:708] EngineCore failed to start." % now_tag(),
             prefix + "RuntimeError: CUDA error: out of memory",
             "CUDA kernel errors might be asynchronously reported at some other API call, so "
             "the stacktrace below might be incorrect.",
             "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
             "RuntimeError: Engine core initialization failed. See root cause above. Failed "
             "core proc(s): {}"])
    if kind == "max-seq-len" and when == "kv":
        # vLLM <= 0.10 (V0's _verify_args, V1's first
        # check_enough_kv_cache_memory): kv-cache-too-small-0.10.log
        die([prefix + "INFO %s [gpu_worker.py:227] Available KV cache memory: 1.28 GiB"
             % now_tag(),
             prefix + "ERROR %s [core.py:632] EngineCore failed to start." % now_tag(),
             prefix + "ERROR %s [core.py:632] ValueError: The model's max seq len (32768) is "
             "larger than the maximum number of tokens that can be stored in KV cache (16832). "
             "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
             "initializing the engine." % now_tag(),
             "RuntimeError: Engine core initialization failed. See root cause above. Failed "
             "core proc(s): {}"])
    if kind == "cache-blocks" and when == "kv":
        die([prefix + "INFO %s [gpu_worker.py:298] Available KV cache memory: -0.30 GiB"
             % now_tag(),
             prefix + "ERROR %s [core.py:708] EngineCore failed to start." % now_tag(),
             prefix + "ValueError: No available memory for the cache blocks. Try increasing "
             "`gpu_memory_utilization` when initializing the engine.",
             "RuntimeError: Engine core initialization failed. See root cause above. Failed "
             "core proc(s): {}"])


def unique_ip_fault(ids, ips):
    """simctl vllm-start-error unique-ip-stale | unique-ip-more-ips: what
    vLLM's Ray executor counts when a stale Ray node shares an address (one
    node id more) or when one node's processes report a second address
    (VLLM_HOST_IP not the one Ray registered: one address more), so that
    its "Every node should have a unique IP address" check fails either
    way (tests/unit/data/vllm-log/unique-ip-*.log)."""
    kind = S.read_json(S.path("vllm_start_error.json"))
    if kind == "unique-ip-stale":
        return ids + [hashlib.sha256(ids[0].encode()).hexdigest()[:56]], ips
    if kind == "unique-ip-more-ips":
        return ids, ips | {"192.168.1.20"}
    return ids, ips


def compile_cache_marker(o):
    """vLLM's torch.compile cache under VLLM_CACHE_ROOT (vllm/envs.py):
    torch_compile_cache/HASH, HASH its config's (the image, model and the
    flags here), on the node's disk through the -v mounts. None: no
    VLLM_CACHE_ROOT, vLLM's default ~/.cache/vllm, gone with the container."""
    root = os.environ.get("VLLM_CACHE_ROOT")
    if not root:
        return None
    key = hashlib.sha256(json.dumps([os.environ.get("SIM_IMAGE"), o["model"], o["tp"], o["pp"],
                                     o["max_model_len"], o["dp_size"]]).encode()).hexdigest()
    # the stand-in engine maps the mounts (SIM_VOLUMES); a real engine's
    # container has them mounted already
    base = host_path(root) if "SIM_VOLUMES" in os.environ else root
    return os.path.join(base, "torch_compile_cache", key[:10], "rank_0_0", "done")


def loading_lines(o, max_tokens, need, who, workers=(), faults=True):
    """vLLM's start-up and its timed lines (tests/unit/data/vllm-phases/):
    the load, torch.compile and CUDA-graph capture, each rank's; a Ray
    worker's as Ray forwards them, under its "(RayWorkerWrapper pid=N,
    ip=A)" (workers: those prefixes). A headless DP node's own (faults
    False) leaves simctl vllm-start-error to the head's."""
    log("INFO", "gpu_model_runner.py:4021", "Starting to load model %s..." % o["model"], who)
    if faults:
        start_error("load", who)
    t0 = time.time()
    total = load_time()
    shards = 4
    for k in range(shards + 1):
        sys.stdout.write("Loading safetensors checkpoint shards: %3d%% Completed | %d/%d "
                         "[00:%02d<00:00,  1.29it/s]\n" % (100 * k // shards, k, shards,
                                                          int(time.time() - t0)))
        sys.stdout.flush()
        if k < shards:
            end = time.time() + total / shards
            while time.time() < end:
                if not o["headless"]:	# the API server's wait
                    engine_ready_check()
                time.sleep(min(0.2, max(0.0, end - time.time())))
    took = time.time() - t0
    for w in (who,) + tuple(workers):
        log("INFO", "default_loader.py:291", "Loading weights took %.2f seconds" % took, w)
        log("INFO", "gpu_model_runner.py:1792", "Model loading took %.4f GiB and %.6f seconds"
            % (S.gpu_total_gib(NODE) * 0.5, took + 0.3), w)
    # torch.compile, then the KV cache's profile, then CUDA-graph capture:
    # on real nodes minutes (issue 47), here a share of the load time;
    # with the compile cache of an earlier start of the same image, model
    # and flags (VLLM_CACHE_ROOT) a tenth of it, as vLLM's cache hit
    t1 = time.time()
    marker = compile_cache_marker(o)
    warm = marker is not None and os.path.exists(marker)
    time.sleep(max(0.05, total * (0.05 if warm else 0.5)))
    for w in (who,) + tuple(workers):
        if warm:
            log("INFO", "backends.py:267", "Directly load the compiled graph(s) for compile "
                "range (1, 8192) from the cache, took %.3f s" % (time.time() - t1), w)
        log("INFO", "monitor.py:34", "torch.compile takes %.2f s in total" % (time.time() - t1), w)
    if marker is not None and not warm:
        try:
            os.makedirs(os.path.dirname(marker), exist_ok=True)
            with open(marker, "w") as f:
                f.write("compiled\n")
        except OSError:
            pass	# an unwritable cache: vLLM compiles again next time
    if faults:
        start_error("kv", who)
    log("INFO", "kv_cache_utils.py:1307", "GPU KV cache size: {:,} tokens".format(max_tokens), who)
    log("INFO", "kv_cache_utils.py:1312", "Maximum concurrency for {:,} tokens per request: "
        "{:.2f}x".format(need, max_tokens / max(1, need)), who)
    t2 = time.time()
    time.sleep(max(0.6, total * 0.3))	# logged as %.0f: a whole second
    for w in (who,) + tuple(workers):
        log("INFO", "gpu_model_runner.py:2567", "Graph capturing finished in %.0f secs, took "
            "0.31 GiB" % (time.time() - t2), w)
    log("INFO", "core.py:272", "init engine (profile, create kv cache, warmup model) took "
        "%.2f seconds" % (time.time() - t0), who)


# Serving --------------------------------------------------------------------

def hang_on():
    """simctl vllm-hang: a collective hang. The engine core stops in the
    middle of a step; the API server still answers /health (200) and
    /metrics, whose gauges keep what the engine last reported and whose
    token counters stop."""
    return os.path.exists(S.path("vllm_hang"))


def saturate():
    """simctl vllm-saturate: a saturated engine that still makes tokens:
    at most SAT_SEQS requests run (vLLM's --max-num-seqs), the rest wait,
    and a step takes SAT_STEP_S. Returns None when off."""
    v = S.read_json(S.path("vllm_saturate.json"))
    return v if isinstance(v, dict) else None


class Engine:
    """Continuous batching: every running request gains a token per step,
    and vLLM's counters move as its scheduler's do (IterationStats): the
    prompt's tokens when its first token comes, a generation token per
    step per running request."""

    def __init__(self):
        self.lock = threading.Condition()
        self.active = []
        self.waiting = []
        self.broken = False
        self.step_base = 0.044 * S.factor()
        self.counters = {"prompt": 0, "gen": 0, "ok": 0}
        self.frozen = None      # the gauges when a hang began
        self.created = time.time()
        threading.Thread(target=self.loop, daemon=True).start()

    def admit(self, sat):
        limit = sat["seqs"] if sat else 1 << 30
        while self.waiting and len(self.active) < limit:
            self.active.append(self.waiting.pop(0))

    def loop(self):
        while True:
            with self.lock:
                # the flag is looked at while idle too: a hang that began
                # with nothing to do shows nothing running for ever after
                if hang_on():
                    if self.frozen is None:
                        self.frozen = (len(self.active), len(self.waiting))
                    self.lock.wait(0.2)
                    continue
                self.frozen = None
                if not self.active and not self.waiting:
                    self.lock.wait(0.2)
                    continue
                sat = saturate()
                self.admit(sat)
                b = len(self.active)
            time.sleep(sat["step_s"] if sat else self.step_base * (1 + b / 14.4))
            with self.lock:
                for r in list(self.active):
                    if r["done"] == 0:
                        self.counters["prompt"] += r["prompt"]
                    r["done"] += 1
                    self.counters["gen"] += 1
                    r["tokens"].append(time.time())
                    if r["done"] >= r["want"]:
                        self.active.remove(r)
                self.lock.notify_all()

    def submit(self, want, prompt=0):
        r = {"want": want, "done": 0, "tokens": [], "prompt": prompt}
        with self.lock:
            self.waiting.append(r)
            self.lock.notify_all()
        return r

    def gauges(self):
        """(running, waiting) as /metrics shows them."""
        if self.frozen is not None:
            return self.frozen
        return len(self.active), len(self.waiting)

    def wait_token(self, r, seen, timeout=120):
        with self.lock:
            deadline = time.time() + timeout
            while r["done"] <= seen and r["done"] < r["want"] and time.time() < deadline:
                self.lock.wait(0.5)
            return r["done"]


WORDS = ("Parallel computing splits a large problem into smaller parts that many processors "
         "solve at the same time to finish faster .").split()


def make_handler(o, engine, model_id):
    created = int(time.time())

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            if self.path not in ("/health", "/metrics"):
                log("INFO", "", '%s:%d - "%s %s HTTP/1.1" %s' % (
                    self.client_address[0], self.client_address[1], self.command, self.path,
                    args[1] if len(args) > 1 else ""), None)

        def send(self, code, body=b"", ctype="application/json"):
            self.send_response(code)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)

        def refused(self):
            """AuthenticationMiddleware (api_server.py): /v1 wants the key."""
            key = api_key(o)
            if not key or not self.path.startswith("/v1"):
                return False
            if self.headers.get("Authorization") == "Bearer " + key:
                return False
            self.send(401, b'{"error":"Unauthorized"}')
            return True

        def do_GET(self):
            if self.refused():
                return
            if self.path == "/health":
                self.send(200)
            elif self.path == "/v1/models":
                perm = {"id": "modelperm-%s" % S.hexid(16), "object": "model_permission",
                        "created": created, "allow_create_engine": False, "allow_sampling": True,
                        "allow_logprobs": True, "allow_search_indices": False,
                        "allow_view": True, "allow_fine_tuning": False, "organization": "*",
                        "group": None, "is_blocking": False}
                self.send(200, json.dumps({"object": "list", "data": [{
                    "id": name, "object": "model", "created": created, "owned_by": "vllm",
                    "root": o["model"], "parent": None,
                    "max_model_len": o["max_model_len"] or 32768,
                    "permission": [perm]} for name in served_names(o)]}).encode())
            elif self.path == "/metrics":
                self.send(200, metrics_text(engine, model_id).encode(),
                          "text/plain; version=0.0.4; charset=utf-8")
            else:
                self.send(404, b'{"detail":"Not Found"}')

        def error(self, code, msg, typ):
            self.send(code, json.dumps({"error": {"message": msg, "type": typ, "param": None,
                                                  "code": code}}).encode())

        def do_POST(self):
            n = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(n) if n else b""
            if self.refused():
                return
            if self.path not in ("/v1/chat/completions", "/v1/completions"):
                self.send(404, b'{"detail":"Not Found"}')
                return
            try:
                req = json.loads(raw)
                assert isinstance(req, dict)
            except (ValueError, AssertionError):
                self.error(400, "Invalid JSON body", "BadRequestError")
                return
            if req.get("model") not in served_names(o):
                self.error(404, "The model `%s` does not exist." % req.get("model"),
                           "NotFoundError")
                return
            if engine.broken:
                # The known vLLM behaviour: /health says 200, generation hangs.
                time.sleep(min(5.0, max(1.0, S.scaled(20.0))))
                self.send(500)
                return
            chat = self.path == "/v1/chat/completions"
            if chat and S.read_json(S.path("vllm_base_model.json")):
                # simctl vllm-base-model: no chat template (chat_utils.py
                # apply_hf_chat_template; serving_chat.py answers
                # f"{e} {e.__cause__}"; the 0.10.1+ body,
                # tests/unit/data/vllm-0.10.1-0.15/chat-no-template.body)
                self.error(400, "As of transformers v4.44, default chat template is no longer "
                           "allowed, so you must provide a chat template if the tokenizer "
                           "does not define one. None", "BadRequestError")
                return
            if "messages" in req:
                text = " ".join(str(m.get("content", "")) for m in req["messages"]
                                if isinstance(m, dict))
            else:
                text = str(req.get("prompt", ""))
            prompt_tokens = max(1, int(len(text.split()) * 1.3) + 10)
            want = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
            want = max(1, min(want, 4096))
            r = engine.submit(want, prompt_tokens)
            cid = "chatcmpl-%s" % S.hexid(32)
            if req.get("stream"):
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()

                def chunk(obj):
                    data = ("data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))).encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": model_id}
                chunk(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                           "logprobs": None, "finish_reason": None}]))
                seen = 0
                while seen < want:
                    got = engine.wait_token(r, seen)
                    if got == seen:
                        break
                    for k in range(seen, got):
                        chunk(dict(base, choices=[{"index": 0, "delta": {"content": " " + WORDS[k % len(WORDS)]},
                                                   "logprobs": None, "finish_reason": None}]))
                    seen = got
                chunk(dict(base, choices=[{"index": 0, "delta": {"content": ""}, "logprobs": None,
                                           "finish_reason": "length", "stop_reason": None}]))
                if (req.get("stream_options") or {}).get("include_usage"):
                    chunk(dict(base, choices=[], usage={"prompt_tokens": prompt_tokens,
                                                        "completion_tokens": seen,
                                                        "total_tokens": prompt_tokens + seen}))
                chunk("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
            else:
                seen = 0
                while seen < want:
                    got = engine.wait_token(r, seen)
                    if got == seen:
                        break
                    seen = got
                content = " ".join(WORDS[k % len(WORDS)] for k in range(seen))
                if not chat:
                    # protocol.py CompletionResponse (vllm-0.10.1-0.15/completions.body)
                    body = {"id": "cmpl-%s" % S.hexid(16), "object": "text_completion",
                            "created": int(time.time()), "model": model_id, "choices": [{
                                "index": 0, "text": " " + content, "logprobs": None,
                                "finish_reason": "length", "stop_reason": None,
                                "prompt_logprobs": None}],
                            "usage": {"prompt_tokens": prompt_tokens,
                                      "total_tokens": prompt_tokens + seen,
                                      "completion_tokens": seen,
                                      "prompt_tokens_details": None}}
                    self.send(200, json.dumps(body).encode())
                    with engine.lock:
                        engine.counters["prompt"] += prompt_tokens
                        engine.counters["gen"] += seen
                        engine.counters["ok"] += 1
                    return
                body = {"id": cid, "object": "chat.completion", "created": int(time.time()),
                        "model": model_id, "choices": [{
                            "index": 0, "message": {"role": "assistant", "reasoning": None,
                                                    "content": content, "tool_calls": []},
                            "logprobs": None, "finish_reason": "length", "stop_reason": None}],
                        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + seen,
                                  "completion_tokens": seen, "prompt_tokens_details": None},
                        "prompt_logprobs": None}
                self.send(200, json.dumps(body).encode())
            with engine.lock:
                engine.counters["ok"] += 1
    return H


def metrics_text(engine, model_id):
    """/metrics as vLLM 0.10+ writes it through prometheus_client
    (tests/unit/data/vllm-metrics/v0.10-single.prom): labels sorted, a
    counter's _total and its _created beside it."""
    with engine.lock:
        run, wait = engine.gauges()
        c = dict(engine.counters)
    esc = model_id.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    lbl = '{engine="0",model_name="%s"}' % esc
    out = []

    def metric(name, typ, help_, value, created=False):
        full = name + ("_total" if typ == "counter" else "")
        out.append("# HELP %s %s\n# TYPE %s %s\n%s%s %s\n" % (full, help_, full, typ, full, lbl,
                                                           repr(float(value))))
        if created:
            out.append("# HELP %s_created %s\n# TYPE %s_created gauge\n%s_created%s %s\n" % (
                name, help_, name, name, lbl, repr(engine.created)))
    metric("vllm:num_requests_running", "gauge", "Number of requests in model execution "
           "batches.", run)
    metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           wait)
    metric("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.",
           c["prompt"], True)
    metric("vllm:generation_tokens", "counter", "Number of generation tokens processed.",
           c["gen"], True)
    return "".join(out)


def serve(o, sock, engine):
    model_id = served_names(o)[0]
    srv = ThreadingHTTPServer((o["host"], o["port"]), make_handler(o, engine, model_id),
                              bind_and_activate=False)
    srv.socket.close()
    srv.socket = sock
    srv.daemon_threads = True
    sock.listen(1024)
    log("INFO", "api_server.py:946", "Starting vLLM API server 0 on http://%s:%d"
        % (o["host"] or "0.0.0.0", o["port"]))
    log("INFO", "launcher.py:37", "Available routes are:")
    for route, methods in (("/health", "GET"), ("/v1/models", "GET"),
                           ("/v1/chat/completions", "POST"), ("/v1/completions", "POST"),
                           ("/metrics", "GET")):
        log("INFO", "launcher.py:46", "Route: %s, Methods: %s" % (route, methods))
    for line in ("Started server process [%d]" % PID, "Waiting for application startup.",
                 "Application startup complete."):
        sys.stdout.write("(APIServer pid=%d) INFO:     %s\n" % (PID, line))
    sys.stdout.flush()
    srv.serve_forever()


def bind_api(o):
    """vLLM binds the API socket early and listens only once ready."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((o["host"], o["port"]))
    except OSError as e:
        die(["Traceback (most recent call last):", "  ...",
             "OSError: [Errno %d] error while attempting to bind on address ('%s', %d): %s"
             % (e.errno, o["host"], o["port"], e.strerror.lower())])
    return s


def common_start(o, args):
    READY_T0[0] = time.time()
    log("INFO", "api_server.py:1351", "vLLM API server version %s" % VERSION)
    # vLLM prints every non-default argument, the API key too
    # (entrypoints/utils.py log_non_default_args): tandem must hide it
    log("INFO", "utils.py:253", "non-default args: {'model': '%s', 'tensor_parallel_size': %d%s}"
        % (o["model"], o["tp"], ", 'api_key': ['%s']" % o["api_key"] if o["api_key"] else ""))


def run_ray(o, args):
    common_start(o, args)
    sock = bind_api(o)
    cfg = check_model(o)
    addr = ray_cli.current_address()
    if not addr:
        die(["ConnectionError: Could not find any running Ray instance. Please specify the one "
             "to connect to by setting the `--address` flag or `RAY_ADDRESS` environment "
             "variable."])
    log("INFO", "worker.py:1942", "Connecting to existing Ray cluster at address: %s..." % addr)
    need = o["tp"] * o["pp"]
    driver_ip = os.environ.get("VLLM_HOST_IP", "")
    try:
        gcs = socket.create_connection(tuple([addr.rsplit(":", 1)[0], int(addr.rsplit(":", 1)[1])]),
                                       timeout=5)
    except OSError:
        ray_cli.gcs_unreachable(addr)
        die(["ConnectionError: GCS has started but no raylets have registered yet."])
    gf = gcs.makefile()

    def call(req):
        gcs.sendall((json.dumps(req) + "\n").encode())
        return json.loads(gf.readline())
    log("INFO", "ray_utils.py:352", "No current placement group found. Creating a new "
        "placement group.")
    snap = call({"op": "nodes"})
    # vLLM's device_str, current_platform.ray_device_key: "NPU" under
    # vllm-ascend (tests/unit/data/vllm-log/pg-wait-npu.log)
    dev = ray_cli.accel_key()
    if sum(n["gpus"] for n in snap["nodes"] if n["alive"]) < need:
        # initialize_ray_cluster warns and waits on purpose (formats.md 7)
        log("WARNING", "ray_utils.py:361", "The number of required %ss exceeds the total "
            "number of available %ss in the placement group." % (dev, dev))
    start = time.time()
    specs = [{dev: 1.0, "node:%s" % driver_ip: 0.001}] + [{dev: 1.0}] * (need - 1)
    pending = ", ".join(["{'%s': 1.0, 'node:%s': 0.001} * 1" % (dev, driver_ip)] +
                        (["{'%s': 1.0} * %d" % (dev, need - 1)] if need > 1 else []))
    wait = 10.0
    next_log = start + S.scaled(wait)
    limit = S.scaled(1800.0)
    while True:
        snap = call({"op": "nodes"})
        alive = [n for n in snap["nodes"] if n["alive"]]
        free = sum(n["gpus"] - n["used_gpus"] for n in alive)
        if S.read_json(S.path("pg_hold.json")) is not None:
            free = 0  # simctl pg-hold: another placement group has them
        if free >= need:
            S.write_json(S.path("pg_pending.json"), None)
            break
        if time.time() - start > 0.5:
            S.write_json(S.path("pg_pending.json"), pending)
        if time.time() > next_log:
            log("INFO", "ray_utils.py:232", "Waiting for creating a placement group of specs for "
                "%d seconds. specs=%s. Check `ray status` and `ray list nodes` to see if you have "
                "enough resources, and make sure the IP addresses used by ray cluster are the "
                "same as VLLM_HOST_IP environment variable specified in each node if you are "
                "running on a multi-node." % (int((time.time() - start) / S.factor()), specs))
            if time.time() - start > limit:
                S.write_json(S.path("pg_pending.json"), None)
                die(["ValueError: Cannot provide a placement group requiring %.1f GPUs "
                     "(placement_group_specs=%s) within 1800 seconds." % (need, specs),
                     "Tensor parallel size may exceed available GPUs in your cluster. Check "
                     "resources with `ray status` and `ray list nodes`.",
                     "If running on K8s with limited GPUs, consider reducing "
                     "--tensor-parallel-size to match available GPU resources."])
            wait *= 2
            next_log = start + S.scaled(wait * 2 - 10)
        time.sleep(0.1)
    # vLLM's check over the nodes that host workers (formats.md section 3).
    ips = {n["ip"] for n in alive if n["gpus"]}
    ids = [n["id"] for n in alive if n["gpus"]]
    ids, ips = unique_ip_fault(ids, ips)
    if len(ids) != len(ips):
        die(["ERROR %s [core.py:708] EngineCore failed to start." % now_tag(),
             "RuntimeError: Every node should have a unique IP address. Got %d nodes with node "
             "ids [%s] and %d unique IP addresses {%s}. Please check your network configuration. "
             "If you set `VLLM_HOST_IP` environment variable, make sure it is unique for each "
             "node." % (len(ids), ", ".join("'%s'" % i for i in ids), len(ips),
                        ", ".join("'%s'" % i for i in sorted(ips)))])
    if not ray_cli.gloo_ok() or not all(n["gloo_ok"] for n in alive):
        check_gloo(next((n["ip"] for n in alive if not n["gloo_ok"]), driver_ip))
    for n in alive:
        name = node_by_ip(n["ip"])
        if name:
            for g in range(n["gpus"]):
                who = None if n["ip"] == driver_ip else "RayWorkerWrapper pid=%d, ip=%s" % (
                    n["pid"] or 0, n["ip"])
                check_memory(name, n["ip"], g, o["gmu"], who)
    max_tokens, need_len = check_kv(o, cfg)
    gib = S.gpu_total_gib(NODE) * o["gmu"]
    pg = call({"op": "pg_create", "bundles": need, "driver_ip": driver_ip, "gib": gib})
    if not pg.get("ok"):
        # the GPUs went between the wait and the reservation: vLLM's text
        # (ray_utils.py; the float sum of the bundles' GPUs)
        die(["ValueError: Cannot provide a placement group requiring %.1f GPUs "
             "(placement_group_specs=%s) within 1800 seconds." % (need, specs)])
    used = {b[0] for b in pg["bundles"]}
    loading_lines(o, max_tokens, need_len, "EngineCore_DP0 pid=%d" % (PID + 2),
                  ["RayWorkerWrapper pid=%d, ip=%s" % (n["pid"] or 0, n["ip"])
                   for n in alive if n["ip"] != driver_ip and node_by_ip(n["ip"])])
    engine = Engine()

    def watch():
        # A Ray node of ours that drops breaks generation; the process dies later.
        while True:
            try:
                snap = call({"op": "nodes"})
            except (OSError, ValueError):
                snap = {"nodes": []}
            bad = [n for n in snap["nodes"] if n["id"] in used and (not n["alive"] or n["failing"])]
            gone = used - {n["id"] for n in snap["nodes"]}
            if bad or gone:
                engine.broken = True
                ip = bad[0]["ip"] if bad else "?"
                log("ERROR", "ray_executor.py:540", "RayWorkerWrapper on ip=%s died: "
                    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing "
                    "this task." % ip, "EngineCore_DP0 pid=%d" % (PID + 2))
                # Real vLLM dies about a minute later, after two of
                # tandem's completion probes at the default 30 s. Scaled
                # to 2 s it raced the bed's two probes 3 s apart (each
                # hanging 1 s) and lost at load 20 and 55: 21's Ray-process
                # kill was then diagnosed vllm-exited, not generation-failed.
                time.sleep(max(12.0, S.scaled(60.0)))
                die(["(EngineCore_DP0 pid=%d) ERROR %s [core.py:845] EngineCore encountered a "
                     "fatal error." % (PID + 2, now_tag()),
                     "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                     "See stack trace (above) for the root cause.",
                     "(APIServer pid=%d) INFO:     Shutting down FastAPI HTTP server." % PID])
            time.sleep(0.2)
    threading.Thread(target=watch, daemon=True).start()
    serve(o, sock, engine)


def devices(o):
    """The devices one DP rank uses: on an Ascend node its tensor parallel
    group's NPUs (vllm-ascend puts one worker on each), else GPU 0."""
    npus = int(S.node(NODE).get("npus", 0))
    return list(range(max(1, min(o["tp"], npus)))) if npus else [0]


def hold_devices(o):
    for d in devices(o):
        S.gpu_hold(NODE, d, S.gpu_total_gib(NODE) * o["gmu"])


def run_dp(o, args):
    common_start(o, args)
    cfg = check_model(o)
    addr = (o["dp_address"], o["dp_rpc_port"])
    if o["headless"]:
        if o["api_servers"] not in (None, 0, 1):
            die(["ValueError: api_server_count can't be set in headless mode"])
        log("INFO", "serve.py:201", "Launching %d data parallel engine(s) in headless mode, with "
            "head node address tcp://%s:%d." % (o["dp_local"], addr[0], addr[1]))
        check_gloo(os.environ.get("VLLM_HOST_IP", ""))
        for d in devices(o):
            check_memory(NODE, "", d, o["gmu"], "EngineCore_DP%d pid=%d"
                         % (o["dp_start_rank"], PID))
        deadline = time.time() + max(2.0, S.scaled(300.0))
        while True:
            try:
                s = socket.create_connection(addr, timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    die(["(EngineCore_DP%d pid=%d) RuntimeError: Did not receive response from "
                         "front-end process within 5 minutes" % (o["dp_start_rank"], PID),
                         "Shutting down."])
                time.sleep(0.2)
        s.sendall((json.dumps({"ranks": o["dp_local"]}) + "\n").encode())
        hold_devices(o)
        # its engine cores load, compile and capture on this node, into
        # this node's log; the head's API server starts once they are ready
        loading_lines(o, 0, 0, "EngineCore_DP%d pid=%d" % (o["dp_start_rank"], PID),
                      faults=False)
        s.sendall(b"ready\n")
        s.settimeout(None)  # the connect's 2 s were for the connect only
        s.recv(1)  # blocks while the head lives
        die(["(EngineCore_DP%d pid=%d) INFO %s [core.py:300] Front-end process closed the "
             "connection." % (o["dp_start_rank"], PID, now_tag()), "Shutting down."])
    sock = bind_api(o)
    check_gloo(os.environ.get("VLLM_HOST_IP", ""))
    for d in devices(o):
        check_memory(NODE, "", d, o["gmu"], None)
    max_tokens, need_len = check_kv(o, cfg)
    rpc = socket.socket()
    rpc.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        rpc.bind(addr)
    except OSError as e:
        die(["OSError: [Errno %d] %s (data parallel rpc %s:%d)" % (e.errno, e.strerror, *addr)])
    rpc.listen(64)
    hold_devices(o)
    remote = o["dp_size"] - o["dp_local"]
    peers = []
    got = 0
    rpc.settimeout(max(0.5, S.scaled(10.0)))
    while got < remote:
        try:
            c, _ = rpc.accept()
            got += json.loads(c.makefile().readline()).get("ranks", 1)
            peers.append(c)
        except socket.timeout:
            log("DEBUG", "utils.py:784", "Waiting for %d local, %d remote core engine proc(s) to "
                "connect." % (0, remote - got))
        except (OSError, ValueError):
            pass
    loading_lines(o, max_tokens, need_len, "EngineCore_DP0 pid=%d" % (PID + 2))
    for c in peers:	# the remote engine cores' "ready" (or their end)
        try:
            c.settimeout(max(5.0, S.scaled(300.0)))
            c.recv(16)
        except OSError:
            pass
    engine = Engine()

    def watch(c):
        c.settimeout(None)
        try:
            c.recv(1)
        except OSError:
            pass
        engine.broken = True
        die(["(APIServer pid=%d) ERROR %s [core_client.py:564] Engine core proc EngineCore_DP1 "
             "died unexpectedly, shutting down client." % (PID, now_tag())])
    for c in peers:
        threading.Thread(target=watch, args=(c,), daemon=True).start()
    serve(o, sock, engine)


def main(prog, args):
    if args[:1] == ["--version"]:
        print(VERSION)
        return
    if args[:1] != ["serve"] or len(args) < 2:
        sys.stderr.write("usage: vllm serve MODEL [options]\n")
        sys.exit(2)
    o = parse(args[1:])
    if o["model"] is None:
        die(["vllm serve: error: the following arguments are required: model_tag"], 2)
    if o["dp_size"] > 1 or o["headless"]:
        run_dp(o, args)
    else:
        run_ray(o, args)
