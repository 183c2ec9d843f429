/*
 * tandemctl init's host keys: each node's key scanned, and trusted only
 * once the operator has seen its fingerprint (or named it with
 * --accept-fingerprint).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init_int.h"

static void
on_scan(struct sshc *c, int up, const char *why, int fatal, void *arg)
{
	struct inode *nd = arg;

	(void)up;
	(void)fatal;
	if (nd->seen.seen || nd->why[0])
		return;
	nd->seen = *sshc_seen_key(c);
	if (!nd->seen.seen)
		snprintf(nd->why, sizeof(nd->why), "%s", why);
	init_step_done(nd->in);
}

void
init_hostkey_scan(struct init *in)
{
	size_t k;

	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		struct ssh_params p = init_step_params(nd, in->known_hosts);

		nd->ssh = sshc_new(in->loop, &p, on_scan, nd);
		sshc_scan_only(nd->ssh);
		in->outstanding++;
		sshc_connect(nd->ssh);
	}
	init_step_run(in);
	init_step_drop(in);
}

/* One line from standard input: the operator's answer; NULL at its end. */
static char *
operator_answer(char *buf, size_t len)
{
	if (fgets(buf, (int)len, stdin) == NULL)
		return NULL;
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf;
}

/*
 * Each node's key: known already, accepted by --accept-fingerprint or by
 * the operator at the prompt. Returns 0 when every node is trusted.
 */
int
init_hostkey_trust(struct init *in, struct sbuf *lines)
{
	size_t k;
	int bad = 0;
	char buf[64];

	init_tell(stdout, "host keys (compare each with ssh-keygen -lf "
	    "/etc/ssh/ssh_host_ed25519_key.pub on the node):\n");
	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		const struct ssh_seen_key *s = &nd->seen;

		if (!s->seen) {
			init_tell(stdout, "  %s: no host key: %s\n", nd->host,
			    nd->why);
			bad = 1;
			continue;
		}
		init_tell(stdout, "  %s: %s %s", nd->host, s->label, s->fp);
		if (s->known == SEEN_KNOWN) {
			init_tell(stdout, " (already in %s)\n",
			    in->known_hosts);
			continue;
		}
		if (s->known == SEEN_CHANGED) {
			init_tell(stdout,
			    " CHANGED: %s holds another key for it. Verify "
			    "the node; if the new key is right, ssh-keygen -R "
			    "%s -f %s and run tandemctl init again\n",
			    in->known_hosts, nd->host, in->known_hosts);
			bad = 1;
			continue;
		}
		if (in->accept.n) {
			if (strv_has(&in->accept, s->fp)) {
				init_tell(stdout,
				    " (accepted: --accept-fingerprint)\n");
				sbuf_add(lines, s->line);
			} else {
				init_tell(stdout,
				    " NOT one of the --accept-fingerprint "
				    "values: not trusted\n");
				bad = 1;
			}
			continue;
		}
		init_tell(stdout, "\n  trust this key of %s? [y/N] ", nd->host);
		fflush(stdout);
		if (operator_answer(buf, sizeof(buf)) && (strcmp(buf, "y") == 0 ||
		    strcmp(buf, "yes") == 0)) {
			init_tell(stdout, "  %s: trusted\n", nd->host);
			sbuf_add(lines, s->line);
		} else {
			init_tell(stdout, "\n  %s: not trusted\n", nd->host);
			bad = 1;
		}
	}
	fflush(stdout);
	return bad ? -1 : 0;
}
