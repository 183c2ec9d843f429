/*
 * What tandemctl init's questions (plan_init.c) answer, parsed: the node's
 * name and tools, its GPUs, its images, its model directories. Pure.
 */
#ifndef TANDEM_DISCOVER_H
#define TANDEM_DISCOVER_H

#include <stddef.h>

#include "util.h"

struct node_facts {
	char	 hostname[65];
	char	 ssh_ip[46];	/* the node's end of the SSH connection */
	int	 docker;	/* the tool is on the login's PATH */
	int	 podman;
	int	 nvidia_smi;
	int	 npu_smi;
};

/* cmd_node_facts's lines; 0, or -1 when it printed no "hostname" line. */
int	facts_parse(const char *out, struct node_facts *);

/*
 * `nvidia-smi -L`: "GPU 0: NVIDIA GB10 (UUID: GPU-...)" a line. Returns
 * the GPUs counted, the first one's name in name.
 */
int	gpus_parse(const char *out, char *name, size_t len);

/*
 * cmd_gpu_memory's "TOTAL, USED" lines (MiB): the free share of the
 * fullest GPU, 0 to 1; -1 when a line is not two numbers ([N/A] on a GPU
 * that shares the system's memory) or there is none.
 */
double	gpu_free_share(const char *out);

/*
 * cmd_image_list's "REPOSITORY:TAG ID" lines: the references, untagged
 * images ("<none>:<none>") left out, each once.
 */
void	images_parse(const char *out, struct strv *refs);

/* cmd_model_dirs's lines: absolute paths, each once. */
void	dirs_parse(const char *out, struct strv *dirs);

/* Whether v holds s. */
int	strv_has(const struct strv *v, const char *s);

#endif
