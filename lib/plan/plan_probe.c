/*
 * The one-shot commands the runtime and the preflight ask a node (the
 * container's state and events, ray status, vLLM's liveness and log, the
 * GPUs, what else runs; the fast link's address, ray's port, the engine's
 * NVIDIA path). Rendered like plan.c's, every value quoted.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "quote.h"

char *
cmd_teardown(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	plan_rm_argv(cf, node, &v);
	return shell_command_take(&v);
}

char *
cmd_inspect_running(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "inspect");
	strv_add(&v, "-f");
	strv_add(&v, "{{.State.Running}} {{.Id}} "
	    "{{index .Config.Labels \"tandem.plan\"}}");
	strv_add(&v, cf->nodes[node].container_name);
	return shell_command_take(&v);
}

/*
 * One line per event of our container ("die ID NAME"), as it happens: the
 * daemon learns of a container's death from this stream, not a poll. The
 * ID tells a death of the container we started from late news of one we
 * removed. since_s > 0: the engine first replays what happened in the last
 * since_s seconds, so a stream that starts again misses nothing of the gap
 * (a duration, so the node's own clock is the reference: no skew).
 */
char *
cmd_events(const struct config *cf, size_t node, double since_s)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "events");
	if (since_s > 0) {
		strv_add(&v, "--since");
		/* the CLI takes whole seconds of a duration: round up */
		strv_addf(&v, "%.0fs", ceil(since_s));
	}
	strv_add(&v, "--filter");
	strv_add(&v, "type=container");
	strv_add(&v, "--filter");
	strv_addf(&v, "container=%s", cf->nodes[node].container_name);
	strv_add(&v, "--format");
	/*
	 * The same line from both engines: podman 4's events have no .Actor;
	 * docker 29 (API 1.52) dropped the old .ID/.Status/.From of its events
	 * (the template fails on .ID), .Actor.ID is there since docker 1.10.
	 */
	strv_add(&v, plan_is_podman(cf) ? "{{.Status}} {{.ID}} {{.Name}}" :
	    "{{.Action}} {{.Actor.ID}} {{.Actor.Attributes.name}}");
	return shell_command_take(&v);
}

char *
cmd_ray_status(const struct config *cf)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "exec");
	strv_add(&v, cf->nodes[cf->head].container_name);
	strv_add(&v, "ray");
	strv_add(&v, "status");
	return shell_command_take(&v);
}

/* pkill -0 signals nothing; its exit status says whether vllm runs. */
char *
cmd_vllm_alive(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "exec");
	strv_add(&v, cf->nodes[node].container_name);
	strv_add(&v, "pkill");
	strv_add(&v, "-0");
	strv_add(&v, "-f");
	strv_add(&v, "vllm serve");
	return shell_command_take(&v);
}

char *
cmd_log_tail(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "exec");
	strv_add(&v, cf->nodes[node].container_name);
	strv_add(&v, "tail");
	strv_add(&v, "-c");
	strv_add(&v, "65536");
	strv_add(&v, cf->vllm.log_file);
	return shell_command_take(&v);
}

/*
 * The lines vllmphases.c reads, from the whole log (the first of them
 * come minutes before the last, and a tail of Ray's forwarded output may
 * have lost them). grep exits 1 when there is none: an older vLLM, or a
 * start that ended early.
 */
char *
cmd_vllm_phases(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "exec");
	strv_add(&v, cf->nodes[node].container_name);
	strv_add(&v, "grep");
	strv_add(&v, "-E");
	strv_add(&v, "took|takes|Graph capturing finished");
	strv_add(&v, cf->vllm.log_file);
	return shell_command_take(&v);
}

/*
 * vLLM's API server logs this line as it starts listening. The log is new
 * with each vllm serve (its ">"), so the whole of it is read: a line
 * written before the tail started counts. grep ends at the first match,
 * and tail with it (coreutils tail -F notices its reader is gone). Where
 * tail cannot use inotify (a container's overlay) it looks at the file
 * every -s seconds: 1 by default, a second on every rebuild.
 */
char *
cmd_vllm_log_ready(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "exec");
	strv_add(&v, cf->nodes[node].container_name);
	strv_add(&v, "sh");
	strv_add(&v, "-c");
	strv_add(&v, "tail -s 0.1 -n +1 -F \"$0\" 2>/dev/null | "
	    "grep -m 1 -F \"Application startup complete\"");
	strv_add(&v, cf->vllm.log_file);
	return shell_command_take(&v);
}

/* The node's GPUs, one "GPU n: ..." line each. */
char *
cmd_gpu_list(void)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, "nvidia-smi");
	strv_add(&v, "-L");
	return shell_command_take(&v);
}

/* Every container on a node, running or not: "NAME CLUSTER-LABEL". */
char *
cmd_foreign_ps(const struct config *cf)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "ps");
	strv_add(&v, "--format");
	/* as in cmd_name_owner: podman's ps has no .Label */
	strv_add(&v, plan_is_podman(cf) ?
	    "{{.Names}} {{index .Labels \"tandem.cluster\"}}" :
	    "{{.Names}} {{.Label \"tandem.cluster\"}}");
	return shell_command_take(&v);
}

/* "CLUSTER STATUS" of whatever holds the node's container name. */
char *
cmd_name_owner(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "ps");
	strv_add(&v, "-a");
	strv_add(&v, "--filter");
	strv_addf(&v, "name=^%s$", cf->nodes[node].container_name);
	strv_add(&v, "--format");
	/* docker's ps has .Label, podman's only the .Labels map. */
	strv_add(&v, plan_is_podman(cf) ?
	    "{{index .Labels \"tandem.cluster\"}} {{.Status}}" :
	    "{{.Label \"tandem.cluster\"}} {{.Status}}");
	return shell_command_take(&v);
}

char *
cmd_engine_info(const struct config *cf)
{
	/* podman's info has no .ServerVersion: the template fails outright. */
	return cmd_engine_version(cf->container.engine);
}

char *
cmd_iface_addr(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, "ip");
	strv_add(&v, "-o");
	strv_add(&v, "addr");
	strv_add(&v, "show");
	strv_add(&v, "dev");
	strv_add(&v, cf->nodes[node].ifname);
	return shell_command_take(&v);
}

/* A line when something listens on ray.port (ss's own filter syntax). */
char *
cmd_ray_port(const struct config *cf)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, "ss");
	strv_add(&v, "-ltnH");
	strv_addf(&v, "sport = :%d", cf->ray.port);
	return shell_command_take(&v);
}

/*
 * How the engine gets NVIDIA GPUs into a container. docker: the runtimes
 * `docker info` lists (nvidia-ctk runtime configure registers "nvidia"),
 * one name per line. podman has no such runtime: --device nvidia.com/gpu=all
 * resolves through a CDI spec (nvidia-ctk cdi generate), so the files in
 * CDI's two standard directories that name that kind. The globs are fixed
 * text, never a value from the config.
 */
char *
cmd_nvidia_runtime(const struct config *cf)
{
	struct strv v;
	struct sbuf b;

	strv_init(&v);
	if (!plan_is_podman(cf)) {
		strv_add(&v, cf->container.engine);
		strv_add(&v, "info");
		strv_add(&v, "--format");
		strv_add(&v, "{{range $k, $v := .Runtimes}}{{println $k}}{{end}}");
		return shell_command_take(&v);
	}
	strv_add(&v, "grep");
	strv_add(&v, "-ls");
	strv_add(&v, "nvidia.com/gpu");
	sbuf_init(&b);
	shell_join(&b, v.v);
	sbuf_add(&b, " /etc/cdi/* /var/run/cdi/*");
	strv_free(&v);
	return sbuf_take(&b);
}
