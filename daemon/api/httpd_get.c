/*
 * The HTTP API's reads (docs/api.md): GET /, /status, /healthz, /metrics,
 * /events, /rebuilds/last and /bundle.
 */
#include <sys/random.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd_int.h"
#include "api.h"
#include "apiguard.h"
#include "bundle_store.h"
#include "cluster.h"
#include "log.h"
#include "statuspage.h"

/* The status page's sources (daemon/api/page/), built in by the Makefile (xxd -i). */
extern unsigned char	 status_html[], status_css[], status_js[];
extern unsigned int	 status_html_len, status_css_len, status_js_len;

/*
 * GET /: the status page, rendered from the same /status document and
 * /events list as the API, so it shows the state before any script runs.
 * Its one inline script and style carry a nonce fresh for each answer, and
 * the policy allows nothing else: no other script, no inline handler, no
 * other host; the script may only talk back to this API.
 */
enum MHD_Result
httpd_get_page(struct cluster *cl, struct MHD_Connection *c)
{
	struct page_tmpl tmpl = {
		(const char *)status_html, status_html_len,
		(const char *)status_css, status_css_len,
		(const char *)status_js, status_js_len,
	};
	unsigned char rnd[16];
	char nonce[2 * sizeof(rnd) + 1], err[ERRLEN];
	struct MHD_Response *r;
	enum MHD_Result ret;
	struct sbuf b;
	json_t *st = NULL, *ev;
	char *s, *csp, *page;
	size_t i, len;
	uint64_t t0;
	int rc;

	if (httpd_reply_busy(c, &ret))
		return ret;
	/* Only before the kernel's pool is ready, early at boot: no waiting. */
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		return httpd_reply_json(c, 503, "no randomness for the page's "
		    "nonce yet; try again");
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(nonce + 2 * i, 3, "%02x", rnd[i]);
	t0 = mono_ms();
	if ((s = render_status(cl)) != NULL)
		st = json_loads(s, 0, NULL);
	free(s);
	if (st == NULL) {
		log_warnx("GET /: the status document cannot be rendered");
		return httpd_reply_json(c, 500, "status cannot be rendered; see "
		    "tandemd's log");
	}
	ev = history_json(cl, 0);
	sbuf_init(&b);
	rc = statuspage_render(&b, &tmpl, st, ev, nonce, now_s(), err,
	    sizeof(err));
	json_decref(st);
	json_decref(ev);
	httpd_state.render_ms += mono_ms() - t0;
	if (rc == -1) {
		sbuf_free(&b);
		log_warnx("GET /: %s", err);
		return httpd_reply_json(c, 500, "the status page cannot be "
		    "rendered; see tandemd's log");
	}
	page = log_mask(b.s ? b.s : "");
	sbuf_free(&b);
	len = strlen(page);
	if ((r = httpd_reply_new(page, len)) == NULL)
		return MHD_NO;
	csp = xprintf("default-src 'none'; script-src 'nonce-%s'; "
	    "style-src 'nonce-%s'; connect-src 'self'; img-src data:; "
	    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	    nonce, nonce);
	MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "Content-Security-Policy", csp);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	free(csp);
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result
httpd_get_status(struct cluster *cl, struct MHD_Connection *c)
{
	char *s, *doc;

	if (httpd_reply_fresh(&httpd_state.status, httpd_state.mhd_round, 0))
		return MHD_queue_response(c, 200, httpd_state.status.r);
	if ((s = render_status(cl)) == NULL) {
		log_warnx("/status: the document cannot be rendered");
		return httpd_reply_json(c, 500, "status cannot be rendered; see "
		    "tandemd's log");
	}
	doc = xprintf("%s\n", s);
	free(s);
	return httpd_reply_shared(c, &httpd_state.status,
	    httpd_state.mhd_round, 0, "application/json", doc);
}

enum MHD_Result
httpd_get_healthz(struct cluster *cl, struct MHD_Connection *c)
{
	const struct fsm *f = cluster_fsm(cl);

	return httpd_reply(c, f->state == ST_SERVING ? 200 : 503, "text/plain",
	    xprintf("%s\n", state_name(f->state, f->dp)));
}

enum MHD_Result
httpd_get_metrics(struct cluster *cl, struct MHD_Connection *c)
{
	/* never busy: small, once a round, and what a scrape during a flood
	 * must see */
	if (httpd_reply_fresh(&httpd_state.metrics, httpd_state.mhd_round, 0))
		return MHD_queue_response(c, 200, httpd_state.metrics.r);
	return httpd_reply_shared(c, &httpd_state.metrics,
	    httpd_state.mhd_round, 0,
	    "text/plain; version=0.0.4; charset=utf-8", render_metrics(cl));
}

/*
 * GET /events[?since=SEQ]: at most the ring of the last 1000 events
 * (history_json), so the answer's cost is bounded whatever since says.
 * The list changes only with a new event: the whole list and the last
 * since= asked (the page's and tandemctl events -f's polls all ask the
 * same) are each rendered once per event.
 */
enum MHD_Result
httpd_get_events(struct cluster *cl, struct MHD_Connection *c)
{
	const char *since = MHD_lookup_connection_value(c,
	    MHD_GET_ARGUMENT_KIND, "since");
	struct shared *sh = since ? &httpd_state.events_since :
	    &httpd_state.events_all;
	uint64_t n = 0, last = history_last_seq(cl), t0;
	char err[ERRLEN];
	enum MHD_Result ret;
	json_t *a;
	char *s, *doc;

	if (since && apiguard_since(since, &n, err, sizeof(err)) == -1)
		return httpd_reply_json(c, 400, err);
	if (httpd_reply_fresh(sh, last, n))
		return MHD_queue_response(c, 200, sh->r);
	if (httpd_reply_busy(c, &ret))
		return ret;
	t0 = mono_ms();
	a = history_json(cl, n);
	s = json_dumps(a, JSON_INDENT(2) | TANDEM_JSON_REALS);
	json_decref(a);
	doc = xprintf("%s\n", s ? s : "[]");
	free(s);
	httpd_state.render_ms += mono_ms() - t0;
	return httpd_reply_shared(c, sh, last, n, "application/json", doc);
}

/* GET /rebuilds/last: the steps of the running or last rebuild. */
enum MHD_Result
httpd_get_trace(struct cluster *cl, struct MHD_Connection *c)
{
	json_t *j;
	enum MHD_Result r;
	char *s;

	if (httpd_reply_busy(c, &r))
		return r;
	if ((j = cluster_trace_json(cl)) == NULL)
		return httpd_reply_json(c, 404, "no rebuild since tandemd "
		    "started");
	s = json_dumps(j, JSON_INDENT(2) | TANDEM_JSON_REALS);
	json_decref(j);
	if (s == NULL)
		return httpd_reply_json(c, 500, "the trace cannot be rendered");
	r = httpd_reply(c, 200, "application/json", xprintf("%s\n", s));
	free(s);
	return r;
}

/*
 * GET /bundle: the newest evidence bundle (bundle_store.c), streamed by
 * MHD from its file. It holds logs, which may hold prompts: the API token
 * is needed, as for POST.
 */
enum MHD_Result
httpd_get_bundle(struct cluster *cl, struct MHD_Connection *c)
{
	char name[128], err[ERRLEN], *disp;
	struct MHD_Response *r;
	enum MHD_Result ret;
	uint64_t size;
	int fd;

	if (httpd_post_door(cl, c, &ret))
		return ret;
	if ((fd = bundle_store_open_latest(name, sizeof(name), &size, err,
	    sizeof(err))) == -1)
		return httpd_reply_json(c, 404, err);
	if ((r = MHD_create_response_from_fd64(size, fd)) == NULL) {
		close(fd);
		return httpd_reply_json(c, 500, "cannot send the bundle");
	}
	disp = xprintf("attachment; filename=\"%s\"", name);
	MHD_add_response_header(r, "Content-Type", "application/x-tar");
	MHD_add_response_header(r, "Content-Disposition", disp);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	free(disp);
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}
