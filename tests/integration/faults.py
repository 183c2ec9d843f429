"""Faults, the moments they can hit, and what must hold afterwards.

Shared by the fault matrix (31) and the soak (32, make soak). A cell is one
fault at one moment: reach the moment, inject, hold the fault until it had
its effect (or a deadline passes, as when paused), clear it, wait for
`serving`, then check the invariants of PRODUCT.md against the bed itself:
/status kept answering, `ray status` lists exactly the expected nodes, every
node runs exactly the expected containers and no process outside them, and
`generation` grew by the number of rebuilds the events explain.
"""

import json
import os
import subprocess
import threading
import time

from bed import Fail, NS_PREFIX, SIMCTL, SIM_DIR, chat, check, http, simctl, wait_until

WORKER = "node2"
GMU = 0.6  # simctl config's --gpu-memory-utilization
CONTAINERS = {"node1": "vllm-head", "node2": "vllm-worker"}
ENGINE_PROCS = ("dockerd", "containerd", "containerd-shim-runc-v2", "conmon")

# The matrix runs fast: model load 0.4 s at factor 0.02, a vLLM that is not
# up 3 s after starting has hung, backoff short, no hourly cap in the way.
FACTOR = "0.02"
OVERRIDES = {"vllm.ready_timeout_s": 3, "recovery.backoff_initial_s": 0.5,
             "recovery.backoff_max_s": 1.5, "recovery.max_rebuilds_per_hour": 1024}
# A cell whose fault must find vLLM still starting: at load 17 the 3 s
# above ended the start (startup-timeout) before crash-vllm came, and the
# cell found no vLLM to crash (2026-12-05). Its own, longer ready timeout
# keeps the target there, so the cell runs rather than being excused.
CELL_READY_TIMEOUT_S = {("crash-vllm", "vllm-loading"): 30}


class NotApplicable(Exception):
    """The fault's target does not exist at this moment (nothing to kill)."""


def sim(*args):
    r = simctl(*args, check_rc=False)
    if r.returncode != 0:
        err = r.stderr.strip()
        if "no running container" in err or "no vllm serve process" in err:
            raise NotApplicable(err)
        raise Fail("simctl %s: %s" % (" ".join(args), err))


def diag_is(d, code):
    def f():
        s = d.status()
        return s and (s["diagnosis"] or {}).get("code") == code
    return f


def hit_or_nothing_to_hit(d, code):
    """For faults that only bite when vLLM next starts (memory short, slow
    load): their diagnosis, or a daemon with no start ahead of it."""
    def f():
        s = d.status()
        return s and ((s["diagnosis"] or {}).get("code") == code or s["action"] == "paused" or
                      (s["state"] == "serving" and s["action"] == "idle"))
    return f


def halted_by(d, code):
    """A non-retryable fault: its diagnosis, and retries stopped."""
    def f():
        s = d.status()
        return s and (s["diagnosis"] or {}).get("code") == code and s["recovery"]["halted"]
    return f


def warns(d, code, node):
    def f():
        s = d.status()
        return s and any(w["code"] == code and w["node"] == node for w in s["warnings"])
    return f


def left_serving(d):
    s = d.status()
    return s and s["state"] != "serving"


def stalled(d, node):
    """The node is called unreachable because its sshd timed out (not only
    because its connections were dropped)."""
    def f():
        s = d.status()
        n = s and [n for n in s["nodes"] if n["name"] == node][0]
        return n and not n["reachable"] and "timed out" in n["last_error"]
    return f


def trust_new_key(d, node):
    """What the operator does after verifying a reinstalled node."""
    ip = [n["ssh_host"] for n in d.cfg["nodes"] if n["name"] == node][0]
    keys = subprocess.run(["ssh-keyscan", "-t", "ed25519", ip], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True).stdout.strip()
    check(keys, "ssh-keyscan %s" % ip)
    kh = d.cfg["ssh"]["known_hosts_file"]
    lines = [l for l in open(kh).read().splitlines() if not l.startswith(ip)]
    open(kh, "w").write("\n".join(lines + [keys]) + "\n")
    d.proc.send_signal(1)  # SIGHUP


class Fault:
    """inject(); then, if it has a clear(), hold the fault until effect()
    shows or hold_s passes (a paused daemon shows nothing), and clear()."""

    def __init__(self, name, inject, clear=None, effect=None, hold_s=2.0, must_show=False):
        self.name, self.inject, self.clear = name, inject, clear
        self.effect, self.hold_s, self.must_show = effect, hold_s, must_show

    def hold_and_clear(self, hold_s, must_show=False):
        if not self.clear:
            return
        deadline = time.time() + hold_s
        while time.time() < deadline and not self.effect():
            time.sleep(0.05)
        if must_show:
            check(self.effect(), "%s: not shown within %.0f s" % (self.name, hold_s))
        self.clear()


def faults(d):
    gpu_free = "%.2f" % (119.70 - 40.0)
    return [
        Fault("reboot", lambda: sim("reboot", WORKER, "--down-s", "1")),
        Fault("power-off", lambda: sim("power-off", WORKER),
              lambda: sim("power-on", WORKER), lambda: left_serving(d)),
        Fault("cut", lambda: sim("cut", WORKER), lambda: sim("heal", WORKER),
              lambda: left_serving(d)),
        Fault("kill-head", lambda: sim("kill", "node1", "vllm-head")),
        Fault("kill-worker", lambda: sim("kill", WORKER, "vllm-worker")),
        Fault("crash-vllm", lambda: sim("crash-vllm")),
        Fault("engine-down", lambda: sim("engine-down", WORKER),
              lambda: sim("engine-up", WORKER), diag_is(d, "engine-down")),
        Fault("gpu-short", lambda: sim("gpu-free", WORKER, "20"),
              lambda: sim("gpu-free", WORKER, gpu_free),
              hit_or_nothing_to_hit(d, "gpu-memory-low"), 4.0),
        Fault("slow-load", lambda: sim("slow-load", "6"), lambda: sim("slow-load", "off"),
              hit_or_nothing_to_hit(d, "startup-timeout"), 8.0),
        Fault("hostkey-change", lambda: sim("hostkey-change", WORKER),
              lambda: trust_new_key(d, WORKER), halted_by(d, "host-key"), 5.0, must_show=True),
        # The worker's sshd drops its connections and stalls new logins: in
        # the login, or before its banner. The daemon must call it
        # unreachable (not hang on it), and serve again once it answers.
        Fault("ssh-stall", lambda: sim("ssh-stall", WORKER),
              lambda: sim("ssh-unstall", WORKER), stalled(d, WORKER), 8.0, must_show=True),
        Fault("ssh-stall-handshake", lambda: sim("ssh-stall", WORKER, "--phase", "handshake"),
              lambda: sim("ssh-unstall", WORKER), stalled(d, WORKER), 8.0, must_show=True),
        # Everything the worker sends trickles (16 kbit/s) for 4 s.
        Fault("ssh-slow", lambda: sim("ssh-slow", WORKER), lambda: sim("ssh-fast", WORKER),
              lambda: False, 4.0),
        # The worker's sshd allows 2 channels per connection (MaxSessions
        # 2) and drops its connections: its heartbeat and events stream
        # hold both, so tandem must say why its commands there starve.
        Fault("ssh-max-sessions", lambda: sim("max-sessions", WORKER, "2"),
              lambda: sim("max-sessions", WORKER, "default"),
              warns(d, "ssh-max-sessions", WORKER), 8.0, must_show=True),
    ]


class StatusWatch:
    """Polls /status throughout a cell: every answer must come, and fast."""

    def __init__(self, d):
        self.d, self.failures, self.worst, self.n = d, [], 0.0, 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            t0 = time.time()
            try:
                code, body = http(self.d.api + "/status", timeout=2)
                json.loads(body)
                if code != 200:
                    self.failures.append("HTTP %d" % code)
            except Exception as e:  # a refused or hung /status is the failure
                self.failures.append(repr(e))
            self.worst = max(self.worst, time.time() - t0)
            self.n += 1
            self.stop.wait(0.05)

    def end(self):
        self.stop.set()
        self.t.join()
        check(not self.failures, "/status failed %d of %d times: %s" % (
            len(self.failures), self.n, self.failures[:3]))
        check(self.worst < 1.0, "/status took %.3f s" % self.worst)


def reach(d, moment):
    """Brings the daemon to the moment; returns what undoes any setup."""
    d.wait_state("serving", 60, action="idle")
    if moment == "serving":
        return
    if moment == "paused":
        check(d.post("/pause")[0] == 202, "pause")
        return
    if moment == "backoff":
        # A rebuild that cannot finish: the head's engine is down.
        sim("engine-down", "node1")
        check(d.post("/rebuild")[0] == 202, "rebuild")
        wait_until(lambda: (d.status() or {}).get("action") == "backoff", 20, "backoff")
        sim("engine-up", "node1")
        return
    check(d.post("/rebuild")[0] == 202, "rebuild")
    if moment == "teardown":
        return
    want = {"waiting-ray": "waiting-ray", "vllm-loading": "waiting-vllm"}[moment]

    def at():
        s = d.status()
        return s and s["action"] == want
    deadline = time.time() + 30
    while time.time() < deadline:
        if at():
            return
        time.sleep(0.01)
    raise Fail("never reached %s" % want)


def rebuilds_in(events, action_before):
    """Rebuild starts the events record: entries into teardown."""
    n, prev = 0, action_before
    for e in events:
        if e["action"] == "teardown" and prev not in ("teardown", "loading-image"):
            n += 1
        prev = e["action"]
    return n


def node_procs(node):
    """pid -> (pid namespace, parent pid, argv) for every process of a node."""
    out = subprocess.run(["ip", "netns", "pids", NS_PREFIX + node], stdout=subprocess.PIPE,
                         text=True).stdout.split()
    procs = {}
    for p in out:
        try:
            argv = [a for a in open("/proc/%s/cmdline" % p).read().split("\0") if a]
            ppid = int(open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[1])
            procs[int(p)] = (os.readlink("/proc/%s/ns/pid" % p), ppid, argv)
        except (OSError, IndexError, ValueError):
            pass
    return procs


def real_engine():
    try:
        return json.load(open(os.path.join(SIM_DIR, "sim.json"))).get("engine", "standin")
    except (OSError, ValueError):
        return "standin"


def running_containers(node):
    """[{"name", "pid"}] of the node's running containers (pid: the init's,
    as the host sees it)."""
    engine = real_engine()
    if engine != "standin":
        r = subprocess.run([SIMCTL, "ssh", node, "%s ps -q | xargs -r %s inspect -f "
                            "'{{.Name}} {{.State.Pid}}'" % (engine, engine)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = []
        for line in r.stdout.splitlines():
            name, _, pid = line.strip().partition(" ")
            if pid.isdigit() and int(pid) > 0:
                out.append({"name": name.lstrip("/"), "pid": int(pid)})
        return out
    d = os.path.join(SIM_DIR, "nodes", node, "containers")
    out = []
    for fn in os.listdir(d):
        try:
            c = json.load(open(os.path.join(d, fn))) if fn.endswith(".json") else None
        except (OSError, ValueError):
            c = None
        if c and c.get("status") == "running":
            out.append(c)
    return out


def strays(node):
    """Processes of the node that belong to nothing it should run: not sshd,
    not the one `docker events` stream or heartbeat, not a running
    container's."""
    running = running_containers(node)
    names = {c["name"] for c in running}
    procs = node_procs(node)
    own_ns = {procs[c["pid"]][0] for c in running if c["pid"] in procs}
    root_ns = os.readlink("/proc/self/ns/pid")
    shims = {p for p, (_, _, argv) in procs.items() if "_shim" in argv and argv[-1] in names}
    bad, events, beats, ewrap = set(), [], [], []
    for pid, (pns, ppid, argv) in procs.items():
        line = "%d %s" % (pid, " ".join(argv))
        if pns != root_ns:
            ok = pns in own_ns
        elif argv and argv[0].startswith("sshd"):
            ok = True
        elif (len(argv) > 2 and argv[1].endswith("/docker") and argv[2] == "events") or \
                (len(argv) > 1 and argv[0] in ("docker", "podman") and argv[1] == "events"):
            events.append(line)
            ok = True
        elif argv[1:2] == ["-c"] and argv[2:] == ["while read -r _; do echo; done"]:
            beats.append(line)  # tandemd's heartbeat (daemon/ssh/ssh_session.c)
            ok = True
        elif argv[1:2] == ["-c"] and len(argv) == 3 and (
                argv[2].startswith("tandem_cmd=") or argv[0] == "sh") and " events " in argv[2]:
            # the events stream's hang-up wrapper, its watcher and its sh -c
            ewrap.append(line)
            ok = True
        elif pid in shims or ppid in shims:
            ok = True
        elif argv and os.path.basename(argv[0]) in ENGINE_PROCS:
            ok = True  # a real engine: dockerd, containerd, its shims
        elif argv == ["sleep", "infinity"] and ppid == 1:
            ok = True  # the real-engine bed's holder of the node's mounts
        elif argv and argv[0] == "nsenter":
            ok = procs.get(int(argv[2]), ("",))[0] in own_ns  # docker exec -d
        else:
            # Probes come and go; the caller keeps what lives through two samples.
            ok = False
        if not ok:
            bad.add(line)
    for one, most in ((events, 1), (beats, 1), (ewrap, 3)):
        if len(one) > most:
            bad.update(one)
    return bad


def settled(d):
    """True once everything the contract promises holds on the bed at once."""
    s = d.status()
    if not s or s["state"] != "serving" or s["action"] != "idle":
        return False
    if s["vllm"]["gpu_memory_utilization"] != GMU:
        # The remedy ladder stepped down; the operator's reset restores it.
        check(d.post("/rebuild?reset=1")[0] == 202, "rebuild?reset=1")
        return False
    check(s["diagnosis"] is None, "diagnosis cleared: %r" % s["diagnosis"])
    first = {n: strays(n) for n in CONTAINERS}
    # One SSH command per node, both at once: docker ps, and ray status on the head.
    cmd = {n: "docker ps -a --format '{{.Names}} {{.Status}}'" for n in CONTAINERS}
    cmd["node1"] += "; echo @@; docker exec vllm-head ray status"
    procs = {n: subprocess.Popen([SIMCTL, "ssh", n, c], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for n, c in cmd.items()}
    outs = {n: p.communicate()[0] for n, p in procs.items()}
    ps1, _, ray = outs["node1"].partition("@@\n")
    check("Active:" in ray, "ray status on the head: %r" % ray)
    active = ray.split("Active:")[1].split("Pending:")[0]
    nodes = [l for l in active.splitlines() if l.strip().startswith("1 node_")]
    check(len(nodes) == 2, "ray status: exactly 2 nodes, got %d:\n%s" % (len(nodes), ray))
    for node, name in CONTAINERS.items():
        ps = [l for l in (ps1 if node == "node1" else outs[node]).splitlines() if l.strip()]
        check(len(ps) == 1 and ps[0].startswith(name + " Up"),
              "%s: only %s, running: %r" % (node, name, ps))
    check(chat()[0] == 200, "a chat completion answers")
    for node in CONTAINERS:
        left = first[node] & strays(node)
        check(not left, "%s: stray processes: %r" % (node, sorted(left)))
    now = d.status()  # and nothing moved while we looked
    return now and now["state"] == "serving" and now["generation"] == s["generation"]


def invariants(d, watch, gen0, seq0, action0):
    """After the cell: every promise of the contract, checked on the bed."""
    wait_until(lambda: settled(d), 90, "serving, with the bed as the contract says")
    watch.end()
    code, body = http(d.api + "/events?since=%d" % seq0)
    evs = json.loads(body)
    s = d.status()
    want = rebuilds_in(evs, action0)
    if os.environ.get("CELL_VERBOSE"):
        t0 = evs[0]["time"] if evs else 0
        for e in evs:
            print("     %6.2f %s/%s %s" % (e["time"] - t0, e["to"], e["action"], e["reason"][:90]))
    check(s["generation"] - gen0 == want,
          "generation %d -> %d but the events explain %d rebuilds" % (gen0, s["generation"], want))
    return want


def ready_timeout(d, seconds):
    """vllm.ready_timeout_s reloaded live (SIGHUP; the key needs no
    rebuild), waiting for the daemon to say it read it."""
    if d.cfg["vllm"].get("ready_timeout_s") == seconds:
        return
    d.cfg["vllm"]["ready_timeout_s"] = seconds
    d.write_config()
    n = d.log().count("reloaded: no change the cluster depends on")
    d.proc.send_signal(1)  # SIGHUP
    wait_until(lambda: d.log().count("reloaded: no change the cluster depends on") > n, 10,
               "vllm.ready_timeout_s %g reloaded" % seconds)


def cell(d, fault, moment):
    """One fault at one moment. Returns the rebuilds it took, or raises
    NotApplicable when the moment has nothing for the fault to hit."""
    longer = CELL_READY_TIMEOUT_S.get((fault.name, moment))
    if longer is None:
        return cell_run(d, fault, moment)
    usual = d.cfg["vllm"].get("ready_timeout_s", 1800)
    d.wait_state("serving", 90, action="idle")
    ready_timeout(d, longer)
    try:
        return cell_run(d, fault, moment)
    finally:
        ready_timeout(d, usual)


def cell_run(d, fault, moment):
    s = d.wait_state("serving", 90, action="idle")
    evs = d.events()
    seq0 = evs[-1]["seq"] if evs else 0
    gen0, action0 = s["generation"], s["action"]
    watch = StatusWatch(d)
    try:
        reach(d, moment)
        fault.inject()
    except NotApplicable:
        watch.end()
        if moment == "paused":
            d.post("/resume")
        raise
    fault.hold_and_clear(fault.hold_s, fault.must_show and moment != "paused")
    if moment == "paused":
        s = d.status()
        check(s["action"] == "paused", "still paused while the fault held: %s" % s["action"])
        check(s["generation"] == gen0, "nothing rebuilt while paused")
        check(d.post("/resume")[0] == 202, "resume")
    return invariants(d, watch, gen0, seq0, action0)
