/*
 * Secrets that tandem holds but never shows (PRODUCT.md section 3, rule
 * 10): vLLM's API key is on the `vllm serve` line tandem runs, and vLLM
 * itself prints it in its "non-default args" line. Whatever tandem shows
 * (plan output, logs, /status, /events, bundles) passes through here with
 * every occurrence of the key written as "***".
 */
#ifndef TANDEM_SECRET_H
#define TANDEM_SECRET_H

#include <stddef.h>

#define SECRET_SHOWN	"***"

/*
 * A copy of text with every occurrence of secret replaced by "***"; a
 * plain copy when secret is NULL or empty. text NULL: NULL.
 */
char	*secret_masked(const char *text, const char *secret);
/* The same for len bytes that may hold NULs; *outlen gets the length. */
char	*secret_masked_n(const char *text, size_t len, const char *secret,
	    size_t *outlen);

#endif
