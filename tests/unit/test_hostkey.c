/*
 * Host keys as OpenSSH shows them. The vectors are real: keys made with
 * `ssh-keygen -t TYPE` (OpenSSH 9.2p1, Debian 12), the fingerprint lines
 * `ssh-keygen -l -f KEY.pub` printed for them, and the SHA-256 of each
 * key's blob (`awk '{print $2}' KEY.pub | base64 -d | sha256sum`), which
 * is what libssh2_hostkey_hash hands the daemon.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hostkey.h"

struct vector {
	const char		*pub;		/* KEY.pub */
	const char		*sha256;	/* of the blob, hex */
	const char		*keygen_l;	/* ssh-keygen -l -f KEY.pub */
	enum hostkey_type	 type;
};

static const struct vector vectors[] = {
	{ "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEFUypMLjulacXv5hlGN/Xe+n/X/+/"
	  "GNxJrBNsInCcH9 tandem-test-ed25519",
	  "25f297d0937d9d10ebd4a90dcdb5d66e7ec28e59f34156634ae275e02cee23ce",
	  "256 SHA256:JfKX0JN9nRDr1KkNzbXWbn7CjlnzQVZjSuJ14CzuI84 "
	  "tandem-test-ed25519 (ED25519)", HOSTKEY_ED25519 },
	{ "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYA"
	  "AABBBP31wq1B+RGiLv/hF6LGRtXKaK8nXPdm7iATJoiF8YotfFoldx4i2SXrVD9EdkIA"
	  "r+1erAhAwANOYQRNYqGhhiY= tandem-test-ecdsa-256",
	  "d719f870320c9e3e26a615cc2d9c265cf21a5482f753b0cd35e344992735f6e5",
	  "256 SHA256:1xn4cDIMnj4mphXMLZwmXPIaVIL3U7DNNeNEmSc19uU "
	  "tandem-test-ecdsa-256 (ECDSA)", HOSTKEY_ECDSA_256 },
	{ "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQA"
	  "AABhBOcdn9YFNZ/CtmqeWOs/yXz23T5zfqGRNNTFwzTvimhqCE/VJlF+ePngp5RNUp0U"
	  "NPohynk0V6O7Exaj67cmmqNh9Q4qvp9PhC43EXqpqeoZDTWqG4ap1eG/61+JAOS3Jw=="
	  " tandem-test-ecdsa-384",
	  "9c1bec9913a7778cbef30e08e56b60992caf8148033ea12ebd604ac8ef7fce39",
	  "384 SHA256:nBvsmROnd4y+8w4I5WtgmSyvgUgDPqEuvWBKyO9/zjk "
	  "tandem-test-ecdsa-384 (ECDSA)", HOSTKEY_ECDSA_384 },
	{ "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEA"
	  "AACFBAEaRXAtvqvooF2l1mAIz5ayKknCJbjsfmKwF3dSHn3qUPu5o+vPwlIw4ckCnrza"
	  "QNmFLFACDx/XeFoRrWoqMJtTSwCoGo4Ug/duMC22+qlCdvGWGYQmP5WSb9k1L+15Geqf"
	  "Tv3uUk00nNYSOvgAeeeLGgCitwqUuAaG/b4gfkuU2CSunQ== tandem-test-ecdsa-521",
	  "e26cc2d9b5716af0dbd00d47a203aa8bf459c46d51494feb5f4d23cd9a2ad2fa",
	  "521 SHA256:4mzC2bVxavDb0A1HogOqi/RZxG1RSU/rX00jzZoq0vo "
	  "tandem-test-ecdsa-521 (ECDSA)", HOSTKEY_ECDSA_521 },
	{ "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDP6Lg9pWM9HO6e2p/PejKn+YxS6J4N"
	  "F6f7apFDB8tSt/pQYBBuGOeWchCCZWA723AdH3OaYMhtkK9wyzegfIjVL7RnGqyCV7J4"
	  "IuVPuHfWCN2VNy8JRe7lIKTyjfV+5lc+Ao2NfRmAYI/v/YWJuPbzmD2PXrq7BJZQWRTK"
	  "E/dVI79fghNPfTiB1vmIoppM+6Oe3ZW7ZFf3KOF3E1N0Vawjbahf38e/XU/pBlRoZnPg"
	  "vL93NdS5GqH7xzTyEi5svWmlxrRS8pcwr2tB+nFKYYh8h6bUx+qjCAFBEV+T95iQ+5bM"
	  "Nmm/G4dRxXPDzlVZ4EuUDfCfhtkJRaiMPIbamlkX tandem-test-rsa-2048",
	  "5fb61f0859465d1cd65d1d634e77aa4e700d491ed42ace0af741b0c6cea38df5",
	  "2048 SHA256:X7YfCFlGXRzWXR1jTneqTnANSR7UKs4K90Gwxs6jjfU "
	  "tandem-test-rsa-2048 (RSA)", HOSTKEY_RSA },
	{ "ssh-dss AAAAB3NzaC1kc3MAAACBAKxXQEQXWuBCMrw2Us5iNGu9anBBtkTW81X+Q0Vb"
	  "xkdq2DCtAgTtDZzbd35JcnsgJ+6Im3XjP0eNG+WIsxx7iZavezxavFFosmp+UDdG3gjT"
	  "BUBGnK2PhkACuCSHO9wUgtCpzxt8FJoqP3jaaqLutVsvGFk/gWrYV3xoiphGkyp5AAAA"
	  "FQDv3TPOh0fG7W/eUC8naKZRV44cAwAAAIBnbdJ16/ikxJFFvtFr3pJ6c4+ADtKGYyFR"
	  "Wg8U3OM4ApOTtVAhS/XDB+xOVqFGS5hUc4ucR3WjPmXIPnvssIKMzekK1nBXYa75n1hQ"
	  "qkINMsefC5sYbCmCBad2jW/gRIq4nNUMrlmliSb4z757MR15ZU0H9oL1IzD7RxGoLPrP"
	  "LAAAAIA2Xl79WNg67q9rtWrAKj4kHTov3mS+6AU65CvNVCkDf5w9nmO/WdGKq4qXZy5T"
	  "QFzNnSemVPgnfz3nVX3nF+KXs3oyclgguu3VMtJ4naAY5AnAs/uIt4KL/Uw+0dkOnV3e"
	  "F/eog5zJ7Ag0qZMCLHS9vt9Gafw/86i6SCTjAmyB4w== tandem-test-dsa",
	  "bfe017c9ecc1e09ffdb0c22118d8179fccfa9084a881388ae688fb28959d5023",
	  "1024 SHA256:v+AXyezB4J/9sMIhGNgXn8z6kISogTiK5oj7KJWdUCM "
	  "tandem-test-dsa (DSA)", HOSTKEY_DSS },
};
#define NVECTORS	(sizeof(vectors) / sizeof(vectors[0]))

/* What libssh2 1.10 (Debian 12) lists for LIBSSH2_METHOD_HOSTKEY. */
static const char *const libssh2_110[] = {
	"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	"ecdsa-sha2-nistp256-cert-v01@openssh.com",
	"ecdsa-sha2-nistp384-cert-v01@openssh.com",
	"ecdsa-sha2-nistp521-cert-v01@openssh.com",
	"ssh-ed25519", "ssh-rsa", "ssh-dss",
};
#define NLIBSSH2_110	(sizeof(libssh2_110) / sizeof(libssh2_110[0]))

static size_t
unhex(const char *hex, unsigned char *out, size_t cap)
{
	size_t n = 0;
	unsigned int byte;

	for (; hex[0] && hex[1]; hex += 2) {
		assert_true(n < cap);
		assert_int_equal(sscanf(hex, "%2x", &byte), 1);
		out[n++] = (unsigned char)byte;
	}
	assert_int_equal(*hex, '\0');
	return n;
}

/* The n-th space-separated field of s, into buf. */
static const char *
field(const char *s, int n, char *buf, size_t len)
{
	const char *end;

	for (; n > 0; n--) {
		s = strchr(s, ' ');
		assert_non_null(s);
		s++;
	}
	end = strchr(s, ' ');
	if (end == NULL)
		end = s + strlen(s);
	assert_true((size_t)(end - s) < len);
	memcpy(buf, s, (size_t)(end - s));
	buf[end - s] = '\0';
	return buf;
}

/* Whether the comma-separated list has alg as a whole item. */
static int
has_alg(const char *list, const char *alg)
{
	size_t n = strlen(alg);
	const char *p;

	for (p = list; (p = strstr(p, alg)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

static void
test_fingerprint_as_ssh_keygen(void **state)
{
	unsigned char digest[64];
	char fp[HOSTKEY_FP_LEN], want[128];
	size_t i;

	(void)state;
	for (i = 0; i < NVECTORS; i++) {
		const struct vector *v = &vectors[i];

		assert_int_equal(unhex(v->sha256, digest, sizeof(digest)),
		    HOSTKEY_SHA256_LEN);
		assert_int_equal(hostkey_fingerprint(digest, HOSTKEY_SHA256_LEN,
		    fp, sizeof(fp)), 0);
		assert_string_equal(fp, field(v->keygen_l, 1, want,
		    sizeof(want)));
		assert_int_equal(strlen(fp), HOSTKEY_FP_LEN - 1);
	}
}

/*
 * The label is what the daemon's messages call the type: ssh-keygen's
 * name for it in lower case, but "dss" for DSA, as libssh2 and the SSH
 * protocol (ssh-dss) say.
 */
static void
test_type_labels(void **state)
{
	char kg[32];
	size_t i, k;

	(void)state;
	for (i = 0; i < NVECTORS; i++) {
		const struct vector *v = &vectors[i];
		const char *p = strrchr(v->keygen_l, '(');

		assert_non_null(p);
		for (k = 0; p[k + 1] && p[k + 1] != ')'; k++)
			kg[k] = (char)(p[k + 1] | 0x20);
		kg[k] = '\0';
		if (strcmp(kg, "dsa") == 0)
			strcpy(kg, "dss");
		assert_string_equal(hostkey_type_label(v->type), kg);
	}
	assert_string_equal(hostkey_type_label(HOSTKEY_UNKNOWN),
	    "unknown type");
	assert_string_equal(hostkey_type_label((enum hostkey_type)42),
	    "unknown type");
}

/* Each type's algorithms include the name its keys carry. */
static void
test_type_algs(void **state)
{
	char name[64];
	size_t i;

	(void)state;
	for (i = 0; i < NVECTORS; i++) {
		const struct vector *v = &vectors[i];

		assert_non_null(hostkey_type_algs(v->type));
		assert_true(has_alg(hostkey_type_algs(v->type),
		    field(v->pub, 0, name, sizeof(name))));
	}
	/* RSA keys sign with SHA-2 first (RFC 8332), SHA-1 last. */
	assert_string_equal(hostkey_type_algs(HOSTKEY_RSA),
	    "rsa-sha2-512,rsa-sha2-256,ssh-rsa");
	assert_null(hostkey_type_algs(HOSTKEY_UNKNOWN));
	assert_null(hostkey_type_algs((enum hostkey_type)-1));
}

/* RFC 4648, section 10. */
static void
test_base64_rfc4648(void **state)
{
	static const char *const in[] = { "", "f", "fo", "foo", "foob",
	    "fooba", "foobar" };
	static const char *const padded[] = { "", "Zg==", "Zm8=", "Zm9v",
	    "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	static const char *const bare[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg",
	    "Zm9vYmE", "Zm9vYmFy" };
	char buf[16];
	size_t i;

	(void)state;
	for (i = 0; i < 7; i++) {
		const unsigned char *u = (const unsigned char *)in[i];

		assert_int_equal(base64_encode(u, strlen(in[i]), 1, buf,
		    sizeof(buf)), (int)strlen(padded[i]));
		assert_string_equal(buf, padded[i]);
		assert_int_equal(base64_encode(u, strlen(in[i]), 0, buf,
		    sizeof(buf)), (int)strlen(bare[i]));
		assert_string_equal(buf, bare[i]);
	}
}

/* Real key blobs give back the text of their .pub line, '+' and '/' too. */
static void
test_base64_key_blobs(void **state)
{
	static const char *const blobs[] = {
	    "0000000b7373682d65643235353139000000204154ca930b8ee95a717bf98651"
	    "8dfd77be9ff5fffbf18dc49ac136c22709c1fd",
	    "0000001365636473612d736861322d6e69737470323536000000086e69737470"
	    "3235360000004104fdf5c2ad41f911a22effe117a2c646d5ca68af275cf766ee"
	    "2013268885f18a2d7c5a25771e22d925eb543f44764200afed5eac0840c0034e"
	    "61044d62a1a18626",
	};
	unsigned char blob[256];
	char out[512], want[512];
	size_t i, n;

	(void)state;
	for (i = 0; i < 2; i++) {
		n = unhex(blobs[i], blob, sizeof(blob));
		assert_true(base64_encode(blob, n, 1, out, sizeof(out)) > 0);
		assert_string_equal(out, field(vectors[i].pub, 1, want,
		    sizeof(want)));
	}
}

/* A buffer one short is refused and left as it was; an exact one fits. */
static void
test_base64_buffer_edges(void **state)
{
	unsigned char in[5] = { 0xfb, 0xff, 0xbf, 0x00, 0x01 };
	char buf[16];
	size_t n;

	(void)state;
	for (n = 0; n <= 5; n++) {
		int want = (int)((n + 2) / 3 * 4), bare = (int)(n / 3 * 4 +
		    (n % 3 ? n % 3 + 1 : 0));

		memset(buf, 'x', sizeof(buf));
		assert_int_equal(base64_encode(in, n, 1, buf, (size_t)want),
		    -1);
		assert_int_equal(buf[0], 'x');
		assert_int_equal(base64_encode(in, n, 1, buf,
		    (size_t)want + 1), want);
		assert_int_equal(buf[want], '\0');
		assert_int_equal(base64_encode(in, n, 0, buf, (size_t)bare),
		    -1);
		assert_int_equal(base64_encode(in, n, 0, buf,
		    (size_t)bare + 1), bare);
		assert_int_equal(buf[bare], '\0');
	}
	assert_int_equal(base64_encode(in, 3, 1, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "+/+/");
	assert_int_equal(base64_encode(in, 0, 1, buf, 0), -1);
}

static void
test_fingerprint_refuses(void **state)
{
	unsigned char digest[HOSTKEY_SHA256_LEN + 1] = { 0 };
	char fp[HOSTKEY_FP_LEN + 8];

	(void)state;
	memset(fp, 'x', sizeof(fp));
	/* an MD5 or a SHA-1 digest, or one byte too many */
	assert_int_equal(hostkey_fingerprint(digest, 16, fp, sizeof(fp)), -1);
	assert_int_equal(hostkey_fingerprint(digest, 20, fp, sizeof(fp)), -1);
	assert_int_equal(hostkey_fingerprint(digest, 33, fp, sizeof(fp)), -1);
	assert_int_equal(hostkey_fingerprint(digest, 32, fp,
	    HOSTKEY_FP_LEN - 1), -1);
	assert_int_equal(fp[0], 'x');
	assert_int_equal(hostkey_fingerprint(digest, 32, fp, HOSTKEY_FP_LEN),
	    0);
	assert_string_equal(fp,
	    "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
}

static void
test_known_name(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(hostkey_known_name("10.77.0.2", 22, buf, sizeof(buf)),
	    0);
	assert_string_equal(buf, "10.77.0.2");
	assert_int_equal(hostkey_known_name("10.77.0.2", 22222, buf,
	    sizeof(buf)), 0);
	assert_string_equal(buf, "[10.77.0.2]:22222");
	assert_int_equal(hostkey_known_name("spark-2.lan", 2222, buf,
	    sizeof(buf)), 0);
	assert_string_equal(buf, "[spark-2.lan]:2222");
	assert_int_equal(hostkey_known_name("fe80::1", 2222, buf, sizeof(buf)),
	    0);
	assert_string_equal(buf, "[fe80::1]:2222");
	/* "[a]:2222" is 8 characters: 9 bytes fit, 8 do not. */
	assert_int_equal(hostkey_known_name("a", 2222, buf, 9), 0);
	assert_int_equal(hostkey_known_name("a", 2222, buf, 8), -1);
	assert_int_equal(hostkey_known_name("ab", 22, buf, 3), 0);
	assert_int_equal(hostkey_known_name("ab", 22, buf, 2), -1);
}

static void
prefer(const int known[HOSTKEY_NTYPES], const char *const *sup, size_t nsup,
    const char *want)
{
	struct sbuf b;

	sbuf_init(&b);
	hostkey_prefer(known, sup, nsup, &b);
	assert_string_equal(b.s ? b.s : "", want);
	sbuf_free(&b);
}

static void
test_prefer(void **state)
{
	int known[HOSTKEY_NTYPES] = { 0 };
	static const char *const with_sha2[] = { "ssh-rsa", "rsa-sha2-256",
	    "ssh-ed25519", "rsa-sha2-512" };
	static const char *const prefixes[] = { "ssh-ed2551", "ssh-ed25519x",
	    "ecdsa-sha2-nistp25", "ssh-rs", "" };

	(void)state;
	/* Nothing known: libssh2's own order stands. */
	prefer(known, libssh2_110, NLIBSSH2_110, "");
	/* ed25519 only in known_hosts (what `ssh` writes): asked first. */
	known[HOSTKEY_ED25519] = 1;
	prefer(known, libssh2_110, NLIBSSH2_110, "ssh-ed25519,"
	    "ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,"
	    "ssh-rsa,ssh-dss");
	/* Several known: in OpenSSH's order, then the rest. */
	known[HOSTKEY_DSS] = known[HOSTKEY_ECDSA_384] = 1;
	prefer(known, libssh2_110, NLIBSSH2_110, "ssh-ed25519,"
	    "ecdsa-sha2-nistp384,ssh-dss,ecdsa-sha2-nistp256,"
	    "ecdsa-sha2-nistp521,ssh-rsa");
	/* RSA: the SHA-2 signatures when the library has them. */
	memset(known, 0, sizeof(known));
	known[HOSTKEY_RSA] = 1;
	prefer(known, with_sha2, 4, "rsa-sha2-512,rsa-sha2-256,ssh-rsa,"
	    "ssh-ed25519");
	prefer(known, libssh2_110, NLIBSSH2_110, "ssh-rsa,"
	    "ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,"
	    "ecdsa-sha2-nistp521,ssh-dss");
	/* Names are matched whole: neither prefixes nor extensions count. */
	prefer(known, prefixes, 5, "");
	/* A known type the library lacks is left out, not asked for. */
	memset(known, 0, sizeof(known));
	known[HOSTKEY_ED25519] = 1;
	prefer(known, with_sha2 + 2, 1, "ssh-ed25519");
	prefer(known, with_sha2, 1, "ssh-rsa");
	prefer(known, NULL, 0, "");
	/* Every type known: OpenSSH's order exactly. */
	memset(known, 1, sizeof(known));
	prefer(known, libssh2_110, NLIBSSH2_110, "ssh-ed25519,"
	    "ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,"
	    "ssh-rsa,ssh-dss");
}

/*
 * A key blob as libssh2_session_hostkey gives it: the line written is the
 * .pub file's ("ssh-keygen -q -t ed25519" printed this one), under the
 * name known_hosts files the node as.
 */
static void
test_known_line(void **state)
{
	static const unsigned char blob[] = { 0x00, 0x00, 0x00, 0x0b, 0x73, 0x73, 0x68, 0x2d, 0x65, 0x64, 0x32, 0x35, 0x35, 0x31, 0x39, 0x00, 0x00, 0x00, 0x20, 0x34, 0x2a, 0x1e, 0x4d, 0x8f, 0xa9, 0x04, 0xe5, 0xcd, 0x7b, 0x8d, 0x95, 0x3c, 0x4b, 0xb0, 0x0c, 0x6a, 0x8d, 0xdf, 0x90, 0x8c, 0x26, 0xb2, 0x35, 0x8d, 0x67, 0x49, 0xa8, 0x9d, 0x07, 0x68, 0x0a };
	struct sbuf b;
	char type[64];

	(void)state;
	assert_int_equal(hostkey_blob_type(blob, sizeof(blob), type,
	    sizeof(type)), 0);
	assert_string_equal(type, "ssh-ed25519");
	sbuf_init(&b);
	assert_int_equal(hostkey_known_line("10.77.7.1", 22, blob, sizeof(blob),
	    &b), 0);
	assert_int_equal(hostkey_known_line("10.77.7.2", 2222, blob,
	    sizeof(blob), &b), 0);
	assert_string_equal(b.s, "10.77.7.1 ssh-ed25519 "
	    "AAAAC3NzaC1lZDI1NTE5AAAAIDQqHk2PqQTlzXuNlTxLsAxqjd+QjCayNY1nSaidB2gK"
	    "\n[10.77.7.2]:2222 ssh-ed25519 "
	    "AAAAC3NzaC1lZDI1NTE5AAAAIDQqHk2PqQTlzXuNlTxLsAxqjd+QjCayNY1nSaidB2gK"
	    "\n");
	/* a blob without a readable type name */
	assert_int_equal(hostkey_blob_type(blob, 3, type, sizeof(type)), -1);
	assert_int_equal(hostkey_blob_type((const unsigned char *)
	    "\0\0\0\x40ssh", 7, type, sizeof(type)), -1);
	assert_int_equal(hostkey_blob_type(blob, sizeof(blob), type, 8), -1);
	assert_int_equal(hostkey_known_line("h", 22, blob, 2, &b), -1);
	sbuf_free(&b);
	assert_true(hostkey_fp_valid("SHA256:v/mWte6ij48ZfXQN3yF51n8GaNPd98W7"
	    "Kqa6Q9bUcoM"));
	assert_false(hostkey_fp_valid("SHA256:v/mWte6ij48ZfXQN3yF51n8GaNPd98W7"
	    "Kqa6Q9bUco"));
	assert_false(hostkey_fp_valid("MD5:v/mWte6ij48ZfXQN3yF51n8GaNPd98W7Kq"
	    "a6Q9bUcoMxxx"));
	assert_false(hostkey_fp_valid("SHA256:v/mWte6ij48ZfXQN3yF51n8GaNPd98W7"
	    "Kqa6Q9bUco;"));
}

/*
 * Issue 43 item 8: a 0644 key and a 0666 known_hosts owned by nobody
 * passed --check. As ssh judges them, and as the token file is judged.
 */
static void
test_file_perms(void **state)
{
	char err[ERRLEN];

	(void)state;
	/* the key: the daemon's own 0600/0400; root's 0640 for User=tandem */
	assert_int_equal(sshfile_perms_ok(1, 0, 0100600, 0, "ssh.identity_file",
	    "/k", err, sizeof(err)), 0);
	assert_int_equal(sshfile_perms_ok(1, 0, 0100400, 0, "ssh.identity_file",
	    "/k", err, sizeof(err)), 0);
	assert_int_equal(sshfile_perms_ok(1, 0, 0100640, 999,
	    "ssh.identity_file", "/k", err, sizeof(err)), 0);
	assert_int_equal(sshfile_perms_ok(1, 0, 0100644, 0, "ssh.identity_file",
	    "/k", err, sizeof(err)), -1);
	assert_string_equal(err, "ssh.identity_file /k has mode 0644: others "
	    "can read the private key; refused, as ssh refuses it (chmod 600 "
	    "/k)");
	assert_int_equal(sshfile_perms_ok(1, 0, 0100640, 0, "ssh.identity_file",
	    "/k", err, sizeof(err)), -1);
	assert_int_equal(sshfile_perms_ok(1, 0, 0100604, 999,
	    "ssh.identity_file", "/k", err, sizeof(err)), -1);
	assert_int_equal(sshfile_perms_ok(1, 65534, 0100600, 0,
	    "ssh.identity_file", "/k", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "owned by uid 65534"));
	assert_non_null(strstr(err, "chown root /k"));
	/* known_hosts: anyone may read it, only its owner write it */
	assert_int_equal(sshfile_perms_ok(0, 0, 0100644, 0,
	    "ssh.known_hosts_file", "/kh", err, sizeof(err)), 0);
	assert_int_equal(sshfile_perms_ok(0, 999, 0100600, 999,
	    "ssh.known_hosts_file", "/kh", err, sizeof(err)), 0);
	assert_int_equal(sshfile_perms_ok(0, 0, 0100666, 0,
	    "ssh.known_hosts_file", "/kh", err, sizeof(err)), -1);
	assert_string_equal(err, "ssh.known_hosts_file /kh has mode 0666: "
	    "others can change which host keys are trusted and so read every "
	    "session; refused (chmod 644 /kh)");
	assert_int_equal(sshfile_perms_ok(0, 0, 0100664, 0,
	    "ssh.known_hosts_file", "/kh", err, sizeof(err)), -1);
	assert_int_equal(sshfile_perms_ok(0, 65534, 0100644, 0,
	    "ssh.known_hosts_file", "/kh", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "owned by uid 65534"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fingerprint_as_ssh_keygen),
		cmocka_unit_test(test_type_labels),
		cmocka_unit_test(test_type_algs),
		cmocka_unit_test(test_base64_rfc4648),
		cmocka_unit_test(test_base64_key_blobs),
		cmocka_unit_test(test_base64_buffer_edges),
		cmocka_unit_test(test_fingerprint_refuses),
		cmocka_unit_test(test_known_name),
		cmocka_unit_test(test_prefer),
		cmocka_unit_test(test_known_line),
		cmocka_unit_test(test_file_perms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
