/*
 * The commands of the unrelated-workload scan (workload.h), beside plan.c's.
 * Values from the config reach the shell only through shell_quote; the
 * rest is fixed text.
 */
#include <string.h>

#include "accel.h"
#include "quote.h"
#include "workload.h"

/*
 * Everything one answer needs, so the scan is one remote call per node:
 * the processes holding device memory (nvidia-smi and npu-smi print host
 * PIDs), every running container with its tandem.cluster label, and, only
 * when some process holds device memory, each container's host PIDs
 * (docker top ID -eo pid; podman top ID hpid) to tell whose the processes
 * are. NVIDIA: "G PID, MIB, NAME" lines. Ascend: npu-smi info whole, each
 * line "A ...", when its process table has a process row ("| NPU CHIP |
 * PID |": two numbers in the first cell, one in the second; a chip row has
 * a bus ID there). No tool, or accelerator none: neither.
 *
 * A label is any string, newlines included: printed raw, a label
 * "x\nvllm-head y" was a line of its own, and tandem's own vllm-head read
 * as foreign, its GPU memory with it (issue 36). So ps prints each
 * container as its ID (hex, from the engine) and one JSON array of its
 * name and label: the template's json escapes every control character, so
 * a container is one line whatever its label holds. json is in both
 * engines' templates (docker/cli templates/templates.go, 20.10 to 29;
 * containers/common pkg/report/template.go for podman 4); docker's ps has
 * .Label, podman's only the .Labels map (a missing key there is ""). The
 * recorded answers: tests/unit/data/ (record-workloads). printf, not echo:
 * dash's echo would turn the JSON's \n back into a newline. Each G, A and
 * P line is prefixed line by line (sed, read), so a process name holding a
 * newline cannot start a C line either.
 */
char *
cmd_workloads(const struct config *cf)
{
	int podman = strcmp(cf->container.engine, "podman") == 0;
	struct sbuf b;

	sbuf_init(&b);
	switch (cf->container.accelerator) {
	case ACCEL_NVIDIA:
		sbuf_add(&b, "g=$(nvidia-smi --query-compute-apps=pid,"
		    "used_memory,process_name --format=csv,noheader,nounits "
		    "2>/dev/null); [ -z \"$g\" ] || printf '%s\\n' \"$g\" | "
		    "sed 's/^/G /'; ");
		break;
	case ACCEL_ASCEND:
		sbuf_add(&b, "g=$(npu-smi info 2>/dev/null); printf '%s\\n' "
		    "\"$g\" | grep -Eq '^\\| *[0-9]+ +[0-9]+ *\\| *[0-9]+ *\\|' "
		    "|| g=; [ -z \"$g\" ] || printf '%s\\n' \"$g\" | "
		    "sed 's/^/A /'; ");
		break;
	case ACCEL_NONE:
		sbuf_add(&b, "g=; ");
		break;
	}
	shell_quote(&b, cf->container.engine);
	sbuf_add(&b, " ps --format ");
	shell_quote(&b, podman ?
	    "{{.ID}} [{{json .Names}},{{json (index .Labels "
	    "\"tandem.cluster\")}}]" :
	    "{{.ID}} [{{json .Names}},{{json (.Label \"tandem.cluster\")}}]");
	sbuf_add(&b, " | while read -r i c; do printf 'C %s %s\\n' \"$i\" "
	    "\"$c\"; [ -z \"$g\" ] || ");
	shell_quote(&b, cf->container.engine);
	sbuf_add(&b, podman ? " top \"$i\" hpid" : " top \"$i\" -eo pid");
	sbuf_add(&b, " </dev/null | while read -r p; do printf 'P %s %s\\n' "
	    "\"$i\" \"$p\"; done; done");
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
