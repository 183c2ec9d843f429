/*
 * The HTTP API's answers: a body MHD frees, a document shared by every
 * client asking while its key holds, the JSON message, and the 503 when
 * large documents must wait (issue 43, item 3).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd_int.h"
#include "log.h"
#include "utf8.h"

static void
held_free(void *cls)
{
	struct held *h = cls;

	httpd_state.queued -= h->len;
	free(h->body);
	free(h);
}

/* A response that takes body, its bytes counted in httpd_state.queued. */
struct MHD_Response *
httpd_reply_new(char *body, size_t len)
{
	struct held *h = xmalloc(sizeof(*h));
	struct MHD_Response *r;

	h->body = body;
	h->len = len;
	httpd_state.queued += len;
	r = MHD_create_response_from_buffer_with_free_callback_cls(len, body,
	    held_free, h);
	if (r == NULL)
		held_free(h);
	return r;
}

int
httpd_reply_fresh(const struct shared *sh, uint64_t k1, uint64_t k2)
{
	return sh->r != NULL && sh->k1 == k1 && sh->k2 == k2;
}

/* Keeps r for its key; the one it replaces lives on while it is sent. */
void
httpd_reply_keep(struct shared *sh, struct MHD_Response *r, uint64_t k1,
    uint64_t k2)
{
	if (sh->r != NULL)
		MHD_destroy_response(sh->r);
	sh->r = r;
	sh->k1 = k1;
	sh->k2 = k2;
}

struct MHD_Response *
httpd_reply_typed(unsigned code, const char *type, char *body)
{
	/* /status, /events and the rest carry vLLM's words: never its key */
	char *shown = log_mask(body);
	struct MHD_Response *r;

	free(body);
	r = httpd_reply_new(shown, strlen(shown));

	if (r == NULL)
		return NULL;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (code == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	return r;
}

enum MHD_Result
httpd_reply(struct MHD_Connection *c, unsigned code, const char *type,
    char *body)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if ((r = httpd_reply_typed(code, type, body)) == NULL)
		return MHD_NO;
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * A message may quote a request's own header (a Host refused), whose bytes
 * need not be UTF-8: it is mended, as json_pack would drop it.
 */
enum MHD_Result
httpd_reply_json(struct MHD_Connection *c, unsigned code, const char *msg)
{
	char text[ERRLEN];
	json_t *j;
	char *s;
	enum MHD_Result r;

	utf8_copy(text, sizeof(text), msg);
	j = json_pack("{s:s}", code < 300 ? "ok" : "error", text);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	r = httpd_reply(c, code, "application/json", s ? xprintf("%s\n", s) :
	    xstrdup("{}\n"));
	free(s);
	return r;
}

/*
 * 1, with a 503 queued in *ret, when a large document must wait: its
 * answers already wait for clients that do not read them (QUEUED_MAX), or
 * this turn spent its rendering budget. Said once a minute at most.
 */
int
httpd_reply_busy(struct MHD_Connection *c, enum MHD_Result *ret)
{
	struct MHD_Response *r;
	uint64_t now;

	now = mono_ms();
	if (now - httpd_state.render_window >= RENDER_WINDOW_MS) {
		httpd_state.render_window = now;
		httpd_state.render_ms = 0;
	}
	if (httpd_state.queued < QUEUED_MAX &&
	    httpd_state.render_ms < RENDER_BUDGET_MS)
		return 0;
	httpd_state.busy++;
	if (httpd_state.busy_warned == 0 ||
	    now - httpd_state.busy_warned >= EVICT_WARN_MS) {
		log_warnx("API: busy: / and /events answer 503 for now "
		    "(%llu so far): %zu bytes of answers wait for clients "
		    "that do not read them (at most %u), rendering took %llu "
		    "ms of this second (at most %d)",
		    (unsigned long long)httpd_state.busy, httpd_state.queued,
		    QUEUED_MAX, (unsigned long long)httpd_state.render_ms,
		    RENDER_BUDGET_MS);
		httpd_state.busy_warned = now;
	}
	r = httpd_reply_typed(503, "application/json", xstrdup("{\"error\":"
	    "\"busy: answers wait for clients that do not read them; retry\"}"
	    "\n"));
	if (r == NULL) {
		*ret = MHD_NO;
		return 1;
	}
	MHD_add_response_header(r, "Retry-After", "1");
	*ret = MHD_queue_response(c, 503, r);
	MHD_destroy_response(r);
	return 1;
}

/* A document kept in sh, for its key, and sent to every client asking. */
enum MHD_Result
httpd_reply_shared(struct MHD_Connection *c, struct shared *sh, uint64_t k1,
    uint64_t k2, const char *type, char *body)
{
	struct MHD_Response *r;

	if ((r = httpd_reply_typed(200, type, body)) == NULL)
		return MHD_NO;
	httpd_reply_keep(sh, r, k1, k2);
	return MHD_queue_response(c, 200, sh->r);
}
