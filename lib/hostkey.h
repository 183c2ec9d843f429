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
 * The host key algorithms to ask a node for, comma-separated, into out:
 * those of the types known_hosts holds for it (known[type] set) first, then
 * the others, each in OpenSSH's order and only if it is among the nsup
 * algorithms the SSH library supports. Nothing is added when no type is
 * known: the library's own order then stands.
 */
void	 hostkey_prefer(const int known[HOSTKEY_NTYPES],
	    const char *const *sup, size_t nsup, struct sbuf *out);

#endif
