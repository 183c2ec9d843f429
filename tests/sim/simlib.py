"""Shared state of the simulated cluster (the test bed).

Everything the stand-ins know lives under SIM_DIR:
  sim.json                  nodes, addresses, GPUs, time factor
  nodes/<node>/containers/  one JSON per container, plus its log
  nodes/<node>/events.log   docker events, one JSON per line
  nodes/<node>/gpu/         GPU memory holds, one file per holding process
  nodes/<node>/fs/          the node's own files (model directories)
  nodes/<node>/engine_down  present while the container engine is "down"
  nodes/<node>/garbage      present while the node's tools print mangled,
                            non-UTF-8 error text (simctl garbage)
"""

import contextlib
import fcntl
import json
import os
import secrets
import time

SIM_DIR = os.environ.get("SIM_DIR", "/var/tmp/tandem-sim")


def path(*parts):
    return os.path.join(SIM_DIR, *parts)


def read_json(p, default=None):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def write_json(p, obj):
    tmp = "%s.%d.tmp" % (p, os.getpid())
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.rename(tmp, p)


def sim():
    s = read_json(path("sim.json"))
    if s is None:
        raise SystemExit("simulated cluster is not up (no %s)" % path("sim.json"))
    return s


def factor():
    return float(sim().get("factor", 1.0))


def scaled(seconds):
    """A duration of the real tools, scaled by the bed's time factor."""
    return seconds * factor()


def node(name):
    for n in sim()["nodes"]:
        if n["name"] == name:
            return n
    raise SystemExit("no such node: %s" % name)


def node_dir(name, *parts):
    return path("nodes", name, *parts)


@contextlib.contextmanager
def locked(name):
    """Serialises state changes on one node (docker calls run in parallel)."""
    fd = os.open(node_dir(name, "lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def tagged_pids(node=None, container=None):
    """Processes whose environment says they belong to this bed's node
    (any node if None) and container: what loopback mode has instead of
    namespaces to find a node's or a container's processes."""
    want = [("SIM_DIR=%s" % SIM_DIR).encode()]
    if container:
        want.append(("SIM_CONTAINER=%s" % container).encode())
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % p, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if not all(w in env for w in want):
            continue
        tag = [e[9:].decode() for e in env if e.startswith(b"SIM_NODE=")]
        if tag and (node is None or tag[0] == node):
            out.append(int(p))
    return out


def hexid(n=64):
    return secrets.token_hex(n // 2)


def emit_event(nodename, action, cname, cid, attrs=None):
    ev = {
        "Type": "container", "Action": action, "status": action,
        "id": cid, "time": int(time.time()), "timeNano": time.time_ns(),
        "Actor": {"ID": cid, "Attributes": dict(attrs or {}, name=cname)},
    }
    with open(node_dir(nodename, "events.log"), "a") as f:
        f.write(json.dumps(ev) + "\n")


# GPU memory -------------------------------------------------------------

GIB = 1024 ** 3


def gpu_total_gib(nodename):
    return float(node(nodename).get("gpu_total_gib", 119.70))


def gpu_baseline_gib(nodename):
    """Memory other programs hold (the DGX Spark guide: unified memory contention)."""
    v = read_json(node_dir(nodename, "gpu_baseline.json"))
    if v is not None:
        return float(v)
    return float(node(nodename).get("gpu_baseline_gib", 40.0))


def release_delay():
    return max(0.2, scaled(3.0))


_held = {}  # path -> open fd; the flock on it says the holder lives


def holder_alive(p):
    """A holder keeps an exclusive flock while it lives; PIDs cannot tell
    (holders run in container PID namespaces)."""
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def gpu_holds(nodename):
    """Live holds; a dead holder's memory is freed after a short delay."""
    holds = []
    d = node_dir(nodename, "gpu")
    try:
        names = os.listdir(d)
    except OSError:
        return holds
    now = time.time()
    for fn in names:
        if not fn.startswith("hold-"):
            continue
        p = os.path.join(d, fn)
        h = read_json(p)
        if h is None:
            continue
        # simctl npu-held: the driver keeps a dead holder's memory
        if p not in _held and not h.get("stuck") and not holder_alive(p):
            dead = os.path.join(d, "dead-" + fn)
            since = read_json(dead)
            if since is None:
                write_json(dead, now)
            elif now - since > release_delay():
                for q in (p, dead):
                    with contextlib.suppress(OSError):
                        os.unlink(q)
                continue
        h["path"] = p
        holds.append(h)
    return holds


def gpu_free_gib(nodename, gpu):
    used = gpu_baseline_gib(nodename)
    used += sum(h["gib"] for h in gpu_holds(nodename) if h["gpu"] == gpu)
    return gpu_total_gib(nodename) - used


def gpu_hold(nodename, gpu, gib):
    p = node_dir(nodename, "gpu", "hold-%d-%s" % (gpu, hexid(16)))
    tmp = p + ".tmp"
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, json.dumps({"pid": os.getpid(), "gpu": gpu, "gib": gib}).encode())
    os.rename(tmp, p)
    _held[p] = fd


def gpu_unhold(nodename):
    for p, fd in list(_held.items()):
        with contextlib.suppress(OSError):
            os.unlink(p)
        os.close(fd)
        del _held[p]


# What a node's tools print under `simctl garbage`: the real error text,
# then what a broken locale, a corrupt driver message or a binary dump adds
# to it: 300 two-byte characters (so any fixed byte length splits one), a
# byte that is never UTF-8, an overlong encoding, a surrogate, a truncated
# sequence, terminal escapes, and a line far longer than any buffer.
GARBAGE_TAIL = (b"\xff " + ("\u00e9" * 300).encode() +
                b"\xff \xc0\xaf \xed\xa0\x80 \xe2\x82 \x1b[31m")


def garbage_on(nodename):
    return os.path.exists(node_dir(nodename, "garbage"))


def garbage(first_line, code):
    """Prints first_line + the garbage tail and an overlong line on stderr,
    exits with the tool's own failure code."""
    import sys
    sys.stdout.flush()
    sys.stderr.buffer.write(first_line.encode() + GARBAGE_TAIL + b"\n" +
                            b"\xfe" + ("\u20ac" * 5000).encode() + b"\xf4\x90\x80\x80\n")
    sys.stderr.flush()
    sys.exit(code)


def answer_rule(node, cmd, args):
    """simctl answer: the rule for this docker subcommand, or None. A rule
    with "times" answers that many calls, then lets the engine answer
    (simctl cdi-unresolvable: the first N starts)."""
    p = node_dir(node, "answers.json")
    with locked(node):
        rules = read_json(p, {})
        rule = rules.get(cmd)
        if rule and rule.get("match") and not any(rule["match"] in a for a in args):
            return None
        if rule and rule.get("times") is not None:
            rule["times"] -= 1
            if rule["times"] <= 0:
                del rules[cmd]
            write_json(p, rules)
        return rule
