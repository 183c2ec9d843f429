#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostkey.h"

const char *
hostkey_type_label(enum hostkey_type t)
{
	switch (t) {
	case HOSTKEY_ED25519:	return "ed25519";
	case HOSTKEY_ECDSA_256:
	case HOSTKEY_ECDSA_384:
	case HOSTKEY_ECDSA_521:	return "ecdsa";
	case HOSTKEY_RSA:	return "rsa";
	case HOSTKEY_DSS:	return "dss";
	case HOSTKEY_UNKNOWN:	break;
	}
	return "unknown type";
}

/*
 * An RSA key signs with SHA-2 (RFC 8332) or, from old servers, SHA-1; the
 * others have one algorithm each, named as the key type is.
 */
const char *
hostkey_type_algs(enum hostkey_type t)
{
	switch (t) {
	case HOSTKEY_ED25519:	return "ssh-ed25519";
	case HOSTKEY_ECDSA_256:	return "ecdsa-sha2-nistp256";
	case HOSTKEY_ECDSA_384:	return "ecdsa-sha2-nistp384";
	case HOSTKEY_ECDSA_521:	return "ecdsa-sha2-nistp521";
	case HOSTKEY_RSA:	return "rsa-sha2-512,rsa-sha2-256,ssh-rsa";
	case HOSTKEY_DSS:	return "ssh-dss";
	case HOSTKEY_UNKNOWN:	break;
	}
	return NULL;
}

int
base64_encode(const unsigned char *in, size_t n, int pad, char *buf,
    size_t len)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t need = n / 3 * 4 + (n % 3 == 0 ? 0 : pad ? 4 : n % 3 + 1), i;
	unsigned long v;
	char *o = buf;

	if (need >= len || need > INT_MAX)
		return -1;
	for (i = 0; i + 3 <= n; i += 3) {
		v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8 |
		    in[i + 2];
		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		*o++ = b64[v >> 6 & 63];
		*o++ = b64[v & 63];
	}
	if (i < n) {
		/* One or two bytes left: two or three characters, then pad. */
		v = (unsigned long)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned long)in[i + 1] << 8;
		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		if (i + 1 < n)
			*o++ = b64[v >> 6 & 63];
		else if (pad)
			*o++ = '=';
		if (pad)
			*o++ = '=';
	}
	*o = '\0';
	return (int)need;
}

/* OpenSSH prints the SHA-256 fingerprint in base64 without padding. */
int
hostkey_fingerprint(const unsigned char *sha256, size_t n, char *buf,
    size_t len)
{
	if (n != HOSTKEY_SHA256_LEN || len < HOSTKEY_FP_LEN)
		return -1;
	memcpy(buf, "SHA256:", 7);
	return base64_encode(sha256, n, 0, buf + 7, len - 7) < 0 ? -1 : 0;
}

int
hostkey_blob_type(const unsigned char *blob, size_t n, char *buf, size_t len)
{
	size_t l, i;

	if (n < 4)
		return -1;
	l = (size_t)blob[0] << 24 | (size_t)blob[1] << 16 |
	    (size_t)blob[2] << 8 | blob[3];
	if (l == 0 || l > n - 4 || l >= len)
		return -1;
	for (i = 0; i < l; i++)
		if (blob[4 + i] <= ' ' || blob[4 + i] > '~')
			return -1;
	memcpy(buf, blob + 4, l);
	buf[l] = '\0';
	return 0;
}

int
hostkey_known_line(const char *host, int port, const unsigned char *blob,
    size_t n, struct sbuf *out)
{
	char type[64], name[300], *b64;
	size_t len = n / 3 * 4 + 8;

	if (hostkey_blob_type(blob, n, type, sizeof(type)) == -1 ||
	    hostkey_known_name(host, port, name, sizeof(name)) == -1)
		return -1;
	b64 = xmalloc(len);
	if (base64_encode(blob, n, 1, b64, len) < 0) {
		free(b64);
		return -1;
	}
	sbuf_addf(out, "%s %s %s\n", name, type, b64);
	free(b64);
	return 0;
}

int
hostkey_fp_valid(const char *fp)
{
	size_t i;

	if (strncmp(fp, "SHA256:", 7) != 0 || strlen(fp) != HOSTKEY_FP_LEN - 1)
		return 0;
	for (i = 7; fp[i]; i++)
		if (!isalnum((unsigned char)fp[i]) && fp[i] != '+' &&
		    fp[i] != '/')
			return 0;
	return 1;
}

/*
 * Port 22 only: given a port, libssh2 also accepts an entry for the bare
 * host, so a key recorded for port 22 would be taken for any port of the
 * host; OpenSSH files every other port under "[host]:port" alone.
 */
int
hostkey_known_name(const char *host, int port, char *buf, size_t len)
{
	int n;

	if (port == 22)
		n = snprintf(buf, len, "%s", host);
	else
		n = snprintf(buf, len, "[%s]:%d", host, port);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int
supported(const char *alg, size_t len, const char *const *sup, size_t nsup)
{
	size_t k;

	for (k = 0; k < nsup; k++)
		if (strlen(sup[k]) == len && strncmp(sup[k], alg, len) == 0)
			return 1;
	return 0;
}

/*
 * Only supported names go in: libssh2_session_method_pref drops the others
 * itself, but 1.10 does so with an overlapping memcpy.
 */
static void
add_supported(struct sbuf *b, const char *algs, const char *const *sup,
    size_t nsup)
{
	const char *p = algs, *end;
	size_t len;

	for (; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ',');
		if (end == NULL)
			end = p + strlen(p);
		len = (size_t)(end - p);
		if (supported(p, len, sup, nsup))
			sbuf_addf(b, "%s%.*s", b->len ? "," : "", (int)len, p);
	}
}

void
hostkey_prefer(const int known[HOSTKEY_NTYPES], const char *const *sup,
    size_t nsup, struct sbuf *out)
{
	int t, pass, any = 0;

	for (t = 0; t < HOSTKEY_NTYPES; t++)
		any |= known[t] != 0;
	if (!any)
		return;
	for (pass = 0; pass < 2; pass++)
		for (t = 0; t < HOSTKEY_NTYPES; t++)
			if ((known[t] != 0) == (pass == 0))
				add_supported(out, hostkey_type_algs(
				    (enum hostkey_type)t), sup, nsup);
}

int
sshfile_perms_ok(int private_key, uid_t owner, mode_t mode, uid_t euid,
    const char *what, const char *path, char *err, size_t errlen)
{
	mode_t deny;

	if (owner != 0 && owner != euid) {
		seterr(err, errlen, "%s %s is owned by uid %u: only root or the "
		    "user tandemd runs as (uid %u) may own it, as its owner can "
		    "%s; refused (chown root %s)", what, path, (unsigned)owner,
		    (unsigned)euid, private_key ? "read the private key" :
		    "change which host keys are trusted", path);
		return -1;
	}
	if (private_key) {
		deny = owner == euid ? 077 : 027;
		if ((mode & deny) != 0) {
			seterr(err, errlen, "%s %s has mode %04o: others can "
			    "read the private key; refused, as ssh refuses it "
			    "(chmod 600 %s)", what, path,
			    (unsigned)(mode & 07777), path);
			return -1;
		}
		return 0;
	}
	if ((mode & 022) != 0) {
		seterr(err, errlen, "%s %s has mode %04o: others can change which "
		    "host keys are trusted and so read every session; refused "
		    "(chmod 644 %s)", what, path, (unsigned)(mode & 07777),
		    path);
		return -1;
	}
	return 0;
}
