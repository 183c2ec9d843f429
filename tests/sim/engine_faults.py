#!/usr/bin/python3
"""What a node's real docker CLI answers under the bed's engine faults
(simctl engine-permission, image-store, answer). On a real-engine bed this
is `docker` first on the node's PATH; it runs the CLI the node would
otherwise run (/usr/local/bin/docker, else /usr/bin/docker) and changes
only what the fault changes. The docker stand-in reads the same flags
(docker_cli.py), so both beds behave alike.

engine-permission NODE: ssh.user is not in the docker group. The real CLI
runs as `nobody`, so the words are the CLI's own (docker 28: "permission
denied while trying to connect to the Docker daemon socket at ...").

image-store NODE containerd: the node's engine keeps images in the
containerd image store (the default of a fresh docker 29). `image inspect`
then shows as .Id the digest of the image's index, not its config digest
(moby daemon/containerd/image_inspect.go: ID = target.Digest); the layers
(.RootFS.Layers) and .Created are the config's, as on the classic store.
The bed's dockerd 20.10 has no such store: the CLI's answer is rewritten,
.Id becoming a digest derived from the config digest (one build, one
index digest), as tests/unit/data/docker-29-containerd/ shows it.

answer NODE SUBCOMMAND RC TEXT [--match S]: that subcommand (those of its
calls with an argument containing S) answers TEXT on stderr with exit RC
(a query the engine rejects).
"""

import hashlib
import json
import os
import sys

import simlib as S

NODE = os.environ.get("SIM_NODE", "")
MARK = "\x01"


def real_cli():
    for d in ("/usr/local/bin", "/usr/bin"):
        p = os.path.join(d, "docker")
        if os.access(p, os.X_OK):
            return p
    sys.stderr.write("docker: no docker CLI on this node\n")
    sys.exit(127)


def containerd_store():
    return os.path.exists(S.node_dir(NODE, "image_store_containerd"))


def index_digest(config_id):
    """The index digest the containerd store would show for the build whose
    config digest is config_id: fixed per build, never the config digest."""
    hexid = config_id.split(":")[-1]
    return "sha256:" + hashlib.sha256(("c8d-index:" + hexid).encode()).hexdigest()


def subcommand(args):
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-H", "--host", "-c", "--context", "--config") else 1
    return args[i] if i < len(args) else ""


def image_inspect_format(args):
    """The --format of `image inspect` (or `inspect --type image`), or None."""
    if subcommand(args) == "image" and "inspect" in args:
        pass
    elif subcommand(args) == "inspect" and "image" in args:
        pass
    else:
        return None
    for i, a in enumerate(args):
        if a in ("-f", "--format") and i + 1 < len(args):
            return i + 1
        if a.startswith("--format="):
            return i
    return None


def main():
    args = sys.argv[1:]
    cli = real_cli()
    rule = S.answer_rule(NODE, subcommand(args), args)
    if rule:
        sys.stdout.write(rule.get("out", ""))
        sys.stderr.write(rule.get("err", ""))
        sys.exit(int(rule.get("rc", 1)))
    if os.path.exists(S.node_dir(NODE, "engine_permission")):
        # the CLI's own words for a socket it may not open
        os.environ["HOME"] = "/tmp"
        os.execv("/usr/bin/setpriv", ["setpriv", "--reuid=65534", "--regid=65534",
                                      "--clear-groups", cli] + args)
    at = image_inspect_format(args) if containerd_store() else None
    if at is None:
        os.execv(cli, [cli] + args)
    import subprocess
    fmt = args[at]
    pre = ""
    if fmt.startswith("--format="):
        pre, fmt = "--format=", fmt[len("--format="):]
    args = list(args)
    args[at] = pre + fmt.replace("{{.Id}}", MARK + "{{.Id}}" + MARK)
    r = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = r.stdout.decode("utf-8", "replace")
    parts = out.split(MARK)
    for k in range(1, len(parts), 2):
        parts[k] = index_digest(parts[k])
    sys.stdout.write("".join(parts))
    sys.stderr.write(r.stderr.decode("utf-8", "replace"))
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
