/*
 * Known failure signatures of vLLM, Ray, the container engine and SSH, each
 * with what it means, what to do, and whether retrying can help
 * (PRODUCT.md section 3 rules 4-5; seed 000's troubleshooting table).
 */
#ifndef TANDEM_DIAGNOSE_H
#define TANDEM_DIAGNOSE_H

#include <stddef.h>

enum remedy {
	REMEDY_NONE,
	REMEDY_REBUILD,		/* a full rebuild of every node fixes it */
	REMEDY_LOWER_GMU,	/* next step of gpu_memory_utilization_steps */
};

struct diag {
	const char	*code;
	const char	*patterns[5];	/* any one matches */
	const char	*message;
	const char	*remedy;
	int		 retryable;
	enum remedy	 action;
};

/*
 * Finds the first catalogue entry matching text. When excerpt is set, the
 * line that matched is copied there (trimmed) for the report.
 */
const struct diag	*diag_match(const char *text, char *excerpt,
			    size_t excerptlen);
/* Looks up an entry by code (for failures tandem detects itself). */
const struct diag	*diag_find(const char *code);
size_t			 diag_count(void);
const struct diag	*diag_at(size_t);

#endif
