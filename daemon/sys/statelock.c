/*
 * Two daemons on one cluster tear down each other's containers. The
 * state dir is theirs to share by mistake (the service and a tandemd
 * --once beside it; a copy of the unit with another port), so the lock
 * is there. flock, not fcntl: it belongs to the open file, not to the
 * process, and the kernel drops it when tandemd dies however it dies.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "statelock.h"

#define LOCK_NAME	"tandemd.lock"

enum state_lock_rc
state_lock(const char *dir, int create, char *err, size_t errlen)
{
	char path[4096], pid[32];
	struct stat st;
	ssize_t n;
	int fd;

	memset(&st, 0, sizeof(st));
	errno = 0;
	if (create && mkdir(dir, 0750) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "state dir %s: %s", dir, strerror(errno));
		return STATE_LOCK_BAD;
	}
	if (stat(dir, &st) == -1 || !S_ISDIR(st.st_mode)) {
		/* a daemon that keeps no state would lose its remedies */
		snprintf(err, errlen, "state dir %s: %s; create it (mkdir -m "
		    "750 %s) or name another with --state-dir", dir,
		    S_ISDIR(st.st_mode) || errno != 0 ? strerror(errno) :
		    "not a directory", dir);
		return STATE_LOCK_BAD;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, LOCK_NAME);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	    0640)) == -1) {
		snprintf(err, errlen, "state dir %s: cannot open %s: %s", dir,
		    LOCK_NAME, strerror(errno));
		return STATE_LOCK_BAD;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		int e = errno;

		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		if (e != EWOULDBLOCK) {
			snprintf(err, errlen, "state dir %s: flock %s: %s", dir,
			    LOCK_NAME, strerror(e));
			return STATE_LOCK_BAD;
		}
		snprintf(err, errlen, "state dir %s is another tandemd's (pid "
		    "%s): two daemons would manage one cluster at once; stop "
		    "that one first, or give this one its own cluster and "
		    "--state-dir", dir, pid[0] ? pid : "unknown");
		return STATE_LOCK_HELD;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == -1 || pwrite(fd, pid, (size_t)n, 0) != n) {
		snprintf(err, errlen, "state dir %s: cannot write %s: %s", dir,
		    LOCK_NAME, strerror(errno));
		close(fd);
		return STATE_LOCK_BAD;
	}
	return STATE_LOCK_OK;	/* fd stays open: the lock lives with it */
}
