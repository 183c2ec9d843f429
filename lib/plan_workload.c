/*
 * The commands of the unrelated-workload scan (workload.h), beside plan.c's.
 * Values from the config reach the shell only through shell_quote; the
 * rest is fixed text.
 */
#include <string.h>

#include "quote.h"
#include "workload.h"

/*
 * Everything one answer needs, so the scan is one remote call per node:
 * the GPU processes (nvidia-smi prints host PIDs), every running container
 * with its tandem.cluster label, and, only when some process holds GPU
 * memory, each container's host PIDs (docker top ... -eo pid; podman top
 * ... hpid) to tell whose the processes are. No nvidia-smi: no G lines.
 */
char *
cmd_workloads(const struct config *cf)
{
	int podman = strcmp(cf->container.engine, "podman") == 0;
	struct sbuf b;

	sbuf_init(&b);
	sbuf_add(&b, "g=$(nvidia-smi --query-compute-apps=pid,used_memory,"
	    "process_name --format=csv,noheader,nounits 2>/dev/null); "
	    "[ -z \"$g\" ] || printf '%s\\n' \"$g\" | sed 's/^/G /'; ");
	shell_quote(&b, cf->container.engine);
	sbuf_add(&b, " ps --format ");
	/* docker's ps has .Label, podman's only the .Labels map */
	shell_quote(&b, podman ?
	    "{{.Names}} {{index .Labels \"tandem.cluster\"}}" :
	    "{{.Names}} {{.Label \"tandem.cluster\"}}");
	sbuf_add(&b, " | while read -r n l; do echo \"C $n $l\"; "
	    "[ -z \"$g\" ] || ");
	shell_quote(&b, cf->container.engine);
	sbuf_add(&b, podman ? " top \"$n\" hpid" : " top \"$n\" -eo pid");
	sbuf_add(&b, " </dev/null | while read -r p; do echo \"P $n $p\"; "
	    "done; done");
	return sbuf_take(&b);
}

char *
cmd_stop_containers(const struct config *cf, const struct strv *names)
{
	struct strv v;
	char *s;
	size_t i;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "stop");
	for (i = 0; i < names->n; i++)
		strv_add(&v, names->v[i]);
	s = shell_command(v.v);
	strv_free(&v);
	return s;
}
