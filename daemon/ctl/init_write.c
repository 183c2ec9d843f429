/*
 * What tandemctl init writes: known_hosts, tandem's SSH key (made with
 * ssh-keygen when missing), the API token and tandem.json. Never through a
 * symlink someone placed at the name (issue 43).
 */
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <libgen.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostkey.h"
#include "init_int.h"

/*
 * The known_hosts this run verifies against: the real one with the new
 * lines appended, or with --dry-run a copy of it in a temporary file.
 */
/* 1 when fd is a regular file; 0 with errno set. */
static int
regular(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return 0;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return 0;
	}
	return 1;
}

int
init_write_known(struct init *in, const struct sbuf *lines)
{
	char tmpl[] = "/tmp/tandemctl-init-known_hosts.XXXXXX";
	FILE *src, *dst;
	char buf[4096];
	size_t r;
	int fd;

	if (!in->dry_run) {
		in->kh_work = xstrdup(in->known_hosts);
		if (lines->len == 0)
			return 0;
		/*
		 * Never through a symlink someone placed at the name, never
		 * into a FIFO or a device (issue 43): a regular file only.
		 */
		if ((fd = open(in->known_hosts, O_WRONLY | O_CREAT | O_APPEND |
		    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644)) < 0 ||
		    !regular(fd) || write(fd, lines->s, lines->len) !=
		    (ssize_t)lines->len || close(fd) != 0) {
			init_tell(stderr, "tandemctl init: %s: %s\n",
			    in->known_hosts, errno == ELOOP ? "a symbolic "
			    "link; refused" : strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		init_tell(stdout, "wrote %s: %s\n", in->known_hosts,
		    lines->s[0] ? "the host keys trusted above" : "");
		return 0;
	}
	if ((fd = mkstemp(tmpl)) < 0 || (dst = fdopen(fd, "w")) == NULL)
		return -1;
	if ((src = fopen(in->known_hosts, "r")) != NULL) {
		while ((r = fread(buf, 1, sizeof(buf), src)) > 0)
			fwrite(buf, 1, r, dst);
		fclose(src);
	}
	if (lines->len)
		fwrite(lines->s, 1, lines->len, dst);
	fclose(dst);
	in->kh_work = xstrdup(tmpl);
	return 0;
}

/* The SSH key -------------------------------------------------------- */

static int
run_argv(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A directory for a file, made (0750) when missing; said so. */
int
init_write_dir(const char *file)
{
	char *copy = xstrdup(file), *dir = dirname(copy);
	int rc = 0;

	if (access(dir, F_OK) != 0) {
		if (mkdir(dir, 0750) != 0) {
			init_tell(stderr, "tandemctl init: mkdir %s: %s\n", dir,
			    strerror(errno));
			rc = -1;
		} else
			init_tell(stdout, "made %s (mode 0750)\n", dir);
	}
	free(copy);
	return rc;
}

/* ssh.identity_file: kept when there, else made with ssh-keygen. */
int
init_write_key(struct init *in)
{
	char *pub = xprintf("%s.pub", in->identity), line[4096];
	char host[256] = "tandem", *comment;
	FILE *fp;

	if (access(in->identity, F_OK) == 0)
		init_tell(stdout, "ssh key: %s (there already)\n",
		    in->identity);
	else if (in->dry_run)
		init_tell(stdout,
		    "ssh key: would make %s (ed25519, no passphrase)\n",
		    in->identity);
	else {
		char keygen[] = "ssh-keygen", q[] = "-q", t[] = "-t",
		    ed[] = "ed25519", nflag[] = "-N", empty[] = "", c[] = "-C",
		    f[] = "-f";
		char *file = xstrdup(in->identity);
		char *argv[] = { keygen, q, t, ed, nflag, empty, c, NULL, f,
		    file, NULL };

		gethostname(host, sizeof(host) - 1);
		comment = xprintf("tandem@%s", host);
		argv[7] = comment;
		if (init_write_dir(in->identity) == -1 || run_argv(argv) != 0) {
			init_tell(stderr,
			    "tandemctl init: ssh-keygen could not "
			    "make %s\n", in->identity);
			free(comment);
			free(file);
			free(pub);
			return -1;
		}
		free(comment);
		free(file);
		in->made_key = 1;
		init_tell(stdout, "ssh key: made %s (ed25519, no passphrase)\n",
		    in->identity);
	}
	if ((fp = fopen(pub, "r")) != NULL) {
		if (fgets(line, sizeof(line), fp)) {
			line[strcspn(line, "\r\n")] = '\0';
			in->pubkey = xstrdup(line);
		}
		fclose(fp);
	}
	free(pub);
	return 0;
}

/* Writing ------------------------------------------------------------- */

/* The API token: 32 random bytes, base64, mode 0600; kept when there. */
int
init_write_token(struct init *in)
{
	unsigned char raw[32];
	char b64[64];
	int fd;

	if (access(in->token_file, F_OK) == 0) {
		init_tell(stdout, "kept %s (there already)\n", in->token_file);
		return 0;
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
	    base64_encode(raw, sizeof(raw), 1, b64, sizeof(b64) - 1) < 0)
		return -1;
	strcat(b64, "\n");
	if (init_write_dir(in->token_file) == -1 || (fd = open(in->token_file,
	    O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0) {
		init_tell(stderr, "tandemctl init: %s: %s\n", in->token_file,
		    strerror(errno));
		return -1;
	}
	if (write(fd, b64, strlen(b64)) != (ssize_t)strlen(b64) ||
	    close(fd) != 0)
		return -1;
	init_tell(stdout, "wrote %s (mode 0600)\n", in->token_file);
	return 0;
}

int
init_write_config(struct init *in, const char *text)
{
	/*
	 * A fresh name of our own beside it (mkstemp: O_EXCL), never a
	 * fixed "<out>.tmp" that someone could have made a symlink first
	 * (issue 43); renamed over the config once whole.
	 */
	char *tmp = xprintf("%s.XXXXXX", in->out);
	size_t len = strlen(text);
	int fd = -1, rc = -1, ok;

	if (init_write_dir(in->out) == 0 &&
	    (fd = mkostemp(tmp, O_CLOEXEC)) >= 0) {
		ok = fchmod(fd, 0640) == 0 && write(fd, text, len) ==
		    (ssize_t)len && fsync(fd) == 0;
		ok = close(fd) == 0 && ok;
		if (ok && rename(tmp, in->out) == 0)
			rc = 0;
	}
	if (rc == -1) {
		init_tell(stderr, "tandemctl init: %s: %s\n", in->out,
		    strerror(errno));
		if (fd >= 0)
			unlink(tmp);
	}
	if (rc == 0)
		init_tell(stdout, "wrote %s\n", in->out);
	free(tmp);
	return rc;
}
