/*
 * The status page (GET /): one HTML document, rendered on the server from
 * the same /status document and /events list the API serves, so the state
 * shows without JavaScript; the page's script then keeps it live. No I/O
 * here: the template, the data and the nonce come from the caller.
 */
#ifndef TANDEM_STATUSPAGE_H
#define TANDEM_STATUSPAGE_H

#include <stddef.h>
#include <jansson.h>

#include "util.h"

/* The page's sources, built into the binary (daemon/api/page/). */
struct page_tmpl {
	const char	*html;		/* with {{marker}}s */
	size_t		 html_len;
	const char	*css;
	size_t		 css_len;
	const char	*js;
	size_t		 js_len;
};

/* How far back the page's timeline can look, in seconds. */
#define PAGE_HISTORY_S	(24 * 3600)

/*
 * Appends the page to out: status is the /status document, events the
 * /events list (oldest first), nonce the Content-Security-Policy nonce of
 * this answer (letters and digits only), now the wall clock. 0, or -1 with
 * err when the template names a marker this code does not know.
 */
int	statuspage_render(struct sbuf *out, const struct page_tmpl *,
	    json_t *status, const json_t *events, const char *nonce,
	    double now, char *err, size_t errlen);

/* Text as HTML character data or a quoted attribute value. */
void	html_escape(struct sbuf *, const char *);

#endif
