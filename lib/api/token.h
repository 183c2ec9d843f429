/*
 * The API token's rules, without I/O: what a token file may hold, who may
 * own it and with which mode, how a request's Authorization header names a
 * token, and the comparison. daemon/sys/tokenfile.c reads the file (open,
 * fstat, read) for tandemd and tandemctl alike and asks these.
 */
#ifndef TANDEM_TOKEN_H
#define TANDEM_TOKEN_H

#include <stddef.h>
#include <sys/types.h>

#include "util.h"

/* Longer is not a token (a key, a log pasted by mistake): refused. */
#define TOKEN_MAX	1024

/*
 * The token from a file's bytes: trailing spaces, tabs and newlines (CR
 * too) are trimmed; what is left must be 1 to TOKEN_MAX printable ASCII
 * characters without a space (RFC 9110 VCHAR, what an Authorization header
 * carries as it is). A NUL byte anywhere refuses the file: a file
 * zero-filled by an unclean shutdown, or raw random bytes, would otherwise
 * read as an empty or shortened token. Messages name the file as `what`
 * ("api_token_file") and path.
 * 0 with a copy in *tok (the caller frees it); -1 with a message.
 */
int	 token_parse(const char *buf, size_t len, const char *what,
	    const char *path, char **tok, char *err, size_t errlen);

/*
 * Whether a token file's owner and mode let only the daemon (and root) in,
 * as ssh judges a private key. The owner must be root or the user the
 * daemon runs as (euid): anyone else could change the token. A file owned
 * by the daemon's user (root's own file for a daemon run as root) allows
 * nothing to group or others (0600, 0400); a file owned by root for a
 * daemon run as another user may be read by the group too, never written
 * (root:tandem 0640 for User=tandem). 0, or -1 with a message that says
 * the fix.
 */
int	 token_perms_ok(uid_t owner, mode_t mode, uid_t euid, const char *what,
	    const char *path, char *err, size_t errlen);

/*
 * The token an Authorization header carries with the Bearer scheme (RFC
 * 6750 2.1; the scheme in any case, RFC 9110 11.1; one or more spaces
 * after it, 11.4), or NULL: no header, another scheme, or nothing after
 * the scheme. Points into hdr.
 */
const char	*token_from_authorization(const char *hdr);

/*
 * Whether given is the token want, in a time that does not depend on where
 * they differ. An empty or NULL want matches nothing.
 */
int	 token_matches(const char *given, const char *want);

#endif
