"""npu-smi stand-in: the node's Ascend NPUs as Huawei's npu-smi prints them
(the layouts recorded in tests/unit/data/npu-smi/: an Atlas 800I A2's
910B3 with 64 GB of HBM each, one chip per NPU, driver 25.2.0). It reads
the bed's device state as the nvidia-smi stand-in does: each NPU's HBM is
the driver's baseline plus the holds of the processes on it (a running
vLLM holds its share; a killed one frees it after a short delay). Health
comes from nodes/<node>/npu_health.json ({"3": "Critical"}, simctl
npu-health). `npu-smi info` prints host PIDs with the process's name, as
npu-smi on the host does."""

import os
import sys

import simlib as S
from nvsmi import holder_pid, lock_pids

NODE = os.environ.get("SIM_NODE", "")
MIB = 1024
VERSION = "25.2.0"
BUS = ["C1", "C2", "81", "82", "01", "02", "41", "42"]

TOP = "+" + "-" * 96 + "+"
RULE = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
EQ = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"


def npus():
    n = S.node(NODE)
    health = S.read_json(S.node_dir(NODE, "npu_health.json")) or {}
    total = S.gpu_total_gib(NODE)
    out = []
    for i in range(int(n.get("npus", 0))):
        used = total - S.gpu_free_gib(NODE, i)
        out.append({"id": i, "name": n.get("npu_name", "910B3"),
                    "health": health.get(str(i), "OK"),
                    "bus": "0000:%s:00.0" % (BUS[i] if i < len(BUS) else "%02X" % (0x90 + i)),
                    "used": int(round(used * MIB)), "total": int(round(total * MIB))})
    return out


def proc_name(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def hbm(used, total):
    # "3408 / 65536", and "41052/ 65536" once the number has five digits
    return ("%-5s" % used if used < 10000 else "%d" % used) + "/ %-14s" % total


def info():
    print(TOP)
    print("| npu-smi %-25sVersion: %-53s|" % (VERSION, VERSION))
    print(RULE)
    print("| NPU   Name                | Health        | Power(W)    Temp(C)           "
          "Hugepages-Usage(page)|")
    print("| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  "
          "HBM-Usage(MB)        |")
    print(EQ)
    devs = npus()
    pids = lock_pids()
    holds = S.gpu_holds(NODE)
    for d in devs:
        busy = any(h["gpu"] == d["id"] for h in holds)
        print("| %-5d %-19s | %-13s | %-11s %-17s 0    / 0             |"
              % (d["id"], d["name"], d["health"], "%.1f" % (180.0 if busy else 92.3),
                 52 if busy else 34))
        print("| 0                         | %-13s | %-11d 0    / 0          %s|"
              % (d["bus"], 17 if busy else 0, hbm(d["used"], d["total"])))
        print(EQ)
    print(RULE)
    print("| NPU     Chip              | Process id    | Process name             "
          "| Process memory(MB)      |")
    print(EQ)
    for d in devs:
        rows = [h for h in holds if h["gpu"] == d["id"]]
        if not rows:
            print("| %-94s |" % ("No running processes found in NPU %d" % d["id"]))
        for h in rows:
            # a hold simctl npu-held kept: the host PID and name it had
            pid = h.get("host_pid") or holder_pid(h, pids)
            name = h.get("comm") if h.get("stuck") else proc_name(pid)
            print("| %-7d %-17d | %-13d | %-24s | %-23d |"
                  % (d["id"], 0, pid, (name or "")[:24], int(round(h["gib"] * MIB))))
        print(EQ)


def info_l():
    devs = npus()
    print("        %-31s: %d" % ("Total Count", len(devs)))
    for d in devs:
        print("")
        print("        %-31s: %d" % ("NPU ID", d["id"]))
        print("        %-31s: %d" % ("Chip Count", 1))


def main(prog, args):
    if S.garbage_on(NODE):
        S.garbage("dcmi module initialize failed. ret is -8005", 255)
    if not int(S.node(NODE).get("npus", 0)):
        # no Ascend driver on this node: no npu-smi at all
        sys.stderr.write("bash: line 1: npu-smi: command not found\n")
        sys.exit(127)
    if args == ["info"]:
        info()
    elif args == ["info", "-l"]:
        info_l()
    else:
        sys.stderr.write("Error: unsupported command in the bed's npu-smi: %s\n" % " ".join(args))
        sys.exit(1)
