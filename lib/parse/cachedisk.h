/*
 * tandemctl check's cache line (issue 47): what `du -sk` of
 * container.cache_dir and `df -Pk` of the file system under it print on a
 * node (GNU coreutils and busybox alike: du "KIB<TAB>PATH", df's POSIX
 * format, a header then "FS BLOCKS USED AVAIL CAPACITY MOUNTED"). No I/O.
 */
#ifndef TANDEM_CACHEDISK_H
#define TANDEM_CACHEDISK_H

#include <stddef.h>

struct cache_disk {
	long long	 used_kib;	/* -1: no cache directory yet */
	long long	 avail_kib;	/* -1: df said nothing readable */
	char		 mount[128];	/* df's "Mounted on" */
};

/*
 * Reads out: du's line (or "-" when the directory is absent), then df's
 * two. 0, or -1 when neither could be read.
 */
int	 cache_disk_parse(const char *out, struct cache_disk *cd);
/* "1.2 GiB in DIR (bound 50 GiB), 812.4 GiB free on /" */
void	 cache_disk_format(const struct cache_disk *cd, const char *dir,
	    double max_gib, char *buf, size_t len);

#endif
