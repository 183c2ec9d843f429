/*
 * One persistent SSH session per node, libssh2 in non-blocking mode on a
 * uv_poll_t (curl's lib/vssh/libssh2.c is the model). After every EAGAIN we
 * ask libssh2_session_block_directions() which way to wait and repeat the
 * same call with the same arguments. libssh2's own timeouts only work in
 * blocking mode, so deadlines are ours: a timer set to the nearest one
 * (at most 500 ms away) checks them.
 *
 * This file is the session: connect, handshake, authentication, each
 * phase with a deadline of its own, then the channel jobs (ssh_job.c) and
 * the watch on the node's liveness (ssh_alive.c) while it is up. The host
 * key check is ssh_hostkey.c's.
 */
#include <sys/socket.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ssh_int.h"
#include "log.h"

#define TICK_MS		500	/* the longest pump goes without running */

/* How a step of the connection ended. */
enum step {
	STEP_NEXT,	/* done: on to the next phase */
	STEP_WAIT,	/* waits for the socket */
	STEP_STOP,	/* the session failed, or its owner closed it */
};

/* What a login tries: the identity file, then (tandemctl init) the agent. */
enum auth_phase { AUTH_KEY, AUTH_AGENT };

LIBSSH2_SEND_FUNC((*ssh_send_hook));

static void	pump(struct sshc *);
static void	schedule(struct sshc *);
static void	agent_free(struct sshc *);

static void
enter(struct sshc *c, enum connstate st)
{
	c->state = st;
	c->deadline_ms = mono_ms() + ssh_phase_limit_ms(&c->p);
}

static void
on_handle_closed(uv_handle_t *h)
{
	struct sshc *c = h->data;

	if (--c->handles_open == 0)
		free(c);
}

static void
free_poll(uv_handle_t *h)
{
	free(h);
}

/* Both timers: the scheduled one (tick) and the one a new job starts. */
static void
on_timer(uv_timer_t *t)
{
	pump(t->data);
	schedule(t->data);
}

static void
kick(struct sshc *c)
{
	uv_timer_start(&c->kick, on_timer, 0, 0);
}

/* A new job joins the up session's list, run at the next pump. */
static struct job *
add_job(struct sshc *c, struct job *j)
{
	jobs_append(&c->jobs, j);
	kick(c);
	return j;
}

/*
 * A timer for next ms; never 0: libuv runs a timer re-armed at 0 from its
 * own callback again at once, without polling, and a deadline that has
 * passed but was not acted on would so spin the loop (and starve every
 * other handle: the API, signals, the watchdog).
 */
static void
arm_tick(struct sshc *c, uint64_t next)
{
	uv_timer_start(&c->tick, on_timer, next < 1 ? 1 : next, 0);
}

struct sshc *
sshc_new(uv_loop_t *loop, const struct ssh_params *p, ssh_state_fn *cb,
    void *arg)
{
	struct sshc *c = xcalloc(1, sizeof(*c));

	c->loop = loop;
	c->p = *p;
	c->p.host = c->own[0] = xstrdup(p->host);
	c->p.user = c->own[1] = xstrdup(p->user);
	c->p.identity_file = c->own[2] = xstrdup(p->identity_file);
	c->p.known_hosts_file = c->own[3] = xstrdup(p->known_hosts_file);
	c->fd = -1;
	c->cb = cb;
	c->arg = arg;
	uv_timer_init(loop, &c->tick);
	uv_timer_init(loop, &c->kick);
	c->tick.data = c->kick.data = c;
	c->handles_open = 2;
	return c;
}

int
sshc_is_up(const struct sshc *c)
{
	return c->state == C_UP;
}

int
sshc_is_connecting(const struct sshc *c)
{
	return c->state != C_UP && c->state != C_DOWN;
}

uint64_t
sshc_execs(const struct sshc *c)
{
	return c->execs;
}

size_t
sshc_channels_refused(const struct sshc *c)
{
	if (c->state != C_UP || c->lim.refused_ms == 0 ||
	    mono_ms() - c->lim.refused_ms > SSH_REFUSAL_SHOWN_MS)
		return 0;
	return c->lim.refused_at;
}

void
ssh_fail(struct sshc *c, const char *why, int fatal)
{
	struct job *list = c->jobs;

	if (c->state == C_DOWN)
		return;
	snprintf(c->why, sizeof(c->why), "%s", why);
	c->jobs = NULL;
	if (c->poll) {
		uv_close((uv_handle_t *)c->poll, free_poll);
		c->poll = NULL;
		c->poll_ev = 0;
	}
	if (c->fd >= 0) {
		/* Anything libssh2 still sends now fails at once. */
		shutdown(c->fd, SHUT_RDWR);
	}
	if (c->s) {
		libssh2_session_set_blocking(c->s, 1);
		agent_free(c);
		jobs_free_channels(list);
		libssh2_session_free(c->s);
		c->s = NULL;
	}
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	c->state = C_DOWN;
	c->unread = 0;
	c->sender = NULL;
	c->auth_phase = AUTH_KEY;
	c->auth_by = NULL;
	uv_timer_stop(&c->tick);
	uv_timer_stop(&c->kick);
	jobs_report(list, why);
	if (!c->freeing)
		c->cb(c, 0, c->why, fatal, c->arg);
}

static void
on_poll(uv_poll_t *h, int status, int events)
{
	struct sshc *c = h->data;

	(void)events;
	if (status < 0 && c->state == C_CONNECTING) {
		char why[256];
		int err = 0;
		socklen_t len = sizeof(err);

		/* libuv says EBADF for a refused connect; the socket knows. */
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		snprintf(why, sizeof(why), "connect to %s:%d: %s", c->p.host,
		    c->p.port, err ? strerror(err) : uv_strerror(status));
		ssh_fail(c, why, 0);
		return;
	}
	pump(c);
	schedule(c);
}

static void
arm(struct sshc *c)
{
	int ev = 0, dirs;

	if (c->poll == NULL)
		return;
	if (c->state == C_CONNECTING)
		ev = UV_WRITABLE;
	else if (c->s) {
		dirs = libssh2_session_block_directions(c->s);
		if (dirs & LIBSSH2_SESSION_BLOCK_INBOUND)
			ev |= UV_READABLE;
		if (dirs & LIBSSH2_SESSION_BLOCK_OUTBOUND)
			ev |= UV_WRITABLE;
		/*
		 * With channels open, data may arrive at any time. Without
		 * any, nothing would read it and the poll would spin; the
		 * tick watches the connection instead.
		 */
		if (c->state != C_UP || c->jobs)
			ev |= UV_READABLE;
	}
	/* unchanged: no epoll_ctl (libuv would redo it at every start) */
	if (ev == c->poll_ev)
		return;
	c->poll_ev = ev;
	if (ev)
		uv_poll_start(c->poll, ev, on_poll);
	else
		uv_poll_stop(c->poll);
}

static void	connect_to(struct sshc *, const struct addrinfo *);

static void
on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct sshc *c = req->data;
	char why[256];

	if (c->freeing) {
		uv_freeaddrinfo(res);
		if (--c->handles_open == 0)
			free(c);
		return;
	}
	if (c->state != C_RESOLVING) {
		c->handles_open--;
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0 || res == NULL) {
		c->handles_open--;
		snprintf(why, sizeof(why), "resolve %s: %s", c->p.host,
		    uv_strerror(status));
		uv_freeaddrinfo(res);
		ssh_fail(c, why, 0);
		return;
	}
	connect_to(c, res);
	uv_freeaddrinfo(res);
}

static void
connect_to(struct sshc *c, const struct addrinfo *res)
{
	char why[256];
	int fd, rc;

	c->handles_open--;
	memcpy(&c->addr, res->ai_addr, res->ai_addrlen);
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0) {
		snprintf(why, sizeof(why), "socket: %s", strerror(errno));
		ssh_fail(c, why, 0);
		return;
	}
	rc = connect(fd, res->ai_addr, res->ai_addrlen);
	c->fd = fd;
	if (rc < 0 && errno != EINPROGRESS) {
		snprintf(why, sizeof(why), "connect to %s:%d: %s", c->p.host,
		    c->p.port, strerror(errno));
		ssh_fail(c, why, 0);
		return;
	}
	{
		int one = 1;

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	c->poll = xcalloc(1, sizeof(*c->poll));
	uv_poll_init_socket(c->loop, c->poll, fd);
	c->poll->data = c;
	enter(c, C_CONNECTING);
	arm(c);
}

void
sshc_connect(struct sshc *c)
{
	struct addrinfo hints, ai;
	struct sockaddr_in sin;
	char port[16];

	if (c->state != C_DOWN || c->freeing)
		return;
	/* An address needs no resolver (and so no libuv threadpool). */
	memset(&sin, 0, sizeof(sin));
	if (inet_pton(AF_INET, c->p.host, &sin.sin_addr) == 1) {
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)c->p.port);
		memset(&ai, 0, sizeof(ai));
		ai.ai_family = AF_INET;
		ai.ai_addr = (struct sockaddr *)&sin;
		ai.ai_addrlen = sizeof(sin);
		enter(c, C_RESOLVING);
		c->handles_open++;
		c->gai.data = c;
		connect_to(c, &ai);
		schedule(c);
		return;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%d", c->p.port);
	enter(c, C_RESOLVING);
	c->gai.data = c;
	c->handles_open++;
	if (uv_getaddrinfo(c->loop, &c->gai, on_resolved, c->p.host, port,
	    &hints) != 0) {
		c->handles_open--;
		ssh_fail(c, "resolve: cannot start", 0);
		return;
	}
	schedule(c);
}

/*
 * When pump must next run if no byte comes: at a deadline, at the next
 * beat, or the moment the node's silence would reach the limit (so a lost
 * node is called lost then, not a tick later). Without a heartbeat, at
 * least every TICK_MS for libssh2's keepalives and the connection's state.
 */
static void
schedule(struct sshc *c)
{
	uint64_t now = mono_ms(), next = TICK_MS;

	if (c->state == C_DOWN)
		return;
	if (c->state != C_UP) {
		if (c->deadline_ms < now + next)
			next = c->deadline_ms > now ? c->deadline_ms - now : 0;
		arm_tick(c, next);
		return;
	}
	/*
	 * Bytes left for the next turn: read at the next (arm_tick: not
	 * this one; the loop's other handles come first). They may sit in
	 * libssh2's buffers already, with nothing more on the socket.
	 */
	if (c->unread) {
		arm_tick(c, 0);
		return;
	}
	next = alive_wake_ms(c, next);
	arm_tick(c, jobs_wake_ms(c->jobs, &c->lim, now, next));
}

/* C_RESOLVING: the resolver answers on_resolved; only its deadline here. */
static void
resolve_step(struct sshc *c, uint64_t now)
{
	char why[512];

	if (now > c->deadline_ms) {
		snprintf(why, sizeof(why), "resolve %s: timed out", c->p.host);
		ssh_fail(c, why, 0);
	}
}

/* Fails the session with a formatted reason; the step stops there. */
static enum step	step_fail(struct sshc *c, int fatal, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));

static enum step
step_fail(struct sshc *c, int fatal, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	ssh_fail(c, why, fatal);
	return STEP_STOP;
}

/* C_CONNECTING: once TCP is up, a non-blocking libssh2 session on it. */
static enum step
connect_step(struct sshc *c, uint64_t now)
{
	struct tcp_info ti;
	int fd_err = 0;
	socklen_t len = sizeof(fd_err);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &fd_err, &len) == 0 &&
	    fd_err)
		return step_fail(c, 0, "connect to %s:%d: %s", c->p.host,
		    c->p.port, strerror(fd_err));
	len = sizeof(ti);
	if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    ti.tcpi_state != TCP_ESTABLISHED) {
		if (now <= c->deadline_ms)
			return STEP_WAIT;
		return step_fail(c, 0, "connect to %s:%d: timed out",
		    c->p.host, c->p.port);
	}
	c->s = libssh2_session_init();
	if (c->s == NULL)
		return step_fail(c, 0, "libssh2_session_init failed");
	libssh2_session_set_blocking(c->s, 0);
	if (ssh_send_hook)
		libssh2_session_callback_set(c->s, LIBSSH2_CALLBACK_SEND,
		    (void *)ssh_send_hook);
	ssh_prefer_hostkeys(c->s, &c->p, c->scan_only);
	enter(c, C_HANDSHAKE);
	return STEP_NEXT;
}

/* C_HANDSHAKE: key exchange, then the host key against known_hosts. */
static enum step
handshake_step(struct sshc *c, uint64_t now)
{
	char why[512];
	int rc = libssh2_session_handshake(c->s, c->fd);

	if (rc == LIBSSH2_ERROR_EAGAIN && now >= c->deadline_ms) {
		/* accepted, but no sshd answers (stopped, overloaded) */
		return step_fail(c, 0, "ssh handshake with %s:%d timed "
		    "out after %.1f s: the port accepts connections but "
		    "sshd does not answer", c->p.host, c->p.port,
		    c->p.connect_timeout_s);
	}
	if (rc == LIBSSH2_ERROR_EAGAIN)
		return STEP_WAIT;
	if (rc)
		return step_fail(c, 0, "ssh handshake with %s: %s",
		    c->p.host, ssh_errmsg(c->s));
	if (c->scan_only) {
		/* tandemctl init: shown to the operator, never trusted here */
		ssh_read_hostkey(c->s, &c->p, &c->seen);
		return step_fail(c, 0, "host key read");
	}
	if (ssh_check_hostkey(c->s, &c->p, why, sizeof(why)) == -1)
		return step_fail(c, 1, "%s", why);
	enter(c, C_AUTH);
	return STEP_NEXT;
}

/*
 * tandemctl init (sshc_use_agent): the agent's keys one after another,
 * once the identity file is missing or refused. 0 logged in, EAGAIN, or
 * another libssh2 error when no key of the agent's is accepted.
 */
static int
agent_auth(struct sshc *c)
{
	int rc;

	if (c->agent == NULL) {
		/* a local socket: connecting and listing never wait on a node */
		if ((c->agent = libssh2_agent_init(c->s)) == NULL)
			return LIBSSH2_ERROR_AGENT_PROTOCOL;
		if (libssh2_agent_connect(c->agent) != 0 ||
		    libssh2_agent_list_identities(c->agent) != 0 ||
		    libssh2_agent_get_identity(c->agent, &c->agent_id, NULL) !=
		    0) {
			c->agent_id = NULL;
			return LIBSSH2_ERROR_AGENT_PROTOCOL;
		}
	}
	while (c->agent_id) {
		rc = libssh2_agent_userauth(c->agent, c->p.user, c->agent_id);
		if (rc == 0 || rc == LIBSSH2_ERROR_EAGAIN)
			return rc;
		if (ssh_session_error(rc))
			return rc;
		if (libssh2_agent_get_identity(c->agent, &c->agent_id,
		    c->agent_id) != 0)
			c->agent_id = NULL;
	}
	return LIBSSH2_ERROR_AUTHENTICATION_FAILED;
}

static void
agent_free(struct sshc *c)
{
	if (c->agent == NULL)
		return;
	libssh2_agent_disconnect(c->agent);
	libssh2_agent_free(c->agent);
	c->agent = NULL;
	c->agent_id = NULL;
}

/*
 * The identity file's key (or, for tandemctl init, the agent's), one
 * attempt at a time, repeated with the same arguments after EAGAIN.
 */
static int
auth_try(struct sshc *c)
{
	int rc;

	if (c->auth_phase == AUTH_KEY) {
		if (c->use_agent && access(c->p.identity_file, R_OK) != 0)
			rc = LIBSSH2_ERROR_FILE;
		else
			rc = libssh2_userauth_publickey_fromfile(c->s,
			    c->p.user, NULL, c->p.identity_file, NULL);
		if (rc == 0)
			c->auth_by = "key";
		if (rc == 0 || rc == LIBSSH2_ERROR_EAGAIN || !c->use_agent ||
		    ssh_session_error(rc))
			return rc;
		c->auth_phase = AUTH_AGENT;
	}
	if ((rc = agent_auth(c)) == 0)
		c->auth_by = "agent";
	return rc;
}

/* C_AUTH: the identity file's key; then up, with its heartbeat. */
static enum step
auth_step(struct sshc *c, uint64_t now)
{
	int rc = auth_try(c);

	if (rc == LIBSSH2_ERROR_EAGAIN && now >= c->deadline_ms) {
		/* not fatal: a stalled sshd is not a refused key */
		return step_fail(c, 0, "ssh authentication as %s@%s:%d "
		    "timed out after %.1f s: sshd stalls in the login "
		    "(overloaded, or a hanging AuthorizedKeysCommand, PAM "
		    "or DNS lookup)", c->p.user, c->p.host, c->p.port,
		    c->p.connect_timeout_s);
	}
	if (rc == LIBSSH2_ERROR_EAGAIN)
		return STEP_WAIT;
	if (rc && c->auth_phase == AUTH_AGENT)
		return step_fail(c, 1, "ssh authentication as %s@%s "
		    "with %s and the agent's keys refused: %s", c->p.user,
		    c->p.host, c->p.identity_file, c->agent ? ssh_errmsg(c->s) :
		    "no ssh-agent (SSH_AUTH_SOCK)");
	if (rc)
		return step_fail(c, 1, "ssh authentication as %s@%s "
		    "with %s refused: %s", c->p.user, c->p.host,
		    c->p.identity_file, ssh_errmsg(c->s));
	agent_free(c);
	c->state = C_UP;
	memset(&c->lim, 0, sizeof(c->lim));
	c->lim.max = SSH_CHANNELS_MAX;
	add_job(c, alive_start(c));
	c->cb(c, 1, "connected", 0, c->arg);
	return c->state == C_UP ? STEP_NEXT : STEP_STOP;
}

/*
 * C_UP: the jobs move on; those that ended are reported last, when the
 * session is consistent again (a callback may start a new job, or close
 * the session).
 */
static void
jobs_step(struct sshc *c, uint64_t now)
{
	struct job_env env = { c->s, &c->p, &c->execs, &c->lim, &c->sender,
	    0, 0 };
	struct job *finished;
	char why[512];

	if (jobs_run(&c->jobs, &env, now, &finished, why, sizeof(why)) == -1)
		ssh_fail(c, why, 0);
	else {
		c->unread = env.unread;
		arm(c);
	}
	jobs_report(finished, NULL);
}

/*
 * Runs the connection on as far as it goes without waiting, each phase
 * falling through to the next once done; a phase that must wait re-arms
 * the poll for the directions libssh2 is blocked in.
 */
static void
pump(struct sshc *c)
{
	uint64_t now = mono_ms();
	enum step st = STEP_NEXT;
	char why[512];

	switch (c->state) {
	case C_DOWN:
		return;
	case C_RESOLVING:
		resolve_step(c, now);
		return;
	case C_CONNECTING:
		if ((st = connect_step(c, now)) != STEP_NEXT)
			break;
		/* FALLTHROUGH */
	case C_HANDSHAKE:
		if ((st = handshake_step(c, now)) != STEP_NEXT)
			break;
		/* FALLTHROUGH */
	case C_AUTH:
		if ((st = auth_step(c, now)) != STEP_NEXT)
			break;
		/* FALLTHROUGH */
	case C_UP:
		if (alive_watch(c, why, sizeof(why)) == 0)
			jobs_step(c, now);
		else
			ssh_fail(c, why, 0);
		return;
	}
	if (st == STEP_WAIT)
		arm(c);
}

struct job *
ssh_add_job(struct sshc *c, const char *cmd, int flags, double timeout_s,
    ssh_line_fn *line, ssh_exec_fn *done, void *arg)
{
	struct job *j;

	if (c->state != C_UP)
		return NULL;
	j = job_new(&c->p, cmd, flags, timeout_s, line, done, arg);
	return add_job(c, j);
}

int
sshc_exec(struct sshc *c, const char *cmd, double timeout_s,
    ssh_exec_fn *done, void *arg)
{
	return ssh_add_job(c, cmd, JOB_WRAP, timeout_s, NULL, done, arg) ? 0 : -1;
}

int
sshc_stream(struct sshc *c, const char *cmd, ssh_line_fn *line,
    ssh_exec_fn *done, void *arg)
{
	return ssh_add_job(c, cmd, JOB_WRAP, 0, line, done, arg) ? 0 : -1;
}

void
sshc_scan_only(struct sshc *c)
{
	c->scan_only = 1;
}

const struct ssh_seen_key *
sshc_seen_key(const struct sshc *c)
{
	return &c->seen;
}

void
sshc_use_agent(struct sshc *c)
{
	c->use_agent = 1;
}

const char *
sshc_auth_by(const struct sshc *c)
{
	return c->state == C_UP ? c->auth_by : NULL;
}

void
sshc_disconnect(struct sshc *c, const char *why)
{
	ssh_fail(c, why, 0);
}

void
sshc_free(struct sshc *c)
{
	c->freeing = 1;
	ssh_fail(c, "shutting down", 0);
	for (size_t i = 0; i < sizeof(c->own) / sizeof(c->own[0]); i++)
		free(c->own[i]);
	uv_close((uv_handle_t *)&c->tick, on_handle_closed);
	uv_close((uv_handle_t *)&c->kick, on_handle_closed);
}
