/*
 * Host keys as OpenSSH names and shows them: the key types in OpenSSH's
 * order of preference, the host key algorithms each type signs with, the
 * name a node is filed under in known_hosts, and the SHA256 fingerprint
 * `ssh-keygen -l` prints. Pure: libssh2 reads known_hosts and hashes the
 * key (daemon/ssh/ssh_hostkey.c); this only decides and formats.
 */
#ifndef TANDEM_HOSTKEY_H
#define TANDEM_HOSTKEY_H

#include <stddef.h>
#include <sys/types.h>

#include "util.h"

/* In the order OpenSSH asks for them. */
enum hostkey_type {
	HOSTKEY_ED25519,
	HOSTKEY_ECDSA_256,
	HOSTKEY_ECDSA_384,
	HOSTKEY_ECDSA_521,
	HOSTKEY_RSA,
	HOSTKEY_DSS,
	HOSTKEY_UNKNOWN,	/* one this program cannot name */
};
#define HOSTKEY_NTYPES	HOSTKEY_UNKNOWN

#define HOSTKEY_SHA256_LEN	32
/* "SHA256:" and 43 characters of unpadded base64, and the NUL. */
#define HOSTKEY_FP_LEN		(7 + 43 + 1)

/* "ed25519", "ecdsa", "rsa", "dss"; "unknown type". */
const char	*hostkey_type_label(enum hostkey_type);
/* The host key algorithms that use a key of this type; NULL: unknown. */
const char	*hostkey_type_algs(enum hostkey_type);

/*
 * Base64 of n bytes (RFC 4648, with '=' padding when pad is set) into buf.
 * Returns the length written, or -1 (buf untouched) when buf is too small.
 */
int	 base64_encode(const unsigned char *in, size_t n, int pad, char *buf,
	    size_t len);

/*
 * "SHA256:..." as `ssh-keygen -l` prints it, from the SHA-256 digest of the
 * key blob. -1 (buf untouched) when the digest is not 32 bytes or buf is
 * shorter than HOSTKEY_FP_LEN.
 */
int	 hostkey_fingerprint(const unsigned char *sha256, size_t n, char *buf,
	    size_t len);

/*
 * The name known_hosts files host:port under, as OpenSSH writes and reads
 * it: the bare host on port 22, else "[host]:port". -1 when it does not fit.
 */
int	 hostkey_known_name(const char *host, int port, char *buf,
	    size_t len);

/*
 * The key type an SSH key blob (RFC 4253 section 6.6: a string naming the
 * type, then its data) names, "ssh-ed25519", "ecdsa-sha2-nistp256", into
 * buf. -1 when the blob does not start with a printable name that fits.
 */
int	 hostkey_blob_type(const unsigned char *blob, size_t n, char *buf,
	    size_t len);

/*
 * The known_hosts line OpenSSH writes for host:port and this key blob,
 * "[host]:port ssh-ed25519 AAAA...\n" (hostkey_known_name), appended to
 * out. -1 (out untouched) when the blob has no type name.
 */
int	 hostkey_known_line(const char *host, int port,
	    const unsigned char *blob, size_t n, struct sbuf *out);

/* Whether fp is a fingerprint as ssh-keygen -l prints it (SHA256:...). */
int	 hostkey_fp_valid(const char *fp);

/*
 * The host key algorithms to ask a node for, comma-separated, into out:
 * those of the types known_hosts holds for it (known[type] set) first, then
 * the others, each in OpenSSH's order and only if it is among the nsup
 * algorithms the SSH library supports. Nothing is added when no type is
 * known: the library's own order then stands.
 */
void	 hostkey_prefer(const int known[HOSTKEY_NTYPES],
	    const char *const *sup, size_t nsup, struct sbuf *out);

/*
 * ssh.identity_file and ssh.known_hosts_file judged as ssh(1) judges them
 * (and as token_perms_ok judges the API token): the owner must be root or
 * the user tandemd runs as (euid). The private key (private_key 1) allows
 * nothing to group or others when the daemon's user owns it (0600), and
 * at most a group read when root owns it for a daemon run as another user
 * (root:tandem 0640); known_hosts may be read by anyone and written by its
 * owner only (0644): whoever can write it can put their key for a node
 * there and read every session. what names the key ("ssh.identity_file").
 * 0, or -1 with a message that says the fix.
 */
int	 sshfile_perms_ok(int private_key, uid_t owner, mode_t mode,
	    uid_t euid, const char *what, const char *path, char *err,
	    size_t errlen);

#endif
