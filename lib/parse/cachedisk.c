#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachedisk.h"
#include "utf8.h"

/* A whole decimal number at s, up to the next blank; -1 if none. */
static long long
number(const char *s, const char **end)
{
	char *e;
	long long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtoll(s, &e, 10);
	if (*e != '\t' && *e != ' ' && *e != '\n' && *e != '\0')
		return -1;
	*end = e;
	return v;
}

int
cache_disk_parse(const char *out, struct cache_disk *cd)
{
	const char *l = out, *e;
	int field;

	cd->used_kib = -1;
	cd->avail_kib = -1;
	cd->mount[0] = '\0';
	if (out == NULL)
		return -1;
	/* du: "KIB<TAB>PATH", or "-" when there is no directory */
	if ((cd->used_kib = number(l, &e)) < 0)
		cd->used_kib = -1;
	l += strcspn(l, "\n");
	/* df -P: a header, then one line; AVAIL is the 4th field */
	for (; *l; l += strcspn(l, "\n")) {
		const char *p = ++l;
		long long v = -1;

		if (strncmp(p, "Filesystem", 10) == 0)
			continue;
		for (field = 1; *p && *p != '\n'; field++) {
			p += strspn(p, " \t");
			if (field == 4)
				v = number(p, &e);
			if (field == 6) {
				/* U+FFFD for a control character: a
				 * node's text on the operator's terminal */
				utf8_copyn(cd->mount, sizeof(cd->mount), p,
				    strcspn(p, "\n"));
				break;
			}
			p += strcspn(p, " \t\n");
		}
		if (field == 6 && v >= 0) {
			cd->avail_kib = v;
			break;
		}
		cd->mount[0] = '\0';
	}
	return cd->used_kib < 0 && cd->avail_kib < 0 ? -1 : 0;
}

void
cache_disk_format(const struct cache_disk *cd, const char *dir,
    double max_gib, char *buf, size_t len)
{
	char used[64], avail[200];

	if (cd->used_kib < 0)
		snprintf(used, sizeof(used), "none yet");
	else
		snprintf(used, sizeof(used), "%.1f GiB",
		    cd->used_kib / 1048576.0);
	if (cd->avail_kib < 0)
		snprintf(avail, sizeof(avail), "free disk unknown");
	else
		snprintf(avail, sizeof(avail), "%.1f GiB free on %s",
		    cd->avail_kib / 1048576.0, cd->mount);
	utf8_fmt(buf, len, "%s in %s (bound %.0f GiB), %s", used, dir,
	    max_gib, avail);
}
