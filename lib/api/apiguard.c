/*
 * The API's refusals before it acts (apiguard.h).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "apiguard.h"

#define HOST_MAX	256

/*
 * Splits an authority (RFC 3986 3.2: host [":" port]) into its host, the
 * brackets of an IPv6 literal removed; -1 when it is not one.
 */
static int
authority_host(const char *a, char *host, size_t len, int *bracketed)
{
	const char *end, *colon, *p;
	size_t n;

	*bracketed = a[0] == '[';
	if (*bracketed) {
		if ((end = strchr(a, ']')) == NULL)
			return -1;
		a++;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] != '\0' && colon == NULL)
			return -1;
	} else {
		colon = strchr(a, ':');
		end = colon ? colon : a + strlen(a);
	}
	if (colon != NULL) {
		/* RFC 3986: port = *DIGIT; a port may be left empty */
		for (p = colon + 1; *p; p++)
			if (*p < '0' || *p > '9')
				return -1;
		if (p - colon - 1 > 5)
			return -1;
	}
	n = (size_t)(end - a);
	if (n == 0 || n >= len)
		return -1;
	memcpy(host, a, n);
	host[n] = '\0';
	return 0;
}

/* An address, not a name that DNS (or a web page's DNS) could move. */
static int
host_is_address(const char *authority)
{
	char host[HOST_MAX];
	unsigned char addr[16];
	size_t n;
	int v6;

	if (authority_host(authority, host, sizeof(host), &v6) == -1)
		return 0;
	if (v6)
		return inet_pton(AF_INET6, host, addr) == 1;
	if (inet_pton(AF_INET, host, addr) == 1)
		return 1;
	n = strlen(host);
	if (host[n - 1] == '.')
		host[--n] = '\0';
	return strcasecmp(host, "localhost") == 0 || (n > 10 &&
	    strcasecmp(host + n - 10, ".localhost") == 0);
}

/* An IP literal, as bytes; 0 when it is none. */
static int
ip_of(const char *s, int v6, unsigned char addr[16])
{
	memset(addr, 0, 16);
	if (v6)
		return inet_pton(AF_INET6, s, addr) == 1 ? AF_INET6 : 0;
	return inet_pton(AF_INET, s, addr) == 1 ? AF_INET : 0;
}

static int
ip_is_loopback(int af, const unsigned char *a)
{
	static const unsigned char one6[16] = { [15] = 1 };
	static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (af == AF_INET)
		return a[0] == 127;
	return memcmp(a, one6, 16) == 0 || (memcmp(a, mapped, 12) == 0 &&
	    a[12] == 127);
}

static int
ip_is_unspecified(int af, const unsigned char *a)
{
	static const unsigned char zero[16];

	return memcmp(a, zero, af == AF_INET ? 4 : 16) == 0;
}

int
apiguard_host_ok(const char *host, const char *listen, char *err,
    size_t errlen)
{
	char name[HOST_MAX];
	unsigned char a[16], l[16];
	int v6, af, laf;

	if (host == NULL)
		return 0;
	if (host_is_address(host) &&
	    authority_host(host, name, sizeof(name), &v6) == 0) {
		if ((af = ip_of(name, v6, a)) == 0)
			return 0;	/* localhost, *.localhost */
		laf = listen ? ip_of(listen, strchr(listen, ':') != NULL, l) :
		    0;
		if (ip_is_loopback(af, a) || (laf && ip_is_unspecified(laf, l)) ||
		    (laf == af && memcmp(a, l, 16) == 0))
			return 0;
	}
	seterr(err, errlen, "Host %s is not this API's address (localhost, a "
	    "loopback address or listen %s): a web page whose DNS name was "
	    "pointed at this host (DNS rebinding) must not read it", host,
	    listen ? listen : "?");
	return -1;
}

/* The authority without a port its scheme implies (RFC 6454 4). */
static size_t
without_default_port(const char *a, const char *dflt)
{
	size_t n = strlen(a), d = strlen(dflt);

	if (n > d && strcmp(a + n - d, dflt) == 0)
		return n - d;
	return n;
}

static int
same_origin(const char *origin, const char *host)
{
	const char *a, *dflt;
	size_t an, hn;

	if (strncasecmp(origin, "http://", 7) == 0) {
		a = origin + 7;
		dflt = ":80";
	} else if (strncasecmp(origin, "https://", 8) == 0) {
		a = origin + 8;
		dflt = ":443";
	} else
		return 0;
	an = without_default_port(a, dflt);
	hn = without_default_port(host, dflt);
	return an == hn && an > 0 && strncasecmp(a, host, an) == 0;
}

int
apiguard_post_ok(const char *host, const char *origin, char *err,
    size_t errlen)
{
	if (host != NULL && !host_is_address(host)) {
		seterr(err, errlen, "Host %s is not an address of this API: a "
		    "POST must name it by IP address or localhost, as a DNS "
		    "name can be pointed at it by a web page (DNS rebinding)",
		    host);
		return -1;
	}
	if (origin == NULL)
		return 0;
	if (host == NULL || !same_origin(origin, host)) {
		seterr(err, errlen, "Origin %s is not this API's own page "
		    "(http://%s): POST from another site's page is refused",
		    origin, host ? host : "?");
		return -1;
	}
	return 0;
}

int
apiguard_since(const char *s, uint64_t *seq, char *err, size_t errlen)
{
	uint64_t v = 0;
	const char *p;

	for (p = s; *p; p++) {
		if (*p < '0' || *p > '9' || p - s >= 19)
			break;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s || *p != '\0' || v > INT64_MAX) {
		seterr(err, errlen, "since must be an event sequence number: "
		    "digits only, 0 to %lld", (long long)INT64_MAX);
		return -1;
	}
	*seq = v;
	return 0;
}
