"""make bench's startup figures (issue 47): vLLM's start-up with an empty
container.cache_dir against one a start of the same image, model and
flags left, on a 2-node bed.

Each trial empties the cache directory on every node and asks a rebuild
(cold, as a node's first start), then asks another (warm). vLLM's phases
are its own timing from its log (GET /rebuilds/last's vllm_phases), the
slowest node's; the total is the rebuild's wall time, POST /rebuild to
`serving`. The bed's vLLM loads for LOAD_S seconds (simctl slow-load) and
its torch.compile takes half of that cold and a twentieth warm, when it
finds the compiled graph under VLLM_CACHE_ROOT (tests/sim/standins/
vllm_cli.py): the figures show that tandem keeps and mounts the cache
across rebuilds, not what a real torch.compile saves (minutes on real
nodes)."""
import json
import os
import statistics
import time

import bed

LOAD_S = 6
PHASES = ("load_weights", "model_load", "torch_compile", "graph_capture", "init_engine")
LABELS = {"load_weights": "loading the weights (`load_weights`)",
          "model_load": "loading the model (`model_load`)",
          "torch_compile": "torch.compile (`torch_compile`)",
          "graph_capture": "CUDA-graph capture (`graph_capture`)",
          "init_engine": "the engine's whole init (`init_engine`)"}


def med(v):
    return {"median": round(statistics.median(v), 3), "min": round(min(v), 3),
            "max": round(max(v), 3), "n": len(v)}


def one_rebuild(d, nodes):
    """POST /rebuild, then its trace: the wall time and each phase, the
    slowest node's."""
    d.wait_state("serving", 300, action="idle")
    gen = d.status()["generation"]
    code, _ = d.post("/rebuild")
    if code != 202:
        raise bed.Fail("POST /rebuild: %d" % code)
    bed.wait_until(lambda: (lambda s: s["generation"] > gen and s["state"] == "serving" and
                            s["action"] == "idle")(d.status()), 300, "serving after a rebuild")
    code, body = bed.http(d.api + "/rebuilds/last")
    t = json.loads(body)
    if code != 200 or t["generation"] != gen + 1 or t["running"]:
        raise bed.Fail("/rebuilds/last after generation %d: %d %r" % (gen, code, t))
    phases = {}
    for x in t["vllm_phases"]:
        phases[x["phase"]] = max(phases.get(x["phase"], 0.0), x["seconds"])
    return {"wall_s": t["wall_ms"] / 1000, "phases": phases}


def measure(d, trials, say=print):
    """{"cold", "warm"}: each {"wall_s", "phases": {phase: med}} over the
    trials, and the conditions; d serves a 2-node bed whose config has a
    container.cache_dir."""
    cache = d.cfg["container"]["cache_dir"]
    nodes = ["node%d" % (i + 1) for i in range(len(d.cfg["nodes"]))]
    runs = {"cold": [], "warm": []}
    load = []
    bed.simctl("slow-load", str(LOAD_S))
    try:
        for _ in range(trials):
            for kind in ("cold", "warm"):
                d.wait_state("serving", 300, action="idle")
                if kind == "cold":
                    for n in nodes:
                        bed.must(n, "rm -rf -- '%s'" % cache)
                load.append(round(os.getloadavg()[0], 1))
                r = one_rebuild(d, nodes)
                runs[kind].append(r)
                say("startup, %s cache: rebuild %.2f s, %s" % (kind, r["wall_s"], ", ".join(
                    "%s %.2f s" % (p, r["phases"][p]) for p in PHASES if p in r["phases"])))
    finally:
        bed.simctl("slow-load", "off")
    out = {"load_s": LOAD_S, "nodes": len(nodes), "loadavg": load,
           "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for kind, rs in runs.items():
        out[kind] = {"wall_s": med([r["wall_s"] for r in rs]),
                     "phases": {p: med([r["phases"][p] for r in rs]) for p in PHASES
                                if all(p in r["phases"] for r in rs)}}
    return out


def ratio(v):
    """The judged figure: the warm rebuild's wall time over the cold one's."""
    return v["warm"]["wall_s"]["median"] / v["cold"]["wall_s"]["median"]


def span(v):
    return "%.2f s (%.2f–%.2f)" % (v["median"], v["min"], v["max"])


def render(v, goal):
    """docs/benchmarks.md's section; goal(value) the goal's text and verdict."""
    if not v:
        return []
    out = ["## Startup: an empty cache against a warm one", "",
           "`container.cache_dir` (issue 47) keeps vLLM's, torch inductor's and Triton's "
           "caches on each node across rebuilds. Each of %d trials empties the cache "
           "directory on both nodes and asks a rebuild (cold, as a first start), then asks "
           "another with the same image, model and flags (warm). The phases are vLLM's own "
           "timing from its log (`GET /rebuilds/last`'s `vllm_phases`, the slowest node's); "
           "the total is the rebuild's wall time, `POST /rebuild` to `serving`. The bed's "
           "vLLM loads for %g s here (`simctl slow-load`) and its torch.compile takes half "
           "of that cold and a twentieth warm, when it finds its compiled graph under "
           "`VLLM_CACHE_ROOT` (vLLM's \"Directly load the compiled graph(s) ... from the "
           "cache\" line): the figures show that tandem keeps and mounts the cache, not what "
           "a real torch.compile saves (minutes for 100B-class models on real nodes). "
           "Measured %s on %d nodes, load average before each rebuild %s (`tests/bench "
           "--startup`)." % (v["cold"]["wall_s"]["n"], v["load_s"], v["measured"], v["nodes"],
                             ", ".join("%.1f" % x for x in v["loadavg"])), "",
           "| | cold cache | warm cache |", "|---|---|---|"]
    for p in PHASES:
        c, w = v["cold"]["phases"].get(p), v["warm"]["phases"].get(p)
        if c and w:
            out.append("| %s | %s | %s |" % (LABELS[p], span(c), span(w)))
    out.append("| **total: the rebuild, `POST /rebuild` to `serving`** | %s | %s |" % (
        span(v["cold"]["wall_s"]), span(v["warm"]["wall_s"])))
    out += ["", "Goal: the warm rebuild's wall time over the cold one's, %.2f ×, %s." % (
        ratio(v), goal(ratio(v)))]
    return out
