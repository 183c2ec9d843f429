"""ray stand-in: `ray start` (head: a GCS on the node IP and port; worker: a
raylet that registers with it), `ray status` in the real format
(formats.md section 1), `ray stop`.

Liveness follows Ray's GCS health check (formats.md section 4), scaled by the
bed's time factor: a raylet that exits cleanly is dead at once; one whose
connection drops (container killed) is dead after ~12 s; one that goes
silent (network cut) after ~60 s. Until then it stays listed, which is what
makes restarting one side alone leave a stale node.
"""

import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import simlib as S

NODE = os.environ.get("SIM_NODE", "")
CPUS = 20
MEM_GIB = 83.40
OBJ_GIB = 35.74
HB_S = 0.2


def ray_dir(*p):
    return os.path.join(os.environ.get("SIM_TMP", "/tmp"), "ray", *p)


def current_address():
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    try:
        with open(ray_dir("ray_current_cluster")) as f:
            return f.read().strip()
    except OSError:
        return None


def rpc(addr, req, timeout=2.0):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall((json.dumps(req) + "\n").encode())
        f = s.makefile()
        line = f.readline()
        if not line:
            raise ConnectionError("closed")
        return json.loads(line)


# GCS ------------------------------------------------------------------------

class GCS:
    def __init__(self, ip, port):
        self.lock = threading.Lock()
        self.nodes = {}      # id -> dict
        self.pgs = {}        # pg id -> {"bundles": [(node_id, gpu)], "owner": conn id}
        self.ip, self.port = ip, port
        # At least 10 s: the bed's tests watch the stale node beside the
        # restarted one, which on a loaded CI machine took more than the 4 s
        # this once was to register (the real GCS: several health checks).
        self.crash_dead = max(10.0, S.scaled(12.0))
        self.silent_dead = max(8.0, S.scaled(60.0))

    def alive(self, n, now):
        if n["state"] == "dead":
            return False
        if n["closed_at"] is not None and now - n["closed_at"] > self.crash_dead:
            n["state"] = "dead"
        elif n["closed_at"] is None and now - n["last_hb"] > self.silent_dead:
            n["state"] = "dead"
        return n["state"] != "dead"

    def snapshot(self):
        now = time.time()
        with self.lock:
            out = []
            for nid, n in self.nodes.items():
                alive = self.alive(n, now)
                used = sum(1 for pg in self.pgs.values() for b in pg["bundles"] if b[0] == nid)
                out.append({"id": nid, "ip": n["ip"], "gpus": n["gpus"], "alive": alive,
                            "failing": n["closed_at"] is not None or now - n["last_hb"] > 1.0,
                            "gloo_ok": n["gloo_ok"], "used_gpus": used,
                            "is_head": n["is_head"], "pid": n["pid"]})
            return out

    def pg_create(self, conn_state, req):
        now = time.time()
        need = req["bundles"]
        with self.lock:
            free = []
            for nid, n in self.nodes.items():
                if not self.alive(n, now):
                    continue
                taken = {b[1] for pg in self.pgs.values() for b in pg["bundles"] if b[0] == nid}
                for g in range(n["gpus"]):
                    if g not in taken:
                        free.append((0 if n["ip"] == req.get("driver_ip") else 1, nid, g))
            free.sort()
            if len(free) < need:
                return {"ok": False, "available": len(free)}
            bundles = [(nid, g) for _, nid, g in free[:need]]
            pgid = S.hexid(18)
            self.pgs[pgid] = {"bundles": bundles, "owner": id(conn_state)}
            conn_state.setdefault("pgs", []).append(pgid)
            for nid, g in bundles:
                self.send(nid, {"op": "hold", "gpu": g, "gib": req.get("gib", 0), "pg": pgid})
            return {"ok": True, "pg": pgid, "bundles": bundles}

    def pg_remove(self, pgid):
        pg = self.pgs.pop(pgid, None)
        if pg:
            for nid, g in pg["bundles"]:
                self.send(nid, {"op": "unhold", "pg": pgid})

    def send(self, nid, msg):
        n = self.nodes.get(nid)
        if n and n.get("conn") and n["closed_at"] is None:
            try:
                n["conn"].sendall((json.dumps(msg) + "\n").encode())
            except OSError:
                pass

    def handle(self, conn):
        state = {}
        f = conn.makefile()
        nid = None
        try:
            for line in f:
                req = json.loads(line)
                op = req.get("op")
                if op == "register":
                    nid = S.hexid(56)
                    with self.lock:
                        self.nodes[nid] = {"ip": req["ip"], "gpus": req["gpus"], "state": "alive",
                                           "last_hb": time.time(), "closed_at": None,
                                           "conn": conn, "gloo_ok": req.get("gloo_ok", True),
                                           "is_head": req.get("is_head", False),
                                           "pid": req.get("pid")}
                    conn.sendall((json.dumps({"node_id": nid}) + "\n").encode())
                elif op == "hb":
                    with self.lock:
                        if nid in self.nodes and self.nodes[nid]["state"] != "dead":
                            self.nodes[nid]["last_hb"] = time.time()
                elif op == "bye":
                    with self.lock:
                        if nid in self.nodes:
                            self.nodes[nid]["state"] = "dead"
                    return
                elif op == "nodes":
                    conn.sendall((json.dumps({"nodes": self.snapshot(),
                                              "pgs": len(self.pgs)}) + "\n").encode())
                elif op == "pg_create":
                    conn.sendall((json.dumps(self.pg_create(state, req)) + "\n").encode())
                elif op == "ping":
                    conn.sendall(b'{"ok": true}\n')
        except (OSError, ValueError):
            pass
        finally:
            with self.lock:
                if nid in self.nodes and self.nodes[nid]["closed_at"] is None:
                    self.nodes[nid]["closed_at"] = time.time()
                # A driver that goes away takes its placement groups along.
                for pgid in state.get("pgs", []):
                    self.pg_remove(pgid)
            try:
                conn.close()
            except OSError:
                pass

    def serve(self, sock):
        while True:
            conn, _ = sock.accept()
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()


def run_gcs(ip, port, dash_host=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((ip, port))
    sock.listen(128)
    if dash_host:
        start_dashboard(dash_host)
    with open(ray_dir("gcs.ready"), "w") as f:
        f.write(str(os.getpid()))
    GCS(ip, port).serve(sock)


# token authentication and the dashboard (Ray 2.52) --------------------------

DASHBOARD_PORT = 8265


def auth_token():
    """Ray's token loader (authentication_token_loader.cc): None when auth
    is off, the token when on; exits as `ray start` does when it is on and
    no token can be read (tests/unit/data/ray-2.52/README.md)."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        return None
    tok = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    if tok:
        return tok
    path = os.environ.get("RAY_AUTH_TOKEN_PATH", "")
    if path:
        try:
            with open(path) as f:
                tok = f.readline().strip()
        except OSError:
            tok = ""
        if tok:
            return tok
        die_check("RAY_AUTH_TOKEN_PATH is set but file cannot be opened or is empty: " + path)
    try:
        with open(os.path.expanduser("~/.ray/auth_token")) as f:
            tok = f.readline().strip()
    except OSError:
        tok = ""
    if not tok:
        die_check("Token authentication is enabled but Ray couldn't find an authentication "
                  "token. Create a token file at ~/.ray/auth_token, or store the token in any "
                  "file and set RAY_AUTH_TOKEN_PATH to point to it, or set the RAY_AUTH_TOKEN "
                  "environment variable.")
    return tok


def die_check(msg):
    sys.stderr.write("[%s C %d %d] authentication_token_loader.cc:62:  Check failed: "
                     "!result.hasError() %s\n" % (ts(), os.getpid(), os.getpid(), msg))
    sys.stderr.write("*** StackTrace Information ***\n")
    sys.exit(1)


def start_dashboard(host):
    """The head's dashboard on 8265 (http_server_head.py): the public
    /api/authentication_mode; every other path behind the token when token
    auth is on (401 without one, 403 with a wrong one)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    token = auth_token()

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, code, body, ctype="application/json; charset=utf-8"):
            b = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/api/authentication_mode":
                self.send(200, json.dumps({"authentication_mode": "token" if token
                                           else "disabled"}))
                return
            if token:
                got = self.headers.get("Authorization", "")
                if not got:
                    self.send(401, "Unauthorized: Missing authentication token",
                              "text/plain; charset=utf-8")
                    return
                if got.split(" ", 1)[-1].strip() != token:
                    self.send(403, "Forbidden: Invalid authentication token",
                              "text/plain; charset=utf-8")
                    return
            if path == "/api/version":
                self.send(200, json.dumps({"version": "0", "ray_version": "2.52.1",
                                           "ray_commit": "2d1b4a5e8b4c"}))
            elif path == "/api/jobs/":
                self.send(200, "[]")
            else:
                self.send(404, "404: Not Found", "text/plain; charset=utf-8")

    try:
        srv = ThreadingHTTPServer((host, DASHBOARD_PORT), H)
    except OSError:
        return  # Ray logs it and goes on without a dashboard
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()


def dashboard_host(opts, ip):
    """Ray's default --dashboard-host is 127.0.0.1 (ray_constants
    DEFAULT_DASHBOARD_IP); `simctl ray-dashboard open` makes the bed's
    heads bind 0.0.0.0, as --dashboard-host=0.0.0.0 does. A loopback bed's
    nodes share one 127.0.0.1: there the node's own address stands in."""
    if opts.get("include-dashboard", "true").lower() == "false":
        return None
    if "dashboard-host" in opts:
        return opts["dashboard-host"]
    if os.path.exists(S.path("ray_dashboard_open")):
        return "0.0.0.0"
    if (S.read_json(S.path("sim.json")) or {}).get("mode") == "loopback":
        return ip
    return "127.0.0.1"


# raylet ---------------------------------------------------------------------

def accel_key():
    """Ray's resource for the node's accelerators: on an Ascend node Ray's
    NPU accelerator manager registers "NPU" (vllm-ascend's ray_device_key),
    as tests/unit/data/ray-2.4x-2.5x/v1-ready-npu.out shows it."""
    return "NPU" if S.node(NODE).get("accelerator") == "ascend" else "GPU"


def accel_count():
    n = S.node(NODE)
    return int(n.get("npus", 0)) if n.get("accelerator") == "ascend" else n.get("gpus", 1)


def gloo_ok():
    """What vLLM's Gloo group will need on this node (formats.md section 7);
    on an Ascend node HCCL's interface instead of NCCL's (the Ascend
    data-parallel guide sets GLOO_, TP_ and HCCL_SOCKET_IFNAME)."""
    ascend = S.node(NODE).get("accelerator") == "ascend"
    for var in ("GLOO_SOCKET_IFNAME",) + (("HCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME")
                                          if ascend else ("NCCL_SOCKET_IFNAME",)):
        ifn = os.environ.get(var)
        if not ifn or not os.path.exists("/sys/class/net/%s" % ifn):
            return False
    return True


def run_raylet(addr, ip, is_head):
    """Registers this node and holds GPU memory for placement groups."""
    gpus = accel_count()
    current = {}

    def clean_exit(signum, frame):
        # ray stop: a raylet that shuts down cleanly unregisters at once.
        try:
            current["sock"].sendall(b'{"op": "bye"}\n')
        except (KeyError, OSError):
            pass
        S.gpu_unhold(NODE)
        os._exit(0)
    signal.signal(signal.SIGTERM, clean_exit)
    reconnect_deadline = None
    while True:
        try:
            host, port = addr.rsplit(":", 1)
            s = socket.create_connection((host, int(port)), timeout=2)
            s.settimeout(None)
            current["sock"] = s
            s.sendall((json.dumps({"op": "register", "ip": ip, "gpus": gpus, "gloo_ok": gloo_ok(),
                                   "is_head": is_head, "pid": os.getpid()}) + "\n").encode())
            f = s.makefile()
            json.loads(f.readline())
            with open(ray_dir("raylet.ready"), "w") as rf:
                rf.write(str(os.getpid()))
            reconnect_deadline = None
            stop = threading.Event()

            def beat():
                while not stop.is_set():
                    try:
                        s.sendall(b'{"op": "hb"}\n')
                    except OSError:
                        return
                    time.sleep(HB_S)
            threading.Thread(target=beat, daemon=True).start()
            holds = {}
            for line in f:
                msg = json.loads(line)
                if msg["op"] == "hold":
                    holds[msg["pg"]] = msg
                    S.gpu_hold(NODE, msg["gpu"], msg["gib"])
                elif msg["op"] == "unhold":
                    holds.pop(msg["pg"], None)
                    S.gpu_unhold(NODE)
                    for h in holds.values():
                        S.gpu_hold(NODE, h["gpu"], h["gib"])
            stop.set()
            S.gpu_unhold(NODE)
        except (OSError, ValueError):
            pass
        # The GCS is gone: a raylet gives up after its reconnect timeout.
        if reconnect_deadline is None:
            reconnect_deadline = time.time() + max(1.0, S.scaled(60.0))
        if time.time() > reconnect_deadline:
            os._exit(1)
        time.sleep(0.2)


# CLI ------------------------------------------------------------------------

def spawn(*args):
    return subprocess.Popen([sys.executable, os.path.abspath(sys.argv[0])] + list(args),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def wait_file(p, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(p):
            return True
        time.sleep(0.02)
    return False


def ts():
    return datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def gcs_unreachable(addr):
    sys.stderr.write("[%s W %d %d] rpc_client.h:153: Failed to connect to GCS at address %s "
                     "within 5 seconds.\n" % (ts(), os.getpid(), os.getpid(), addr))
    sys.stderr.write("[%s W %d %d] gcs_client.cc:205: Failed to get cluster ID from GCS server: "
                     "TimedOut: Timed out while waiting for GCS to become available.\n"
                     % (ts(), os.getpid(), os.getpid()))


def cmd_start(args):
    head = "--head" in args
    opts = {}
    for a in args:
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            opts[k] = v
    ip = opts.get("node-ip-address") or os.environ.get("VLLM_HOST_IP") or "127.0.0.1"
    auth_token()    # a token switched on but missing stops ray start here
    os.makedirs(ray_dir(), exist_ok=True)
    sys.stdout.write("Usage stats collection is enabled by default without user confirmation "
                     "because this terminal is detected to be non-interactive. To disable this, "
                     "add `--disable-usage-stats` to the command that starts the cluster, or run "
                     "the following command: `ray disable-usage-stats` before starting the "
                     "cluster. See https://docs.ray.io/en/master/cluster/usage-stats.html for "
                     "more details.\n\n")
    if head:
        port = int(opts.get("port", 6379))
        addr = "%s:%d" % (ip, port)
        if os.path.exists(ray_dir("gcs.ready")):
            sys.stderr.write("Traceback (most recent call last):\n  ...\nConnectionError: Ray is "
                             "trying to start at %s, but is already running at %s. Please "
                             "specify a different port using the `--port` flag of `ray start` "
                             "command.\n" % (addr, addr))
            sys.exit(1)
        try:
            probe = socket.socket()
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((ip, port))
            probe.close()
        except OSError as e:
            sys.stderr.write("Traceback (most recent call last):\n  ...\nOSError: [Errno %d] "
                             "Failed to bind %s: %s\n" % (e.errno, addr, e.strerror))
            sys.exit(1)
        time.sleep(S.scaled(2.0))
        dash = dashboard_host(opts, ip)
        spawn("_gcs", ip, str(port), *([dash] if dash else []))
        if not wait_file(ray_dir("gcs.ready"), 10):
            sys.stderr.write("RuntimeError: Failed to start GCS server.\n")
            sys.exit(1)
        with open(ray_dir("ray_current_cluster"), "w") as f:
            f.write(addr)
        spawn("_raylet", addr, ip, "1")
        wait_file(ray_dir("raylet.ready"), 10)
        print("Local node IP: %s\n\n--------------------\nRay runtime started.\n"
              "--------------------\n\nNext steps\n  To add another node to this Ray cluster, run\n"
              "    ray start --address='%s'\n\n  To connect to this Ray cluster:\n    import ray\n"
              "    ray.init()\n\n  To terminate the Ray runtime, run\n    ray stop\n\n"
              "  To view the status of the cluster, use\n    ray status" % (ip, addr))
        return
    addr = opts.get("address")
    if not addr:
        sys.stderr.write("`--address` is a required flag unless starting a head node with "
                         "`--head`.\n")
        sys.exit(1)
    print("Local node IP: %s" % ip)
    sys.stdout.flush()
    retries = 20
    for attempt in range(retries):
        try:
            rpc(addr, {"op": "ping"}, timeout=max(0.2, S.scaled(5.0)))
            break
        except (OSError, ValueError):
            gcs_unreachable(addr)
            time.sleep(max(0.1, S.scaled(31.0)))
    else:
        sys.stderr.write("RuntimeError: Failed to connect to GCS. Last connection error: "
                         "TimedOut: Timed out while waiting for GCS to become available.\n")
        sys.exit(1)
    with open(ray_dir("ray_current_cluster"), "w") as f:
        f.write(addr)
    time.sleep(S.scaled(1.0))
    slow = S.read_json(S.node_dir(NODE, "ray_join_delay.json"))
    if slow and slow.get("name") == os.environ.get("SIM_CONTAINER"):
        time.sleep(slow["s"])   # simctl ray-join-delay
    raylet = spawn("_raylet", addr, ip, "0")
    wait_file(ray_dir("raylet.ready"), 10)
    print("\n--------------------\nRay runtime started.\n--------------------\n\n"
          "To terminate the Ray runtime, run\n  ray stop")
    if "--block" in args:
        sys.stdout.write("This command will now block forever until terminated by a "
                         "signal.\n")
        sys.stdout.flush()
        raylet.wait()
        sys.stderr.write("Some Ray subprocesses exited unexpectedly:\n  raylet [exit code=1]\n"
                         "Remaining processes will be killed.\n")
        try:
            os.unlink(ray_dir("raylet.ready"))
        except OSError:
            pass
        sys.exit(1)


def fmt_mem(gib):
    return "%.2fGiB" % gib


def cmd_status(args):
    if NODE and S.garbage_on(NODE):
        S.garbage("ConnectionError: Could not find any running Ray instance. ", 1)
    addr = None
    for i, a in enumerate(args):
        if a.startswith("--address="):
            addr = a.split("=", 1)[1]
        elif a == "--address" and i + 1 < len(args):
            addr = args[i + 1]
    addr = addr or current_address()
    if not addr:
        sys.stderr.write(
            "Traceback (most recent call last):\n  File \"/usr/local/bin/ray\", line 8, in "
            "<module>\n    sys.exit(main())\n  ...\nConnectionError: Could not find any running "
            "Ray instance. Please specify the one to connect to by setting the `--address` flag "
            "or `RAY_ADDRESS` environment variable.\n")
        sys.exit(1)
    try:
        snap = rpc(addr, {"op": "nodes"}, timeout=max(0.3, S.scaled(5.0)))
    except (OSError, ValueError):
        gcs_unreachable(addr)
        time.sleep(max(0.1, S.scaled(30.0)))
        sys.stderr.write("ray.exceptions.RpcError: Timed out while waiting for GCS to become "
                         "available.\n")
        sys.exit(1)
    alive = [n for n in snap["nodes"] if n["alive"]]
    # simctl pg-hold: another placement group holds every GPU
    held = S.read_json(S.path("pg_hold.json")) is not None
    header = "=" * 8 + " Autoscaler status: %s " % datetime.datetime.now() + "=" * 8
    out = [header, "Node status", "-" * len(header), "Active:"]
    if S.read_json(S.path("ray_autoscaler.json")) == "v2":
        # v2 (python/ray/autoscaler/v2/utils.py): busy nodes under Active,
        # the others under Idle, counted by ray_node_type_name, which a
        # cluster started by hand leaves empty (tests/unit/data/ray-*/v2-*)
        busy = sum(1 for n in alive if n["used_gpus"] or held)
        idle = len(alive) - busy
        out.append(" %d " % busy if busy else " (no active nodes)")
        out += ["Idle:", " %d " % idle if idle else " (no idle nodes)"]
    else:
        for n in alive:
            out.append(" 1 node_%s" % n["id"])
        if not alive:
            out.append(" (no active nodes)")
    gpus = float(sum(n["gpus"] for n in alive))
    used = gpus if held else float(sum(n["used_gpus"] for n in alive))
    cpus = float(CPUS * len(alive))
    out += ["Pending:", " (no pending nodes)", "Recent failures:", " (no failures)", "",
            "Resources", "-" * len(header), "Total Usage:", " 0.0/%.1f CPU" % cpus]
    if used:
        out.append(" %.1f/%.1f %s (%.1f used of %.1f reserved in placement groups)"
                   % (used, gpus, accel_key(), used, used))
    else:
        out.append(" 0.0/%.1f %s" % (gpus, accel_key()))
    out += [" 0B/%s memory" % fmt_mem(MEM_GIB * len(alive)),
            " 0B/%s object_store_memory" % fmt_mem(OBJ_GIB * len(alive)), "",
            "From request_resources:", " (none)", "Pending Demands:"]
    pending = S.read_json(S.path("pg_pending.json"))
    if pending:
        # vLLM's group, waiting (util.py format_pg)
        out.append(" %s (PACK): 1+ pending placement groups" % pending)
    else:
        out.append(" (no resource demands)")
    print("\n".join(out))


def cmd_stop(args):
    n = 0
    for fn in ("raylet.ready", "gcs.ready"):
        try:
            with open(ray_dir(fn)) as f:
                pid = int(f.read())
            os.kill(pid, 15)
            os.unlink(ray_dir(fn))
            n += 1
        except (OSError, ValueError):
            pass
    if n:
        print("Stopped all %d Ray processes." % n)
    else:
        print("Did not find any active Ray processes.")


def main(prog, args):
    if args[:1] == ["_gcs"]:
        run_gcs(args[1], int(args[2]), args[3] if len(args) > 3 else None)
    elif args[:1] == ["_raylet"]:
        run_raylet(args[1], args[2], args[3] == "1")
    elif args[:1] == ["start"]:
        cmd_start(args[1:])
    elif args[:1] == ["status"]:
        cmd_status(args[1:])
    elif args[:1] == ["stop"]:
        cmd_stop(args[1:])
    elif args[:1] == ["--version"]:
        print("ray, version 2.52.1")
    else:
        sys.stderr.write("Usage: ray [OPTIONS] COMMAND [ARGS]...\n")
        sys.exit(2)
