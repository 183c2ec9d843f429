/*
 * The tandem.plan label of every container, apart from the plan it labels:
 * its format and how a label read back compares with this config's hash
 * (plan.h's plan_hash). Below plan.c, which writes the label into every
 * container it starts; the label knows nothing of the plan's commands.
 */
#ifndef TANDEM_PLAN_LABEL_H
#define TANDEM_PLAN_LABEL_H

#include <stddef.h>
#include <stdint.h>

/*
 * The label says the plan's format with its hash, "2:af4fc3ab8a70b8da", so
 * that a tandem whose commands changed shape for the same config tells its
 * upgrade from a config change. Change the format whenever build() writes
 * other commands for the same config: PLAN_FORMAT + 1, and PLAN_HASH_SINCE
 * the same, since older hashes then stop meaning anything. Format 1 is the
 * bare hash that tandem wrote before labels carried their format; its
 * commands are those of format 2. Format 3: Ascend nodes get HCCL_IF_IP,
 * HCCL_ and TP_SOCKET_IFNAME and ASCEND_RT_VISIBLE_DEVICES derived instead
 * of NCCL_SOCKET_IFNAME (container.accelerator); NVIDIA plans are the
 * same text, but no format 2 label can say which kind wrote it. Format 4:
 * every container gets VLLM_ENGINE_READY_TIMEOUT_S (vllm.ready_timeout_s)
 * unless the config sets it, and --served-model-name goes once.
 */
#define PLAN_FORMAT	4
#define PLAN_HASH_SINCE	4	/* the oldest format hashing the same text */
#define PLAN_LABEL_MAX	40

enum plan_match {
	PLAN_SAME,		/* built from this config */
	PLAN_OTHER_CONFIG,	/* another config, or not tandem's label */
	PLAN_OTHER_FORMAT,	/* another tandem's plan format: can't tell */
};

void	 plan_label(uint64_t hash, char *buf, size_t len);
enum plan_match plan_label_match(const char *label, uint64_t hash);

#endif
