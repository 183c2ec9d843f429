"""The bed's OCI runtime: edits the spec, then runs the real runc.

NVIDIA's container toolkit is a runc wrapper of this kind: for a container
whose environment asks for GPUs (NVIDIA_VISIBLE_DEVICES, which docker sets
for `--gpus`), it adds the devices, nvidia-smi and the driver's libraries to
the spec. Here the "driver" is the bed: a GPU container gets the bed's
nvidia-smi at /usr/bin/nvidia-smi; every container gets the bed's state
(SIM_DIR, and the stand-ins at /opt/sim that the image's ray and vllm point
to), since the stand-ins play the cluster through it. Processes that
`docker exec` starts get the same environment (runc exec --process FILE).
"""

import json
import os
import sys
import time

RUNC = "/usr/sbin/runc"
STANDIN_DIR = "/opt/sim"


def bed_env():
    return ["SIM_DIR=" + os.environ["SIM_DIR"], "SIM_NODE=" + os.environ["SIM_NODE"]]


def add_env(env):
    keep = [e for e in env if not e.startswith(("SIM_DIR=", "SIM_NODE="))]
    return keep + bed_env()


def bind(src, dst, ro=False):
    return {"destination": dst, "type": "bind", "source": src,
            "options": ["rbind", "ro" if ro else "rw", "nosuid"]}


def edit_spec(bundle):
    p = os.path.join(bundle, "config.json")
    with open(p) as f:
        spec = json.load(f)
    proc = spec.setdefault("process", {})
    # podman asks for rlimits (nofile, nproc) that root without
    # CAP_SYS_RESOURCE cannot set in this sandbox; a real node can.
    proc.pop("rlimits", None)
    gpu = any(e.startswith("NVIDIA_VISIBLE_DEVICES=") for e in proc.get("env", []))
    proc["env"] = add_env(proc.get("env", []))
    sim = os.environ["SIM_DIR"]
    mounts = spec.setdefault("mounts", [])
    mounts.append(bind(sim, sim))
    mounts.append(bind(os.path.join(sim, "bin"), STANDIN_DIR, ro=True))
    if gpu:
        mounts.append(bind(os.path.join(sim, "bin", "standin.py"), "/usr/bin/nvidia-smi",
                           ro=True))
    tmp = p + ".sim"
    with open(tmp, "w") as f:
        json.dump(spec, f)
    os.rename(tmp, p)


def edit_process(path):
    with open(path) as f:
        proc = json.load(f)
    proc["env"] = add_env(proc.get("env", []))
    proc.pop("rlimits", None)
    with open(path, "w") as f:
        json.dump(proc, f)


def slow_run():
    """simctl slow-run: the engine's `run` still in flight for a while."""
    try:
        with open(os.path.join(os.environ["SIM_DIR"], "nodes", os.environ["SIM_NODE"],
                               "slow_run.json")) as f:
            time.sleep(float(json.load(f)))
    except (OSError, ValueError, TypeError):
        pass


def main(args):
    try:
        if "create" in args and "--bundle" in args:
            slow_run()
            edit_spec(args[args.index("--bundle") + 1])
        elif "exec" in args and "--process" in args:
            edit_process(args[args.index("--process") + 1])
    except (OSError, ValueError, KeyError, IndexError) as e:
        sys.stderr.write("sim-runtime: %s\n" % e)
        sys.exit(1)
    os.execv(RUNC, ["runc"] + args)


if __name__ == "__main__":
    main(sys.argv[1:])
