/*
 * The accelerators (accel.h): their names, the one chosen from the
 * config, and the environment derived for the containers. Reading
 * nvidia-smi's and npu-smi's answers is accel_read.c's, the verdicts on
 * them accel_verdict.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"

const char *
accel_name(enum accel a)
{
	switch (a) {
	case ACCEL_NVIDIA:	return "nvidia";
	case ACCEL_ASCEND:	return "ascend";
	case ACCEL_NONE:	return "none";
	}
	return "?";
}

const char *
accel_word(enum accel a, int plural)
{
	switch (a) {
	case ACCEL_NVIDIA:	return plural ? "GPUs" : "GPU";
	case ACCEL_ASCEND:	return plural ? "NPUs" : "NPU";
	case ACCEL_NONE:	break;
	}
	return plural ? "devices" : "device";
}

const char *
accel_ray_key(enum accel a)
{
	return a == ACCEL_ASCEND ? "NPU" : "GPU";
}

const char *
accel_tool(enum accel a)
{
	switch (a) {
	case ACCEL_NVIDIA:	return "nvidia-smi";
	case ACCEL_ASCEND:	return "npu-smi";
	case ACCEL_NONE:	break;
	}
	return NULL;
}

const char *
accel_verdict_name(enum accel_verdict v)
{
	switch (v) {
	case AV_PASS:		return "pass";
	case AV_FAIL:		return "fail";
	case AV_NOT_CHECKED:	return "not checked";
	case AV_UNKNOWN:	return "could not tell";
	}
	return "?";
}

enum accel_query
accel_devices_query(enum accel a)
{
	return a == ACCEL_ASCEND ? AQ_MEMORY : AQ_LIST;
}

/* The device path an extra_args element passes, or NULL. */
static const char *
device_arg(const struct strv *v, size_t i)
{
	const char *a = v->v[i];

	if (strncmp(a, "--device=", 9) == 0)
		return a + 9;
	if (i > 0 && strcmp(v->v[i - 1], "--device") == 0)
		return a;
	return NULL;
}

enum accel
accel_default(const struct strv *extra)
{
	size_t i;
	const char *d;

	for (i = 0; i < extra->n; i++)
		if ((d = device_arg(extra, i)) != NULL &&
		    strncmp(d, "/dev/davinci", 12) == 0)
			return ACCEL_ASCEND;
	return ACCEL_NVIDIA;
}

size_t
accel_davinci(const struct strv *extra, int *ids, size_t max)
{
	size_t i, n = 0;
	const char *d, *p;

	for (i = 0; i < extra->n; i++) {
		if ((d = device_arg(extra, i)) == NULL ||
		    strncmp(d, "/dev/davinci", 12) != 0)
			continue;
		/* /dev/davinciN[:...]: the host's device N (not _manager) */
		for (p = d + 12; isdigit((unsigned char)*p); p++)
			;
		if (p == d + 12 || (*p != '\0' && *p != ':') || p - d > 16)
			continue;
		if (n < max)
			ids[n] = atoi(d + 12);
		n++;
	}
	return n;
}

/* Derived environment ------------------------------------------------------ */

#define IP	"the node's ip"
#define IFN	"the node's ifname"

static const struct accel_env env_nvidia[] = {
	{ "VLLM_HOST_IP", "{ip}", IP },
	{ "GLOO_SOCKET_IFNAME", "{ifname}", IFN },
	{ "NCCL_SOCKET_IFNAME", "{ifname}", IFN },
	{ NULL, NULL, NULL },
};

/*
 * The Ascend data-parallel guide sets, per node, HCCL_IF_IP (the node's
 * own address), GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME and
 * HCCL_SOCKET_IFNAME (the interface on the nodes' common network).
 * ASCEND_RT_VISIBLE_DEVICES takes the logical device IDs the process may
 * use (CANN's environment variable reference: "if the number of available
 * devices is 8, the device IDs are 0, 1, ... 7"); in a container given n
 * /dev/davinci devices those are 0 .. n-1.
 */
static const struct accel_env env_ascend[] = {
	{ "VLLM_HOST_IP", "{ip}", IP },
	{ "GLOO_SOCKET_IFNAME", "{ifname}", IFN },
	{ "HCCL_IF_IP", "{ip}", IP },
	{ "HCCL_SOCKET_IFNAME", "{ifname}", IFN },
	{ "TP_SOCKET_IFNAME", "{ifname}", IFN },
	{ "ASCEND_RT_VISIBLE_DEVICES", NULL,
	  "the /dev/davinci devices in container.extra_args" },
	{ NULL, NULL, NULL },
};

const struct accel_env *
accel_env_table(enum accel a)
{
	return a == ACCEL_ASCEND ? env_ascend : env_nvidia;
}

char *
accel_env_value(const struct config *cf, const struct node_conf *n,
    const struct accel_env *e)
{
	int ids[ACCEL_DEVS_MAX];
	size_t i, k;
	struct sbuf b;

	if (e->tmpl)
		return config_expand(e->tmpl, n);
	k = accel_davinci(&cf->container.extra_args, ids, ACCEL_DEVS_MAX);
	if (k == 0)
		return NULL;
	if (k > ACCEL_DEVS_MAX)
		k = ACCEL_DEVS_MAX;
	sbuf_init(&b);
	for (i = 0; i < k; i++)
		sbuf_addf(&b, "%s%zu", i ? "," : "", i);
	return sbuf_take(&b);
}

