/*
 * The API token's rules (token.h). The same rules serve tandemd, which
 * refuses a file that breaks them, and tandemctl, which sends what tandemd
 * would compare against.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "token.h"

/* docs/operations.md makes the token so; the mode of the file stays. */
#define NEW_TOKEN	"head -c 32 /dev/urandom | base64 > %s"

int
token_parse(const char *buf, size_t len, const char *what,
    const char *path, char **tok, char *err, size_t errlen)
{
	const char *nul = memchr(buf, '\0', len);
	size_t i;

	*tok = NULL;
	if (nul != NULL) {
		seterr(err, errlen, "%s %s holds a NUL byte (byte %zu): a token "
		    "is text, and a file zero-filled by an unclean shutdown or "
		    "raw random bytes would read as an empty or shortened "
		    "token; refused (write one: " NEW_TOKEN ")", what, path,
		    (size_t)(nul - buf) + 1, path);
		return -1;
	}
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
	    buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len == 0) {
		seterr(err, errlen, "%s %s is empty: no token; refused (write "
		    "one: " NEW_TOKEN ")", what, path, path);
		return -1;
	}
	if (len > TOKEN_MAX) {
		seterr(err, errlen, "%s %s holds %zu bytes: a token is at most "
		    "%d; refused", what, path, len, TOKEN_MAX);
		return -1;
	}
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];

		/* RFC 9110 5.5: VCHAR is %x21-7E */
		if (ch < 0x21 || ch > 0x7e) {
			seterr(err, errlen, "%s %s: byte %zu is 0x%02x: a token "
			    "is printable ASCII without spaces, on one line; "
			    "refused", what, path, i + 1, ch);
			return -1;
		}
	}
	*tok = xmalloc(len + 1);
	memcpy(*tok, buf, len);
	(*tok)[len] = '\0';
	return 0;
}

int
token_perms_ok(uid_t owner, mode_t mode, uid_t euid, const char *what,
    const char *path, char *err, size_t errlen)
{
	mode_t deny;

	if (owner != 0 && owner != euid) {
		seterr(err, errlen, "%s %s is owned by uid %u: only root or the "
		    "user tandemd runs as (uid %u) may own it, as its owner can "
		    "change the token; refused (chown root %s)", what, path,
		    (unsigned)owner, (unsigned)euid, path);
		return -1;
	}
	/* root:tandem 0640 lets a daemon run as tandem read root's file */
	deny = owner == euid ? 077 : 027;
	if ((mode & deny) != 0) {
		seterr(err, errlen, "%s %s has mode %04o: others can read or "
		    "change the token; refused (chmod 600 %s)", what, path,
		    (unsigned)(mode & 07777), path);
		return -1;
	}
	return 0;
}

const char *
token_from_authorization(const char *hdr)
{
	if (hdr == NULL || strncasecmp(hdr, "Bearer", 6) != 0 || hdr[6] != ' ')
		return NULL;
	hdr += 6;
	while (*hdr == ' ')
		hdr++;
	return *hdr ? hdr : NULL;
}

int
token_matches(const char *given, const char *want)
{
	size_t gl, wl, i;
	unsigned char diff;

	if (given == NULL || want == NULL || *want == '\0')
		return 0;
	gl = strlen(given);
	wl = strlen(want);
	diff = gl != wl;
	for (i = 0; i < wl; i++)
		diff |= (unsigned char)want[i] ^
		    (unsigned char)(i < gl ? given[i] : 0);
	return diff == 0;
}
