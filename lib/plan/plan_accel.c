/*
 * The accelerator commands (accel.h), beside plan.c's: what tandem asks a
 * node's nvidia-smi or npu-smi. Fixed text only: nothing from the config
 * reaches these command lines, the accelerator only picks one.
 */
#include <stdlib.h>

#include "accel.h"
#include "quote.h"

static char *
argv_cmd(const char *const *argv)
{
	struct strv v;
	char *s;

	strv_init(&v);
	for (; *argv; argv++)
		strv_add(&v, *argv);
	s = shell_command(v.v);
	strv_free(&v);
	return s;
}

/*
 * nvidia: -L lists the GPUs; the memory query is one CSV line per GPU
 * ("[N/A]" where unified memory has no total), with the driver's version
 * for cuda-driver-too-old's fix (gpucheck_cuda_fix); the process query lists
 * host PIDs, their MiB and their names (as the workload scan's does), so
 * that a teardown that waits names what it waits for. ascend: `npu-smi info
 * -l` lists the NPUs; `npu-smi info` prints both the chip table (health,
 * HBM used / total) and the process table (NPU, chip, host PID, name,
 * MB), so it answers the memory and the process questions at once.
 */
char *
cmd_accel(const struct config *cf, enum accel_query q)
{
	static const char *const nv_list[] = { "nvidia-smi", "-L", NULL };
	static const char *const nv_mem[] = { "nvidia-smi",
	    "--query-gpu=index,name,memory.used,memory.total,driver_version",
	    "--format=csv,noheader,nounits", NULL };
	static const char *const nv_procs[] = { "nvidia-smi",
	    "--query-compute-apps=pid,used_memory,process_name",
	    "--format=csv,noheader,nounits", NULL };
	static const char *const npu_list[] = { "npu-smi", "info", "-l",
	    NULL };
	static const char *const npu_info[] = { "npu-smi", "info", NULL };

	switch (cf->container.accelerator) {
	case ACCEL_NVIDIA:
		return argv_cmd(q == AQ_LIST ? nv_list : q == AQ_MEMORY ?
		    nv_mem : nv_procs);
	case ACCEL_ASCEND:
		return argv_cmd(q == AQ_LIST ? npu_list : npu_info);
	case ACCEL_NONE:
		break;
	}
	return NULL;
}
