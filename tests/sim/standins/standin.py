#!/usr/bin/python3
"""One entry point for every stand-in; the program name picks which."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Inside a real container the bed's runtime mounts the stand-ins here, and
# this file itself as /usr/bin/nvidia-smi.
sys.path.append("/opt/sim")

# Imported on demand: every docker call starts a fresh interpreter.
PROGS = {"docker": "docker_cli", "podman": "docker_cli", "ray": "ray_cli", "vllm": "vllm_cli",
         "nvidia-smi": "nvsmi", "npu-smi": "npusmi", "ip": "ip_cli", "dmesg": "kmsg_cli",
         "journalctl": "kmsg_cli"}

if __name__ == "__main__":
    prog = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    if prog == "standin.py" and args[:1] == ["_shim"]:
        prog = "docker"
    if prog == "standin.py" and args[:1] == ["_hold"]:
        # simctl foreign: a workload that holds GIB of the node's GPU
        # memory until it is stopped (as a container's PID 1 it must catch
        # SIGTERM itself: the kernel ignores it otherwise)
        import signal
        import simlib
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        # _hold GIB [DEVICE]: on GPU/NPU DEVICE (0 by default)
        if float(args[1]) > 0:
            simlib.gpu_hold(os.environ["SIM_NODE"], int(args[2]) if len(args) > 2 else 0,
                            float(args[1]))
        while True:
            signal.pause()
    try:
        __import__(PROGS[prog]).main(prog, args)
    except BrokenPipeError:
        sys.exit(141)
    except KeyboardInterrupt:
        sys.exit(130)
