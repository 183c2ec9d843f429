/*
 * Parses `ray status` output (formats.md section 1): every label variant
 * seen across Ray versions (Active/Healthy, Usage/Total Usage).
 */
#ifndef TANDEM_RAYSTATUS_H
#define TANDEM_RAYSTATUS_H

#include <stddef.h>

struct raystatus {
	int	 alive_nodes;
	double	 gpus;		/* total GPUs of the active nodes */
	double	 gpus_used;
	double	 cpus;
	int	 pending_pgs;	/* "N+ pending placement groups" */
};

/* Returns 0, or -1 with a message when the text is not a status report. */
int	raystatus_parse(const char *text, struct raystatus *, char *err,
	    size_t errlen);

#endif
