#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

int
conffile_check_files(const struct config *cf, char *err, size_t errlen)
{
	FILE *fp;
	int ok;

	/*
	 * Opened as the daemon will open them: a key that exists but that
	 * this user may not read fails every handshake just the same.
	 */
	if ((fp = fopen(cf->ssh.identity_file, "r")) == NULL) {
		seterr(err, errlen, "%s: ssh.identity_file %s %s (make the "
		    "key: docs/operations.md, section 2)", cf->path,
		    cf->ssh.identity_file, errno == ENOENT ?
		    "does not exist" : errno == EACCES ? "cannot be read by "
		    "this user: Permission denied" : strerror(errno));
		return -1;
	}
	fclose(fp);
	if ((fp = fopen(cf->ssh.known_hosts_file, "r")) == NULL) {
		seterr(err, errlen, "%s: ssh.known_hosts_file %s: %s (write it "
		    "with ssh-keyscan: docs/operations.md, section 2)",
		    cf->path, cf->ssh.known_hosts_file, errno == ENOENT ?
		    "does not exist" : strerror(errno));
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
	return 0;
}
