/*
 * The HTTP API (PRODUCT.md section 4) on libmicrohttpd, run inside the
 * libuv loop: MHD_USE_EPOLL gives one fd to watch; we call MHD_run when it
 * is readable and re-arm a timer from MHD_get_timeout. Handlers therefore
 * run on the loop thread and read the cluster's state directly, without
 * locks, and never wait on SSH or HTTP: every answer is built from memory.
 */
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "apiguard.h"
#include "bundle_store.h"
#include "cluster.h"
#include "conffile.h"
#include "connq.h"
#include "log.h"
#include "portholder.h"
#include "statuspage.h"
#include "token.h"
#include "utf8.h"

/* The status page's sources (daemon/api/page/), built in by the Makefile (xxd -i). */
extern unsigned char	 status_html[], status_css[], status_js[];
extern unsigned int	 status_html_len, status_css_len, status_js_len;

#define BODY_MAX	4096
/*
 * The limits (docs/api.md, "Limits"; the figures behind them in
 * docs/architecture.md). A client on this host or through a tunnel sends
 * its request head in one packet: HEAD_TIME_S is ample for it and short
 * for a client that trickles one. The body and the answer then get
 * REQUEST_TIME_S. MHD's own timeout, for a connection silent that long,
 * is only a backstop behind these.
 */
#define HEAD_TIME_S	5
#define REQUEST_TIME_S	10
#define CONN_TIMEOUT_S	10
/*
 * The kernel's queue of connections not yet accepted (capped by
 * net.core.somaxconn, 4096 by default since Linux 5.4). When it is full,
 * a new client's SYN is dropped and retried a second later: a burst of
 * reconnecting clients must not fill it.
 */
#define LISTEN_BACKLOG	4096
/*
 * MHD accepts at most 11 connections a run; while more wait, it is run
 * again, up to this many times, before the loop turns.
 */
#define ACCEPT_RUNS	32
#define CUT_BATCH	256
/* At most one warning a minute about connections closed at the limit. */
#define EVICT_WARN_MS	60000
/*
 * Connections on tandemctl's Unix socket: only root and group tandem can
 * open one, and each command opens one at a time.
 */
#define SOCK_CONN_MAX	64
/*
 * What a flood of clients that ask and never read may make tandemd hold
 * (issue 43, item 3): every answer's bytes count from their rendering
 * until the last connection sending them is done. Past QUEUED_MAX the
 * large documents (/, /events, /rebuilds/last) answer 503 until readers
 * catch up or time out; /status, /healthz and /metrics always answer.
 * And rendering them takes at most RENDER_BUDGET_MS of every
 * RENDER_WINDOW_MS: a flood of GET / (the page is rendered per answer, for
 * its nonce) ahead of a /status in the kernel's accept queue would
 * otherwise hold that /status back for all of their renders (docs/api.md
 * promises 1 s).
 */
#define QUEUED_MAX	(32u << 20)
/*
 * The kernel's send buffer of each TCP connection (inherited from the
 * listen socket; Linux doubles it and stops tuning it up). Left to grow,
 * the kernel took the whole ~440 KB /events for each of 4,000 clients that
 * never read, and copying 1.7 GB kept /status waiting 3.8 s; 32 KB still
 * sends the page in milliseconds on loopback or a LAN.
 */
#define SEND_BUF	(32 * 1024)
#define RENDER_BUDGET_MS 100
#define RENDER_WINDOW_MS 1000

struct reqctx {
	size_t		 body;
	int		 too_large;
	struct sbuf	 text;	/* POST /apply on the socket: the file */
	int		 keep;	/* keep the body in text */
};

/* The body of the request being answered (POST /apply), for its route. */
static const struct sbuf *req_text;

/*
 * One per TCP connection, queued in srv.q (lib/api/connq.c) by what it waits
 * for and until when. MHD's own timeout closes only a connection that is
 * silent; one that sends a header byte a second would keep its slot for
 * ever, so the head and the request each have a deadline of their own,
 * and at the limit the connection that has waited longest for its head
 * makes room for a new one.
 */
struct conn {
	struct connq_ent	 q;		/* first: a conn is its entry */
	struct MHD_Connection	*c;
};

/*
 * One answer's body, shared by every connection that sends it: MHD counts
 * its users and calls held_free after the last (issue 43, item 3: a
 * document rendered once, not once per client).
 */
struct held {
	char	*body;
	size_t	 len;
};

/* A document kept while its key (what it was rendered from) holds. */
struct shared {
	struct MHD_Response	*r;
	uint64_t		 k1, k2;
};

/*
 * MHD serves one listen socket per daemon: the TCP listen (curl,
 * Prometheus, the page) and tandemctl's Unix socket (api_socket) are two
 * daemons, both driven from the one loop.
 */
enum { L_TCP, L_UNIX, L_MAX };

struct listener {
	struct MHD_Daemon	*mhd;
	uv_poll_t		 poll;
	int			 fd;
};

/*
 * The server's one place of state, on the daemon's loop (httpd_start /
 * httpd_stop).
 */
static struct {
	struct listener		 l[L_MAX];
	uv_timer_t		 mhd_timer;
	char			*listen_host;	/* bound at start */
	char			*sock_path;	/* unlinked at stop */
	/*
	 * Within one round (run_mhd) nothing but a POST handler can change
	 * the cluster, so every GET /status and /metrics of that round gets
	 * the same document, rendered once: under load, many requests are
	 * answered per round.
	 */
	uint64_t		 mhd_round;
	struct shared		 status, metrics;
	struct shared		 events_all, events_since;
	size_t			 queued;	/* bytes of live answers */
	uint64_t		 render_ms;	/* spent in this window */
	uint64_t		 render_window;	/* mono_ms it began */
	uint64_t		 busy;		/* 503s, for the warning */
	uint64_t		 busy_warned;	/* mono_ms */
	struct connq		 q;
	unsigned		 closed_in_run;
	uint64_t		 evict_warned;	/* mono_ms */
	uint64_t		 evicted_warned;	/* q.evicted then */
} srv;

static void	run_mhd(void);

static void
on_mhd_timer(uv_timer_t *t)
{
	(void)t;
	run_mhd();
}

/*
 * MHD (0.9.75) has no call to close a connection; shutting its socket down
 * makes epoll report a hang-up, and MHD's next run closes it the usual way
 * (and tells on_connection).
 */
static void
cut(struct connq_ent *e, const char *why)
{
	struct conn *k = (struct conn *)e;
	const union MHD_ConnectionInfo *ci;

	ci = MHD_get_connection_info(k->c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci != NULL)
		shutdown(ci->connect_fd, SHUT_RDWR);
	log_debug("API: closed a connection: %s", why);
}

/* Said once a minute at most: a flood would otherwise flood the log. */
static void
warn_evictions(uint64_t now)
{
	if (srv.q.evicted == srv.evicted_warned || (srv.evict_warned &&
	    now - srv.evict_warned < EVICT_WARN_MS))
		return;
	log_warnx("API: at its limit of %zu connections; closed %llu that "
	    "were waiting for a request head (slow or idle clients) to let "
	    "new ones in", srv.q.limit, (unsigned long long)(srv.q.evicted -
	    srv.evicted_warned));
	srv.evict_warned = now;
	srv.evicted_warned = srv.q.evicted;
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct conn *k = *socket_context;
	struct connq_ent *victim;
	uint64_t now;

	(void)cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		k = xcalloc(1, sizeof(*k));
		k->c = c;
		*socket_context = k;
		now = mono_ms();
		if ((victim = connq_add(&srv.q, &k->q, now)) != NULL) {
			cut(victim, "the oldest waiting for a request head, to "
			    "make room at the limit");
			warn_evictions(now);
		}
		return;
	}
	if (k == NULL)
		return;
	connq_remove(&srv.q, &k->q);
	free(k);
	*socket_context = NULL;
	srv.closed_in_run++;
}

static struct conn *
conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/*
 * Connections opened together (a flood's burst) reach their deadline
 * together: cut at most CUT_BATCH a run, so that the accepts of new clients
 * go on between them. 1 when some are left for the next run.
 */
static int
cut_overdue(uint64_t now)
{
	struct connq_ent *e;
	int n = 0;

	while (n < CUT_BATCH && (e = connq_overdue(&srv.q, now)) != NULL) {
		cut(e, "its request was not in or not done in time");
		n++;
	}
	return n == CUT_BATCH;
}

static void
on_mhd_poll(uv_poll_t *p, int status, int events)
{
	(void)p;
	(void)status;
	(void)events;
	run_mhd();
}

/*
 * MHD must never be left undriven. At its connection limit it takes its
 * listen socket out of epoll and puts it back only at the start of a later
 * MHD_run; if the run that closed connections was the last one (all of
 * them timed out at once, and MHD_get_timeout has nothing left to wait
 * for), nothing would call it again and the API would be dead for good.
 * So a run that closed anything is followed by another one, and while
 * connections exist the timer also waits for the earliest deadline. The
 * timer is never armed at 0: from inside its own callback that makes
 * libuv (1.44) run it again in the same pass, for ever.
 */
/* Connections wait in the kernel's queue (poll, no wait). */
static int
listen_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void
run_mhd(void)
{
	MHD_UNSIGNED_LONG_LONG to = ULLONG_MAX, t;
	struct listener *l;
	int i, more;
	uint64_t now, next;

	srv.mhd_round++;
	srv.closed_in_run = 0;
	for (l = srv.l; l < srv.l + L_MAX; l++) {
		if (l->mhd == NULL)
			continue;
		MHD_run(l->mhd);
		for (i = 0; i < ACCEPT_RUNS && listen_ready(l->fd); i++)
			MHD_run(l->mhd);
	}
	now = mono_ms();
	more = cut_overdue(now);
	for (l = srv.l; l < srv.l + L_MAX; l++)
		if (l->mhd != NULL && MHD_get_timeout(l->mhd, &t) == MHD_YES &&
		    t < to)
			to = t;
	if ((next = connq_next_deadline(&srv.q)) != UINT64_MAX &&
	    next - now < to)
		to = next - now;
	if (srv.closed_in_run || more)
		to = 1;
	if (to == ULLONG_MAX)
		uv_timer_stop(&srv.mhd_timer);
	else
		uv_timer_start(&srv.mhd_timer, on_mhd_timer, to ? to : 1, 0);
}

static void
held_free(void *cls)
{
	struct held *h = cls;

	srv.queued -= h->len;
	free(h->body);
	free(h);
}

/* A response that takes body, its bytes counted in srv.queued. */
static struct MHD_Response *
response_new(char *body, size_t len)
{
	struct held *h = xmalloc(sizeof(*h));
	struct MHD_Response *r;

	h->body = body;
	h->len = len;
	srv.queued += len;
	r = MHD_create_response_from_buffer_with_free_callback_cls(len, body,
	    held_free, h);
	if (r == NULL)
		held_free(h);
	return r;
}

static int
shared_fresh(const struct shared *sh, uint64_t k1, uint64_t k2)
{
	return sh->r != NULL && sh->k1 == k1 && sh->k2 == k2;
}

/* Keeps r for its key; the one it replaces lives on while it is sent. */
static void
shared_set(struct shared *sh, struct MHD_Response *r, uint64_t k1,
    uint64_t k2)
{
	if (sh->r != NULL)
		MHD_destroy_response(sh->r);
	sh->r = r;
	sh->k1 = k1;
	sh->k2 = k2;
}

static struct MHD_Response *
response_typed(unsigned code, const char *type, char *body)
{
	/* /status, /events and the rest carry vLLM's words: never its key */
	char *shown = log_mask(body);
	struct MHD_Response *r;

	free(body);
	r = response_new(shown, strlen(shown));

	if (r == NULL)
		return NULL;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (code == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	return r;
}

static enum MHD_Result
reply(struct MHD_Connection *c, unsigned code, const char *type, char *body)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if ((r = response_typed(code, type, body)) == NULL)
		return MHD_NO;
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * A message may quote a request's own header (a Host refused), whose bytes
 * need not be UTF-8: it is mended, as json_pack would drop it.
 */
static enum MHD_Result
reply_json_msg(struct MHD_Connection *c, unsigned code, const char *msg)
{
	char text[ERRLEN];
	json_t *j;
	char *s;
	enum MHD_Result r;

	utf8_copy(text, sizeof(text), msg);
	j = json_pack("{s:s}", code < 300 ? "ok" : "error", text);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	r = reply(c, code, "application/json", s ? xprintf("%s\n", s) :
	    xstrdup("{}\n"));
	free(s);
	return r;
}

/*
 * 1, with a 503 queued in *ret, when a large document must wait: its
 * answers already wait for clients that do not read them (QUEUED_MAX), or
 * this turn spent its rendering budget. Said once a minute at most.
 */
static int
busy(struct MHD_Connection *c, enum MHD_Result *ret)
{
	struct MHD_Response *r;
	uint64_t now;

	now = mono_ms();
	if (now - srv.render_window >= RENDER_WINDOW_MS) {
		srv.render_window = now;
		srv.render_ms = 0;
	}
	if (srv.queued < QUEUED_MAX && srv.render_ms < RENDER_BUDGET_MS)
		return 0;
	srv.busy++;
	if (srv.busy_warned == 0 || now - srv.busy_warned >= EVICT_WARN_MS) {
		log_warnx("API: busy: / and /events answer 503 for now "
		    "(%llu so far): %zu bytes of answers wait for clients "
		    "that do not read them (at most %u), rendering took %llu "
		    "ms of this second (at most %d)",
		    (unsigned long long)srv.busy, srv.queued, QUEUED_MAX,
		    (unsigned long long)srv.render_ms, RENDER_BUDGET_MS);
		srv.busy_warned = now;
	}
	r = response_typed(503, "application/json", xstrdup("{\"error\":"
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

/*
 * GET /: the status page, rendered from the same /status document and
 * /events list as the API, so it shows the state before any script runs.
 * Its one inline script and style carry a nonce fresh for each answer, and
 * the policy allows nothing else: no other script, no inline handler, no
 * other host; the script may only talk back to this API.
 */
static enum MHD_Result
serve_page(struct cluster *cl, struct MHD_Connection *c)
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

	if (busy(c, &ret))
		return ret;
	/* Only before the kernel's pool is ready, early at boot: no waiting. */
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		return reply_json_msg(c, 503, "no randomness for the page's "
		    "nonce yet; try again");
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(nonce + 2 * i, 3, "%02x", rnd[i]);
	t0 = mono_ms();
	if ((s = render_status(cl)) != NULL)
		st = json_loads(s, 0, NULL);
	free(s);
	if (st == NULL) {
		log_warnx("GET /: the status document cannot be rendered");
		return reply_json_msg(c, 500, "status cannot be rendered; see "
		    "tandemd's log");
	}
	ev = history_json(cl, 0);
	sbuf_init(&b);
	rc = statuspage_render(&b, &tmpl, st, ev, nonce, now_s(), err,
	    sizeof(err));
	json_decref(st);
	json_decref(ev);
	srv.render_ms += mono_ms() - t0;
	if (rc == -1) {
		sbuf_free(&b);
		log_warnx("GET /: %s", err);
		return reply_json_msg(c, 500, "the status page cannot be "
		    "rendered; see tandemd's log");
	}
	page = log_mask(b.s ? b.s : "");
	sbuf_free(&b);
	len = strlen(page);
	if ((r = response_new(page, len)) == NULL)
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

/*
 * Every POST, and GET /bundle (logs may hold prompts): from a local client
 * or this API's own page (Host, Origin: lib/api/apiguard.c), then the token. Host and Origin come first so that a
 * page from elsewhere learns nothing, not even whether a token is set.
 */
static int
door_refused(struct cluster *cl, struct MHD_Connection *c,
    enum MHD_Result *ret)
{
	const char *want = cluster_token(cl), *given;
	char err[ERRLEN];

	if (apiguard_post_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_HOST), MHD_lookup_connection_value(c,
	    MHD_HEADER_KIND, "Origin"), err, sizeof(err)) == -1) {
		*ret = reply_json_msg(c, 403, err);
		return 1;
	}
	if (want == NULL) {
		*ret = reply_json_msg(c, 403, "mutating endpoints are disabled:"
		    " set api_token_file in the config to a file holding a "
		    "token, then reload (systemctl reload tandemd)");
		return 1;
	}
	given = token_from_authorization(MHD_lookup_connection_value(c,
	    MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
	if (given == NULL) {
		*ret = reply_json_msg(c, 401, "Authorization: Bearer <token> "
		    "required");
		return 1;
	}
	if (!token_matches(given, want)) {
		*ret = reply_json_msg(c, 403, "wrong token");
		return 1;
	}
	return 0;
}

static enum MHD_Result
post_rebuild(struct cluster *cl, struct MHD_Connection *c)
{
	const char *reset = MHD_lookup_connection_value(c,
	    MHD_GET_ARGUMENT_KIND, "reset");

	if (reset && strcmp(reset, "1") == 0)
		cluster_reset_remedy(cl);
	if (cluster_fsm(cl)->action == A_PAUSED)
		return reply_json_msg(c, 409, "paused: resume first");
	cluster_event(cl, EV_REBUILD, "POST /rebuild");
	return reply_json_msg(c, 202, "rebuild started");
}

static enum MHD_Result
post_pause(struct cluster *cl, struct MHD_Connection *c)
{
	cluster_event(cl, EV_PAUSE, "POST /pause");
	return reply_json_msg(c, 202, "paused");
}

static enum MHD_Result
post_resume(struct cluster *cl, struct MHD_Connection *c)
{
	return reply_json_msg(c, 202, cluster_resume(cl));
}

static int	via_socket(struct MHD_Connection *);

/*
 * tandemctl apply: the body is a config file's text, parsed and checked
 * as tandemd's own file; the change it makes is judged as a reload's. Only
 * on tandemctl's socket, which only root and group tandem can open: over
 * TCP a body of up to 4 MiB would be held before the token is checked.
 */
static enum MHD_Result
post_apply(struct cluster *cl, struct MHD_Connection *c)
{
	const char *file = MHD_lookup_connection_value(c,
	    MHD_GET_ARGUMENT_KIND, "file");
	const char *keep = MHD_lookup_connection_value(c,
	    MHD_GET_ARGUMENT_KIND, "no_rollback");
	char err[ERRLEN];
	int rc;

	if (!via_socket(c) || req_text == NULL)
		return reply_json_msg(c, 403, "POST /apply is taken only on "
		    "tandemctl's socket (api_socket): tandemctl apply FILE");
	if (req_text->len == 0)
		return reply_json_msg(c, 400, "no config in the body");
	if (file == NULL || *file == '\0')
		file = "applied config";
	log_info("POST /apply: %s%s", file, keep && strcmp(keep, "1") == 0 ?
	    " (no rollback)" : "");
	rc = cluster_apply_text(cl, req_text->s, req_text->len, file,
	    keep && strcmp(keep, "1") == 0, err, sizeof(err));
	if (rc == -1) {
		log_node(LOG_ERR, NULL, "apply refused, keeping the running "
		    "config: %s", err);
		return reply_json_msg(c, 400, err);
	}
	return reply_json_msg(c, 202, rc == 2 ? "the image, model or flags "
	    "changed: checking every node before the switch" : rc == 1 ?
	    "cluster changed, rebuilding" : "no change the cluster depends "
	    "on");
}

/* tandemctl rollback: the last config that served, as an apply of it. */
static enum MHD_Result
post_rollback(struct cluster *cl, struct MHD_Connection *c)
{
	char err[ERRLEN];
	int rc;

	log_info("POST /rollback: to the last-known-good config");
	if ((rc = cluster_rollback(cl, err, sizeof(err))) == -1)
		return reply_json_msg(c, 409, err);
	return reply_json_msg(c, 202, rc == 2 ? "back to the last-known-good "
	    "config: checking every node before the switch" :
	    "back to the last-known-good config");
}

/* A document kept in sh, for its key, and sent to every client asking. */
static enum MHD_Result
reply_shared(struct MHD_Connection *c, struct shared *sh, uint64_t k1,
    uint64_t k2, const char *type, char *body)
{
	struct MHD_Response *r;

	if ((r = response_typed(200, type, body)) == NULL)
		return MHD_NO;
	shared_set(sh, r, k1, k2);
	return MHD_queue_response(c, 200, sh->r);
}

static enum MHD_Result
serve_status(struct cluster *cl, struct MHD_Connection *c)
{
	char *s, *doc;

	if (shared_fresh(&srv.status, srv.mhd_round, 0))
		return MHD_queue_response(c, 200, srv.status.r);
	if ((s = render_status(cl)) == NULL) {
		log_warnx("/status: the document cannot be rendered");
		return reply_json_msg(c, 500, "status cannot be rendered; see "
		    "tandemd's log");
	}
	doc = xprintf("%s\n", s);
	free(s);
	return reply_shared(c, &srv.status, srv.mhd_round, 0,
	    "application/json", doc);
}

static enum MHD_Result
serve_healthz(struct cluster *cl, struct MHD_Connection *c)
{
	const struct fsm *f = cluster_fsm(cl);

	return reply(c, f->state == ST_SERVING ? 200 : 503, "text/plain",
	    xprintf("%s\n", state_name(f->state, f->dp)));
}

static enum MHD_Result
serve_metrics(struct cluster *cl, struct MHD_Connection *c)
{
	/* never busy: small, once a round, and what a scrape during a flood
	 * must see */
	if (shared_fresh(&srv.metrics, srv.mhd_round, 0))
		return MHD_queue_response(c, 200, srv.metrics.r);
	return reply_shared(c, &srv.metrics, srv.mhd_round, 0,
	    "text/plain; version=0.0.4; charset=utf-8", render_metrics(cl));
}

/*
 * GET /events[?since=SEQ]: at most the ring of the last 1000 events
 * (history_json), so the answer's cost is bounded whatever since says.
 * The list changes only with a new event: the whole list and the last
 * since= asked (the page's and tandemctl events -f's polls all ask the
 * same) are each rendered once per event.
 */
static enum MHD_Result
serve_events(struct cluster *cl, struct MHD_Connection *c)
{
	const char *since = MHD_lookup_connection_value(c,
	    MHD_GET_ARGUMENT_KIND, "since");
	struct shared *sh = since ? &srv.events_since : &srv.events_all;
	uint64_t n = 0, last = history_last_seq(cl), t0;
	char err[ERRLEN];
	enum MHD_Result ret;
	json_t *a;
	char *s, *doc;

	if (since && apiguard_since(since, &n, err, sizeof(err)) == -1)
		return reply_json_msg(c, 400, err);
	if (shared_fresh(sh, last, n))
		return MHD_queue_response(c, 200, sh->r);
	if (busy(c, &ret))
		return ret;
	t0 = mono_ms();
	a = history_json(cl, n);
	s = json_dumps(a, JSON_INDENT(2) | TANDEM_JSON_REALS);
	json_decref(a);
	doc = xprintf("%s\n", s ? s : "[]");
	free(s);
	srv.render_ms += mono_ms() - t0;
	return reply_shared(c, sh, last, n, "application/json", doc);
}

/* GET /rebuilds/last: the steps of the running or last rebuild. */
static enum MHD_Result
serve_trace(struct cluster *cl, struct MHD_Connection *c)
{
	json_t *j;
	enum MHD_Result r;
	char *s;

	if (busy(c, &r))
		return r;
	if ((j = cluster_trace_json(cl)) == NULL)
		return reply_json_msg(c, 404, "no rebuild since tandemd "
		    "started");
	s = json_dumps(j, JSON_INDENT(2) | TANDEM_JSON_REALS);
	json_decref(j);
	if (s == NULL)
		return reply_json_msg(c, 500, "the trace cannot be rendered");
	r = reply(c, 200, "application/json", xprintf("%s\n", s));
	free(s);
	return r;
}

/*
 * GET /bundle: the newest evidence bundle (bundle_store.c), streamed by
 * MHD from its file. It holds logs, which may hold prompts: the API token
 * is needed, as for POST.
 */
static enum MHD_Result
serve_bundle(struct cluster *cl, struct MHD_Connection *c)
{
	char name[128], err[ERRLEN], *disp;
	struct MHD_Response *r;
	enum MHD_Result ret;
	uint64_t size;
	int fd;

	if (door_refused(cl, c, &ret))
		return ret;
	if ((fd = bundle_store_open_latest(name, sizeof(name), &size, err,
	    sizeof(err))) == -1)
		return reply_json_msg(c, 404, err);
	if ((r = MHD_create_response_from_fd64(size, fd)) == NULL) {
		close(fd);
		return reply_json_msg(c, 500, "cannot send the bundle");
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

/* The API (docs/api.md): GET (and HEAD) reads, POST changes. */
static const struct route {
	const char	*path;
	int		 post;	/* POST, after door_refused; else GET, HEAD */
	enum MHD_Result	 (*fn)(struct cluster *, struct MHD_Connection *);
} routes[] = {
	{ "/",			0, serve_page },
	{ "/status",		0, serve_status },
	{ "/healthz",		0, serve_healthz },
	{ "/metrics",		0, serve_metrics },
	{ "/events",		0, serve_events },
	{ "/rebuilds/last",	0, serve_trace },
	{ "/bundle",		0, serve_bundle },
	{ "/rebuild",		1, post_rebuild },
	{ "/pause",		1, post_pause },
	{ "/resume",		1, post_resume },
	{ "/apply",		1, post_apply },
	{ "/rollback",		1, post_rollback },
};

static const struct route *
route_find(const char *path)
{
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(routes[i].path, path) == 0)
			return &routes[i];
	return NULL;
}

static enum MHD_Result
not_found(struct MHD_Connection *c)
{
	struct sbuf b;
	enum MHD_Result r;
	size_t i;

	sbuf_init(&b);
	sbuf_add(&b, "no such endpoint:");
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (!routes[i].post)
			sbuf_addf(&b, " %s", routes[i].path);
	sbuf_add(&b, ", POST");
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].post)
			sbuf_addf(&b, " %s", routes[i].path);
	r = reply_json_msg(c, 404, b.s);
	sbuf_free(&b);
	return r;
}

static enum MHD_Result
not_allowed(struct MHD_Connection *c, const struct route *rt)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *body = xstrdup("{\"error\":\"method not allowed\"}\n");

	if ((r = response_new(body, strlen(body))) == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Allow", rt->post ? "POST" : "GET, HEAD");
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, 405, r);
	MHD_destroy_response(r);
	return ret;
}

/* tandemctl's Unix socket, which only root and group tandem can open. */
static int
via_socket(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_DAEMON);

	return ci != NULL && srv.l[L_UNIX].mhd != NULL &&
	    ci->daemon == srv.l[L_UNIX].mhd;
}

static enum MHD_Result
handle(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data,
    size_t *data_size, void **con_cls)
{
	struct cluster *cl = cls;
	struct reqctx *rc = *con_cls;
	const struct route *rt;
	struct conn *k;
	enum MHD_Result refused, ret;
	char err[ERRLEN];
	int post = strcmp(method, "POST") == 0;

	(void)version;
	if (rc == NULL) {
		/* the first call of a request: its head is in */
		if ((k = conn_of(c)) != NULL)
			connq_head_done(&srv.q, &k->q, mono_ms());
		*con_cls = rc = xcalloc(1, sizeof(struct reqctx));
		sbuf_init(&rc->text);
		rc->keep = post && strcmp(url, "/apply") == 0 && via_socket(c);
		return MHD_YES;
	}
	if (*data_size) {
		rc->body += *data_size;
		if (rc->body > (rc->keep ? CONFFILE_MAX : BODY_MAX))
			rc->too_large = 1;
		else if (rc->keep)
			sbuf_addn(&rc->text, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	if (rc->too_large)
		return reply_json_msg(c, 413, "request body too large");
	/*
	 * Every route, GET too (issue 43, item 4): a page whose DNS name now
	 * points here must read nothing, not even which routes exist. The
	 * socket has no web page behind it (curl sends Host: localhost).
	 */
	if (!via_socket(c) && apiguard_host_ok(MHD_lookup_connection_value(c,
	    MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST), srv.listen_host, err,
	    sizeof(err)) == -1)
		return reply_json_msg(c, 403, err);
	if ((rt = route_find(url)) == NULL)
		return not_found(c);
	if (rt->post ? !post : strcmp(method, "GET") != 0 &&
	    strcmp(method, "HEAD") != 0)
		return not_allowed(c, rt);
	if (rt->post) {
		srv.mhd_round++;	/* what /status said may change now */
		if (door_refused(cl, c, &refused))
			return refused;
	}
	req_text = rc->keep ? &rc->text : NULL;
	ret = rt->fn(cl, c);
	req_text = NULL;
	return ret;
}

static void
completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct conn *k = conn_of(c);

	(void)cls;
	(void)toe;
	if (*con_cls != NULL)
		sbuf_free(&((struct reqctx *)*con_cls)->text);
	free(*con_cls);
	*con_cls = NULL;
	/* the answer left: the next request on this connection waits anew */
	if (k != NULL)
		connq_answered(&srv.q, &k->q, mono_ms());
}

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 answer only this host. */
static int
listen_is_loopback(const char *host)
{
	struct in_addr a;
	struct in6_addr a6;

	if (inet_pton(AF_INET, host, &a) == 1)
		return ntohl(a.s_addr) >> 24 == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) &&
		    a6.s6_addr[12] == 127);
	return 0;
}

/* The warning for an API that other hosts can reach, or NULL. */
const char *
httpd_listen_warning(const struct config *cf, char *buf, size_t len)
{
	if (listen_is_loopback(cf->listen_host))
		return NULL;
	snprintf(buf, len, "listen %s:%d is not a loopback address: GET "
	    "/status, /events and /metrics answer anyone who can reach it, "
	    "without a token, and the API token of POST requests crosses the "
	    "network in clear (no TLS); see tandem.json(5)", cf->listen_host,
	    cf->listen_port);
	return buf;
}

/*
 * The listen socket is made here rather than by libmicrohttpd so that a
 * taken port is reported by name: 9100 is also node_exporter's default, and
 * on GPU nodes it often runs already.
 */
static int
listen_socket(const struct config *cf, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t sslen;
	int fd, on = 1, e, sndbuf = SEND_BUF;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, cf->listen_host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)cf->listen_port);
		sslen = sizeof(*sin);
	} else if (inet_pton(AF_INET6, cf->listen_host,
	    &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)cf->listen_port);
		sslen = sizeof(*sin6);
	} else {
		seterr(err, errlen, "listen %s: not an IP address",
		    cf->listen_host);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		seterr(err, errlen, "listen: socket: %s", strerror(errno));
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (bind(fd, (struct sockaddr *)&ss, sslen) == 0 &&
	    listen(fd, LISTEN_BACKLOG) == 0)
		return fd;
	e = errno;
	close(fd);
	if (e == EADDRINUSE) {
		struct port_holder h;
		char who[128];

		/*
		 * A tandemd there (the service beside a --once, or one of
		 * another config) would make two managers of one cluster.
		 */
		port_holder_find(cf->listen_host, cf->listen_port, &h);
		if (h.tandemd)
			seterr(err, errlen, "listen %s:%d: another tandemd, pid "
			    "%ld, already serves http://%s:%d: two would manage "
			    "the cluster at once: stop that one first "
			    "(systemctl stop tandemd)", cf->listen_host,
			    cf->listen_port, (long)h.pid, cf->listen_host,
			    cf->listen_port);
		else
			seterr(err, errlen, "listen %s:%d: address in use by "
			    "%s%s; set \"listen\" in tandem.json to a free "
			    "port", cf->listen_host, cf->listen_port,
			    port_holder_words(&h, who, sizeof(who)),
			    cf->listen_port == 9100 && strcmp(h.comm,
			    "node_exporter") != 0 ? " (node_exporter uses 9100 "
			    "by default)" : "");
	} else
		seterr(err, errlen, "listen %s:%d: %s", cf->listen_host,
		    cf->listen_port, strerror(e));
	return -1;
}

/*
 * libmicrohttpd's own messages are about single connections ("closed by
 * remote side with incomplete request"): under a flood of slow clients one
 * a connection, thousands a second on stderr and in the journal. They are
 * debug output; what an operator needs (the limit reached) is said once a
 * minute by warn_evictions.
 */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[ERRLEN];
	size_t n;

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	log_debug("libmicrohttpd: %s", buf);
}

/*
 * How many connections the API can keep: every one is a file, and the
 * rest of tandemd needs its own (CONNQ_FD_RESERVE). The soft limit is
 * raised as far as the API can use, within the hard one (the unit sets
 * both: LimitNOFILE; systemd's default is 1024 soft, 524288 hard).
 */
static size_t
conn_limit(void)
{
	uint64_t want = (uint64_t)CONNQ_MAX + CONNQ_FD_RESERVE + CONNQ_SLACK;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return connq_limit_for(1024);
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want &&
	    rl.rlim_cur < rl.rlim_max) {
		struct rlimit up = rl;

		up.rlim_cur = rl.rlim_max == RLIM_INFINITY ||
		    rl.rlim_max > want ? want : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl = up;
		else
			log_debug("API: cannot raise the open files limit from "
			    "%llu: %s", (unsigned long long)rl.rlim_cur,
			    strerror(errno));
	}
	return connq_limit_for(rl.rlim_cur == RLIM_INFINITY ? want :
	    rl.rlim_cur);
}

/*
 * tandemctl's socket (api_socket, docs/api.md "How tandemctl reaches the
 * daemon"): 0660, group tandem when that group exists, in a directory
 * nobody but its owner can write, so no other user can stand in for
 * tandemd there as one can on a TCP port it left free. Under the unit,
 * whose user namespace (PrivateUsers=yes) maps no group tandem, the group
 * comes from the directory (setgid, set by the unit's ExecStartPre).
 */
static int
unix_socket(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)], *slash;
	struct stat st;
	struct group *gr;
	int fd, e;

	if (strlen(path) >= sizeof(sun.sun_path) || path[0] != '/') {
		seterr(err, errlen, "api_socket %s: not an absolute path of at "
		    "most %zu bytes", path, sizeof(sun.sun_path) - 1);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	memcpy(dir, path, strlen(path) + 1);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		seterr(err, errlen, "api_socket %s: cannot make %s: %s", path,
		    dir, strerror(errno));
		return -1;
	}
	if (stat(dir, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		seterr(err, errlen, "api_socket %s: its directory %s must be "
		    "owned by root or tandemd's user and writable by nobody "
		    "else (another user could put a socket of their own there)",
		    path, dir);
		return -1;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			seterr(err, errlen, "api_socket %s: exists and is not a "
			    "socket", path);
			return -1;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
		if (fd != -1 && (connect(fd, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0 || errno == EAGAIN)) {
			close(fd);
			seterr(err, errlen, "api_socket %s: another tandemd "
			    "answers there (two daemons must not manage one "
			    "cluster; stop it, or give this one another "
			    "api_socket and listen)", path);
			return -1;
		}
		if (fd != -1)
			close(fd);
		/* left by a daemon that crashed: nobody listens */
		if (unlink(path) == -1 && errno != ENOENT) {
			seterr(err, errlen, "api_socket %s: cannot remove the "
			    "stale socket: %s", path, strerror(errno));
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		seterr(err, errlen, "api_socket: socket: %s", strerror(errno));
		return -1;
	}
	/* bound under umask (0027 in the unit): nobody else may connect yet */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		e = errno;
		close(fd);
		seterr(err, errlen, "api_socket %s: %s", path, strerror(e));
		return -1;
	}
	if ((gr = getgrnam("tandem")) != NULL &&
	    chown(path, (uid_t)-1, gr->gr_gid) == -1)
		log_debug("api_socket %s: group tandem: %s (the directory's "
		    "group stands)", path, strerror(errno));
	if (chmod(path, 0660) == -1 || listen(fd, LISTEN_BACKLOG) == -1) {
		e = errno;
		close(fd);
		unlink(path);
		seterr(err, errlen, "api_socket %s: %s", path, strerror(e));
		return -1;
	}
	return fd;
}

/* One MHD daemon on a socket made here, polled from the loop. */
static int
listener_start(struct cluster *cl, struct listener *l, int fd,
    unsigned limit)
{
	const union MHD_DaemonInfo *info;

	/*
	 * No limit per client address: on the default loopback listen every
	 * client is 127.0.0.1, and such a limit is then the whole limit
	 * (docs/architecture.md). MHD's own limit leaves room for the
	 * connections connq has already closed but MHD has not yet reaped.
	 */
	l->fd = fd;
	l->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL,
	    NULL, handle, cl,
	    /* first: MHD logs through its own logger until it has this one */
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, limit,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(33 * 1024),
	    MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
	    MHD_OPTION_END);
	if (l->mhd == NULL)
		return -1;
	if ((info = MHD_get_daemon_info(l->mhd,
	    MHD_DAEMON_INFO_EPOLL_FD)) == NULL) {
		MHD_stop_daemon(l->mhd);
		l->mhd = NULL;
		return -1;
	}
	uv_poll_init(cluster_loop(cl), &l->poll, info->epoll_fd);
	uv_poll_start(&l->poll, UV_READABLE, on_mhd_poll);
	return 0;
}

int
httpd_start(struct cluster *cl, char *err, size_t errlen)
{
	const struct config *cf = cluster_config(cl);
	char warn[ERRLEN];
	struct rlimit rl = { 0, 0 };
	size_t limit;
	int fd, sfd;

	if ((fd = listen_socket(cf, err, errlen)) == -1)
		return -1;
	if ((sfd = unix_socket(cf->api_socket, err, errlen)) == -1) {
		close(fd);
		return -1;
	}
	limit = conn_limit();
	connq_init(&srv.q, limit, HEAD_TIME_S * 1000, REQUEST_TIME_S * 1000);
	uv_timer_init(cluster_loop(cl), &srv.mhd_timer);
	if (listener_start(cl, &srv.l[L_TCP], fd,
	    (unsigned)(limit + CONNQ_SLACK)) == -1) {
		close(fd);
		close(sfd);
		unlink(cf->api_socket);
		seterr(err, errlen, "listen %s:%d: the HTTP library refused "
		    "the socket (or has no epoll)", cf->listen_host,
		    cf->listen_port);
		return -1;
	}
	if (listener_start(cl, &srv.l[L_UNIX], sfd, SOCK_CONN_MAX) == -1) {
		close(sfd);
		unlink(cf->api_socket);
		seterr(err, errlen, "api_socket %s: the HTTP library refused "
		    "the socket", cf->api_socket);
		httpd_stop();
		return -1;
	}
	srv.listen_host = xstrdup(cf->listen_host);
	srv.sock_path = xstrdup(cf->api_socket);
	run_mhd();
	getrlimit(RLIMIT_NOFILE, &rl);
	if (limit < CONNQ_MAX)
		log_warnx("API: up to %zu connections, as the open files limit "
		    "is %llu (LimitNOFILE=16384 in the unit gives %d)", limit,
		    (unsigned long long)rl.rlim_cur, CONNQ_MAX);
	else
		log_debug("API: up to %zu connections (open files limit %llu)",
		    limit, (unsigned long long)rl.rlim_cur);
	if (httpd_listen_warning(cf, warn, sizeof(warn)) != NULL)
		log_warnx("%s", warn);
	return 0;
}

void
httpd_stop(void)
{
	struct listener *l;

	for (l = srv.l; l < srv.l + L_MAX; l++) {
		if (l->mhd == NULL)
			continue;
		uv_poll_stop(&l->poll);
		uv_close((uv_handle_t *)&l->poll, NULL);
		MHD_stop_daemon(l->mhd);
		l->mhd = NULL;
	}
	if (!uv_is_closing((uv_handle_t *)&srv.mhd_timer) &&
	    srv.mhd_timer.loop != NULL)
		uv_close((uv_handle_t *)&srv.mhd_timer, NULL);
	shared_set(&srv.status, NULL, 0, 0);
	shared_set(&srv.metrics, NULL, 0, 0);
	shared_set(&srv.events_all, NULL, 0, 0);
	shared_set(&srv.events_since, NULL, 0, 0);
	if (srv.sock_path != NULL)
		unlink(srv.sock_path);
	free(srv.sock_path);
	free(srv.listen_host);
	srv.sock_path = srv.listen_host = NULL;
}
