#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conffile.h"

struct config *
conffile_load(const char *file, char *err, size_t errlen)
{
	struct sbuf b;
	char buf[8192];
	size_t n;
	FILE *fp;
	struct config *cf;

	if ((fp = fopen(file, "r")) == NULL) {
		seterr(err, errlen, "%s: %s", file, strerror(errno));
		return NULL;
	}
	sbuf_init(&b);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0) {
		sbuf_addn(&b, buf, n);
		if (b.len > CONFFILE_MAX) {
			fclose(fp);
			sbuf_free(&b);
			seterr(err, errlen, "%s: larger than 4 MiB; not a "
			    "tandem config", file);
			return NULL;
		}
	}
	if (ferror(fp)) {
		seterr(err, errlen, "%s: %s", file, strerror(errno));
		fclose(fp);
		sbuf_free(&b);
		return NULL;
	}
	fclose(fp);
	cf = config_parse_buf(file, b.s, b.len, err, errlen);
	sbuf_free(&b);
	return cf;
}
