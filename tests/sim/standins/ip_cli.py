"""ip, in loopback mode only: the nodes share the machine's loopback, so
`ip -o addr show dev IF` and `ip -j addr show dev IF` (the link check's)
add the node's own address on its interface, as the node's own NIC would
show it. Anything else is the real ip."""

import json
import os
import subprocess
import sys

import simlib as S


def with_own_address(real, args, n):
    """The real ip's JSON, the node's address added to its interface."""
    r = subprocess.run([real] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        sys.stdout.write(r.stdout)
        sys.exit(r.returncode)
    ifs = json.loads(r.stdout)
    for i in ifs:
        if i.get("ifname") == n["ifname"]:
            i.setdefault("addr_info", []).append(
                {"family": "inet", "local": n["ip"], "prefixlen": 8, "scope": "host",
                 "secondary": True, "label": n["ifname"], "valid_life_time": 4294967295,
                 "preferred_life_time": 4294967295})
    print(json.dumps(ifs, separators=(",", ":")))
    sys.exit(0)


def main(prog, args):
    real = next(p for p in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip")
                if os.path.exists(p))
    n = S.node(os.environ.get("SIM_NODE", ""))
    words = [a for a in args if a != "-o"]
    if args[:1] == ["-j"] and args[1:] == ["addr", "show", "dev", n["ifname"]]:
        with_own_address(real, args, n)
    if "-o" in args and words[:2] in (["addr", "show"], ["a", "s"], ["address", "show"]) and \
            words[2:] in (["dev", n["ifname"]], [n["ifname"]]):
        sys.stdout.flush()
        r = os.spawnv(os.P_WAIT, real, [real] + args)
        if r == 0:
            print("1: %s    inet %s/8 scope host secondary %s\\       valid_lft forever "
                  "preferred_lft forever" % (n["ifname"], n["ip"], n["ifname"]))
        sys.exit(r)
    os.execv(real, [real] + args)
