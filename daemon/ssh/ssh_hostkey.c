/*
 * Host keys: libssh2_knownhost_readfile and _checkp against
 * ssh.known_hosts_file (as curl does), under the name OpenSSH files the
 * node as. Only LIBSSH2_KNOWNHOST_CHECK_MATCH is success: an unknown or a
 * changed key is refused, and the message names the key's SHA256
 * fingerprint. What the types are called and which to ask for first is
 * lib/parse/hostkey.c's; this file speaks libssh2.
 */
#include <stdio.h>
#include <string.h>

#include "hostkey.h"
#include "ssh_int.h"
#include "log.h"

/* libssh2's two numberings of the key types, by ours. */
static const struct {
	enum hostkey_type	 type;
	int			 offered;	/* LIBSSH2_HOSTKEY_TYPE_* */
	int			 known;		/* LIBSSH2_KNOWNHOST_KEY_* */
} keytypes[] = {
#ifdef LIBSSH2_HOSTKEY_TYPE_ED25519
	{ HOSTKEY_ED25519, LIBSSH2_HOSTKEY_TYPE_ED25519,
	    LIBSSH2_KNOWNHOST_KEY_ED25519 },
#endif
#ifdef LIBSSH2_HOSTKEY_TYPE_ECDSA_256
	{ HOSTKEY_ECDSA_256, LIBSSH2_HOSTKEY_TYPE_ECDSA_256,
	    LIBSSH2_KNOWNHOST_KEY_ECDSA_256 },
	{ HOSTKEY_ECDSA_384, LIBSSH2_HOSTKEY_TYPE_ECDSA_384,
	    LIBSSH2_KNOWNHOST_KEY_ECDSA_384 },
	{ HOSTKEY_ECDSA_521, LIBSSH2_HOSTKEY_TYPE_ECDSA_521,
	    LIBSSH2_KNOWNHOST_KEY_ECDSA_521 },
#endif
	{ HOSTKEY_RSA, LIBSSH2_HOSTKEY_TYPE_RSA, LIBSSH2_KNOWNHOST_KEY_SSHRSA },
	{ HOSTKEY_DSS, LIBSSH2_HOSTKEY_TYPE_DSS, LIBSSH2_KNOWNHOST_KEY_SSHDSS },
};
#define NKEYTYPES	(sizeof(keytypes) / sizeof(keytypes[0]))

static size_t
by_offered(int offered)
{
	size_t i;

	for (i = 0; i < NKEYTYPES; i++)
		if (keytypes[i].offered == offered)
			break;
	return i;
}

static size_t
by_known(int known)
{
	size_t i;

	for (i = 0; i < NKEYTYPES; i++)
		if (keytypes[i].known == known)
			break;
	return i;
}

/* known_hosts, read; NULL when it cannot be. */
static LIBSSH2_KNOWNHOSTS *
read_known(LIBSSH2_SESSION *s, const struct ssh_params *p)
{
	LIBSSH2_KNOWNHOSTS *kh;

	if ((kh = libssh2_knownhost_init(s)) == NULL)
		return NULL;
	if (libssh2_knownhost_readfile(kh, p->known_hosts_file,
	    LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
		libssh2_knownhost_free(kh);
		return NULL;
	}
	return kh;
}

/*
 * A node offers several host keys (ed25519, ecdsa, rsa) and libssh2 asks
 * for ecdsa first; known_hosts often holds one type only (what `ssh` or
 * `ssh-keyscan -t` wrote), and the node would be refused as unknown. As
 * OpenSSH does, ask first for the types known_hosts holds for this node,
 * then the others (so an unknown node is still named with its key). Any
 * failure here leaves libssh2's order: ssh_check_hostkey reports the
 * problem.
 */
void
ssh_prefer_known_hostkeys(LIBSSH2_SESSION *s, const struct ssh_params *p)
{
	ssh_prefer_hostkeys(s, p, 0);
}

/*
 * scan (tandemctl init's first contact): with no type known for the node,
 * ask in OpenSSH's order, ed25519 first, so that the key shown and written
 * to known_hosts is the one ssh and ssh-keyscan -t ed25519 show.
 */
void
ssh_prefer_hostkeys(LIBSSH2_SESSION *s, const struct ssh_params *p, int scan)
{
	LIBSSH2_KNOWNHOSTS *kh;
	struct libssh2_knownhost *e = NULL;
	char name[300];
	int known[HOSTKEY_NTYPES] = { 0 }, nsup;
	size_t i;
	struct sbuf pref;
	const char **sup = NULL;

	if (hostkey_known_name(p->host, p->port, name, sizeof(name)) == -1)
		return;
	if ((kh = read_known(s, p)) == NULL && !scan)
		return;
	/* An entry is this node's if its own key matches under this name. */
	while (kh && libssh2_knownhost_get(kh, &e, e) == 0) {
		int type = e->typemask & LIBSSH2_KNOWNHOST_KEY_MASK;

		if (e->key == NULL || libssh2_knownhost_checkp(kh, name, -1,
		    e->key, strlen(e->key), LIBSSH2_KNOWNHOST_TYPE_PLAIN |
		    LIBSSH2_KNOWNHOST_KEYENC_BASE64 | type, NULL) !=
		    LIBSSH2_KNOWNHOST_CHECK_MATCH)
			continue;
		if ((i = by_known(type)) < NKEYTYPES)
			known[keytypes[i].type] = 1;
	}
	if (kh)
		libssh2_knownhost_free(kh);
	if (scan) {
		for (i = 0; i < HOSTKEY_NTYPES && !known[i]; i++)
			;
		if (i == HOSTKEY_NTYPES)
			known[HOSTKEY_ED25519] = 1;
	}
	sbuf_init(&pref);
	if ((nsup = libssh2_session_supported_algs(s, LIBSSH2_METHOD_HOSTKEY,
	    &sup)) > 0) {
		hostkey_prefer(known, sup, (size_t)nsup, &pref);
		libssh2_free(s, sup);
	}
	if (pref.len && libssh2_session_method_pref(s, LIBSSH2_METHOD_HOSTKEY,
	    pref.s) != 0)
		log_warnx("%s: cannot prefer host key types %s: %s", p->host,
		    pref.s, ssh_errmsg(s));
	sbuf_free(&pref);
}

/* Only an exact match is success: unknown and changed keys are refused. */
int
ssh_check_hostkey(LIBSSH2_SESSION *s, const struct ssh_params *p,
    char *why, size_t whylen)
{
	LIBSSH2_KNOWNHOSTS *kh;
	struct libssh2_knownhost *found = NULL;
	const char *key, *hash;
	enum hostkey_type t = HOSTKEY_UNKNOWN;
	size_t len, i;
	int type, rc, bit = LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
	char fp[HOSTKEY_FP_LEN] = "", name[300];

	key = libssh2_session_hostkey(s, &len, &type);
	if (key == NULL) {
		snprintf(why, whylen, "%s: no host key offered", p->host);
		return -1;
	}
	if ((i = by_offered(type)) < NKEYTYPES) {
		t = keytypes[i].type;
		bit = keytypes[i].known;
	}
	hash = libssh2_hostkey_hash(s, LIBSSH2_HOSTKEY_HASH_SHA256);
	if (hash && hostkey_fingerprint((const unsigned char *)hash,
	    HOSTKEY_SHA256_LEN, fp, sizeof(fp)) == -1)
		fp[0] = '\0';
	if (hostkey_known_name(p->host, p->port, name, sizeof(name)) == -1) {
		snprintf(why, whylen, "%s: host name too long for known_hosts",
		    p->host);
		return -1;
	}
	kh = libssh2_knownhost_init(s);
	if (kh == NULL) {
		snprintf(why, whylen, "known hosts: %s", ssh_errmsg(s));
		return -1;
	}
	if (libssh2_knownhost_readfile(kh, p->known_hosts_file,
	    LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
		snprintf(why, whylen, "cannot read ssh.known_hosts_file %s",
		    p->known_hosts_file);
		libssh2_knownhost_free(kh);
		return -1;
	}
	rc = libssh2_knownhost_checkp(kh, name, -1, key, len,
	    LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | bit,
	    &found);
	libssh2_knownhost_free(kh);
	switch (rc) {
	case LIBSSH2_KNOWNHOST_CHECK_MATCH:
		return 0;
	case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
		snprintf(why, whylen, "host key of %s:%d CHANGED (now %s); it "
		    "does not match %s", p->host, p->port, fp,
		    p->known_hosts_file);
		return -1;
	case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
		snprintf(why, whylen, "host key of %s:%d (%s %s) is not in %s",
		    p->host, p->port, hostkey_type_label(t), fp,
		    p->known_hosts_file);
		return -1;
	default:
		snprintf(why, whylen, "host key check of %s:%d failed",
		    p->host, p->port);
		return -1;
	}
}

/*
 * tandemctl init: the key the node presented, its fingerprint and
 * known_hosts line, and what known_hosts (if it can be read) says of it.
 * Nothing is trusted here: the caller shows the fingerprint and asks.
 */
void
ssh_read_hostkey(LIBSSH2_SESSION *s, const struct ssh_params *p,
    struct ssh_seen_key *seen)
{
	LIBSSH2_KNOWNHOSTS *kh;
	struct libssh2_knownhost *found = NULL;
	const char *key, *hash;
	struct sbuf line;
	size_t len, i;
	int type, bit = LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
	char name[300];

	memset(seen, 0, sizeof(*seen));
	if ((key = libssh2_session_hostkey(s, &len, &type)) == NULL)
		return;
	seen->seen = 1;
	i = by_offered(type);
	snprintf(seen->label, sizeof(seen->label), "%s", hostkey_type_label(
	    i < NKEYTYPES ? keytypes[i].type : HOSTKEY_UNKNOWN));
	if (i < NKEYTYPES)
		bit = keytypes[i].known;
	if (hostkey_blob_type((const unsigned char *)key, len, seen->type,
	    sizeof(seen->type)) == -1)
		snprintf(seen->type, sizeof(seen->type), "%s", seen->label);
	hash = libssh2_hostkey_hash(s, LIBSSH2_HOSTKEY_HASH_SHA256);
	if (hash == NULL || hostkey_fingerprint((const unsigned char *)hash,
	    HOSTKEY_SHA256_LEN, seen->fp, sizeof(seen->fp)) == -1)
		seen->fp[0] = '\0';
	sbuf_init(&line);
	if (hostkey_known_line(p->host, p->port, (const unsigned char *)key,
	    len, &line) == 0 && line.len < sizeof(seen->line))
		memcpy(seen->line, line.s, line.len + 1);
	sbuf_free(&line);
	seen->known = SEEN_UNKNOWN;
	if (hostkey_known_name(p->host, p->port, name, sizeof(name)) == -1 ||
	    (kh = read_known(s, p)) == NULL)
		return;
	switch (libssh2_knownhost_checkp(kh, name, -1, key, len,
	    LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | bit,
	    &found)) {
	case LIBSSH2_KNOWNHOST_CHECK_MATCH:
		seen->known = SEEN_KNOWN;
		break;
	case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
		seen->known = SEEN_CHANGED;
		break;
	default:
		break;
	}
	libssh2_knownhost_free(kh);
}
