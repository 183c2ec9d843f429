/*
 * The API token file from disk (tokenfile.h). It is judged on the open
 * file, so what is read is what was checked, and opened without blocking:
 * a FIFO put in its place would otherwise hold the loop until a writer
 * came.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "token.h"
#include "tokenfile.h"

#define WHAT	"api_token_file"

int
token_file_read(const char *path, int judge, char **tok, char *err,
    size_t errlen)
{
	/* room for the longest token and some trailing blank lines */
	char buf[2 * TOKEN_MAX + 2];
	struct stat st;
	size_t n = 0;
	ssize_t r = 0;
	int fd;

	*tok = NULL;
	if (path == NULL)
		return 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
	    O_NOCTTY)) == -1) {
		seterr(err, errlen, WHAT " %s: %s", path, strerror(errno));
		return 0;
	}
	if (fstat(fd, &st) == -1) {
		seterr(err, errlen, WHAT " %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(err, errlen, WHAT " %s is not a regular file; refused",
		    path);
		close(fd);
		return -1;
	}
	if (judge && token_perms_ok(st.st_uid, st.st_mode, geteuid(), WHAT,
	    path, err, errlen) == -1) {
		close(fd);
		return -1;
	}
	while (n < sizeof(buf) && ((r = read(fd, buf + n,
	    sizeof(buf) - n)) > 0 || (r == -1 && errno == EINTR)))
		if (r > 0)
			n += (size_t)r;
	if (n < sizeof(buf) && r == -1) {
		seterr(err, errlen, WHAT " %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	if (n == sizeof(buf)) {
		seterr(err, errlen, WHAT " %s holds more than %zu bytes: a "
		    "token is at most %d; refused", path, sizeof(buf) - 1,
		    TOKEN_MAX);
		return -1;
	}
	return token_parse(buf, n, WHAT, path, tok, err, errlen);
}
