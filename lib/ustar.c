/*
 * The ustar header, field by field (POSIX pax, "ustar Interchange
 * Format"): numbers in octal, NUL-terminated where room allows; the
 * checksum is the sum of the header's bytes with the checksum field taken
 * as eight spaces, written as six octal digits, a NUL and a space.
 */
#include <stdio.h>
#include <string.h>

#include "ustar.h"

struct hdr {
	char	 name[100];
	char	 mode[8];
	char	 uid[8];
	char	 gid[8];
	char	 size[12];
	char	 mtime[12];
	char	 chksum[8];
	char	 typeflag;
	char	 linkname[100];
	char	 magic[6];
	char	 version[2];
	char	 uname[32];
	char	 gname[32];
	char	 devmajor[8];
	char	 devminor[8];
	char	 prefix[155];
	char	 pad[12];
};

_Static_assert(sizeof(struct hdr) == USTAR_BLOCK, "a ustar header is a block");

static void
octal(char *field, size_t width, uint64_t v)
{
	/* width - 1 digits and the terminating NUL */
	snprintf(field, width, "%0*llo", (int)width - 1, (unsigned long long)v);
}

/* Where NAME splits into prefix '/' name, or -1. */
static int
split(const char *name, size_t len)
{
	size_t i;

	if (len <= sizeof(((struct hdr *)0)->name))
		return 0;
	for (i = len - 1; i > 0; i--)
		if (name[i] == '/' && i <= 155 && len - i - 1 <= 100 &&
		    len - i - 1 > 0)
			return (int)i;
	return -1;
}

size_t
ustar_file_size(size_t len)
{
	return USTAR_BLOCK + (len + USTAR_BLOCK - 1) / USTAR_BLOCK *
	    USTAR_BLOCK;
}

int
ustar_add(struct sbuf *b, const char *name, const void *data, size_t len,
    unsigned mode, uint64_t mtime, char *err, size_t errlen)
{
	static const char zero[USTAR_BLOCK];
	struct hdr h;
	size_t nlen = strlen(name), i;
	unsigned sum = 0;
	int at;

	if (nlen == 0 || name[0] == '/' || strstr(name, "..") != NULL) {
		seterr(err, errlen, "ustar: %s: not a plain relative name",
		    name);
		return -1;
	}
	if ((at = split(name, nlen)) == -1) {
		seterr(err, errlen, "ustar: %s: name too long for ustar", name);
		return -1;
	}
	if ((uint64_t)len > USTAR_SIZE_MAX || mtime > USTAR_SIZE_MAX) {
		seterr(err, errlen, "ustar: %s: too large", name);
		return -1;
	}
	memset(&h, 0, sizeof(h));
	if (at == 0)
		memcpy(h.name, name, nlen);
	else {
		memcpy(h.prefix, name, (size_t)at);
		memcpy(h.name, name + at + 1, nlen - (size_t)at - 1);
	}
	octal(h.mode, sizeof(h.mode), mode & 07777);
	octal(h.uid, sizeof(h.uid), 0);
	octal(h.gid, sizeof(h.gid), 0);
	octal(h.size, sizeof(h.size), len);
	octal(h.mtime, sizeof(h.mtime), mtime);
	h.typeflag = '0';
	memcpy(h.magic, "ustar", 6);
	memcpy(h.version, "00", 2);
	memcpy(h.uname, "root", 4);
	memcpy(h.gname, "root", 4);
	memset(h.chksum, ' ', sizeof(h.chksum));
	for (i = 0; i < sizeof(h); i++)
		sum += ((unsigned char *)&h)[i];
	snprintf(h.chksum, sizeof(h.chksum), "%06o", sum);
	h.chksum[7] = ' ';
	sbuf_addn(b, (const char *)&h, sizeof(h));
	if (len)
		sbuf_addn(b, data, len);
	if (len % USTAR_BLOCK)
		sbuf_addn(b, zero, USTAR_BLOCK - len % USTAR_BLOCK);
	return 0;
}

void
ustar_end(struct sbuf *b)
{
	static const char zero[2 * USTAR_BLOCK];

	sbuf_addn(b, zero, sizeof(zero));
}
