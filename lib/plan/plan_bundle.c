/*
 * The commands whose answers go into the evidence bundle (lib/api/bundle.c):
 * what a person would look at first when retries stop, each bounded so
 * that no answer can fill the head's disk or memory.
 */
#include <stdio.h>
#include <stdlib.h>

#include "plan.h"
#include "quote.h"

#define BUNDLE_TAIL_BYTES	"1048576"

/* argv joined, then " 2>&1 | tail -c 1048576": stderr kept, the tail. */
static char *
tailed(struct strv *v)
{
	struct sbuf b;

	sbuf_init(&b);
	shell_join(&b, v->v);
	sbuf_add(&b, " 2>&1 | tail -c " BUNDLE_TAIL_BYTES);
	strv_free(v);
	return sbuf_take(&b);
}

/* The container's own output (Ray's, or vLLM's in topology dp), timed. */
char *
cmd_bundle_logs(const struct config *cf, size_t node, int lines)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "logs");
	strv_add(&v, "--timestamps");
	strv_add(&v, "--tail");
	strv_addf(&v, "%d", lines);
	strv_add(&v, cf->nodes[node].container_name);
	return tailed(&v);
}

/* How the container ended: status, exit code, OOM kill, times. */
char *
cmd_bundle_state(const struct config *cf, size_t node)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "inspect");
	strv_add(&v, "--format");
	strv_add(&v, "{{json .State}}");
	strv_add(&v, cf->nodes[node].container_name);
	return tailed(&v);
}

/* vllm serve's own log (vllm.log_file) in the head container: its tail. */
char *
cmd_bundle_vllm_log(const struct config *cf)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, cf->container.engine);
	strv_add(&v, "exec");
	strv_add(&v, cf->nodes[cf->head].container_name);
	strv_add(&v, "tail");
	strv_add(&v, "-c");
	strv_add(&v, BUNDLE_TAIL_BYTES);
	strv_add(&v, cf->vllm.log_file);
	return shell_command_take(&v);
}

/* nvidia-smi's whole table: GPUs, memory, processes, ECC column. */
char *
cmd_bundle_gpus(void)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, "nvidia-smi");
	return tailed(&v);
}
