#include <string.h>

#include "secret.h"
#include "util.h"

char *
secret_masked_n(const char *text, size_t len, const char *secret,
    size_t *outlen)
{
	struct sbuf b;
	const char *hit, *end = text + len;
	size_t n = secret ? strlen(secret) : 0;

	sbuf_init(&b);
	while (n && (hit = memmem(text, (size_t)(end - text), secret, n))) {
		sbuf_addn(&b, text, (size_t)(hit - text));
		sbuf_add(&b, SECRET_SHOWN);
		text = hit + n;
	}
	sbuf_addn(&b, text, (size_t)(end - text));
	*outlen = b.len;
	return sbuf_take(&b);
}

char *
secret_masked(const char *text, const char *secret)
{
	size_t n;

	if (text == NULL)
		return NULL;
	return secret_masked_n(text, strlen(text), secret, &n);
}
