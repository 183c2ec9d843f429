/*
 * What the HTTP API refuses before it acts, without I/O: a POST whose Host
 * or Origin says it did not come from this API's own page or a local
 * client (DNS rebinding, another site's page), and a /events?since= that
 * is not a sequence number. httpd.c asks these with the request's headers.
 */
#ifndef TANDEM_APIGUARD_H
#define TANDEM_APIGUARD_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/*
 * Whether any request over TCP may be answered, from its Host header (NULL
 * when absent: HTTP/1.0) and the configured listen address (an IP
 * literal). Host must name this API as no web page's DNS can: localhost
 * or a name under .localhost, a loopback address (127.0.0.0/8, ::1), or
 * the listen address itself (any address when listen is 0.0.0.0 or ::),
 * with any port (a tunnel picks its own). Anything else is what DNS
 * rebinding sends: a page whose name was pointed at this host. 0, or -1
 * with the reason in err.
 */
int	 apiguard_host_ok(const char *host, const char *listen, char *err,
	    size_t errlen);

/*
 * Whether a POST may go on, from its Host and Origin headers (NULL when
 * absent). Host, when sent, must name an address: an IPv4 or bracketed
 * IPv6 literal, `localhost` or a name under `.localhost` (RFC 6761 6.3:
 * always loopback), with any port (an ssh -L tunnel or a proxy picks its
 * own). A DNS name is refused: a web page can point one at 127.0.0.1 (DNS
 * rebinding) and its scripts would then reach the API as same-origin. The
 * listen address is an IP literal, so it always passes. Origin, when sent
 * (browsers send it with every POST), must be this very API: "http://" or
 * "https://" followed by the Host header's value; "null" and every other
 * site are refused. Clients that send neither (curl, tandemctl) pass:
 * no browser leaves out Host. 0, or -1 with the reason in err.
 */
int	 apiguard_post_ok(const char *host, const char *origin, char *err,
	    size_t errlen);

/*
 * /events?since=: decimal digits only (no sign, space or exponent), at
 * most INT64_MAX, the largest sequence number /events can show. 0 with
 * *seq set, or -1 with a message.
 */
int	 apiguard_since(const char *s, uint64_t *seq, char *err,
	    size_t errlen);

#endif
