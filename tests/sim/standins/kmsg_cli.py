"""journalctl -k and dmesg stand-ins: the node's kernel log.

The bed's nodes are network namespaces on one kernel, so the real kernel
log is the machine's, shared by every node and holding nothing a GPU
driver would print. Each node's log is a file of its own instead,
S.node_dir(NODE, "kmsg.jsonl"), one {"t": UNIX_TIME, "text": LINE} per
line, which `simctl xid` appends to the way NVIDIA's driver prints
(tests/unit/data/nvidia-xid/). These stand-ins, first on the node's PATH,
print it in the real tools' formats: journalctl -k -o short-iso
[--since @T] ("2026-11-02T08:14:03+0000 HOST kernel: TEXT"), dmesg
[--time-format iso] ("2026-11-02T08:14:03,000000+00:00 TEXT"). With
`simctl kmsg-refuse NODE`, they refuse as they do for a user without the
right (dmesg_restrict; outside the adm and systemd-journal groups).
"""

import json
import os
import sys
import time

import simlib as S

NODE = os.environ.get("SIM_NODE", "")

# What any node's kernel says at boot, so that readers must pick the
# driver's lines out of others.
BOOT = ["Linux version 6.8.0-1013-nvidia (buildd@bos03-arm64-012) (aarch64-linux-gnu-gcc-13) "
        "#14-Ubuntu SMP PREEMPT_DYNAMIC",
        "nvidia: loading out-of-tree module taints kernel.",
        "NVRM: loading NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build",
        "EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Quota mode: none."]


def entries():
    sim = S.sim() or {}
    t0 = float(sim.get("started", time.time() - 3600))
    out = [{"t": t0, "text": b} for b in BOOT]
    try:
        with open(S.node_dir(NODE, "kmsg.jsonl")) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def refused():
    return os.path.exists(S.node_dir(NODE, "kmsg_refuse"))


def journalctl(args):
    since = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--since" and i + 1 < len(args):
            i += 1
            v = args[i]
            if not v.startswith("@"):
                sys.stderr.write("Failed to parse timestamp: %s\n" % v)
                sys.exit(1)
            since = float(v[1:])
        elif a.startswith("--since="):
            since = float(a.split("=", 1)[1].lstrip("@"))
        i += 1
    if refused():
        print("-- No entries --")
        sys.stderr.write("Hint: You are currently not seeing messages from other users and the "
                         "system.\n      Users in groups 'adm', 'systemd-journal' can see all "
                         "messages.\n      Pass -q to turn off this notice.\n")
        return
    shown = 0
    for e in entries():
        if since is not None and e["t"] < since:
            continue
        print("%s %s kernel: %s" % (time.strftime("%Y-%m-%dT%H:%M:%S+0000",
                                                 time.gmtime(e["t"])), NODE, e["text"]))
        shown += 1
    if not shown:
        print("-- No entries --")


def dmesg(args):
    if refused():
        sys.stderr.write("dmesg: read kernel buffer failed: Operation not permitted\n")
        sys.exit(1)
    iso = "--time-format" in args and "iso" in args
    t0 = entries()[0]["t"]
    for e in entries():
        if iso:
            print("%s,%06d+00:00 %s" % (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(e["t"])),
                                        int(e["t"] % 1 * 1e6), e["text"]))
        else:
            print("[%12.6f] %s" % (e["t"] - t0, e["text"]))


def main(prog, args):
    if prog == "journalctl":
        journalctl(args)
    else:
        dmesg(args)
