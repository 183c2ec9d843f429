#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conffile.h"
#include "hostkey.h"

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

/* A known_hosts line with a key: not blank, not a comment (sshd(8)). */
static int
has_host_key(FILE *fp)
{
	char line[8192];
	const char *p;

	while (fgets(line, sizeof(line), fp) != NULL) {
		for (p = line; *p == ' ' || *p == '\t'; p++)
			;
		if (*p != '\0' && *p != '\n' && *p != '\r' && *p != '#')
			return 1;
	}
	return 0;
}

/*
 * An SSH file opened as tandemd may trust it: without blocking (a FIFO in
 * its place would hold --check, a start or a reload until a writer came),
 * a regular file, owned and moded as ssh accepts it (sshfile_perms_ok).
 * Judged on the open file, as the token file is. The descriptor; -1 with
 * errno when it cannot be opened (the caller says why); -2 with err set.
 */
static int
open_ssh_file(const struct config *cf, int private_key, const char *what,
    const char *path, char *err, size_t errlen)
{
	char msg[ERRLEN];
	struct stat st;
	int fd, e;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
	    O_NOCTTY)) == -1)
		return -1;
	if (fstat(fd, &st) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(err, errlen, "%s: %s %s is not a regular file; refused",
		    cf->path, what, path);
		close(fd);
		return -2;
	}
	if (sshfile_perms_ok(private_key, st.st_uid, st.st_mode, geteuid(),
	    what, path, msg, sizeof(msg)) == -1) {
		seterr(err, errlen, "%s: %s", cf->path, msg);
		close(fd);
		return -2;
	}
	return fd;
}

int
conffile_check_files(const struct config *cf, char *err, size_t errlen)
{
	FILE *fp;
	int fd, ok;

	/*
	 * Opened as the daemon will open them: a key that exists but that
	 * this user may not read fails every handshake just the same.
	 */
	if ((fd = open_ssh_file(cf, 1, "ssh.identity_file",
	    cf->ssh.identity_file, err, errlen)) == -2)
		return -1;
	if (fd == -1) {
		seterr(err, errlen, "%s: ssh.identity_file %s %s (make the "
		    "key: docs/operations.md, section 2)", cf->path,
		    cf->ssh.identity_file, errno == ENOENT ?
		    "does not exist" : errno == EACCES ? "cannot be read by "
		    "this user: Permission denied" : strerror(errno));
		return -1;
	}
	close(fd);
	if ((fd = open_ssh_file(cf, 0, "ssh.known_hosts_file",
	    cf->ssh.known_hosts_file, err, errlen)) == -2)
		return -1;
	if (fd == -1 || (fp = fdopen(fd, "r")) == NULL) {
		seterr(err, errlen, "%s: ssh.known_hosts_file %s: %s (write it "
		    "with ssh-keyscan: docs/operations.md, section 2)",
		    cf->path, cf->ssh.known_hosts_file, errno == ENOENT ?
		    "does not exist" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	ok = has_host_key(fp);
	fclose(fp);
	if (!ok) {
		seterr(err, errlen, "%s: ssh.known_hosts_file %s holds no host "
		    "key: every node would be refused (write it with "
		    "ssh-keyscan: docs/operations.md, section 2)", cf->path,
		    cf->ssh.known_hosts_file);
		return -1;
	}
	if (cf->hooks.on_state.n > 0 && access(cf->hooks.on_state.v[0], X_OK)
	    == -1) {
		seterr(err, errlen, "%s: hooks.on_state[0] %s: %s", cf->path,
		    cf->hooks.on_state.v[0], errno == ENOENT ? "does not exist" :
		    errno == EACCES ? "not executable by this user" :
		    strerror(errno));
		return -1;
	}
	if (cf->hooks.on_change.n > 0 &&
	    access(cf->hooks.on_change.v[0], X_OK) == -1) {
		seterr(err, errlen, "%s: hooks.on_change[0] %s: %s", cf->path,
		    cf->hooks.on_change.v[0], errno == ENOENT ?
		    "does not exist" : errno == EACCES ?
		    "not executable by this user" : strerror(errno));
		return -1;
	}
	return 0;
}
