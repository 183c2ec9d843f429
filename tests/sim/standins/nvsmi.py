"""nvidia-smi stand-in: the node's GPUs with total/used memory. A running
vLLM (or Ray worker) holds its share; a killed one frees it after a short
delay, as real drivers do."""

import os
import sys

import simlib as S

NODE = os.environ.get("SIM_NODE", "")
MIB = 1024


def gpus():
    n = S.node(NODE)
    out = []
    for g in range(int(n.get("gpus", 1))):
        total = S.gpu_total_gib(NODE)
        used = total - S.gpu_free_gib(NODE, g)
        out.append({"index": g, "name": "NVIDIA GB10", "uuid": "GPU-%08x-sim-%s-%d" % (
            abs(hash(NODE)) & 0xffffffff, NODE, g), "total": total * MIB, "used": used * MIB})
    return out


# the driver's branch and the CUDA it supports, as its nvidia-smi header
# shows it (NVIDIA's CUDA Toolkit release notes, table 3)
CUDA_OF_BRANCH = {"535": "12.2", "550": "12.4", "560": "12.6", "570": "12.8", "575": "12.9",
                  "580": "13.0"}


def driver():
    """The node's driver version: 580.95.05 (GB10's), or what `simctl
    driver NODE VERSION` set."""
    try:
        with open(S.node_dir(NODE, "driver_version")) as f:
            return f.read().strip() or "580.95.05"
    except OSError:
        return "580.95.05"


def lock_pids():
    """inode -> PID of each flock holder, as this PID namespace sees it:
    a holder in a container's namespace records its own PID there, and
    nvidia-smi on the host prints host PIDs."""
    out = {}
    try:
        with open("/proc/locks") as f:
            for line in f:
                # "1: FLOCK  ADVISORY  WRITE 12345 00:2f:1234567 0 EOF"
                w = line.split()
                if len(w) >= 6 and w[1] == "FLOCK" and w[0].endswith(":"):
                    out[int(w[5].rsplit(":", 1)[1])] = int(w[4])
    except (OSError, ValueError):
        pass
    return out


def holder_pid(h, pids):
    try:
        return pids.get(os.stat(h["path"]).st_ino) or h["pid"]
    except (OSError, KeyError):
        return h["pid"]


def main(prog, args):
    if S.node(NODE).get("accelerator") == "ascend":
        # an Ascend node has no NVIDIA driver: no nvidia-smi
        sys.stderr.write("bash: line 1: nvidia-smi: command not found\n")
        sys.exit(127)
    if S.garbage_on(NODE):
        S.garbage("Unable to determine the device handle for GPU0000:01:00.0: ", 255)
    if os.path.exists(S.node_dir(NODE, "gpu_fallen_off")):
        print("Unable to determine the device handle for GPU0000:01:00.0: Unknown Error")
        sys.exit(255)
    query = fmt = None
    for a in args:
        if a.startswith("--query-gpu=") or a.startswith("--query-compute-apps="):
            query = a
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1].split(",")
        elif a == "-L":
            for g in gpus():
                print("GPU %d: %s (UUID: %s)" % (g["index"], g["name"], g["uuid"]))
            return
    if query is None:
        print("+-----------------------------------------------------------------------------+")
        drv = driver()
        print("| NVIDIA-SMI %-10s  Driver Version: %-10s  CUDA Version: %-4s     |"
              % (drv, drv, CUDA_OF_BRANCH.get(drv.split(".")[0], "13.0")))
        print("|-------------------------------+----------------------+----------------------+")
        for g in gpus():
            print("|   %d  %-26s |  %6dMiB / %6dMiB |                      |"
                  % (g["index"], g["name"], g["used"], g["total"]))
        print("+-----------------------------------------------------------------------------+")
        for h in S.gpu_holds(NODE):
            print("|    %d   N/A  N/A  %7d      C   python3  %10dMiB |"
                  % (h["gpu"], h["pid"], h["gib"] * MIB))
        return
    kind, _, fields = query.partition("=")
    fields = fields.split(",")
    units = fmt is None or "nounits" not in fmt
    header = fmt is None or "noheader" not in fmt
    rows = []
    if kind == "--query-gpu":
        for g in gpus():
            ecc = (S.read_json(S.node_dir(NODE, "ecc.json")) or {}).get(str(g["index"]), 0)
            vals = {"index": str(g["index"]), "name": g["name"], "uuid": g["uuid"],
                    # simctl xid names GPU N by this address
                    "pci.bus_id": "00000000:%02X:00.0" % (g["index"] + 1),
                    "ecc.errors.uncorrected.volatile.total": str(ecc),
                    "driver_version": driver(),
                    "memory.total": "%d%s" % (g["total"], " MiB" if units else ""),
                    "memory.used": "%d%s" % (g["used"], " MiB" if units else ""),
                    "memory.free": "%d%s" % (g["total"] - g["used"], " MiB" if units else "")}
            rows.append([vals.get(f, "[N/A]") for f in fields])
    else:
        pids = lock_pids()
        for h in S.gpu_holds(NODE):
            vals = {"pid": str(holder_pid(h, pids)), "process_name": "python3",
                    "used_memory": "%d%s" % (h["gib"] * MIB, " MiB" if units else ""),
                    "gpu_uuid": gpus()[h["gpu"]]["uuid"]}
            rows.append([vals.get(f, "[N/A]") for f in fields])
    if header:
        print(", ".join(fields))
    for r in rows:
        print(", ".join(r))
