"""docker / podman stand-in: the subset of the CLI that tandem uses (PRODUCT.md
section 6), with the real output formats, exit codes and error texts
(formats.md, DOCKER CLI; docker CLI v28 wording, as on Debian's docker.io).

A container is a process tree started by a shim process; as root it gets its
own PID and mount namespace (so pkill and /tmp are per container) and shares
the node's network namespace (--network host).
"""

import contextlib
import datetime
import hashlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

import simlib as S

NODE = os.environ.get("SIM_NODE", "")
PROG = "docker"  # or podman: the few texts in which podman 4.3 differs
PODMAN_EVENTS = {"die": "died", "destroy": "remove"}
DAEMON_DOWN = ("Cannot connect to the Docker daemon at unix:///var/run/"
               "docker.sock. Is the docker daemon running?")
VERSION = "28.2.2"


def err(msg, code=1):
    sys.stderr.write(msg + "\n")
    sys.exit(code)


def cdir(*p):
    return S.node_dir(NODE, "containers", *p)


def load(name):
    return S.read_json(cdir(name + ".json"))


def find(ref):
    """By name, by full id or by an id prefix, like the daemon does."""
    c = load(ref)
    if c:
        return c
    if re.fullmatch(r"[0-9a-f]{4,64}", ref):
        for fn in os.listdir(cdir()):
            if fn.endswith(".json"):
                c = S.read_json(cdir(fn))
                if c and c["id"].startswith(ref):
                    return c
    return None


def save(c):
    S.write_json(cdir(c["name"] + ".json"), c)


def all_containers():
    out = []
    for fn in sorted(os.listdir(cdir())):
        if fn.endswith(".json"):
            c = S.read_json(cdir(fn))
            if c:
                out.append(c)
    return out


def running(c):
    return c.get("status") == "running" and S.pid_alive(c.get("shim_pid", 0))


def human_duration(secs):
    """go-units HumanDuration, as docker ps prints it."""
    s = int(secs)
    if s < 1:
        return "Less than a second"
    if s == 1:
        return "1 second"
    if s < 60:
        return "%d seconds" % s
    m = s // 60
    if m == 1:
        return "About a minute"
    if m < 60:
        return "%d minutes" % m
    h = round(s / 3600)
    if h == 1:
        return "About an hour"
    if h < 48:
        return "%d hours" % h
    if h < 24 * 7 * 2:
        return "%d days" % (h // 24)
    return "%d weeks" % (h // (24 * 7))


def status_text(c):
    if running(c):
        return "Up " + human_duration(time.time() - c["started_at"])
    if c.get("status") == "created":
        return "Created"
    return "Exited (%d) %s ago" % (c.get("exit_code", 0),
                                   human_duration(time.time() - c.get("finished_at", time.time())))


def render(fmt, c):
    """The few Go template fields tandem and the tests use."""
    state = {
        "Running": "true" if running(c) else "false",
        "Pid": str(c.get("pid", 0) if running(c) else 0),
        "Status": "running" if running(c) else ("created" if c.get("status") == "created" else "exited"),
        "ExitCode": str(c.get("exit_code", 0)),
    }

    def field(m):
        v = value(m.group(1))
        return v if isinstance(v, str) else "[" + " ".join(v) + "]"	# Go's %v of a list

    def value(key):
        # json X, json (X): the value as one JSON string, as the CLI's
        # json template function prints it (control characters escaped)
        j = re.fullmatch(r'json \((.*)\)|json (.*)', key)
        if j:
            return json.dumps(value(j.group(1) or j.group(2)), ensure_ascii=False)
        if key.startswith(".State."):
            return state.get(key[7:], "<no value>")
        if key in (".Names", ".Name"):
            return c["name"] if key == ".Names" else "/" + c["name"]
        if key in (".ID", ".Id"):
            return c["id"][:12] if key == ".ID" else c["id"]
        if key == ".Image" or key == ".Config.Image":
            return c["image"]
        if key == ".Status":
            return status_text(c)
        m2 = re.fullmatch(r'\.Label "([^"]+)"', key) or \
            re.fullmatch(r'index \.(?:Config\.)?Labels "([^"]+)"', key)
        if m2:
            return c.get("labels", {}).get(m2.group(1), "")
        if key == ".Labels":
            return ",".join("%s=%s" % kv for kv in sorted(c.get("labels", {}).items()))
        # lists: as json X prints them (value() is called through json)
        if key == ".Config.Env":
            return c.get("env", [])
        if key == ".HostConfig.Binds":
            return c.get("volumes", [])
        return "<no value>"
    return re.sub(r"\{\{\s*([^}]*?)\s*\}\}", field, fmt).replace("\\t", "\t")


def parse_run(args):
    opts = {"env": [], "volumes": [], "labels": {}, "name": None, "entrypoint": None,
            "detach": False, "rm": False, "devices": [], "gpus": None, "pull": "missing"}
    i = 0
    with_value = {"--name", "--entrypoint", "-e", "--env", "-v", "--volume", "--label", "-l",
                  "--shm-size", "--network", "--net", "--gpus", "--device", "--ipc",
                  "--ulimit", "--privileged", "-w", "--workdir", "--user", "-u", "--pid",
                  "--pull"}
    while i < len(args):
        a = args[i]
        if not a.startswith("-") or a == "-":
            break
        key, val = a, None
        if a.startswith("--") and "=" in a:
            key, val = a.split("=", 1)
        if key in ("-d", "--detach"):
            opts["detach"] = True
        elif key == "--rm":
            opts["rm"] = True
        elif key == "--privileged":
            pass
        elif key in ("-it", "-i", "-t", "--init"):
            pass
        elif key in with_value:
            if val is None:
                i += 1
                if i >= len(args):
                    err('flag needs an argument: %s\nSee \'docker run --help\'.' % key, 125)
                val = args[i]
            if key in ("-e", "--env"):
                if "=" in val:
                    opts["env"].append(val)
                elif val in os.environ:
                    opts["env"].append("%s=%s" % (val, os.environ[val]))
            elif key in ("-v", "--volume"):
                opts["volumes"].append(val)
            elif key in ("--label", "-l"):
                k, _, v = val.partition("=")
                opts["labels"][k] = v
            elif key == "--name":
                opts["name"] = val
            elif key == "--entrypoint":
                opts["entrypoint"] = val
            elif key == "--gpus":
                opts["gpus"] = val
            elif key == "--device":
                opts["devices"].append(val)
            elif key == "--pull":
                opts["pull"] = val
        else:
            err("unknown flag: %s\nSee 'docker run --help'." % key, 125)
        i += 1
    if i >= len(args):
        err('"docker run" requires at least 1 argument.\nSee \'docker run --help\'.', 125)
    return opts, args[i], args[i + 1:]


def images():
    return S.read_json(S.node_dir(NODE, "images.json"), [])


def cmd_run(args):
    opts, image, cmd = parse_run(args)
    # simctl slow-run: a `docker run` still in flight when something else
    # (a teardown on another channel) reaches the node; the container is
    # created only after the wait, as a slow image pull or engine would.
    slow = S.read_json(S.node_dir(NODE, "slow_run.json"))
    if slow:
        time.sleep(float(slow))
    if image not in images() and opts["pull"] == "never":
        # tests/unit/data/docker-28.2-cli/gpus-run-no-pull, podman-4.3/gpus-run-no-pull
        if PROG == "podman":
            err("Error: %s: image not known" % image, 125)
        err("docker: Error response from daemon: No such image: %s\n\nRun 'docker run --help' "
            "for more information" % image, 125)
    if image not in images():
        sys.stderr.write("Unable to find image '%s' locally\n" % image)
        repo = image.rsplit(":", 1)[0]
        err("docker: Error response from daemon: pull access denied for %s, repository does "
            "not exist or may require 'docker login': denied: requested access to the resource "
            "is denied.\nSee 'docker run --help'." % repo, 125)
    name = opts["name"] or "sim_%s" % S.hexid(8)
    if not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+", name):
        err('docker: Error response from daemon: Invalid container name (%s), only '
            '[a-zA-Z0-9][a-zA-Z0-9_.-] are allowed.\nSee \'docker run --help\'.' % name, 125)
    nvidia_off = os.path.exists(S.node_dir(NODE, "nvidia-off"))
    if opts["gpus"] and (S.node(NODE).get("gpus", 1) == 0 or nvidia_off):
        # docker-28/run-gpus-off: no NVIDIA hook on dockerd's PATH
        err('docker: Error response from daemon: could not select device driver "" with '
            'capabilities: [[gpu]]\n\nRun \'docker run --help\' for more information', 125)
    if PROG == "podman" and "nvidia.com/gpu=all" in opts["devices"] and nvidia_off:
        err("Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all", 126)
    if not opts["detach"] and opts["rm"] and opts["entrypoint"] == "true" and not cmd:
        # the preflight's throwaway GPU run (lib/plan/plan_gpu.c): it ran
        sys.exit(0)
    entry = [opts["entrypoint"]] if opts["entrypoint"] else ["vllm", "serve"]
    with S.locked(NODE):
        old = load(name)
        if old:
            err('docker: Error response from daemon: Conflict. The container name "/%s" is '
                'already in use by container "%s". You have to remove (or rename) that '
                'container to be able to reuse that name.\nSee \'docker run --help\'.'
                % (name, old["id"]), 125)
        c = {"id": S.hexid(), "name": name, "image": image, "cmd": entry + cmd,
             "env": opts["env"], "volumes": opts["volumes"], "labels": opts["labels"],
             "status": "created", "created_at": time.time(), "gpus": opts["gpus"]}
        save(c)
        S.emit_event(NODE, "create", name, c["id"], dict(opts["labels"], image=image))
    # The shim outlives this command, like containerd-shim.
    shim = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "standin.py"),
                             "_shim", NODE, name],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env=dict(os.environ), close_fds=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        c = load(name)
        if c and c["status"] != "created":
            break
        if shim.poll() is not None and c and c["status"] == "created":
            break
        time.sleep(0.01)
    die_at_start(c)
    print(c["id"])


def die_at_start(c):
    """simctl die-at-start: the container dies the moment it has started,
    and the engine's events stream has told its reader before `docker run
    -d` answers (they travel separately; either may come first)."""
    hook = S.node_dir(NODE, "die_at_start.json")
    h = S.read_json(hook)
    if not h or h.get("name") != c["name"] or not running(c):
        return
    os.unlink(hook)
    mark = S.node_dir(NODE, "wait-delivery-" + c["id"])
    open(mark, "w").close()
    kill_container(c)
    deadline = time.time() + 10
    while os.path.exists(mark) and time.time() < deadline:
        time.sleep(0.01)


def container_tmp(c):
    """The container's private /tmp: a tmpfs in its mount namespace, or,
    without root, a directory of its own that goes with the container."""
    return "/tmp" if os.geteuid() == 0 else cdir(c["id"][:12] + ".tmp")


def container_env(c):
    env = {"PATH": "%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" % S.path("bin"),
           "HOME": "/root", "HOSTNAME": NODE, "SIM_DIR": S.SIM_DIR, "SIM_NODE": NODE,
           "SIM_CONTAINER": c["name"], "SIM_IMAGE": c["image"],
           "SIM_VOLUMES": json.dumps(c["volumes"]), "SIM_TMP": container_tmp(c)}
    for kv in c["env"]:
        k, _, v = kv.partition("=")
        env[k] = v
    return env


def shim(name):
    """Runs one container to its end and records how it ended."""
    c = load(name)
    logf = open(cdir(name + ".log"), "ab")
    root = os.geteuid() == 0
    argv = c["cmd"]
    os.makedirs(container_tmp(c), exist_ok=True)
    if root:
        # Own PID + mount namespace; a private /tmp like a container's.
        argv = ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--propagation",
                "private", "--", "/bin/sh", "-c",
                'mount -t tmpfs tmpfs /tmp && exec "$@"', "sh"] + argv
    try:
        p = subprocess.Popen(argv, env=container_env(c), stdin=subprocess.DEVNULL,
                             stdout=logf, stderr=logf, cwd="/", start_new_session=True)
    except OSError as e:
        with S.locked(NODE):
            c = load(name)
            c.update(status="exited", exit_code=127, finished_at=time.time(),
                     error=str(e))
            save(c)
        return
    init = p.pid
    if root:
        # The namespace's init is unshare's child: docker exec enters it.
        for _ in range(500):
            try:
                with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                    kids = f.read().split()
                if kids:
                    init = int(kids[0])
                    break
            except OSError:
                break
            time.sleep(0.005)
    with S.locked(NODE):
        c = load(name)
        if c is None:
            p.kill()
            return
        c.update(status="running", pid=init, outer_pid=p.pid, shim_pid=os.getpid(),
                 started_at=time.time())
        save(c)
        S.emit_event(NODE, "start", name, c["id"], c["labels"])
    rc = p.wait()
    code = 128 - rc if rc < 0 else rc
    with S.locked(NODE):
        c = load(name)
        if c is None:
            return
        # unshare does not always pass a signal death on; the killer noted it.
        if c.get("killed_by"):
            code = 128 + c["killed_by"]
        c.update(status="exited", exit_code=code, finished_at=time.time())
        save(c)
        S.emit_event(NODE, "die", name, c["id"], dict(c["labels"], exitCode=str(code)))


def kill_container(c, sig=signal.SIGKILL):
    with S.locked(NODE):
        cur = load(c["name"])
        if cur:
            cur["killed_by"] = int(sig)
            save(cur)
    pids = [c.get("pid"), c.get("outer_pid")]
    if os.geteuid() != 0:
        # No PID namespace to take everything with it: the container's
        # processes are the ones its environment names.
        pids += S.tagged_pids(NODE, c["name"])
    for pid in pids:
        if pid and S.pid_alive(pid):
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def cmd_rm(args):
    force = False
    names = []
    for a in args:
        if a in ("-f", "--force"):
            force = True
        elif a in ("-v", "--volumes"):
            pass
        else:
            names.append(a)
    rc = 0
    for name in names:
        c = find(name)
        if c is None:
            # v20.10..v28: printed, but exit 0 with -f (formats.md).
            sys.stderr.write("Error response from daemon: No such container: %s\n" % name)
            if not force:
                rc = 1
            continue
        if running(c):
            if not force:
                sys.stderr.write("Error response from daemon: cannot remove container \"/%s\": "
                                 "container is running: stop the container before removing or "
                                 "force remove\n" % c["name"])
                rc = 1
                continue
            kill_container(c)
            S.emit_event(NODE, "kill", c["name"], c["id"], dict(c["labels"], signal="9"))
            deadline = time.time() + 10
            while time.time() < deadline and load(c["name"]) and load(c["name"])["status"] == "running":
                time.sleep(0.01)
        with S.locked(NODE):
            c = load(c["name"]) or c
            for fn in (c["name"] + ".json", c["name"] + ".log"):
                try:
                    os.unlink(cdir(fn))
                except OSError:
                    pass
            if container_tmp(c) != "/tmp":
                shutil.rmtree(container_tmp(c), ignore_errors=True)
            S.emit_event(NODE, "destroy", c["name"], c["id"], c["labels"])
        print(name)
    sys.exit(rc)


def cmd_stop(args):
    """docker stop [-t S] NAME...: SIGTERM, then SIGKILL after S (10)."""
    wait = 10.0
    names = []
    i = 0
    while i < len(args):
        if args[i] in ("-t", "--time"):
            i += 1
            wait = float(args[i])
        else:
            names.append(args[i])
        i += 1
    rc = 0
    for name in names:
        c = find(name)
        if c is None:
            sys.stderr.write("Error response from daemon: No such container: %s\n" % name)
            rc = 1
            continue
        if running(c):
            kill_container(c, signal.SIGTERM)
            deadline = time.time() + wait
            while time.time() < deadline and running(load(c["name"]) or {}):
                time.sleep(0.05)
            if running(load(c["name"]) or {}):
                kill_container(c)
            while running(load(c["name"]) or {}):
                time.sleep(0.01)
        print(name)
    sys.exit(rc)


def cmd_top(args):
    """docker top NAME -eo pid (podman: top NAME hpid): the host PIDs of
    the container's processes, under a header line."""
    if not args:
        err('"docker top" requires at least 1 argument.')
    c = find(args[0])
    if c is None or not running(c):
        err("Error response from daemon: Container %s is not running" % args[0])
    pids = set(S.tagged_pids(NODE, c["name"]))
    pids.update(p for p in (c.get("pid"), c.get("outer_pid")) if p)
    print("HPID" if PROG == "podman" else "PID")
    for p in sorted(pids):
        print(p)


def cmd_inspect(args):
    fmt = None
    refs = []
    i = 0
    kind = None
    while i < len(args):
        a = args[i]
        if a in ("-f", "--format"):
            i += 1
            fmt = args[i]
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
        elif a == "--type":
            i += 1
            kind = args[i]
        else:
            refs.append(a)
        i += 1
    out = []
    rc = 0
    if os.path.exists(S.node_dir(NODE, "events_gap.json")):
        for ref in refs:
            S.write_json(S.node_dir(NODE, "inspected-" + ref), time.time())
    for ref in refs:
        c = find(ref) if kind in (None, "container") else None
        if c is None:
            if kind in (None, "image") and ref in images():
                out.append(fmt and "<no value>" or json.dumps({"Id": "sha256:" + S.hexid(), "RepoTags": [ref]}))
                continue
            sys.stderr.write("Error: No such object: %s\n" % ref)
            rc = 1
            continue
        if fmt:
            out.append(render(fmt, c))
        else:
            out.append(json.dumps({"Id": c["id"], "Name": "/" + c["name"],
                                   "State": {"Status": render("{{.State.Status}}", c),
                                             "Running": running(c),
                                             "Pid": int(render("{{.State.Pid}}", c)),
                                             "ExitCode": c.get("exit_code", 0)},
                                   "Config": {"Image": c["image"], "Labels": c["labels"],
                                              "Env": c["env"]}}, indent=4))
    if fmt:
        # TemplateInspector.Flush writes "\n" when nothing was rendered.
        sys.stdout.write("\n".join(out) + "\n")
    else:
        sys.stdout.write("[" + ",\n".join(out) + "]\n")
    sys.exit(rc)


def cmd_ps(args):
    show_all = False
    filters = []
    fmt = None
    quiet = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-a", "--all"):
            show_all = True
        elif a in ("-q", "--quiet"):
            quiet = True
        elif a == "--filter" or a == "-f":
            i += 1
            filters.append(args[i])
        elif a == "--format":
            i += 1
            fmt = args[i]
        elif a == "--no-trunc":
            pass
        i += 1
    rows = []
    # newest first, as dockerd lists them (podman 4.3 lists them as created:
    # tests/unit/data/podman-4.3.1/ps-workloads.out)
    for c in sorted(all_containers(), key=lambda c: c.get("created_at", 0),
                    reverse=PROG != "podman"):
        if not show_all and not running(c):
            continue
        ok = True
        for f in filters:
            k, _, v = f.partition("=")
            if k == "name":
                ok = ok and (re.search(v, c["name"]) or re.search(v, "/" + c["name"]))
            elif k == "label":
                lk, _, lv = v.partition("=")
                ok = ok and lk in c["labels"] and (not lv or c["labels"][lk] == lv)
            elif k == "status":
                ok = ok and render("{{.State.Status}}", c) == v
        if ok:
            rows.append(c)
    if quiet:
        for c in rows:
            print(c["id"][:12])
    elif fmt:
        for c in rows:
            print(render(fmt, c))
    else:
        print("CONTAINER ID   IMAGE" + " " * 36 + "COMMAND                  CREATED         STATUS"
              "                     PORTS     NAMES")
        for c in rows:
            cmd = '"%s"' % " ".join(c["cmd"])[:20]
            print("%-14s %-40s %-24s %-15s %-26s %-9s %s" % (
                c["id"][:12], c["image"][:40], cmd,
                human_duration(time.time() - c["created_at"]) + " ago", status_text(c), "", c["name"]))


def cmd_exec(args):
    detach = False
    env = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("-d", "--detach"):
            detach = True
        elif a in ("-e", "--env"):
            i += 1
            env.append(args[i])
        elif a in ("-i", "-t", "-it"):
            pass
        i += 1
    if i >= len(args) - 1:
        err('"docker exec" requires at least 2 arguments.\nSee \'docker exec --help\'.', 1)
    c = find(args[i])
    if c is None:
        err("Error response from daemon: No such container: %s" % args[i])
    if not running(c):
        err("Error response from daemon: container %s is not running" % c["id"])
    cmd = args[i + 1:]
    cenv = container_env(c)
    for kv in env:
        k, _, v = kv.partition("=")
        cenv[k] = v
    argv = ["env", "-i"] + ["%s=%s" % kv for kv in cenv.items()] + cmd
    if os.geteuid() == 0:
        argv = ["nsenter", "-t", str(c["pid"]), "-p", "-m", "--"] + argv
    if detach:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, cwd="/")
        sys.exit(0)
    try:
        p = subprocess.run(argv, cwd="/")
    except OSError:
        err('OCI runtime exec failed: exec failed: unable to start container process: exec: '
            '"%s": executable file not found in $PATH: unknown' % cmd[0], 126)
    rc = p.returncode
    sys.exit(128 - rc if rc < 0 else rc)


def cmd_logs(args):
    tail = None
    name = None
    i = 0
    while i < len(args):
        if args[i] in ("--tail", "-n"):
            i += 1
            tail = int(args[i]) if args[i] != "all" else None
        elif not args[i].startswith("-"):
            name = args[i]
        i += 1
    c = find(name or "")
    if c is None:
        err("Error response from daemon: No such container: %s" % name)
    try:
        with open(cdir(c["name"] + ".log"), "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    lines = data.splitlines(keepends=True)
    if tail is not None:
        lines = lines[-tail:] if tail else []
    sys.stdout.buffer.write(b"".join(lines))


GO_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
EVENTS_KEPT = 256   # moby daemon/events: the last 256 events are replayed


def since_time(v):
    """docker's --since (timetypes.GetTimestamp): a Go duration before now
    (whole seconds), RFC3339, or a Unix time with fractions."""
    m = re.fullmatch(r"((\d+(\.\d*)?)(ns|us|\u00b5s|ms|s|m|h))+", v)
    if m and v != "0":
        d = sum(float(n) * GO_UNITS[u] for n, _, u in
                re.findall(r"(\d+(\.\d*)?)(ns|us|\u00b5s|ms|s|m|h)", v))
        return float(int(time.time() - d))
    try:
        return float(v)
    except ValueError:
        pass
    try:
        return datetime.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
    except ValueError:
        err('invalid value for "since": failed to parse value as time or duration: "%s"' % v, 125)


def events_gap_hook():
    """simctl events-gap: this stream starts after the old one ended, and
    the container dies in between, after the daemon has looked at it."""
    hook = S.node_dir(NODE, "events_gap.json")
    h = S.read_json(hook)
    if not h:
        return
    deadline = time.time() + 10
    while time.time() < deadline and \
            S.read_json(S.node_dir(NODE, "inspected-" + h["name"]), 0) <= h["at"]:
        time.sleep(0.02)
    c = load(h["name"])
    if c and running(c):
        kill_container(c)
        while time.time() < deadline and load(h["name"]) and load(h["name"])["status"] == "running":
            time.sleep(0.01)
    os.unlink(hook)


def render_event(ev, fmt):
    """One line of `docker events` for ev, as the CLI prints it with --format
    fmt (None: its default line)."""
    attrs = ev["Actor"]["Attributes"]
    if fmt:
        def field(m):
            k = m.group(1)
            if k in (".Action", ".Status"):
                if PROG == "podman":
                    return PODMAN_EVENTS.get(ev["Action"], ev["Action"])
                return ev["Action"]
            if k == ".Name":
                return attrs.get("name", "")
            if k == ".ID" or k == ".Actor.ID":
                return ev["id"]
            if k == ".Type":
                return ev["Type"]
            if k == ".Time":
                return str(ev["time"])
            if k.startswith(".Actor.Attributes."):
                return attrs.get(k[len(".Actor.Attributes."):], "<no value>")
            if k == "json .":
                return json.dumps(ev)
            return "<no value>"
        return re.sub(r"\{\{\s*([^}]*?)\s*\}\}", field, fmt)
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ev["time"]))
    return "%s.%09d+00:00 container %s %s (%s)" % (
        ts, ev["timeNano"] % 10**9, ev["Action"], ev["id"],
        ", ".join("%s=%s" % kv for kv in sorted(attrs.items())))


def events_flood(want, fmt):
    """simctl events-flood: `yes LINE` on this stream's stdout, as fast as the
    reader takes it, while the flag lasts (a Python writer was slower than
    the daemon's reader, and so no flood). LINE is what the CLI prints,
    with this stream's --format, for an `exec_die` of the container the
    stream watches (as a storm of `docker exec` makes them): every filter
    the stream asked for lets it through, and no reader may act on it."""
    name = sorted(want.get("container", {"vllm-worker"}))[0]
    c = load(name)
    cid = c["id"] if c else "0123456789ab" * 5 + "0123"
    now = time.time()
    ev = {"Type": "container", "Action": "exec_die", "id": cid, "time": int(now),
          "timeNano": int(now * 1e9),
          "Actor": {"ID": cid, "Attributes": {"name": name, "exitCode": "0"}}}
    sys.stdout.flush()
    return subprocess.Popen(["yes", render_event(ev, fmt)], stdout=sys.stdout.fileno())


def flood_end(proc):
    """yes may have been cut in the middle of a line: ends it, so the next
    real event is a line of its own."""
    proc.kill()
    proc.wait()
    sys.stdout.write("\n")
    sys.stdout.flush()


def cmd_events(args):
    """Streams events as they happen until the reader goes away."""
    filters = []
    fmt = None
    since = None
    i = 0
    while i < len(args):
        if args[i] in ("--filter", "-f"):
            i += 1
            filters.append(args[i])
        elif args[i] == "--format":
            i += 1
            fmt = args[i]
        elif args[i] == "--since":
            i += 1
            since = since_time(args[i])
        elif args[i].startswith("--since="):
            since = since_time(args[i].split("=", 1)[1])
        i += 1
    want = {}
    for f in filters:
        k, _, v = f.partition("=")
        want.setdefault(k, set()).add(v)
    events_gap_hook()
    p = S.node_dir(NODE, "events.log")
    f = open(p, "a+")
    buf = ""
    if since is None:
        f.seek(0, os.SEEK_END)
    else:
        f.seek(0)
        old = f.read().split("\n")
        partial = old.pop()
        for line in old[-EVENTS_KEPT:]:
            try:
                if json.loads(line)["timeNano"] >= since * 1e9:
                    buf += line + "\n"
            except (ValueError, KeyError):
                pass
        buf += partial
    poller = select.poll()
    poller.register(sys.stdout.fileno(), select.POLLERR | select.POLLHUP)
    flood = None
    while True:
        chunk = ""
        flooding = os.path.exists(S.node_dir(NODE, "events_flood"))
        if flooding and flood is None:
            flood = events_flood(want, fmt)
        elif not flooding and flood is not None:
            try:
                flood_end(flood)
            except BrokenPipeError:
                return
            flood = None
        if flood is not None:
            # real events wait in the log until the flood ends
            if poller.poll(100) or flood.poll() is not None:
                flood.kill()
                return
            continue
        if "\n" not in buf:
            # A closed reader shows as POLLERR on our end of the pipe.
            if poller.poll(100):
                return
            if S.garbage_on(NODE):
                S.garbage("unexpected EOF ", 1)
            if os.path.exists(S.node_dir(NODE, "engine_down")):
                err("unexpected EOF")
            chunk = f.read()
            if not chunk:
                continue
        buf += chunk
        while "\n" in buf:
            line, buf = buf.split("\n", 1)
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            attrs = ev["Actor"]["Attributes"]
            if "type" in want and ev["Type"] not in want["type"]:
                continue
            if "container" in want and attrs.get("name") not in want["container"] \
                    and ev["id"] not in want["container"]:
                continue
            if "event" in want and ev["Action"] not in want["event"]:
                continue
            out = render_event(ev, fmt)
            try:
                sys.stdout.write(out + "\n")
                sys.stdout.flush()
            except BrokenPipeError:
                return
            if ev["Action"] == "die":
                # die-at-start waits until a reader has been told
                with contextlib.suppress(OSError):
                    os.unlink(S.node_dir(NODE, "wait-delivery-" + ev["id"]))


def image_id(tag):
    """The same ID for the same tag on every node, as after one pull, unless
    simctl image-other gave this node another build (or a load did)."""
    ids = S.read_json(S.node_dir(NODE, "image-ids.json"), {})
    return ids.get(tag) or "sha256:" + hashlib.sha256(tag.encode()).hexdigest()


def image_layers(config_id):
    """The build's diff IDs: the same on every node holding that build."""
    hexid = config_id.split(":")[-1]
    return ["sha256:" + hashlib.sha256(("%s:layer%d" % (hexid, i)).encode()).hexdigest()
            for i in range(3)]


def shown_id(config_id):
    """What `image inspect {{.Id}}` says: the config digest on the classic
    store, the index digest on the containerd store (simctl image-store;
    engine_faults.py derives it the same way)."""
    if os.path.exists(S.node_dir(NODE, "image_store_containerd")):
        hexid = config_id.split(":")[-1]
        return "sha256:" + hashlib.sha256(("c8d-index:" + hexid).encode()).hexdigest()
    return config_id


CREATED = "2026-01-07T10:00:00.000000000Z"


def save_archive(path, tags):
    """A docker save archive, reduced to what a reader of it looks at: the
    manifest (tags, config blob = image ID) and the config blobs."""
    import io
    import tarfile
    manifest = []
    with tarfile.open(path + ".tmp", "w") as t:
        for tag in tags:
            hexid = image_id(tag).split(":")[-1]
            blob = json.dumps({"created": CREATED, "config": {},
                               "rootfs": {"type": "layers",
                                          "diff_ids": image_layers(image_id(tag))}}).encode()
            info = tarfile.TarInfo(hexid + ".json")
            info.size = len(blob)
            t.addfile(info, io.BytesIO(blob))
            manifest.append({"Config": hexid + ".json", "RepoTags": [tag], "Layers": []})
        blob = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(blob)
        t.addfile(info, io.BytesIO(blob))
    os.rename(path + ".tmp", path)


def cmd_save(args):
    if len(args) < 3 or args[0] not in ("-o", "--output"):
        err("docker save: only 'save -o FILE IMAGE...' is simulated")
    for tag in args[2:]:
        if tag not in images():
            err("Error response from daemon: reference does not exist")
    save_archive(args[1], args[2:])


def cmd_load(args):
    import tarfile
    if len(args) != 2 or args[0] not in ("-i", "--input"):
        err("docker load: only 'load -i FILE' is simulated")
    try:
        with tarfile.open(args[1]) as t:
            manifest = json.load(t.extractfile("manifest.json"))
    except (OSError, KeyError, ValueError, tarfile.TarError) as e:
        err("Error processing tar file(%s): " % e)
    tags = images()
    ids = S.read_json(S.node_dir(NODE, "image-ids.json"), {})
    for m in manifest:
        for tag in m["RepoTags"]:
            if tag not in tags:
                tags.append(tag)
            ids[tag] = "sha256:" + m["Config"].split("/")[-1].split(".")[0]
            print("Loaded image: %s" % tag)
    S.write_json(S.node_dir(NODE, "images.json"), tags)
    S.write_json(S.node_dir(NODE, "image-ids.json"), ids)


def cmd_image(args):
    if not args or args[0] != "inspect":
        err("docker image: only 'inspect' is simulated")
    rc = 0
    fmt = None
    refs = []
    i = 1
    while i < len(args):
        if args[i] in ("-f", "--format"):
            i += 1
            fmt = args[i]
        else:
            refs.append(args[i])
        i += 1
    out = []
    for r in refs:
        if r in images():
            iid = image_id(r)
            layers = "".join(d + "," for d in image_layers(iid))
            shown = shown_id(iid)
            out.append(fmt.replace("{{.Id}}", shown).replace("{{.Created}}", CREATED).replace(
                "{{range .RootFS.Layers}}{{.}},{{end}}", layers) if fmt else
                json.dumps({"Id": shown, "RepoTags": [r]}))
        else:
            sys.stderr.write("Error response from daemon: No such image: %s\n" % r)
            rc = 1
    if fmt:
        print("\n".join(out))
    else:
        print("[" + ",".join(out) + "]")
    sys.exit(rc)


def cmd_info(args):
    if "--format" in args or "-f" in args:
        fmt = args[args.index("--format" if "--format" in args else "-f") + 1]
        # the runtimes as docker 28 lists them (with the NVIDIA toolkit's,
        # unless simctl nvidia-runtime-off/-unlisted took it away)
        listed = not (os.path.exists(S.node_dir(NODE, "nvidia-off")) or
                      os.path.exists(S.node_dir(NODE, "nvidia-unlisted")))
        runtimes = "".join(r + "\n" for r in ("io.containerd.runc.v2", "nvidia", "runc")
                           if r != "nvidia" or listed)
        fmt = fmt.replace("{{range $k, $v := .Runtimes}}{{println $k}}{{end}}", runtimes)
        print(fmt.replace("{{.ServerVersion}}", VERSION).replace(
            "{{json .ServerVersion}}", '"%s"' % VERSION).replace(
            "{{.Version.Version}}", "4.3.1"))
        return
    n = all_containers()
    print("Client: Docker Engine - Community\n Version:    %s\n\nServer:\n Containers: %d\n"
          "  Running: %d\n Server Version: %s\n Runtimes: io.containerd.runc.v2 nvidia runc"
          % (VERSION, len(n), sum(1 for c in n if running(c)), VERSION))


def main(prog, args):
    global NODE, PROG
    PROG = prog
    if args[:1] == ["_shim"]:
        NODE = args[1]
        shim(args[2])
        return
    if not NODE:
        err("SIM_NODE is not set: run this on a simulated node")
    if args[:1] == ["--version"] or args[:1] == ["version"]:
        print("Docker version %s, build e6534b4" % VERSION)
        return
    if S.garbage_on(NODE):
        S.garbage(("docker: " if args[:1] == ["run"] else "") + DAEMON_DOWN,
                  125 if args[:1] == ["run"] else 1)
    if os.path.exists(S.node_dir(NODE, "engine_down")):
        if args[:1] == ["run"]:
            err("docker: " + DAEMON_DOWN + "\nSee 'docker run --help'.", 125)
        err(DAEMON_DOWN)
    if not args:
        err("Usage:  docker [OPTIONS] COMMAND")
    cmd, rest = args[0], args[1:]
    # simctl answer: this subcommand answers what it was told to
    rule = S.answer_rule(NODE, cmd, rest)
    if rule:
        sys.stdout.write(rule.get("out", ""))
        sys.stderr.write(rule.get("err", ""))
        sys.exit(int(rule.get("rc", 1)))
    if os.path.exists(S.node_dir(NODE, "engine_permission")):
        # simctl engine-permission: the 28.2 CLI's words
        # (tests/unit/data/docker-28.2-cli/permission-denied-*)
        path = {"info": "info", "ps": "containers/json"}.get(cmd, "_ping")
        err('permission denied while trying to connect to the Docker daemon socket at '
            'unix:///var/run/docker.sock: Get "http://%%2Fvar%%2Frun%%2Fdocker.sock/v1.50/%s": '
            'dial unix /var/run/docker.sock: connect: permission denied' % path)
    hang = S.node_dir(NODE, "docker_hang")
    if os.path.exists(hang) and cmd in open(hang).read().split():
        # simctl docker-hang: this subcommand never returns (a hung engine);
        # --ignore-term: nor does SIGTERM end it (a client stuck in an
        # uninterruptible wait, or one that traps TERM)
        if "--ignore-term" in open(hang).read().split():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.pause()
    if cmd == "container" and rest:
        cmd, rest = rest[0], rest[1:]
        if cmd == "inspect":
            rest = ["--type", "container"] + rest
    table = {"run": cmd_run, "rm": cmd_rm, "inspect": cmd_inspect, "ps": cmd_ps,
             "exec": cmd_exec, "logs": cmd_logs, "events": cmd_events, "image": cmd_image,
             "info": cmd_info, "save": cmd_save, "load": cmd_load,
             "stop": cmd_stop, "top": cmd_top}
    if cmd not in table:
        err("docker: '%s' is not a docker command.\nSee 'docker --help'" % cmd)
    table[cmd](rest)
