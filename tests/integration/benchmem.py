"""make bench's memory figures: tandemd and monit side by side, each 30 s
after it started, checking the same nodes every second, read from
/proc/PID/smaps the same way for both.

RSS counts every page of a shared library a process has mapped, however
many other processes map it too; PSS divides each page by the number of
processes that map it (its fair share of the machine), and private pages
(clean and dirty) are what the process alone costs: what its exit would
free. PSS therefore depends on what else runs on the machine; private does
not, which is why the breakdown by library is of private pages."""
import os
import signal
import subprocess
import time

WARM_S = 30
KEYS = ("Rss", "Pss", "Private_Clean", "Private_Dirty")


def smaps(pid):
    """{mapping name: {Rss, Pss, Private_Clean, Private_Dirty}} in kB; the
    name is the file's base name, or [heap], [stack], [anon] (thread stacks
    and malloc arenas of threads)."""
    per = {}
    cur = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            parts = line.split()
            if not parts[0].endswith(":"):
                # a mapping's header: range perms offset dev inode [path]
                name = os.path.basename(parts[5]) if len(parts) > 5 else "[anon]"
                if name.startswith("[anon:"):
                    name = "[anon]"
                cur = per.setdefault(name, dict.fromkeys(KEYS, 0))
            elif parts[0][:-1] in KEYS and cur is not None:
                cur[parts[0][:-1]] += int(parts[1])
    return per


def summary(pid):
    per = smaps(pid)
    tot = dict.fromkeys(KEYS, 0)
    for v in per.values():
        for k in KEYS:
            tot[k] += v[k]
    exe = os.path.basename(os.readlink("/proc/%d/exe" % pid))
    libs = sorted(n for n in per if ".so" in n and not n.startswith("["))
    private = {n: v["Private_Clean"] + v["Private_Dirty"] for n, v in per.items()}
    return {"rss_kb": tot["Rss"], "pss_kb": tot["Pss"],
            "private_kb": tot["Private_Clean"] + tot["Private_Dirty"],
            "private_dirty_kb": tot["Private_Dirty"], "libraries": len(libs),
            "private_by_mapping_kb": dict(sorted(
                ((n if n != exe else "(the program)"), kb) for n, kb in private.items() if kb)),
            "pss_by_mapping_kb": dict(sorted(
                ((n if n != exe else "(the program)"), v["Pss"]) for n, v in per.items()
                if v["Pss"])),
            "private_libraries_kb": sum(kb for n, kb in private.items() if n in libs)}


def side_by_side(start_tandemd, monit_rc):
    """Starts tandemd (start_tandemd() returns its pid and a stop function)
    and monit (monit_rc: its control file, same checks every 1 s) together,
    waits WARM_S, and reads both."""
    mp = subprocess.Popen(["monit", "-I", "-c", monit_rc], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        pid, stop = start_tandemd()
        try:
            time.sleep(WARM_S)
            return {"tandemd": summary(pid), "monit": summary(mp.pid)}
        finally:
            stop()
    finally:
        mp.send_signal(signal.SIGTERM)
        mp.wait()


def render(mem, measured=None):
    """docs/benchmarks.md's memory section from bench/results.json's
    "memory" ({nodes: side_by_side()}); measured: when, if not with the
    rest of the page."""
    def mb(kb):
        return "%.1f MB" % (kb / 1024)

    lines = ["## Memory beside monit (%d s after start, checks every 1 s)" % WARM_S, "",
             "Both started together against the same serving cluster: tandemd (probe every "
             "1 s, adopting the cluster) and monit 5 checking the same nodes every second "
             "(an `ssh` per node for the container, `ray status`, vLLM's `/health`). Read "
             "from `/proc/PID/smaps` the same way for both.%s" % (
                 " Measured %s (`tests/bench --memory`)." % measured if measured else ""), "",
             "| nodes | process | RSS | PSS | private (dirty) | libraries mapped | goal: "
             "tandemd PSS ≤ monit's |", "|---|---|---|---|---|---|---|"]
    for n in sorted(mem, key=int):
        t, m = mem[n]["tandemd"], mem[n]["monit"]
        for who, v in (("tandemd", t), ("monit", m)):
            goal = ("met" if t["pss_kb"] <= m["pss_kb"] else "**missed**") \
                if who == "tandemd" else ""
            lines.append("| %s | %s | %s | %s | %s (%s) | %d | %s |" % (
                n, who, mb(v["rss_kb"]), mb(v["pss_kb"]), mb(v["private_kb"]),
                mb(v["private_dirty_kb"]), v["libraries"], goal))
    n = max(mem, key=int)
    t = mem[n]["tandemd"]
    by = sorted(t["private_by_mapping_kb"].items(), key=lambda kv: -kv[1])
    lines += ["", "tandemd's private pages by mapping, %s nodes (kB; [heap] is malloc's main "
              "arena, [anon] the thread stacks and arenas of libuv's pool threads):" % n, "",
              "| mapping | private kB |", "|---|---|"]
    top = by[:12]
    lines += ["| %s | %d |" % kv for kv in top]
    rest = by[12:]
    if rest:
        lines.append("| %d more libraries | %d |" % (len(rest), sum(kb for _, kb in rest)))
    lines += ["", "A shared library's private dirty pages are its relocated and writable data, "
              "written at load in every process that maps it (8–12 kB for most, 400 kB for "
              "libcrypto); its code pages are private clean only while no other process maps "
              "them, and shared otherwise. PSS counts a shared page divided by the number of "
              "processes that map it, so PSS and private clean move with what else runs on "
              "the machine (the bed's sshd processes, and other programs using the same "
              "libraries: on this shared test machine the same 2-node measurement gave "
              "tandemd a PSS from 3.0 to 4.7 MB within an hour); private dirty does not. "
              "See docs/architecture.md (Memory) for what tandem does about the libraries "
              "and why."]
    return lines
