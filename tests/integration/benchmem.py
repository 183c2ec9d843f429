"""make bench's memory figures: tandemd and monit side by side, each 30 s
after it started, checking the same nodes every second, read from
/proc/PID/smaps the same way for both.

RSS counts every page of a shared library a process has mapped, however
many other processes map it too; PSS divides each page by the number of
processes that map it (its fair share of the machine), and private pages
(clean and dirty) are what the process alone costs: what its exit would
free. PSS therefore depends on what else runs on the machine; private does
not, which is why the breakdown by library is of private pages.

PSS "alone" is the figure for a head node: a library that only this
program maps there (no other process here maps the file, except other
copies of the same program, such as the daemons of other beds and tests)
counts in full, its RSS; a library other programs map too keeps its
measured share. Without it a tandemd measured beside other tandemds
shares GnuTLS, libcurl and the rest with them and looks 4 MB smaller than
it is on a head node (3.0 instead of 7.0 MB at 2 nodes, 2026-12-03)."""
import os
import signal
import subprocess
import time

WARM_S = 30
KEYS = ("Rss", "Pss", "Private_Clean", "Private_Dirty")


def mapped_by_others(exe):
    """The files mapped by any process whose program is not exe."""
    files = set()
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if os.path.basename(os.readlink("/proc/%s/exe" % p)) == exe:
                continue
            with open("/proc/%s/maps" % p) as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) == 6 and parts[5].startswith("/"):
                        files.add(parts[5].strip())
        except OSError:
            pass        # gone meanwhile, or a kernel thread
    return files


def smaps(pid, shared_files=None):
    """{mapping name: {Rss, Pss, Private_Clean, Private_Dirty, Pss_alone}}
    in kB; the name is the file's base name, or [heap], [stack], [anon]
    (thread stacks and malloc arenas of threads). Pss_alone is Pss for a
    file in shared_files (or anything not a file), else Rss."""
    per = {}
    cur = None
    alone = False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            parts = line.split()
            if not parts[0].endswith(":"):
                # a mapping's header: range perms offset dev inode [path]
                name = os.path.basename(parts[5]) if len(parts) > 5 else "[anon]"
                alone = (shared_files is not None and len(parts) > 5 and
                         parts[5].startswith("/") and parts[5] not in shared_files)
                if name.startswith("[anon:"):
                    name = "[anon]"
                cur = per.setdefault(name, dict.fromkeys(KEYS + ("Pss_alone",), 0))
            elif parts[0][:-1] in KEYS and cur is not None:
                key = parts[0][:-1]
                cur[key] += int(parts[1])
                if key == ("Rss" if alone else "Pss"):
                    cur["Pss_alone"] += int(parts[1])
    return per


def summary(pid):
    exe = os.path.basename(os.readlink("/proc/%d/exe" % pid))
    per = smaps(pid, mapped_by_others(exe))
    tot = dict.fromkeys(KEYS + ("Pss_alone",), 0)
    for v in per.values():
        for k in tot:
            tot[k] += v[k]
    libs = sorted(n for n in per if ".so" in n and not n.startswith("["))
    private = {n: v["Private_Clean"] + v["Private_Dirty"] for n, v in per.items()}
    return {"rss_kb": tot["Rss"], "pss_kb": tot["Pss"], "pss_alone_kb": tot["Pss_alone"],
            "private_kb": tot["Private_Clean"] + tot["Private_Dirty"],
            "private_dirty_kb": tot["Private_Dirty"], "libraries": len(libs),
            "private_by_mapping_kb": dict(sorted(
                ((n if n != exe else "(the program)"), kb) for n, kb in private.items() if kb)),
            "pss_by_mapping_kb": dict(sorted(
                ((n if n != exe else "(the program)"), v["Pss"]) for n, v in per.items()
                if v["Pss"])),
            "pss_alone_by_mapping_kb": dict(sorted(
                ((n if n != exe else "(the program)"), v["Pss_alone"])
                for n, v in per.items() if v["Pss_alone"])),
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


def render(mem, measured=None, goal=None):
    """docs/benchmarks.md's memory section from bench/results.json's
    "memory" ({nodes: side_by_side()}); measured: when, if not with the
    rest of the page; goal(tandemd's PSS alone over monit's): the goals
    table's verdict on it (docs/benchmarks.md)."""
    def mb(kb):
        return "%.1f MB" % (kb / 1024)

    lines = ["## Memory beside monit (%d s after start, checks every 1 s)" % WARM_S, "",
             "Both started together against the same serving cluster: tandemd (probe every "
             "1 s, adopting the cluster) and monit 5 checking the same nodes every second "
             "(an `ssh` per node for the container, `ray status`, vLLM's `/health`). Read "
             "from `/proc/PID/smaps` the same way for both.%s" % (
                 " Measured %s (`tests/bench --memory`)." % measured if measured else ""), "",
             "| nodes | process | RSS | PSS here | PSS alone (head node) | private (dirty) "
             "| libraries mapped | goal: tandemd PSS alone ≤ monit's |",
             "|---|---|---|---|---|---|---|---|"]

    def alone(v):
        return v.get("pss_alone_kb", v["pss_kb"])
    for n in sorted(mem, key=int):
        t, m = mem[n]["tandemd"], mem[n]["monit"]
        for who, v in (("tandemd", t), ("monit", m)):
            verdict = (goal(alone(t) / max(1, alone(m))) if goal else
                       "met" if alone(t) <= alone(m) else "**missed**") \
                if who == "tandemd" else ""
            lines.append("| %s | %s | %s | %s | %s | %s (%s) | %d | %s |" % (
                n, who, mb(v["rss_kb"]), mb(v["pss_kb"]), mb(alone(v)), mb(v["private_kb"]),
                mb(v["private_dirty_kb"]), v["libraries"], verdict))
    for n in sorted(mem, key=int):
        t = mem[n]["tandemd"]
        by = sorted(t.get("pss_alone_by_mapping_kb", t["pss_by_mapping_kb"]).items(),
                    key=lambda kv: -kv[1])
        priv = t["private_by_mapping_kb"]
        lines += ["", "tandemd's PSS alone by mapping, %s nodes (kB; [heap] is malloc's main "
                  "arena, [anon] the thread stacks and arenas of libuv's pool threads):" % n, "",
                  "| mapping | PSS alone kB | private kB here |", "|---|---|---|"]
        lines += ["| %s | %d | %d |" % (k, kb, priv.get(k, 0)) for k, kb in by[:14]]
        rest = by[14:]
        if rest:
            lines.append("| %d more | %d | %d |" % (len(rest), sum(kb for _, kb in rest),
                                                    sum(priv.get(k, 0) for k, _ in rest)))
    lines += ["", "PSS counts a page shared with other processes divided by their number, so "
              "it moves with what else runs on the machine. \"PSS alone\" is the figure for "
              "a head node: a library that no other program here maps (only other tandemd "
              "processes, of other beds and tests on this machine, or of other monits) counts "
              "in full, its RSS; a library other programs map too (libc, libcrypto, libz, "
              "libsystemd, Kerberos, mapped by sshd and the rest) keeps its share. Measured "
              "beside other tandemds, tandemd's PSS here looked 4 MB smaller than alone "
              "(3.0 against 7.0 MB at 2 nodes), which is how an earlier version of this page "
              "came to report 3.0 MB. A shared library's private dirty pages are its relocated "
              "and writable data, written at load in every process that maps it (8–12 kB for "
              "most, 400 kB for libcrypto). See docs/architecture.md (Memory) for what tandem "
              "does about the libraries and why."]
    return lines
