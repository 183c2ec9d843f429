"""Helpers for integration tests: the bed, SSH into nodes, the daemon, waits.

Every wait polls a real condition with a deadline; nothing sleeps hoping
for timing.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIMCTL = os.path.join(ROOT, "tests", "sim", "simctl")
B = os.path.join(ROOT, os.environ.get("B", "build"))
TANDEMD = os.path.join(B, "tandemd")
TANDEMCTL = os.path.join(B, "tandemctl")
os.environ.setdefault("SIM_DIR", "/var/tmp/tandem-sim")
SIM_DIR = os.environ["SIM_DIR"]
HEAD = ("docker run -d --gpus all --network host --shm-size=16g --name vllm-head "
        "--entrypoint bash -v /model:/model -e VLLM_HOST_IP=10.10.10.1 "
        "-e GLOO_SOCKET_IFNAME=enp1s0f0np0 -e NCCL_SOCKET_IFNAME=enp1s0f0np0 "
        "vllm/vllm-openai:cu130-nightly "
        "-c 'ray start --head --node-ip-address=10.10.10.1 --port=6379 && sleep infinity'")
WORKER = ("docker run -d --gpus all --network host --shm-size=16g --name vllm-worker "
          "--entrypoint bash -v /model:/model -e VLLM_HOST_IP=10.10.10.2 "
          "-e GLOO_SOCKET_IFNAME=enp1s0f0np0 -e NCCL_SOCKET_IFNAME=enp1s0f0np0 "
          "vllm/vllm-openai:cu130-nightly "
          "-c 'ray start --address=10.10.10.1:6379 --node-ip-address=10.10.10.2 && sleep infinity'")
VLLM = ("docker exec -d vllm-head bash -c 'vllm serve /model/qwen3.5-122 "
        "--tensor-parallel-size 2 --distributed-executor-backend ray --host 0.0.0.0 --port 8000 "
        "--max-model-len 2048 --gpu-memory-utilization 0.60 > /tmp/vllm_serve.log 2>&1'")
# SIM_TAG=x runs a test on a tagged bed of its own (tests/sim/simctl), beside
# the default one: its head's address and the daemon's port differ.
TAG = os.environ.get("SIM_TAG", "")
NS_PREFIX = "tsim%s-" % TAG
API = "http://10.10.%d.1:8000" % (10 + (ord(TAG) - 96 if TAG else 0))
LISTEN = "127.0.0.1:%d" % (9100 + (ord(TAG) - 96 if TAG else 0))
MODEL = "/model%s/qwen3.5-122" % ("-" + TAG if TAG else "")


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def simctl(*args, check_rc=True):
    r = subprocess.run([SIMCTL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if check_rc and r.returncode != 0:
        raise Fail("simctl %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def up(nodes=2, **kw):
    args = ["up", "--nodes", str(nodes)]
    for k, v in kw.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    simctl(*args)


def down():
    simctl("down", check_rc=False)


def ssh(node, cmd):
    r = simctl("ssh", node, cmd, check_rc=False)
    return r.returncode, r.stdout, r.stderr


def must(node, cmd):
    rc, out, err = ssh(node, cmd)
    check(rc == 0, "%s: %s -> %d: %s" % (node, cmd, rc, err.strip()))
    return out


def wait_until(fn, timeout, what):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # a probe that fails is just "not yet"
            last = e
        time.sleep(0.1)
    raise Fail("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def http(url, data=None, headers=None, timeout=5, method=None):
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def chat(max_tokens=8, timeout=10):
    body = json.dumps({"model": MODEL, "max_tokens": max_tokens,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    return http(API + "/v1/chat/completions", body, {"Content-Type": "application/json"},
                timeout=timeout)


def ray_nodes(node="node1", container="vllm-head", engine="docker"):
    out = must(node, "%s exec %s ray status" % (engine, container))
    active = out.split("Active:")[1].split("Pending:")[0]
    return len([l for l in active.splitlines() if l.strip().startswith("1 node_")])


def log_of(node="node1"):
    return ssh(node, "docker exec vllm-head cat /tmp/vllm_serve.log")[1]


def bed_pids():
    out = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
    pids = []
    for line in out.splitlines():
        name = line.split()[0]
        if name.startswith(NS_PREFIX):
            pids += subprocess.run(["ip", "netns", "pids", name], stdout=subprocess.PIPE,
                                   text=True).stdout.split()
    return pids


# The keys whose defaults decide how fast a failure is noticed and how
# easily a slow node is taken for a failed one. The bed's config sets fast
# values; default_timing() drops them, so tandemd's own defaults apply.
TIMING = {"ssh": ("keepalive_s", "connect_timeout_s"),
          "probe": ("interval_s", "timeout_s", "failures_to_degrade", "generate_every_s")}


def preflight_deadline(cfg):
    """A preflight command's timeout (lib/preflight/preflight_steps.c preflight_timeout_s):
    twice probe.timeout_s, at least 20 s."""
    return max(2 * cfg["probe"].get("timeout_s", 10), 20.0)


def default_timing(d):
    for section, keys in TIMING.items():
        for k in keys:
            d.cfg[section].pop(k, None)
    d.write_config()
    return d


class Daemon:
    """tandemd against the bed, with its stderr kept for the assertions."""

    def __init__(self, cfg_overrides=None, topology="ray", extra_args=(), state_dir=None):
        cfg = json.loads(simctl("config", "--topology", topology, "--listen", LISTEN).stdout)
        for path, val in (cfg_overrides or {}).items():
            d = cfg
            keys = path.split(".")
            for k in keys[:-1]:
                d = d.setdefault(k, {})
            d[keys[-1]] = val
        self.cfg = cfg
        self.cfg_path = os.path.join(SIM_DIR, "tandem.json")
        self.state_dir = state_dir or os.path.join(SIM_DIR, "state")
        os.makedirs(self.state_dir, exist_ok=True)
        self.write_config()
        self.log_path = os.path.join(SIM_DIR, "tandemd.log")
        self.extra = list(extra_args)
        self.proc = None
        self.api = "http://" + cfg["listen"]
        self.token = open(cfg["api_token_file"]).read().strip()

    def write_config(self):
        with open(self.cfg_path, "w") as f:
            json.dump(self.cfg, f, indent=2)

    def start(self, env=None, wrapper=(), api_timeout=10):
        self.logf = open(self.log_path, "a")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(list(wrapper) + [TANDEMD, "--config", self.cfg_path,
                                                      "--state-dir", self.state_dir] + self.extra,
                                     stdout=self.logf, stderr=subprocess.STDOUT, env=e)
        wait_until(lambda: self.proc.poll() is None and self.status(), api_timeout,
                   "tandemd API to answer")
        # The answer must come from this process, not a stray one on the port.
        check(self.proc.poll() is None, "tandemd exited at start:\n" + self.log()[-2000:])
        return self

    def status(self):
        code, body = http(self.api + "/status", timeout=2)
        return json.loads(body) if code == 200 else None

    def events(self):
        code, body = http(self.api + "/events", timeout=2)
        return json.loads(body)

    def post(self, path, token=True):
        h = {"Authorization": "Bearer " + self.token} if token else {}
        return http(self.api + path, b"", h, method="POST")

    def wait_state(self, state, timeout=60, action=None):
        def ok():
            s = self.status()
            if s and s["state"] == state and (action is None or s["action"] == action):
                return s
            return None
        return wait_until(ok, timeout, "state %s%s" % (state, " / " + action if action else ""))

    def log(self):
        try:
            # a node's raw bytes may reach the log (27-rebuild-garbage-output)
            return open(self.log_path, errors="replace").read()
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Fail("tandemd did not exit within %ss of signal %d" % (timeout, sig))
        return self.proc.returncode if self.proc else None


# (title, text) of the logs as they were at a failure, before the test's
# own cleanup ran (snapshot_logs); run() prints these first.
SNAPSHOT = []


def proxy_log():
    try:
        with open(os.path.join(SIM_DIR, "delayproxy.log")) as f:
            return f.read()
    except OSError:
        return None


def snapshot_logs(daemons):
    """Keeps the daemons' and the delay proxy's logs as they are now: call
    it at a failure, before a cleanup that changes what the logs will say
    (`simctl delay off` SIGKILLs the proxy, and every connection through it
    ends: the daemon then logs nodes closing their connections, which the
    failure did not see)."""
    SNAPSHOT[:] = [("tandemd log, at the failure, before the test's cleanup",
                    d.log()[-6000:]) for d in daemons]
    p = proxy_log()
    if p is not None:
        SNAPSHOT.append(("delay proxy, at the failure, before the test's cleanup", p[-3000:]))


def keep_logs(prefix, daemons):
    """A failed run's whole logs, before the bed goes (tests/repeat sets
    KEEP_LOGS): each daemon's, each node's sshd, engine and events, and the
    output of the docker stand-in's containers."""
    import glob
    import shutil
    for i, d in enumerate(daemons):
        try:
            with open("%s.tandemd%d.log" % (prefix, i), "w") as f:
                f.write(d.log())
        except Exception:
            pass
    for i, (title, text) in enumerate(SNAPSHOT):
        with open("%s.snapshot%d.log" % (prefix, i), "w") as f:
            f.write("%s\n%s" % (title, text))
    for src in (glob.glob(os.path.join(SIM_DIR, "nodes", "*", "*.log")) +
                glob.glob(os.path.join(SIM_DIR, "nodes", "*", "containers", "*.log"))):
        node = src[len(os.path.join(SIM_DIR, "nodes", "")):].split(os.sep)[0]
        try:
            shutil.copyfile(src, "%s.%s.%s" % (prefix, node, os.path.basename(src)))
        except OSError:
            pass


def run(test, netns_bed=True):
    """Runs one test with a fresh bed; prints the daemon log on failure.
    netns_bed=False: the test makes a bed of its own, and the shared one
    (which another run may be using) is left alone."""
    # tests/run's timeout sends SIGTERM: clean up (daemon, bed) all the same.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL: terminated (timeout?)"))
    daemons = []
    passed = False
    try:
        test(daemons)
        passed = True
    except Fail as e:
        for title, text in SNAPSHOT:
            sys.stderr.write("--- %s ---\n%s\n" % (title, text))
        for d in daemons:
            sys.stderr.write("--- tandemd log%s ---\n" % (", at the end" if SNAPSHOT else "") +
                             d.log()[-6000:] + "\n")
        p = proxy_log()
        if p is not None:
            sys.stderr.write("--- delay proxy%s ---\n" % (", at the end" if SNAPSHOT else "") +
                             p[-3000:] + "\n")
        sys.stderr.write("FAIL: %s\n" % e)
        sys.exit(1)
    finally:
        for d in daemons:
            try:
                d.stop(signal.SIGKILL, timeout=5)
            except Exception:
                pass
        if not passed and os.environ.get("KEEP_LOGS"):
            keep_logs(os.environ["KEEP_LOGS"], daemons)
        if netns_bed and os.environ.get("KEEP_BED") != "1":
            down()
    print("ok")


def cids(engine="docker"):
    """The container ids on both nodes (changes mean a node was rebuilt)."""
    out = {}
    for node, name in (("node1", "vllm-head"), ("node2", "vllm-worker")):
        rc, o, _ = ssh(node, "%s inspect -f '{{.Id}}' %s" % (engine, name))
        out[node] = o.strip() if rc == 0 else None
    return out


class NotifySocket:
    """Stands in for systemd's NOTIFY_SOCKET (as systemd's test-sd-notify)."""

    def __init__(self):
        import socket
        import threading
        self.path = os.path.join(SIM_DIR, "notify.sock")
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.msgs = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            self.msgs.append((time.time(), data.decode()))

    def texts(self):
        return [m for _, m in self.msgs]


def trust_all_host_keys(d):
    """known_hosts with every host key type of every node (ssh-keyscan), so
    a test of something else does not depend on which type the client asks
    for first."""
    lines = []
    for n in d.cfg["nodes"]:
        port = n.get("ssh_port", 22)
        out = subprocess.run(["ssh-keyscan", "-p", str(port), n["ssh_host"]],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
        check(out.strip(), "ssh-keyscan %s" % n["ssh_host"])
        lines.append(out.strip())
    with open(d.cfg["ssh"]["known_hosts_file"], "w") as f:
        f.write("\n".join(lines) + "\n")


def daemon_stood_still(d, gen):
    """The daemon itself stands still for longer than a node may be silent
    and longer than sshd may take to open a channel (SIGSTOP: as a machine
    under load starves it, or a paused VM): nothing asked the nodes
    meanwhile, so their silence is not theirs, and what they answered waits
    unread. Both nodes were called lost at once on resuming (a flake of 21
    and 25 under load), and a channel open sent just before the stop was
    taken for an sshd that accepts no command (41 in CI; 35 through the
    delay): now no node is lost and nothing is rebuilt."""
    ka = d.cfg["ssh"]["keepalive_s"]
    lost = lambda: d.log().count("silent for") + d.log().count("unreachable")  # noqa: E731
    lost0 = lost()
    d.proc.send_signal(signal.SIGSTOP)
    # the fault itself: how long the daemon stands still
    time.sleep(max(3 * ka, d.cfg["ssh"]["connect_timeout_s"]) + 1.5)
    d.proc.send_signal(signal.SIGCONT)
    # /status answering proves the loop runs again; the first pump after it
    # judges the nodes, a beat asks them, their echo comes within a beat:
    # watch over three beats that nothing is lost
    wait_until(lambda: d.status() is not None, 5, "/status after SIGCONT")
    t_end = time.time() + 3 * ka
    while time.time() < t_end:
        s = d.status()
        check(lost() == lost0, "a node called lost after the daemon's own stop: %s"
              % d.log().splitlines()[-3:])
        check(s["state"] == "serving" and s["generation"] == gen,
              "serving on, not rebuilt, after the daemon's own stop: %s/%s gen %s" % (
                  s["state"], s["action"], s["generation"]))
        time.sleep(0.1)


def ray_token_file():
    """A Ray token file as an operator writes one (0600), for ray.auth_token_file."""
    token = os.path.join(SIM_DIR, "ray-token")
    with open(token, "w") as f:
        f.write("t0k3n-%d\n" % os.getpid())
    os.chmod(token, 0o600)
    return token


def cpu_s(pid):
    """User + system CPU time of a process so far, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def node_of(d, name):
    return [n for n in (d.status() or {}).get("nodes", []) if n["name"] == name][0]
