/*
 * A small POSIX ustar writer (IEEE Std 1003.1, pax's "ustar Interchange
 * Format"): regular files only, into a memory buffer, enough for the
 * evidence bundle that tandemctl bundle fetches. GNU tar, bsdtar and
 * Python's tarfile read it.
 */
#ifndef TANDEM_USTAR_H
#define TANDEM_USTAR_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define USTAR_BLOCK	512
/* 11 octal digits in the size field. */
#define USTAR_SIZE_MAX	077777777777ULL

/*
 * Appends one regular file. NAME is a relative path of at most 255 bytes
 * that splits at a '/' into a prefix of 155 and a name of 100. Returns 0,
 * or -1 with a message (nothing appended) when the name or size cannot be
 * written in ustar.
 */
int	ustar_add(struct sbuf *, const char *name, const void *data,
	    size_t len, unsigned mode, uint64_t mtime, char *err,
	    size_t errlen);
/* The two zero blocks that end an archive. */
void	ustar_end(struct sbuf *);
/* The bytes ustar_add will append for a file of LEN bytes. */
size_t	ustar_file_size(size_t len);

#endif
