"""The bed's real container engines (simctl up --engine docker|podman).

Each node runs Debian's dockerd (docker.io 20.10) in the node's network
namespace and in the node's own mount namespace, shared with its sshd, so
`docker` in an SSH session talks to that node's engine at the usual
/var/run/docker.sock. Data root on the node's persistent storage (images
and exited containers survive a reboot), exec root on the node's private
/run, a containerd namespace per node, no bridge and no iptables changes:
containers use --network host, as the DGX Spark guide's do.

GPUs come the way NVIDIA's container toolkit brings them: dockerd accepts
`--gpus all` only when it finds `nvidia-container-runtime-hook` on its PATH
(a node without GPUs gets none and the real refusal), and the node's
default runtime is a runc wrapper (sim_runtime.py) that edits the OCI spec
before runc runs it: it injects the bed's `nvidia-smi` into containers that
asked for GPUs, and the bed's own state into every container (what the
Ray and vLLM stand-ins need to play the cluster: sim.json, GPU memory).

With --engine podman there is no daemon: podman runs from the SSH session
with the node's own containers.conf and storage.conf (storage on the node's
disk, run root on its /run, events in a file, the bed's runtime), and the
GPU comes through a CDI spec in the node's /run/cdi, as NVIDIA's toolkit
generates for podman (`--device nvidia.com/gpu=all`).

The image has no registry to come from: a Debian rootfs (debootstrap from
the Debian mirror apt uses, with python3 for the stand-ins) is imported
once, saved, and that archive is loaded on every node, so every node holds
the same image ID, as nodes that pulled the same tag do. Both the rootfs
and the saved image are cached in SIM_CACHE (/var/cache/tandem-sim).
"""

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time

import simlib as S

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("SIM_CACHE", "/var/cache/tandem-sim")
MIRROR = os.environ.get("SIM_MIRROR", "http://deb.debian.org/debian")
ROOTFS_PKGS = "python3,procps"
# The stand-ins live in the bed's bin directory; containers see it here.
STANDIN_DIR = "/opt/sim"
IN_IMAGE = ("ray", "vllm")
DOCKER = "/usr/bin/docker"
PODMAN = "/usr/bin/podman"
TAG = os.environ.get("SIM_TAG", "")  # simctl's: a second bed's names differ


def kind():
    return (S.read_json(S.path("sim.json")) or {}).get("engine", "docker")


def sh(argv, check=True, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise SystemExit("simctl: %s failed: %s" % (" ".join(argv), r.stderr.strip()))
    return r


def available(engine):
    """Why the real engine cannot run here, or None."""
    progs = ("/usr/sbin/dockerd", DOCKER) if engine == "docker" else (PODMAN,)
    for prog in progs + ("/usr/sbin/runc", "/usr/sbin/debootstrap"):
        if not os.access(prog, os.X_OK):
            return "%s is missing (make deps installs docker.io, podman, runc, debootstrap)" % prog
    if os.geteuid() != 0:
        return "an engine per node needs root"
    return None


# The image -------------------------------------------------------------------

def cache_lock():
    """Two beds coming up at once (make check runs the matrix beside the
    other tests) build the image once, not into each other's files."""
    os.makedirs(CACHE, exist_ok=True)
    fd = os.open(os.path.join(CACHE, ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def rootfs_tar():
    """A minimal Debian with python3, as a tar; built once (~40 s), cached."""
    key = hashlib.sha256(("bookworm %s %s" % (ROOTFS_PKGS, MIRROR)).encode()).hexdigest()[:12]
    tar = os.path.join(CACHE, "rootfs-%s.tar" % key)
    if os.path.exists(tar):
        return tar
    root = tempfile.mkdtemp(prefix="rootfs-", dir=CACHE)
    try:
        r = sh(["debootstrap", "--variant=minbase", "--include=" + ROOTFS_PKGS, "bookworm",
                root, MIRROR], check=False)
        if r.returncode != 0:
            raise SystemExit("simctl: debootstrap failed: %s" % (r.stdout + r.stderr)[-800:])
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc",
                    "usr/share/man", "usr/share/locale"):
            shutil.rmtree(os.path.join(root, sub), ignore_errors=True)
        # ray and vllm are in the image, as in vllm/vllm-openai; nvidia-smi
        # is not: the GPU runtime brings it.
        for prog in IN_IMAGE:
            os.symlink(STANDIN_DIR + "/standin.py", os.path.join(root, "usr/local/bin", prog))
        sh(["tar", "-C", root, "-cf", tar + ".tmp", "."])
        os.rename(tar + ".tmp", tar)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return tar


def image_archive(images, first_node):
    """`docker save` of IMAGES, each imported from the rootfs and knowing its
    own name (the vLLM stand-in fails as the real one does in an image that
    lacks the model's architecture), cached: loading it gives every node
    (and every bed) the same image IDs."""
    base = rootfs_tar()
    key = hashlib.sha256(("%s %s %s" % (base, images, kind())).encode()).hexdigest()[:12]
    arc = os.path.join(CACHE, "image-%s.tar" % key)
    if not os.path.exists(arc):
        for image in images:
            cli(first_node, "import", "--change", "ENV SIM_IMAGE=%s" % image, base, image)
        cli(first_node, "save", "-o", arc + ".tmp", *images)
        os.rename(arc + ".tmp", arc)
    return arc


def load_images(n, images):
    fd = cache_lock()
    try:
        arc = image_archive(images, n)
    finally:
        os.close(fd)
    cli(n, "load", "-i", arc)


# A node's engine ---------------------------------------------------------------

def node_file(n, name):
    return S.node_dir(n["name"], name)


def podman_env(n):
    return {"CONTAINERS_CONF": node_file(n, "containers.conf"),
            "CONTAINERS_STORAGE_CONF": node_file(n, "storage.conf")}


def write_podman_conf(n):
    with open(node_file(n, "containers.conf"), "w") as f:
        f.write("\n".join([
            "[engine]",
            'events_logger = "file"',
            'events_logfile_path = "%s"' % node_file(n, "podman-events.log"),
            'cgroup_manager = "cgroupfs"',
            'runtime = "sim"',
            "[engine.runtimes]",
            'sim = ["%s"]' % node_file(n, "sim-runtime"), ""]))
    with open(node_file(n, "storage.conf"), "w") as f:
        f.write("\n".join([
            "[storage]", 'driver = "overlay"',
            'graphroot = "%s"' % node_file(n, "podman"),
            'runroot = "/run/containers/storage"', ""]))
    # What `nvidia-ctk cdi generate` writes, reduced to what the bed needs:
    # the request is marked in the environment, the runtime does the rest.
    with open(node_file(n, "nvidia.yaml"), "w") as f:
        f.write("\n".join([
            'cdiVersion: "0.5.0"', 'kind: "nvidia.com/gpu"', "devices:",
            '- name: "all"', "  containerEdits:", "    env:",
            '    - "NVIDIA_VISIBLE_DEVICES=all"', ""]))


def write_runtime(n):
    """The node's runtime entry (the engine runs it for every container) and
    the directory that plays the NVIDIA toolkit's hook on dockerd's PATH."""
    rt = node_file(n, "sim-runtime")
    with open(rt, "w") as f:
        f.write("#!/bin/sh\nexec env SIM_DIR=%s SIM_NODE=%s /usr/bin/python3 %s \"$@\"\n" % (
            S.SIM_DIR, n["name"], S.path("bin", "sim_runtime.py")))
    os.chmod(rt, 0o755)
    write_hook(n)
    if kind() == "podman":
        write_podman_conf(n)


def nvidia_off(n):
    """The node as without NVIDIA's container toolkit (simctl
    nvidia-runtime-off): no hook, no nvidia runtime, no CDI spec."""
    return os.path.exists(node_file(n, "nvidia-off"))


def nvidia_unlisted(n):
    """NVIDIA's hook without the registered runtime (simctl
    nvidia-runtime-unlisted): a node where the toolkit was installed and
    `nvidia-ctk runtime configure` never run. dockerd needs only the hook
    on its PATH for --gpus (moby daemon/devices_nvidia_linux.go), so GPUs
    work; `docker info` lists no nvidia runtime."""
    return os.path.exists(node_file(n, "nvidia-unlisted"))


def write_hook(n):
    hook = node_file(n, "nvidia")
    os.makedirs(hook, exist_ok=True)
    p = os.path.join(hook, "nvidia-container-runtime-hook")
    if n.get("gpus", 1) > 0 and not nvidia_off(n):
        with open(p, "w") as f:
            f.write("#!/bin/sh\n# The toolkit's prestart hook; the runtime did the work.\nexit 0\n")
        os.chmod(p, 0o755)
    elif os.path.exists(p):
        os.unlink(p)


def nvidia_runtime(n, on, unlisted=False):
    """Uninstalling (or installing) the toolkit: docker's hook and its
    registered nvidia runtime go (dockerd restarts, as the package's
    postinst restarts docker.service; its containers die), podman's CDI
    spec goes from /run/cdi. unlisted: the hook stays, the runtime entry
    goes (docker only)."""
    flag = node_file(n, "nvidia-off")
    lflag = node_file(n, "nvidia-unlisted")
    if on and os.path.exists(flag):
        os.unlink(flag)
    elif not on:
        open(flag, "w").close()
    if unlisted:
        open(lflag, "w").close()
    elif os.path.exists(lflag):
        os.unlink(lflag)
    if kind() == "podman":
        if on and n.get("gpus", 1) > 0:
            sh(enter(n) + ["/bin/sh", "-c", "mkdir -p /run/cdi && cp %s /run/cdi/" %
                           node_file(n, "nvidia.yaml")])
        elif not on:
            sh(enter(n) + ["rm", "-f", "/run/cdi/nvidia.yaml"])
        return
    write_hook(n)
    engine_stop(n)
    engine_start(n)


def sshd_env(n):
    """What the node's login sessions need to find its engine."""
    if kind() != "podman":
        return ""
    return " ".join("%s=%s" % kv for kv in sorted(podman_env(n).items()))


def dockerd_argv(n):
    rt = "sim" if nvidia_off(n) or nvidia_unlisted(n) else "nvidia"
    return ["dockerd", "--data-root", node_file(n, "docker"), "--exec-root", "/run/docker",
            "--pidfile", "/run/docker.pid", "--host", "unix:///run/docker.sock",
            "--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-forward=false",
            "--ip-masq=false", "--containerd-namespace", "tsim%s-%s" % (TAG, n["name"]),
            "--containerd-plugins-namespace", "tsim%s-%s-plugins" % (TAG, n["name"]),
            # Named as `nvidia-ctk runtime configure --set-as-default` names
            # it, so `docker info` lists an nvidia runtime as on a GPU node
            # (without the toolkit the bed's runtime is still needed).
            "--add-runtime", "%s=%s" % (rt, node_file(n, "sim-runtime")),
            "--default-runtime", rt,
            "--shutdown-timeout", "2"]


def engine_cmd(n):
    """The shell line that starts the node's engine at boot: dockerd, as
    docker.service would; for podman, the CDI spec of the node's GPUs."""
    if kind() == "podman":
        if n.get("gpus", 1) == 0 or nvidia_off(n):
            return "true"
        return "mkdir -p /run/cdi && cp %s /run/cdi/" % node_file(n, "nvidia.yaml")
    return dockerd_cmd(n)


def dockerd_cmd(n):
    path = "%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" % node_file(n, "nvidia")
    return "PATH=%s setsid %s </dev/null >>%s 2>&1 &" % (
        path, " ".join(dockerd_argv(n)), node_file(n, "dockerd.log"))


def ascend_dev(n):
    """An Ascend node's own /dev (simctl up --accelerator ascend): the
    host's device nodes copied into a tmpfs with the host's pts, shm and
    mqueue bound back, plus the devices the Ascend data-parallel guide
    passes to its containers, each a char device 1:3 (what /dev/null is):
    docker --device needs them to exist and be devices."""
    if not n.get("npus"):
        return []
    names = ["davinci%d" % i for i in range(int(n["npus"]))] + [
        "davinci_manager", "devmm_svm", "hisi_hdc"]
    return [
        "mkdir -p /run/simdev",
        "find /dev -maxdepth 1 \\( -type c -o -type b -o -type l \\) "
        "-exec cp -a {} /run/simdev/ \\;",
        "for d in pts shm mqueue hugepages; do [ -d /dev/$d ] && mkdir -p /run/simdev/$d; "
        "done; true",
    ] + ["mknod -m 666 /run/simdev/%s c 1 3" % d for d in names] + [
        "for d in pts shm mqueue hugepages; do [ -d /run/simdev/$d ] && "
        "mount --bind /dev/$d /run/simdev/$d; done; true",
        "mount --rbind /run/simdev /dev",
    ]


def boot_script(n):
    """Run under `unshare --mount` in the node's network namespace: the
    node's own /run and /sys (and /dev on an Ascend node), then its engine
    and its sshd.
    $1 model source, $2 mount point, $3 sshd_config, $4 sshd log, $5 the
    node's boot id (simctl's boot_id())."""
    return "\n".join([
        "set -e",
        'mount --bind "$1" "$2"',
        'mount --bind "$5" /proc/sys/kernel/random/boot_id',
        "mount -t tmpfs -o mode=755 tmpfs /run",
        "mkdir -p /run/sshd /run/cg",
        # A sysfs of this network namespace (what `ip netns exec` mounts),
        # with the cgroup hierarchies dockerd needs moved back under it.
        "mount --rbind /sys/fs/cgroup /run/cg",
        "mount -t sysfs sysfs /sys",
        "mount --move /run/cg /sys/fs/cgroup",
        "rmdir /run/cg",
    ] + ascend_dev(n) + [
        # Holds the namespace for the bed: sshd may be restarted alone.
        "setsid sleep infinity </dev/null >/dev/null 2>&1 &",
        "echo $! > %s" % node_file(n, "ns.pid"),
        engine_cmd(n),
        'exec /usr/sbin/sshd -f "$3" -E "$4"',
    ])


def mnt_pid(n):
    """The process that holds the node's mount namespace."""
    try:
        pid = int(open(node_file(n, "ns.pid")).read())
        if S.pid_alive(pid):
            return pid
    except (OSError, ValueError):
        pass
    raise SystemExit("simctl: %s is down" % n["name"])


def restart_sshd(n, config, log):
    """sshd alone, back into the running node (a host key change)."""
    sh(enter(n) + ["/usr/sbin/sshd", "-f", config, "-E", log])


def enter(n):
    return ["nsenter", "--net=/var/run/netns/tsim%s-%s" % (TAG, n["name"]),
            "--mount=/proc/%d/ns/mnt" % mnt_pid(n), "--"]


def cli(n, *args, check=True):
    """The node's engine CLI, as an SSH session on the node runs it."""
    if kind() == "podman":
        env = ["env"] + ["%s=%s" % kv for kv in sorted(podman_env(n).items())]
        return sh(enter(n) + env + [PODMAN] + list(args), check=check)
    return sh(enter(n) + [DOCKER] + list(args), check=check)


def wait_engine(n, timeout=30):
    probe = ("info", "--format", "{{.Host.Arch}}") if kind() == "podman" else \
        ("version", "--format", "{{.Server.Version}}")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cli(n, *probe, check=False).returncode == 0:
            return
        time.sleep(0.1)
    log = ""
    try:
        log = open(node_file(n, "dockerd.log")).read()[-1500:]
    except OSError:
        pass
    raise SystemExit("simctl: dockerd on %s did not answer within %ds:\n%s" % (
        n["name"], timeout, log))


def dockerd_pid(n):
    try:
        pid = int(open("/proc/%d/root/run/docker.pid" % mnt_pid(n)).read())
        return pid if S.pid_alive(pid) else None
    except (OSError, ValueError):
        return None


def no_daemon():
    if kind() == "podman":
        raise SystemExit("simctl: podman has no daemon to stop or start")


def engine_stop(n):
    """systemctl stop docker: dockerd stops its containers (no live-restore)
    and exits; containerd goes with it."""
    no_daemon()
    pid = dockerd_pid(n)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 20
    while time.time() < deadline and S.pid_alive(pid):
        time.sleep(0.05)
    if S.pid_alive(pid):
        os.kill(pid, signal.SIGKILL)


def engine_start(n):
    no_daemon()
    if dockerd_pid(n) is None:
        sh(enter(n) + ["/bin/sh", "-c", dockerd_cmd(n)])
    wait_engine(n)


def container_pid(n, name):
    r = cli(n, "inspect", "-f", "{{.State.Running}} {{.State.Pid}}", name, check=False)
    running, _, pid = r.stdout.strip().partition(" ")
    if r.returncode != 0 or running != "true":
        raise SystemExit("simctl: no running container %s on %s" % (name, n["name"]))
    return int(pid)


def kill_container(n, name):
    """What an OOM kill does: SIGKILL to the container's init; docker keeps
    the container as Exited (137). A container that stops between the
    inspect and the kill (a teardown removing it) has nothing left to kill."""
    try:
        os.kill(container_pid(n, name), signal.SIGKILL)
    except ProcessLookupError:
        raise SystemExit("simctl: no running container %s on %s (it stopped as the "
                         "kill came)" % (name, n["name"]))


def running_containers(n):
    r = cli(n, "ps", "--format", "{{.Names}}", check=False)
    return r.stdout.split() if r.returncode == 0 else []


def pkill_in(n, name, pattern):
    pid = container_pid(n, name)
    return sh(["nsenter", "-t", str(pid), "-p", "-m", "--", "pkill", "-9", "-f", pattern],
              check=False).returncode == 0
