/*
 * Bundles on disk. Every name is one lib/api/bundle.c made and checks
 * (bundle_name_valid): a file placed in the directory under another name
 * is neither served nor removed. The temporary file is created afresh
 * (O_EXCL, O_NOFOLLOW) so that a planted link cannot make root tandemd
 * write elsewhere.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "bundle_store.h"
#include "util.h"

static char	*dir;	/* STATE_DIR/bundles */

void
bundle_store_init(const char *state_dir)
{
	free(dir);
	dir = xprintf("%s/%s", state_dir, BUNDLE_DIR);
}

/* The bundle names in the directory and their sizes. */
static size_t
list(char ***names, uint64_t **sizes)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	*names = NULL;
	*sizes = NULL;
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (!bundle_name_valid(e->d_name) || fstatat(dirfd(d),
		    e->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode))
			continue;
		*names = xrealloc(*names, (n + 1) * sizeof(**names));
		*sizes = xrealloc(*sizes, (n + 1) * sizeof(**sizes));
		(*names)[n] = xstrdup(e->d_name);
		(*sizes)[n] = (uint64_t)st.st_size;
		n++;
	}
	closedir(d);
	return n;
}

static void
list_free(char **names, uint64_t *sizes, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(sizes);
}

int
bundle_store_write(const char *name, const void *data, size_t len,
    char *err, size_t errlen)
{
	char *tmp, *path, **names;
	uint64_t *sizes;
	size_t n, ndel, i, *del, off = 0;
	int fd;

	if (dir == NULL || !bundle_name_valid(name)) {
		seterr(err, errlen, "bundle: no store or a bad name");
		return -1;
	}
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		seterr(err, errlen, "bundle: %s: %s", dir, strerror(errno));
		return -1;
	}
	tmp = xprintf("%s/.%s.tmp", dir, name);
	path = xprintf("%s/%s", dir, name);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1) {
		seterr(err, errlen, "bundle: %s: %s", tmp, strerror(errno));
		goto fail;
	}
	while (off < len) {
		ssize_t w = write(fd, (const char *)data + off, len - off);

		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			seterr(err, errlen, "bundle: %s: %s", tmp,
			    strerror(errno));
			close(fd);
			unlink(tmp);
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) == -1 || close(fd) == -1 || rename(tmp, path) == -1) {
		seterr(err, errlen, "bundle: %s: %s", path, strerror(errno));
		unlink(tmp);
		goto fail;
	}
	n = list(&names, &sizes);
	del = xcalloc(n ? n : 1, sizeof(*del));
	ndel = bundle_rotate(names, sizes, n, BUNDLE_KEEP, BUNDLE_KEEP_BYTES,
	    del);
	for (i = 0; i < ndel; i++) {
		char *old = xprintf("%s/%s", dir, names[del[i]]);

		unlink(old);
		free(old);
	}
	free(del);
	list_free(names, sizes, n);
	free(tmp);
	free(path);
	return 0;
fail:
	free(tmp);
	free(path);
	return -1;
}

int
bundle_store_open_latest(char *name, size_t namelen, uint64_t *size,
    char *err, size_t errlen)
{
	char **names, *path;
	uint64_t *sizes;
	size_t n = list(&names, &sizes);
	long best = bundle_latest(names, n);
	struct stat st;
	int fd = -1;

	if (best == -1) {
		seterr(err, errlen, "no evidence bundle kept yet: tandem keeps "
		    "one when retries stop (the hourly cap, or a diagnosis no "
		    "retry fixes)");
		list_free(names, sizes, n);
		return -1;
	}
	path = xprintf("%s/%s", dir, names[best]);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		seterr(err, errlen, "bundle %s: %s", names[best],
		    strerror(errno ? errno : EINVAL));
		if (fd != -1)
			close(fd);
		fd = -1;
	} else {
		snprintf(name, namelen, "%s", names[best]);
		*size = (uint64_t)st.st_size;
	}
	free(path);
	list_free(names, sizes, n);
	return fd;
}
