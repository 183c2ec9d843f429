"""ip, in loopback mode only: the nodes share the machine's loopback, so
`ip -o addr show dev IF` adds the node's own address on its interface, as
the node's own NIC would show it. Anything else is the real ip."""

import os
import sys

import simlib as S


def main(prog, args):
    real = next(p for p in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip")
                if os.path.exists(p))
    n = S.node(os.environ.get("SIM_NODE", ""))
    words = [a for a in args if a != "-o"]
    if "-o" in args and words[:2] in (["addr", "show"], ["a", "s"], ["address", "show"]) and \
            words[2:] in (["dev", n["ifname"]], [n["ifname"]]):
        sys.stdout.flush()
        r = os.spawnv(os.P_WAIT, real, [real] + args)
        if r == 0:
            print("1: %s    inet %s/8 scope host secondary %s\\       valid_lft forever "
                  "preferred_lft forever" % (n["ifname"], n["ip"], n["ifname"]))
        sys.exit(r)
    os.execv(real, [real] + args)
