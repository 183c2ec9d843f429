"""make bench's goals: one table in docs/benchmarks.md ("Goals", between
<!-- goals --> and <!-- /goals -->), read here and nowhere else written.
tests/bench judges every figure of its run against it, prints the goal
beside each figure, and exits 1 when one is missed: the bounds that left
the tests for the bench (50-api's /status p99 under a rebuild, 82's 5 s to
a link diagnosis, 31's /status while a login stalls) are enforced there.

A goal is a comparison and a number in the figure's unit: "≤ 1 s",
"< 5 s", "≥ 90 %", "≤ 3 × keepalive_s" (the detection over the row's
keepalive_s). figures() says which figures of bench/results.json each
goal judges; a goal with no figure, or a figure with no goal, is an error
(99-bench checks both ways)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "benchmarks.md")
BEGIN, END = "<!-- goals -->", "<!-- /goals -->"
OPS = {"≤": lambda a, b: a <= b, "<": lambda a, b: a < b,
       "≥": lambda a, b: a >= b, ">": lambda a, b: a > b}


class GoalError(Exception):
    """The goals table cannot be read."""


def block(text):
    """The goals section of the page, markers included."""
    if BEGIN not in text or END not in text:
        raise GoalError("docs/benchmarks.md has no %s ... %s table" % (BEGIN, END))
    return text[text.index(BEGIN):text.index(END) + len(END)]


def load(text=None):
    """{id: {"op", "value", "unit", "text", "figure"}} from the page's table."""
    if text is None:
        with open(PAGE) as f:
            text = f.read()
    goals = {}
    for line in block(text).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        gid = cells[0].strip("`")
        m = re.match(r"^(≤|<|≥|>)\s*([0-9.]+)\s*(.*)$", cells[2])
        if not m:
            raise GoalError("goal %s: cannot read %r (≤ N unit)" % (gid, cells[2]))
        if gid in goals:
            raise GoalError("goal %s: listed twice" % gid)
        goals[gid] = {"op": m.group(1), "value": float(m.group(2)), "unit": m.group(3),
                      "text": cells[2], "figure": cells[1]}
    if not goals:
        raise GoalError("docs/benchmarks.md's goals table is empty")
    return goals


def is_met(goals, gid, value):
    g = goals[gid]
    return OPS[g["op"]](value, g["value"])


def figures(R, engines=()):
    """[(goal id, results key, label, value in the goal's unit)] for every
    figure of R (bench/results.json) that a goal judges. engines: the
    real-engine rebuilds (bench/results-ENGINE.json), kept apart."""
    out = []
    for key, label in (("detection_s", "keepalive_s %g, probe.interval_s 1"),
                       ("detection_fast_s", "keepalive_s %g"),
                       ("detection_old_default_s", "keepalive_s %g (the default before)"),
                       ("detection_defaults_s", "the defaults (keepalive_s %g)")):
        ka = R.get(key.replace("_s", "_keepalive_s"), 1.5)
        for name, v in R.get(key, {}).items():
            what = "detection, %s, %s" % (name, label % ka)
            if key == "detection_defaults_s" and name in ("worker power-off",
                                                          "network cut (silent)"):
                out.append(("detect-silent-defaults", key, what, v["median"]))
            elif name in ("container death", "worker reboot (clean)"):
                out.append(("detect-engine", key, what, v["median"]))
            elif name == "worker power-off":
                out.append(("detect-power-off", key, what, v["median"]))
            elif name == "network cut (silent)":
                out.append(("detect-cut", key, what + " (%.2f s)" % v["median"],
                            v["median"] / ka))
    for n, t in sorted(R.get("rebuild_trace", {}).items(), key=lambda x: int(x[0])):
        gid = {"2": "rebuild-overhead-2", "32": "rebuild-overhead-32"}.get(n)
        if gid:
            out.append((gid, "rebuild_trace", "tandem's overhead per rebuild, %s stand-in "
                        "nodes" % n, t["overhead_s"]["median"]))
    for r in engines:
        if r.get("trace"):
            out.append(("rebuild-overhead-2", "engines", "tandem's overhead per rebuild, "
                        "2 nodes on %s %s" % (r["engine"], r["version"]),
                        r["trace"]["overhead_s"]["median"]))
    st = R.get("startup_cache")
    if st:
        out.append(("startup-warm-vs-cold", "startup_cache", "a 2-node rebuild's wall time, "
                    "warm cache over cold", st["warm"]["wall_s"]["median"] /
                    st["cold"]["wall_s"]["median"]))
    for fault, v in R.get("link_faults", {}).items():
        out.append(("link-diagnosis", "link_faults", "link fault `simctl %s` to its "
                    "diagnosis, slowest trial" % fault, v["max"]))
    for n, v in sorted(R.get("footprint", {}).items(), key=lambda x: int(x[0])):
        out.append(("footprint-rss", "footprint", "tandemd RSS serving %s nodes" % n,
                    v["tandemd_rss_kb_max"] / 1024))
        out.append(("footprint-cpu", "footprint", "tandemd CPU serving %s nodes" % n,
                    v["tandemd_cpu_pct"]))
    for n, v in sorted(R.get("memory", {}).items(), key=lambda x: int(x[0])):
        def alone(x):
            return x.get("pss_alone_kb", x["pss_kb"])
        out.append(("memory-vs-monit", "memory", "tandemd PSS alone over monit's, %s nodes"
                    % n, alone(v["tandemd"]) / max(1, alone(v["monit"]))))
    api = R.get("api", {})
    if "tandemd_during_rebuild" in api:
        out.append(("api-p99-rebuild", "api", "/status p99 during a rebuild, wrk 64 "
                    "connections", api["tandemd_during_rebuild"]["p99_ms"]))
        out.append(("api-throughput", "api", "/status requests/s during a rebuild over "
                    "nginx's static file", api["tandemd_during_rebuild"]["rps"] /
                    api["nginx_static"]["rps"]))
    if "one_client_during_rebuild" in api:
        out.append(("api-one-client-p99-rebuild", "api", "/status p99 during a rebuild, "
                    "one client", api["one_client_during_rebuild"]["p99_ms"]))
    h = R.get("hostile", {}).get("tandemd", {}).get("1,000 slow")
    if h:
        out.append(("hostile-within-1s", "hostile", "/status within 1 s under 1,000 slow "
                    "clients", h["within_1s_pct"]))
    st = R.get("ssh_stall")
    if st:
        for phase, v in sorted(st.items()):
            out.append(("status-ssh-stall", "ssh_stall", "/status slowest while node2's sshd "
                        "stalls in the %s" % phase, v["worst_ms"]))
    return out


def judge(R, goals, keys=None, engines=()):
    """[(goal id, label, value, goal text, met)] for the figures of R
    (those under keys only, when given: a partial run judges its own)."""
    rows = []
    for gid, key, label, value in figures(R, engines):
        if keys is not None and key not in keys:
            continue
        if gid not in goals:
            raise GoalError("figure %r: no goal %s in docs/benchmarks.md" % (label, gid))
        rows.append((gid, label, value, goals[gid]["text"], is_met(goals, gid, value)))
    return rows


def report(rows, say=print):
    """Prints each figure beside its goal; the number missed."""
    for gid, label, value, text, ok in rows:
        say("goal %-26s %s: %.3g, goal %s: %s" % (gid, label, value, text,
                                                  "met" if ok else "MISSED"))
    missed = [r for r in rows if not r[4]]
    say("goals: %d figures, %d met, %d missed%s" % (
        len(rows), len(rows) - len(missed), len(missed),
        " (%s)" % ", ".join(sorted({r[0] for r in missed})) if missed else ""))
    return len(missed)
