/*
 * The commands of tandemctl init (what it asks a node, read-only, and the
 * one change it makes: tandem's key in authorized_keys) and of the link
 * check (lib/preflight/linkcheck.c). Rendered like plan.c's, every value quoted.
 * Each is listed, with why, in docs/operations.md ("What tandemctl init
 * asks each node").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "quote.h"

/*
 * The node's name, how SSH reached it, and which of the tools tandem
 * drives it has: "hostname NAME", "ssh CLIENT CPORT SERVER SPORT" (sshd's
 * SSH_CONNECTION: SERVER is the node's address on the management network),
 * then the path of each tool found. Shell builtins only.
 */
char *
cmd_node_facts(void)
{
	return xstrdup("h=; read -r h < /proc/sys/kernel/hostname; "
	    "echo \"hostname $h\"; echo \"ssh $SSH_CONNECTION\"; "
	    "for t in docker podman nvidia-smi npu-smi; do "
	    "command -v \"$t\"; done; true");
}

/* Every interface with its flags, MTU and addresses, as JSON. */
char *
cmd_net_addrs(void)
{
	return xstrdup("ip -j addr");
}

/*
 * "IFNAME SPEED" for every interface: the link speed in Mb/s the driver
 * reports, "-" when it reports none (a link down: EINVAL; lo).
 */
char *
cmd_net_speeds(void)
{
	return xstrdup("for i in /sys/class/net/*; do s=; "
	    "read -r s < \"$i/speed\" 2>/dev/null; echo \"${i##*/} ${s:--}\"; "
	    "done");
}

/* The engine's version: "{{.ServerVersion}}" has no podman equivalent. */
char *
cmd_engine_version(const char *engine)
{
	struct strv v;
	int podman = strcmp(engine, "podman") == 0;

	strv_init(&v);
	strv_add(&v, engine);
	strv_add(&v, "info");
	strv_add(&v, "--format");
	strv_add(&v, podman ? "{{.Version.Version}}" : "{{.ServerVersion}}");
	return shell_command_take(&v);
}

/*
 * Each GPU's memory, total and used, in MiB: "81559, 1024" a line. A GPU
 * that shares the system's memory (GB10) may say [N/A] instead.
 */
char *
cmd_gpu_memory(void)
{
	return xstrdup("nvidia-smi --query-gpu=memory.total,memory.used "
	    "--format=csv,noheader,nounits");
}

/* "REPOSITORY:TAG ID" for every image (the ID as image ls shortens it). */
char *
cmd_image_list(const char *engine)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, engine);
	strv_add(&v, "image");
	strv_add(&v, "ls");
	strv_add(&v, "--format");
	strv_add(&v, "{{.Repository}}:{{.Tag}} {{.ID}}");
	return shell_command_take(&v);
}

/*
 * Model directories (holding a config.json) one or two levels under
 * /model and /models: the DGX Spark guide's /model/qwen3.5-122, the
 * Ascend guide's /model/Eco-Tech/Qwen3.5-397B-A17B-w8a8-mtp.
 */
char *
cmd_model_dirs(void)
{
	return xstrdup("for d in /model/* /models/* /model/*/* /models/*/*; "
	    "do test -f \"$d/config.json\" && echo \"$d\"; done; true");
}

/* cmd_model_fingerprint's "f SIZE PATH" lines for one directory. */
char *
cmd_dir_files(const char *dir)
{
	struct sbuf b;

	sbuf_init(&b);
	sbuf_add(&b, "cd ");
	shell_quote(&b, dir);
	sbuf_add(&b, " && find . -type f ! -path './.*' -printf 'f %s %P\\n'");
	return sbuf_take(&b);
}

/*
 * The one change tandemctl init makes on a node, and says so: the public
 * key appended to the login user's ~/.ssh/authorized_keys unless it is
 * there (ssh-copy-id's effect), with the modes sshd's StrictModes wants.
 */
char *
cmd_authorize_key(const char *pubkey)
{
	struct sbuf b;

	sbuf_init(&b);
	sbuf_add(&b, "umask 077; mkdir -p \"$HOME/.ssh\" && k=");
	shell_quote(&b, pubkey);
	sbuf_add(&b, " && { grep -qxF \"$k\" \"$HOME/.ssh/authorized_keys\" "
	    "2>/dev/null || printf '%s\\n' \"$k\" >> "
	    "\"$HOME/.ssh/authorized_keys\"; }");
	return sbuf_take(&b);
}

/* The link check (linkcheck.c) ------------------------------------------ */

/*
 * ifname's flags, MTU and addresses as JSON, then "speed N" (or "-").
 */
char *
cmd_link_state(const struct config *cf, size_t node)
{
	const char *ifn = cf->nodes[node].ifname;
	struct sbuf b;

	sbuf_init(&b);
	sbuf_add(&b, "ip -j addr show dev ");
	shell_quote(&b, ifn);
	sbuf_add(&b, " && { s=; read -r s < /sys/class/net/");
	shell_quote(&b, ifn);
	sbuf_add(&b, "/speed 2>/dev/null; echo \"speed ${s:--}\"; }");
	return sbuf_take(&b);
}

/*
 * The RDMA ports of ifname's device and their GID tables, read-only from
 * sysfs (lib/parse/rdma.c reads the lines; the layout is the kernel's
 * Documentation/ABI/stable/sysfs-class-infiniband, the device's netdev
 * found as rdma-core's show_gids finds it, under device/net/). Only the
 * GIDs that are set: a port has 256 entries, most of them zero, whose
 * types file cannot be read. "none" without /sys/class/infiniband.
 * TANDEM_SYSFS, unset on a real node, is the root the bed's nodes read a
 * fake tree from (tests/sim/simctl rdma).
 */
char *
cmd_rdma_state(const struct config *cf, size_t node)
{
	struct sbuf b;

	sbuf_init(&b);
	sbuf_add(&b, "r=\"${TANDEM_SYSFS:-/sys}/class/infiniband\"; i=");
	shell_quote(&b, cf->nodes[node].ifname);
	sbuf_add(&b, "; [ -d \"$r\" ] || { echo none; exit 0; }; "
	    "for d in \"$r\"/*; do [ -e \"$d/device/net/$i\" ] || continue; "
	    "n=${d##*/}; for p in \"$d\"/ports/*; do [ -d \"$p\" ] || "
	    "continue; k=${p##*/}; s=; l=; "
	    "read -r s 2>/dev/null < \"$p/state\"; "
	    "read -r l 2>/dev/null < \"$p/link_layer\"; "
	    "printf 'port\\t%s\\t%s\\t%s\\t%s\\n' \"$n\" \"$k\" \"$s\" "
	    "\"$l\"; for g in \"$p\"/gids/*; do x=${g##*/}; v=; "
	    "read -r v 2>/dev/null < \"$g\" || continue; case $v in ''|"
	    "0000:0000:0000:0000:0000:0000:0000:0000) continue;; esac; "
	    "t=; e=; read -r t 2>/dev/null < \"$p/gid_attrs/types/$x\"; "
	    "read -r e 2>/dev/null < \"$p/gid_attrs/ndevs/$x\"; "
	    "printf 'gid\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' \"$n\" \"$k\" "
	    "\"$x\" \"$v\" \"$t\" \"$e\"; done; done; done");
	return sbuf_take(&b);
}

/*
 * One ping from node to peer's ip over node's ifname, waiting a second
 * for the reply. size > 0: that many bytes of payload with the DF bit set
 * (-M do), the packet then exactly the MTU (linkcheck_ping_size); 0: the
 * default 56 bytes.
 */
char *
cmd_link_ping(const struct config *cf, size_t node, size_t peer, int size)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, "ping");
	strv_add(&v, "-n");
	strv_add(&v, "-c");
	strv_add(&v, "1");
	strv_add(&v, "-W");
	strv_add(&v, "1");
	if (size > 0) {
		strv_add(&v, "-M");
		strv_add(&v, "do");
		strv_add(&v, "-s");
		strv_addf(&v, "%d", size);
	}
	strv_add(&v, "-I");
	strv_add(&v, cf->nodes[node].ifname);
	strv_add(&v, cf->nodes[peer].ip);
	return shell_command_take(&v);
}
