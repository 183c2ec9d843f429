/*
 * The HTTP API (PRODUCT.md section 4) on libmicrohttpd, run inside the
 * libuv loop: MHD_USE_EPOLL gives one fd to watch; we call MHD_run when it
 * is readable and re-arm a timer from MHD_get_timeout. Handlers therefore
 * run on the loop thread and read the cluster's state directly, without
 * locks, and never wait on SSH or HTTP: every answer is built from memory.
 * This file runs MHD and its connections; a request's route is
 * httpd_route.c's, its handler httpd_get.c's or httpd_post.c's.
 */
#include <sys/resource.h>

#include <microhttpd.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "apiguard.h"
#include "cluster.h"
#include "conffile.h"
#include "httpd_int.h"
#include "log.h"

struct reqctx {
	size_t		 body;
	int		 too_large;
	struct sbuf	 text;	/* POST /apply on the socket: the file */
	int		 keep;	/* keep the body in text */
};

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
	if (httpd_state.q.evicted == httpd_state.evicted_warned ||
	    (httpd_state.evict_warned &&
	    now - httpd_state.evict_warned < EVICT_WARN_MS))
		return;
	log_warnx("API: at its limit of %zu connections; closed %llu that "
	    "were waiting for a request head (slow or idle clients) to let "
	    "new ones in", httpd_state.q.limit,
	    (unsigned long long)(httpd_state.q.evicted -
	    httpd_state.evicted_warned));
	httpd_state.evict_warned = now;
	httpd_state.evicted_warned = httpd_state.q.evicted;
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
		if ((victim = connq_add(&httpd_state.q, &k->q, now)) != NULL) {
			cut(victim, "the oldest waiting for a request head, to "
			    "make room at the limit");
			warn_evictions(now);
		}
		return;
	}
	if (k == NULL)
		return;
	connq_remove(&httpd_state.q, &k->q);
	free(k);
	*socket_context = NULL;
	httpd_state.closed_in_run++;
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

	while (n < CUT_BATCH &&
	    (e = connq_overdue(&httpd_state.q, now)) != NULL) {
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

	httpd_state.mhd_round++;
	httpd_state.closed_in_run = 0;
	for (l = httpd_state.l; l < httpd_state.l + L_MAX; l++) {
		if (l->mhd == NULL)
			continue;
		MHD_run(l->mhd);
		for (i = 0; i < ACCEPT_RUNS && listen_ready(l->fd); i++)
			MHD_run(l->mhd);
	}
	now = mono_ms();
	more = cut_overdue(now);
	for (l = httpd_state.l; l < httpd_state.l + L_MAX; l++)
		if (l->mhd != NULL && MHD_get_timeout(l->mhd, &t) == MHD_YES &&
		    t < to)
			to = t;
	if ((next = connq_next_deadline(&httpd_state.q)) != UINT64_MAX &&
	    next - now < to)
		to = next - now;
	if (httpd_state.closed_in_run || more)
		to = 1;
	if (to == ULLONG_MAX)
		uv_timer_stop(&httpd_state.mhd_timer);
	else
		uv_timer_start(&httpd_state.mhd_timer, on_mhd_timer,
		    to ? to : 1, 0);
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
			connq_head_done(&httpd_state.q, &k->q, mono_ms());
		*con_cls = rc = xcalloc(1, sizeof(struct reqctx));
		sbuf_init(&rc->text);
		rc->keep = post && strcmp(url, "/apply") == 0 &&
		    httpd_state_via_socket(c);
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
		return httpd_reply_json(c, 413, "request body too large");
	/*
	 * Every route, GET too (issue 43, item 4): a page whose DNS name now
	 * points here must read nothing, not even which routes exist. The
	 * socket has no web page behind it (curl sends Host: localhost).
	 */
	if (!httpd_state_via_socket(c) &&
	    apiguard_host_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_HOST), httpd_state.listen_host, err,
	    sizeof(err)) == -1)
		return httpd_reply_json(c, 403, err);
	if ((rt = httpd_route_find(url)) == NULL)
		return httpd_route_not_found(c);
	if (rt->post ? !post : strcmp(method, "GET") != 0 &&
	    strcmp(method, "HEAD") != 0)
		return httpd_route_not_allowed(c, rt);
	if (rt->post) {
		/* what /status said may change now */
		httpd_state.mhd_round++;
		if (httpd_post_door(cl, c, &refused))
			return refused;
	}
	httpd_state.req_text = rc->keep ? &rc->text : NULL;
	ret = rt->fn(cl, c);
	httpd_state.req_text = NULL;
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
		connq_answered(&httpd_state.q, &k->q, mono_ms());
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

	if ((fd = httpd_listen_tcp(cf, err, errlen)) == -1)
		return -1;
	if ((sfd = httpd_listen_unix(cf->api_socket, err, errlen)) == -1) {
		close(fd);
		return -1;
	}
	limit = conn_limit();
	connq_init(&httpd_state.q, limit, HEAD_TIME_S * 1000,
	    REQUEST_TIME_S * 1000);
	uv_timer_init(cluster_loop(cl), &httpd_state.mhd_timer);
	if (listener_start(cl, &httpd_state.l[L_TCP], fd,
	    (unsigned)(limit + CONNQ_SLACK)) == -1) {
		close(fd);
		close(sfd);
		unlink(cf->api_socket);
		seterr(err, errlen, "listen %s:%d: the HTTP library refused "
		    "the socket (or has no epoll)", cf->listen_host,
		    cf->listen_port);
		return -1;
	}
	if (listener_start(cl, &httpd_state.l[L_UNIX], sfd,
	    SOCK_CONN_MAX) == -1) {
		close(sfd);
		unlink(cf->api_socket);
		seterr(err, errlen, "api_socket %s: the HTTP library refused "
		    "the socket", cf->api_socket);
		httpd_stop();
		return -1;
	}
	httpd_state.listen_host = xstrdup(cf->listen_host);
	httpd_state.sock_path = xstrdup(cf->api_socket);
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

	for (l = httpd_state.l; l < httpd_state.l + L_MAX; l++) {
		if (l->mhd == NULL)
			continue;
		uv_poll_stop(&l->poll);
		uv_close((uv_handle_t *)&l->poll, NULL);
		MHD_stop_daemon(l->mhd);
		l->mhd = NULL;
	}
	if (!uv_is_closing((uv_handle_t *)&httpd_state.mhd_timer) &&
	    httpd_state.mhd_timer.loop != NULL)
		uv_close((uv_handle_t *)&httpd_state.mhd_timer, NULL);
	httpd_reply_keep(&httpd_state.status, NULL, 0, 0);
	httpd_reply_keep(&httpd_state.metrics, NULL, 0, 0);
	httpd_reply_keep(&httpd_state.events_all, NULL, 0, 0);
	httpd_reply_keep(&httpd_state.events_since, NULL, 0, 0);
	if (httpd_state.sock_path != NULL)
		unlink(httpd_state.sock_path);
	free(httpd_state.sock_path);
	free(httpd_state.listen_host);
	httpd_state.sock_path = httpd_state.listen_host = NULL;
}
