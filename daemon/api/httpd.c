/*
 * The HTTP API (PRODUCT.md section 4) on libmicrohttpd, run inside the
 * libuv loop: MHD_USE_EPOLL gives one fd to watch; we call MHD_run when it
 * is readable and re-arm a timer from MHD_get_timeout. Handlers therefore
 * run on the loop thread and read the cluster's state directly, without
 * locks, and never wait on SSH or HTTP: every answer is built from memory.
 */
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bundle_store.h"
#include "cluster.h"
#include "ssh.h"
#include "statuspage.h"
#include "api.h"
#include "http.h"
#include "log.h"
#include "notify.h"

/* The status page's sources (daemon/api/page/), built in by the Makefile (xxd -i). */
extern unsigned char	 status_html[], status_css[], status_js[];
extern unsigned int	 status_html_len, status_css_len, status_js_len;

#define BODY_MAX	4096
#define CONN_LIMIT	512
/*
 * Per client address, well below CONN_LIMIT so that one client cannot take
 * every slot; every client on the head node itself is 127.0.0.1 and shares
 * these (docs/api.md, "Limits").
 */
#define CONN_PER_IP	64
#define CONN_TIMEOUT_S	10
#define REQUEST_TIME_S	10

struct reqctx {
	size_t	 body;
	int	 too_large;
};

/*
 * One per TCP connection, oldest deadline first. MHD's own timeout closes
 * only a connection that is silent for CONN_TIMEOUT_S; a client that sends
 * one header byte a second would keep its slot for ever. So each request
 * must arrive and its answer leave within REQUEST_TIME_S of the connection
 * opening or of the previous answer, or the connection is cut.
 */
struct conn {
	TAILQ_ENTRY(conn)	 entry;
	struct MHD_Connection	*c;
	uint64_t		 deadline;	/* mono_ms */
	int			 cut;		/* shut down, no longer queued */
};

/*
 * The server's one place of state: MHD runs one daemon per process, on
 * the daemon's loop (httpd_start / httpd_stop).
 */
static struct {
	struct MHD_Daemon	*mhd;
	uv_poll_t		 mhd_poll;
	uv_timer_t		 mhd_timer;
	/*
	 * Within one MHD_run nothing but a POST handler can change the
	 * cluster, so every GET /status of that round gets the same document,
	 * rendered once: under load, many requests are answered per round.
	 */
	uint64_t		 mhd_round;
	char			*status_doc;
	uint64_t		 status_round;
	TAILQ_HEAD(, conn)	 conns;
	unsigned		 closed_in_run;
} srv = { .conns = TAILQ_HEAD_INITIALIZER(srv.conns) };

static void	run_mhd(void);

static void
on_mhd_timer(uv_timer_t *t)
{
	(void)t;
	run_mhd();
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct conn *k = *socket_context;

	(void)cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		k = xcalloc(1, sizeof(*k));
		k->c = c;
		k->deadline = mono_ms() + REQUEST_TIME_S * 1000;
		TAILQ_INSERT_TAIL(&srv.conns, k, entry);
		*socket_context = k;
		return;
	}
	if (k == NULL)
		return;
	if (!k->cut)
		TAILQ_REMOVE(&srv.conns, k, entry);
	free(k);
	*socket_context = NULL;
	srv.closed_in_run++;
}

/* An answer left: the next request on this connection gets its own time. */
static void
request_done(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci ? ci->socket_context : NULL;

	if (k == NULL || k->cut)
		return;
	k->deadline = mono_ms() + REQUEST_TIME_S * 1000;
	TAILQ_REMOVE(&srv.conns, k, entry);
	TAILQ_INSERT_TAIL(&srv.conns, k, entry);
}

/*
 * MHD (0.9.75) has no call to close a connection; shutting its socket down
 * makes epoll report a hang-up, and MHD's next run closes it the usual way
 * (and tells on_connection).
 */
static void
cut_overdue(uint64_t now)
{
	const union MHD_ConnectionInfo *ci;
	struct conn *k;

	while ((k = TAILQ_FIRST(&srv.conns)) != NULL && k->deadline <= now) {
		TAILQ_REMOVE(&srv.conns, k, entry);
		k->cut = 1;
		ci = MHD_get_connection_info(k->c,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci != NULL)
			shutdown(ci->connect_fd, SHUT_RDWR);
		log_debug("API: closed a connection whose request was not done "
		    "within %d s", REQUEST_TIME_S);
	}
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
 * MHD must never be left undriven. At CONN_LIMIT it takes its listen socket
 * out of epoll and puts it back only at the start of a later MHD_run; if
 * the run that closed connections was the last one (all of them timed out
 * at once, and MHD_get_timeout has nothing left to wait for), nothing would
 * call it again and the API would be dead for good. So a run that closed
 * anything is followed by another one, and while connections exist the
 * timer also waits for the oldest request deadline. The timer is never
 * armed at 0: from inside its own callback that makes libuv (1.44) run it
 * again in the same pass, for ever.
 */
static void
run_mhd(void)
{
	MHD_UNSIGNED_LONG_LONG to;
	struct conn *k;
	uint64_t now;

	srv.mhd_round++;
	srv.closed_in_run = 0;
	MHD_run(srv.mhd);
	now = mono_ms();
	cut_overdue(now);
	if (MHD_get_timeout(srv.mhd, &to) != MHD_YES)
		to = ULLONG_MAX;
	if ((k = TAILQ_FIRST(&srv.conns)) != NULL && k->deadline - now < to)
		to = k->deadline - now;
	if (srv.closed_in_run)
		to = 1;
	if (to == ULLONG_MAX)
		uv_timer_stop(&srv.mhd_timer);
	else
		uv_timer_start(&srv.mhd_timer, on_mhd_timer, to ? to : 1, 0);
}

static enum MHD_Result
reply(struct MHD_Connection *c, unsigned code, const char *type, char *body)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(body), body,
	    MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (code == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
reply_json_msg(struct MHD_Connection *c, unsigned code, const char *msg)
{
	json_t *j = json_pack("{s:s}", code < 300 ? "ok" : "error", msg);
	char *s = json_dumps(j, JSON_COMPACT);
	enum MHD_Result r;

	json_decref(j);
	r = reply(c, code, "application/json", s ? xprintf("%s\n", s) :
	    xstrdup("{}\n"));
	free(s);
	return r;
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
	char *s, *csp;
	size_t i, len;
	int rc;

	/* Only before the kernel's pool is ready, early at boot: no waiting. */
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		return reply_json_msg(c, 503, "no randomness for the page's "
		    "nonce yet; try again");
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(nonce + 2 * i, 3, "%02x", rnd[i]);
	if ((s = render_status(cl)) != NULL)
		st = json_loads(s, 0, NULL);
	free(s);
	if (st == NULL) {
		log_warnx("GET /: the status document cannot be rendered");
		return reply_json_msg(c, 500, "status cannot be rendered; see "
		    "tandemd's log");
	}
	ev = events_json(cl, 0);
	sbuf_init(&b);
	rc = statuspage_render(&b, &tmpl, st, ev, nonce, now_s(), err,
	    sizeof(err));
	json_decref(st);
	json_decref(ev);
	if (rc == -1) {
		sbuf_free(&b);
		log_warnx("GET /: %s", err);
		return reply_json_msg(c, 500, "the status page cannot be "
		    "rendered; see tandemd's log");
	}
	len = b.len;
	r = MHD_create_response_from_buffer(len, sbuf_take(&b),
	    MHD_RESPMEM_MUST_FREE);
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

/* Constant time: the comparison takes as long whatever the token. */
static int
token_ok(const char *given, const char *want)
{
	size_t gl = strlen(given), wl = strlen(want), i;
	unsigned char diff = gl != wl;

	for (i = 0; i < wl; i++)
		diff |= (unsigned char)want[i] ^
		    (unsigned char)(i < gl ? given[i] : 0);
	return diff == 0;
}

static enum MHD_Result
mutate(struct cluster *cl, struct MHD_Connection *c, const char *path)
{
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	const char *reset;

	srv.mhd_round++;	/* what /status said may change now */
	if (cluster_token(cl) == NULL)
		return reply_json_msg(c, 403, "mutating endpoints are disabled:"
		    " set api_token_file in the config to a file holding a "
		    "token, then reload (systemctl reload tandemd)");
	/* RFC 9110 11.1: the scheme is case-insensitive; 11.4: 1*SP follows. */
	if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
		return reply_json_msg(c, 401, "Authorization: Bearer <token> "
		    "required");
	auth += 7;
	while (*auth == ' ')
		auth++;
	if (!token_ok(auth, cluster_token(cl)))
		return reply_json_msg(c, 403, "wrong token");
	if (strcmp(path, "/rebuild") == 0) {
		reset = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
		    "reset");
		if (reset && strcmp(reset, "1") == 0)
			cluster_reset_remedy(cl);
		if (cluster_fsm(cl)->action == A_PAUSED)
			return reply_json_msg(c, 409, "paused: resume first");
		cluster_event(cl, EV_REBUILD, "POST /rebuild");
		return reply_json_msg(c, 202, "rebuild started");
	}
	if (strcmp(path, "/pause") == 0) {
		cluster_event(cl, EV_PAUSE, "POST /pause");
		return reply_json_msg(c, 202, "paused");
	}
	cluster_event(cl, EV_RESUME, "POST /resume");
	return reply_json_msg(c, 202, "resumed");
}

/* GET /rebuilds/last: the steps of the running or last rebuild. */
static enum MHD_Result
serve_trace(struct cluster *cl, struct MHD_Connection *c)
{
	json_t *j = cluster_trace_json(cl);
	enum MHD_Result r;
	char *s;

	if (j == NULL)
		return reply_json_msg(c, 404, "no rebuild since tandemd "
		    "started");
	s = json_dumps(j, JSON_INDENT(2));
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
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	char name[128], err[ERRLEN], *disp;
	struct MHD_Response *r;
	enum MHD_Result ret;
	uint64_t size;
	int fd;

	if (cluster_token(cl) == NULL)
		return reply_json_msg(c, 403, "GET /bundle needs the API token: "
		    "set api_token_file in the config");
	if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
		return reply_json_msg(c, 401, "Authorization: Bearer <token> "
		    "required");
	for (auth += 7; *auth == ' '; auth++)
		;
	if (!token_ok(auth, cluster_token(cl)))
		return reply_json_msg(c, 403, "wrong token");
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

static enum MHD_Result
handle(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data,
    size_t *data_size, void **con_cls)
{
	struct cluster *cl = cls;
	struct reqctx *rc = *con_cls;
	int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	int post = strcmp(method, "POST") == 0;
	int is_get_path, is_post_path;

	(void)version;
	(void)data;
	if (rc == NULL) {
		*con_cls = xcalloc(1, sizeof(struct reqctx));
		return MHD_YES;
	}
	if (*data_size) {
		rc->body += *data_size;
		if (rc->body > BODY_MAX)
			rc->too_large = 1;
		*data_size = 0;
		return MHD_YES;
	}
	if (rc->too_large)
		return reply_json_msg(c, 413, "request body too large");
	is_get_path = strcmp(url, "/status") == 0 || strcmp(url, "/healthz") ==
	    0 || strcmp(url, "/metrics") == 0 || strcmp(url, "/events") == 0;
	is_get_path |= strcmp(url, "/") == 0 ||
	    strcmp(url, "/rebuilds/last") == 0 || strcmp(url, "/bundle") == 0;
	is_post_path = strcmp(url, "/rebuild") == 0 || strcmp(url, "/pause") ==
	    0 || strcmp(url, "/resume") == 0;
	if (!is_get_path && !is_post_path)
		return reply_json_msg(c, 404, "no such endpoint: /status "
		    "/healthz /metrics /events /rebuilds/last /bundle, POST "
		    "/rebuild /pause /resume");
	if ((is_get_path && !get) || (is_post_path && !post)) {
		struct MHD_Response *r;
		enum MHD_Result ret;
		char *body = xstrdup("{\"error\":\"method not allowed\"}\n");

		r = MHD_create_response_from_buffer(strlen(body), body,
		    MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(r, "Allow", is_get_path ? "GET, HEAD" :
		    "POST");
		MHD_add_response_header(r, "Content-Type", "application/json");
		ret = MHD_queue_response(c, 405, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (is_post_path)
		return mutate(cl, c, url);
	if (strcmp(url, "/") == 0)
		return serve_page(cl, c);
	if (strcmp(url, "/status") == 0) {
		if (srv.status_doc == NULL || srv.status_round != srv.mhd_round) {
			char *s = render_status(cl);

			if (s == NULL) {
				log_warnx("/status: the document cannot be "
				    "rendered");
				return reply_json_msg(c, 500, "status cannot "
				    "be rendered; see tandemd's log");
			}
			free(srv.status_doc);
			srv.status_doc = xprintf("%s\n", s);
			srv.status_round = srv.mhd_round;
			free(s);
		}
		return reply(c, 200, "application/json", xstrdup(srv.status_doc));
	}
	if (strcmp(url, "/healthz") == 0) {
		int ok = cluster_fsm(cl)->state == ST_SERVING;

		return reply(c, ok ? 200 : 503, "text/plain", xprintf("%s\n",
		    state_name(cluster_fsm(cl)->state,
		    cluster_fsm(cl)->dp)));
	}
	if (strcmp(url, "/metrics") == 0)
		return reply(c, 200, "text/plain; version=0.0.4; charset=utf-8",
		    render_metrics(cl));
	if (strcmp(url, "/rebuilds/last") == 0)
		return serve_trace(cl, c);
	if (strcmp(url, "/bundle") == 0)
		return serve_bundle(cl, c);
	{
		const char *since = MHD_lookup_connection_value(c,
		    MHD_GET_ARGUMENT_KIND, "since");
		enum MHD_Result r;
		char *end = NULL;
		unsigned long long n = 0;
		json_t *a;
		char *s;

		if (since) {
			n = strtoull(since, &end, 10);
			if (*since == '\0' || *end != '\0')
				return reply_json_msg(c, 400, "since must be "
				    "an event sequence number");
		}
		a = events_json(cl, n);
		s = json_dumps(a, JSON_INDENT(2));
		json_decref(a);
		r = reply(c, 200, "application/json", xprintf("%s\n", s ?
		    s : "[]"));
		free(s);
		return r;
	}
}

static void
completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)toe;
	free(*con_cls);
	*con_cls = NULL;
	request_done(c);
}

/*
 * The API token. As ssh does with a private key, a token file others can
 * read or write is refused: it is checked on the open file, so what is read
 * is what was checked. Group access is allowed only on a file owned by
 * someone else (root:tandem 0640 for a daemon run as User=tandem).
 * 0 with *tok set, or NULL when no file is configured, it cannot be read or
 * it is empty (POST then answers 403); -1 when the file is too open.
 */
int
httpd_token_read(const char *path, char **tok, char *err, size_t errlen)
{
	struct stat st;
	char buf[512];
	ssize_t r;
	size_t n = 0;
	int fd;

	*tok = NULL;
	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	if (fstat(fd, &st) == 0 && (st.st_mode & (st.st_uid == geteuid() ?
	    077 : 007)) != 0) {
		seterr(err, errlen, "api_token_file %s has mode %04o: others "
		    "can read or change the token; refused (chmod 600 %s)",
		    path, (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return -1;
	}
	while (n < sizeof(buf) - 1 && ((r = read(fd, buf + n,
	    sizeof(buf) - 1 - n)) > 0 || (r == -1 && errno == EINTR)))
		if (r > 0)
			n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ' ||
	    buf[n - 1] == '\r'))
		buf[--n] = '\0';
	*tok = n ? xstrdup(buf) : NULL;
	return 0;
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
	int fd, on = 1, e;

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
	if (bind(fd, (struct sockaddr *)&ss, sslen) == 0 &&
	    listen(fd, 128) == 0)
		return fd;
	e = errno;
	close(fd);
	if (e == EADDRINUSE)
		seterr(err, errlen, "listen %s:%d: address in use by another "
		    "program%s; set \"listen\" in tandem.json to a free port",
		    cf->listen_host, cf->listen_port, cf->listen_port == 9100 ?
		    " (node_exporter uses 9100 by default)" : "");
	else
		seterr(err, errlen, "listen %s:%d: %s", cf->listen_host,
		    cf->listen_port, strerror(e));
	return -1;
}

int
httpd_start(struct cluster *cl, char *err, size_t errlen)
{
	const struct config *cf = cluster_config(cl);
	char warn[ERRLEN];
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	int fd;

	if ((fd = listen_socket(cf, err, errlen)) == -1)
		return -1;
	srv.mhd = MHD_start_daemon(flags, (uint16_t)cf->listen_port, NULL, NULL,
	    handle, cl,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_LIMIT,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)CONN_PER_IP,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
	    MHD_OPTION_END);
	if (srv.mhd == NULL) {
		close(fd);
		seterr(err, errlen, "listen %s:%d: the HTTP library refused "
		    "the socket", cf->listen_host, cf->listen_port);
		return -1;
	}
	info = MHD_get_daemon_info(srv.mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (info == NULL) {
		seterr(err, errlen, "libmicrohttpd without epoll support");
		MHD_stop_daemon(srv.mhd);
		srv.mhd = NULL;
		return -1;
	}
	uv_poll_init(cluster_loop(cl), &srv.mhd_poll, info->epoll_fd);
	uv_poll_start(&srv.mhd_poll, UV_READABLE, on_mhd_poll);
	uv_timer_init(cluster_loop(cl), &srv.mhd_timer);
	run_mhd();
	if (httpd_listen_warning(cf, warn, sizeof(warn)) != NULL)
		log_warnx("%s", warn);
	return 0;
}

void
httpd_stop(void)
{
	if (srv.mhd == NULL)
		return;
	uv_poll_stop(&srv.mhd_poll);
	uv_close((uv_handle_t *)&srv.mhd_poll, NULL);
	uv_close((uv_handle_t *)&srv.mhd_timer, NULL);
	MHD_stop_daemon(srv.mhd);
	srv.mhd = NULL;
	free(srv.status_doc);
	srv.status_doc = NULL;
}
