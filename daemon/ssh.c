/*
 * One persistent SSH session per node, libssh2 in non-blocking mode on a
 * uv_poll_t (curl's lib/vssh/libssh2.c is the model). After every EAGAIN we
 * ask libssh2_session_block_directions() which way to wait and repeat the
 * same call with the same arguments. libssh2's own timeouts only work in
 * blocking mode, so deadlines are ours: a timer set to the nearest one
 * (at most 500 ms away) checks them.
 *
 * Liveness does not wait for a command to hang. A node that closes the
 * connection (reboot, sshd killed) is seen at once, as a read error on the
 * channels that always read (heartbeat, docker events) or as the kernel's
 * TCP state. A node that goes silent (network cut, power-off) is seen when
 * no byte has arrived for three keepalive_s, the timer set to that moment:
 * every keepalive_s the daemon writes a line to a heartbeat channel on each
 * session and the node echoes it (libssh2's keepalives go out by whole
 * seconds only, so alone they allow no less than two intervals and a second
 * of silence, which stays the rule if the heartbeat cannot run). The beats
 * fall on multiples of keepalive_s of the loop's clock, the same instant
 * for every session: the loop wakes once per beat for all nodes, not once
 * per node.
 */
#include <sys/socket.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quote.h"
#include "tandemd.h"

#define OUTPUT_CAP	(1024 * 1024)	/* a command's output; a stream's line */
#define TICK_MS		500	/* the longest pump goes without running */

/*
 * Echoes each line the daemon writes: the shell's builtin read, no process
 * per beat, POSIX (any login shell runs it); ends with the channel.
 */
#define HEARTBEAT_CMD	"while read -r _; do echo; done"

enum connstate {
	C_DOWN,
	C_RESOLVING,
	C_CONNECTING,
	C_HANDSHAKE,
	C_AUTH,
	C_UP,
};

enum jstate {
	J_OPEN,
	J_EXEC,
	J_READ,
	J_CLOSE,
	J_WAITCLOSED,
	J_FREE,
	J_DONE,
};

struct job {
	struct job		*next;
	char			*cmd;
	char			*wire;		/* what is sent: cmd, wrapped */
	LIBSSH2_CHANNEL		*ch;
	enum jstate		 st;
	struct sbuf		 out;
	struct sbuf		 err;
	ssh_exec_fn		*done;
	ssh_line_fn		*line;
	void			*arg;
	uint64_t		 start_ms;
	uint64_t		 deadline_ms;	/* 0: none (streams) */
	uint64_t		 phase_ms;	/* channel open, exec */
	int			 skipping;	/* an overlong line, to its end */
	int			 beats;		/* the heartbeat channel */
	int			 ping;		/* a beat is due to be written */
	int			 reported;	/* done was called */
	int			 exit_code;
	const char		*error;
	char			 errbuf[160];
};

struct sshc {
	uv_loop_t		*loop;
	struct ssh_params	 p;
	enum connstate		 state;
	int			 fd;
	LIBSSH2_SESSION		*s;
	uv_poll_t		*poll;
	int			 poll_ev;	/* what poll waits for */
	uv_timer_t		 tick;
	uv_timer_t		 kick;
	uv_getaddrinfo_t	 gai;
	struct sockaddr_storage	 addr;
	uint64_t		 deadline_ms;	/* of the phase (connect, ...) */
	struct job		*jobs;
	ssh_state_fn		*cb;
	void			*arg;
	int			 freeing;
	int			 handles_open;
	uint64_t		 execs;
	int			 heartbeat;	/* its lines arrive */
	uint64_t		 next_beat_ms;
	uint64_t		 quiet_ms;	/* since the node last sent data */
	char			 why[256];
};

static void	pump(struct sshc *);
static void	schedule(struct sshc *);
static void	arm(struct sshc *);
static struct job *add_job(struct sshc *, const char *, int, double,
		    ssh_line_fn *, ssh_exec_fn *, void *);

int
sshc_ssh_init(void)
{
	return libssh2_init(0);
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

static void
tick_cb(uv_timer_t *t)
{
	pump(t->data);
	schedule(t->data);
}

/*
 * libssh2 counts keepalive intervals in whole seconds of time(); asking for
 * one every keepalive_s / 2 keeps a reply arriving well within the two
 * intervals check_alive allows. While the heartbeat beats they are not
 * needed: its lines say more, more often.
 */
static void
keepalives(struct sshc *c, int on)
{
	libssh2_keepalive_config(c->s, 1, !on ? 0 : c->p.keepalive_s < 2 ? 1 :
	    (unsigned)(c->p.keepalive_s / 2));
}

static void
on_heartbeat(const char *line, void *arg)
{
	struct sshc *c = arg;

	(void)line;
	if (!c->heartbeat)
		keepalives(c, 0);
	c->heartbeat = 1;
}

static void
on_heartbeat_end(const struct ssh_result *r, void *arg)
{
	struct sshc *c = arg;

	if (c->heartbeat && c->state == C_UP) {
		log_warnx("%s: heartbeat ended (%s); silence is judged by "
		    "keepalives alone", c->p.host, r->error ? r->error :
		    "exit");
		keepalives(c, 1);
	}
	c->heartbeat = 0;
}

static void
start_heartbeat(struct sshc *c)
{
	struct job *j;

	c->heartbeat = 0;
	/* Unwrapped: its read loop already ends when the channel closes. */
	if ((j = add_job(c, HEARTBEAT_CMD, 0, 0, on_heartbeat, on_heartbeat_end,
	    c)))
		j->beats = 1;
}

static uint64_t
beat_ms(const struct sshc *c)
{
	return (uint64_t)(c->p.keepalive_s * 1000);
}

/*
 * Every phase of a connection (resolve, connect, handshake, authentication)
 * and of a channel (open, exec) has connect_timeout_s of its own: a node
 * that accepts TCP and then stalls (sshd stopped or overloaded, an
 * AuthorizedKeysCommand, PAM module or DNS lookup that hangs) is called
 * unreachable with the phase it hung in, and the loop never waits on it.
 */
static uint64_t
phase_limit_ms(const struct sshc *c)
{
	return (uint64_t)(c->p.connect_timeout_s * 1000);
}

static void
enter(struct sshc *c, enum connstate st)
{
	c->state = st;
	c->deadline_ms = mono_ms() + phase_limit_ms(c);
}

static void
kick_cb(uv_timer_t *t)
{
	pump(t->data);
	schedule(t->data);
}

static void
kick(struct sshc *c)
{
	uv_timer_start(&c->kick, kick_cb, 0, 0);
}

struct sshc *
sshc_new(uv_loop_t *loop, const struct ssh_params *p, ssh_state_fn *cb,
    void *arg)
{
	struct sshc *c = xcalloc(1, sizeof(*c));

	c->loop = loop;
	c->p = *p;
	c->p.host = xstrdup(p->host);
	c->p.user = xstrdup(p->user);
	c->p.identity_file = xstrdup(p->identity_file);
	c->p.known_hosts_file = xstrdup(p->known_hosts_file);
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

static void
job_free(struct job *j)
{
	free(j->cmd);
	free(j->wire);
	sbuf_free(&j->out);
	sbuf_free(&j->err);
	free(j);
}

static void
report(struct job *j)
{
	struct ssh_result r;

	if (j->reported)
		return;
	j->reported = 1;
	memset(&r, 0, sizeof(r));
	r.exit_code = j->error ? -1 : j->exit_code;
	r.out = j->out.s ? j->out.s : "";
	r.outlen = j->out.len;
	r.err = j->err.s ? j->err.s : "";
	r.errlen = j->err.len;
	r.error = j->error;
	r.elapsed_s = (double)(mono_ms() - j->start_ms) / 1000.0;
	log_debug("ssh: %.60s -> %d%s%s in %.3f s", j->cmd ? j->cmd : "?",
	    r.exit_code, r.error ? ", " : "", r.error ? r.error : "",
	    r.elapsed_s);
	if (j->done)
		j->done(&r, j->arg);
}

/* Tears the session down; every job fails; the owner hears once. */
static void
conn_fail(struct sshc *c, const char *why, int fatal)
{
	struct job *j, *list = c->jobs;
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
		for (j = list; j; j = j->next)
			if (j->ch)
				libssh2_channel_free(j->ch);
		libssh2_session_free(c->s);
		c->s = NULL;
	}
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	c->state = C_DOWN;
	uv_timer_stop(&c->tick);
	uv_timer_stop(&c->kick);
	while ((j = list)) {
		list = j->next;
		j->ch = NULL;
		if (!j->error) {
			snprintf(j->errbuf, sizeof(j->errbuf), "%s", why);
			j->error = j->errbuf;
		}
		report(j);
		job_free(j);
	}
	if (!c->freeing)
		c->cb(c, 0, c->why, fatal, c->arg);
}

static const char *
sess_err(struct sshc *c)
{
	char *msg = NULL;

	if (c->s == NULL)
		return "no session";
	libssh2_session_last_error(c->s, &msg, NULL, 0);
	return msg ? msg : "unknown libssh2 error";
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
		conn_fail(c, why, 0);
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
		conn_fail(c, why, 0);
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
		conn_fail(c, why, 0);
		return;
	}
	rc = connect(fd, res->ai_addr, res->ai_addrlen);
	c->fd = fd;
	if (rc < 0 && errno != EINPROGRESS) {
		snprintf(why, sizeof(why), "connect to %s:%d: %s", c->p.host,
		    c->p.port, strerror(errno));
		conn_fail(c, why, 0);
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
		conn_fail(c, "resolve: cannot start", 0);
		return;
	}
	schedule(c);
}

static int
keytype_bit(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA:	return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
	case LIBSSH2_HOSTKEY_TYPE_DSS:	return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
#ifdef LIBSSH2_HOSTKEY_TYPE_ECDSA_256
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
		return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
		return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
		return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
#endif
#ifdef LIBSSH2_HOSTKEY_TYPE_ED25519
	case LIBSSH2_HOSTKEY_TYPE_ED25519:
		return LIBSSH2_KNOWNHOST_KEY_ED25519;
#endif
	}
	return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
}

/*
 * The name known_hosts files the node under, as OpenSSH writes and reads
 * it: the bare host on port 22, else "[host]:port" and only that. (Given
 * the port, libssh2 falls back to the bare host, so a key recorded for
 * port 22 would be accepted for any port of the host.)
 */
static void
kh_name(const struct sshc *c, char *buf, size_t len)
{
	if (c->p.port == 22)
		snprintf(buf, len, "%s", c->p.host);
	else
		snprintf(buf, len, "[%s]:%d", c->p.host, c->p.port);
}

/* Host key algorithms by known_hosts key type, in OpenSSH's order. */
static const struct {
	int		 type;
	const char	*algs;
} hostkey_algs[] = {
#ifdef LIBSSH2_KNOWNHOST_KEY_ED25519
	{ LIBSSH2_KNOWNHOST_KEY_ED25519,	"ssh-ed25519" },
#endif
#ifdef LIBSSH2_KNOWNHOST_KEY_ECDSA_256
	{ LIBSSH2_KNOWNHOST_KEY_ECDSA_256,	"ecdsa-sha2-nistp256" },
	{ LIBSSH2_KNOWNHOST_KEY_ECDSA_384,	"ecdsa-sha2-nistp384" },
	{ LIBSSH2_KNOWNHOST_KEY_ECDSA_521,	"ecdsa-sha2-nistp521" },
#endif
	{ LIBSSH2_KNOWNHOST_KEY_SSHRSA,	"rsa-sha2-512,rsa-sha2-256,ssh-rsa" },
	{ LIBSSH2_KNOWNHOST_KEY_SSHDSS,	"ssh-dss" },
};
#define NHOSTKEY_ALGS	(sizeof(hostkey_algs) / sizeof(hostkey_algs[0]))

/*
 * Appends those of the comma-separated algs that this libssh2 supports:
 * libssh2_session_method_pref drops the others itself, but 1.10 does so
 * with an overlapping memcpy.
 */
static void
add_supported(struct sbuf *b, const char *algs, const char **sup, int nsup)
{
	const char *p = algs, *end;
	size_t len;
	int k;

	for (; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ',');
		if (end == NULL)
			end = p + strlen(p);
		len = (size_t)(end - p);
		for (k = 0; k < nsup; k++)
			if (strlen(sup[k]) == len && strncmp(sup[k], p, len) == 0) {
				sbuf_addf(b, "%s%.*s", b->len ? "," : "", (int)len,
				    p);
				break;
			}
	}
}

/*
 * A node offers several host keys (ed25519, ecdsa, rsa) and libssh2 asks
 * for ecdsa first; known_hosts often holds one type only (what `ssh` or
 * `ssh-keyscan -t` wrote), and the node would be refused as unknown. As
 * OpenSSH does, ask first for the types known_hosts holds for this node,
 * then the others (so an unknown node is still named with its key). Any
 * failure here leaves libssh2's order: check_hostkey reports the problem.
 */
static void
prefer_known_hostkeys(struct sshc *c)
{
	LIBSSH2_KNOWNHOSTS *kh;
	struct libssh2_knownhost *e = NULL;
	char name[300];
	int known[NHOSTKEY_ALGS] = { 0 }, any = 0, nsup;
	size_t i, pass;
	struct sbuf pref;
	const char **sup = NULL;

	if ((kh = libssh2_knownhost_init(c->s)) == NULL)
		return;
	if (libssh2_knownhost_readfile(kh, c->p.known_hosts_file,
	    LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
		libssh2_knownhost_free(kh);
		return;
	}
	kh_name(c, name, sizeof(name));
	/* An entry is this node's if its own key matches under this name. */
	while (libssh2_knownhost_get(kh, &e, e) == 0) {
		int type = e->typemask & LIBSSH2_KNOWNHOST_KEY_MASK;

		if (e->key == NULL || libssh2_knownhost_checkp(kh, name, -1,
		    e->key, strlen(e->key), LIBSSH2_KNOWNHOST_TYPE_PLAIN |
		    LIBSSH2_KNOWNHOST_KEYENC_BASE64 | type, NULL) !=
		    LIBSSH2_KNOWNHOST_CHECK_MATCH)
			continue;
		for (i = 0; i < NHOSTKEY_ALGS; i++)
			if (hostkey_algs[i].type == type)
				known[i] = any = 1;
	}
	libssh2_knownhost_free(kh);
	if (!any || (nsup = libssh2_session_supported_algs(c->s,
	    LIBSSH2_METHOD_HOSTKEY, &sup)) <= 0)
		return;
	sbuf_init(&pref);
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < NHOSTKEY_ALGS; i++)
			if (known[i] == (pass == 0))
				add_supported(&pref, hostkey_algs[i].algs, sup,
				    nsup);
	libssh2_free(c->s, sup);
	if (pref.len && libssh2_session_method_pref(c->s,
	    LIBSSH2_METHOD_HOSTKEY, pref.s) != 0)
		log_warnx("%s: cannot prefer host key types %s: %s", c->p.host,
		    pref.s, sess_err(c));
	sbuf_free(&pref);
}

static const char *
keytype_name(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA:	return "rsa";
	case LIBSSH2_HOSTKEY_TYPE_DSS:	return "dss";
#ifdef LIBSSH2_HOSTKEY_TYPE_ECDSA_256
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
		return "ecdsa";
#endif
#ifdef LIBSSH2_HOSTKEY_TYPE_ED25519
	case LIBSSH2_HOSTKEY_TYPE_ED25519:
		return "ed25519";
#endif
	}
	return "unknown type";
}

/* Only an exact match is success: unknown and changed keys are refused. */
static int
check_hostkey(struct sshc *c, char *why, size_t whylen)
{
	LIBSSH2_KNOWNHOSTS *kh;
	struct libssh2_knownhost *found = NULL;
	const char *key, *hash;
	size_t len;
	int type, rc, i;
	char fp[128] = "", name[300];

	key = libssh2_session_hostkey(c->s, &len, &type);
	if (key == NULL) {
		snprintf(why, whylen, "%s: no host key offered", c->p.host);
		return -1;
	}
	hash = libssh2_hostkey_hash(c->s, LIBSSH2_HOSTKEY_HASH_SHA256);
	if (hash) {
		static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const unsigned char *h = (const unsigned char *)hash;
		char *o = fp + snprintf(fp, sizeof(fp), "SHA256:");

		for (i = 0; i < 30; i += 3) {
			*o++ = b64[h[i] >> 2];
			*o++ = b64[((h[i] & 3) << 4) | (h[i + 1] >> 4)];
			*o++ = b64[((h[i + 1] & 15) << 2) | (h[i + 2] >> 6)];
			*o++ = b64[h[i + 2] & 63];
		}
		*o++ = b64[h[30] >> 2];
		*o++ = b64[((h[30] & 3) << 4) | (h[31] >> 4)];
		*o++ = b64[(h[31] & 15) << 2];
		*o = '\0';
	}
	kh = libssh2_knownhost_init(c->s);
	if (kh == NULL) {
		snprintf(why, whylen, "known hosts: %s", sess_err(c));
		return -1;
	}
	if (libssh2_knownhost_readfile(kh, c->p.known_hosts_file,
	    LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
		snprintf(why, whylen, "cannot read ssh.known_hosts_file %s",
		    c->p.known_hosts_file);
		libssh2_knownhost_free(kh);
		return -1;
	}
	kh_name(c, name, sizeof(name));
	rc = libssh2_knownhost_checkp(kh, name, -1, key, len,
	    LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
	    keytype_bit(type), &found);
	libssh2_knownhost_free(kh);
	switch (rc) {
	case LIBSSH2_KNOWNHOST_CHECK_MATCH:
		return 0;
	case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
		snprintf(why, whylen, "host key of %s:%d CHANGED (now %s); it "
		    "does not match %s", c->p.host, c->p.port, fp,
		    c->p.known_hosts_file);
		return -1;
	case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
		snprintf(why, whylen, "host key of %s:%d (%s %s) is not in %s",
		    c->p.host, c->p.port, keytype_name(type), fp,
		    c->p.known_hosts_file);
		return -1;
	default:
		snprintf(why, whylen, "host key check of %s:%d failed",
		    c->p.host, c->p.port);
		return -1;
	}
}

/* Socket-level libssh2 errors end the session; others end one job. */
static int
session_error(int rc)
{
	return rc == LIBSSH2_ERROR_SOCKET_SEND ||
	    rc == LIBSSH2_ERROR_SOCKET_RECV ||
	    rc == LIBSSH2_ERROR_SOCKET_DISCONNECT ||
	    rc == LIBSSH2_ERROR_SOCKET_TIMEOUT ||
	    rc == LIBSSH2_ERROR_TIMEOUT || rc == LIBSSH2_ERROR_DECRYPT ||
	    rc == LIBSSH2_ERROR_BAD_USE;
}

static void
job_error(struct job *j, const char *what, const char *msg)
{
	snprintf(j->errbuf, sizeof(j->errbuf), "%s: %s", what, msg);
	j->error = j->errbuf;
}

static void
deliver_lines(struct job *j)
{
	char *nl;

	if (j->line == NULL || j->out.s == NULL)
		return;
	while ((nl = memchr(j->out.s, '\n', j->out.len))) {
		size_t n = (size_t)(nl - j->out.s) + 1;

		*nl = '\0';
		j->line(j->out.s, j->arg);
		memmove(j->out.s, j->out.s + n, j->out.len - n);
		j->out.len -= n;
		j->out.s[j->out.len] = '\0';
	}
}

/*
 * A stream's output goes out line by line. A line longer than OUTPUT_CAP
 * is dropped, up to its newline, with a warning: keeping its start would
 * fill the buffer for good, and no later line would ever come out.
 */
static void
feed_lines(struct sshc *c, struct job *j, const char *buf, size_t n)
{
	const char *nl;

	if (j->skipping) {
		if ((nl = memchr(buf, '\n', n)) == NULL)
			return;
		j->skipping = 0;
		n -= (size_t)(nl + 1 - buf);
		buf = nl + 1;
	}
	sbuf_addn(&j->out, buf, n);
	deliver_lines(j);
	if (j->out.len > OUTPUT_CAP) {
		log_warnx("%s: dropped a line of more than %d bytes from `%.60s`",
		    c->p.host, OUTPUT_CAP, j->cmd);
		sbuf_free(&j->out);
		sbuf_init(&j->out);
		j->skipping = 1;
	}
}

/*
 * A channel call failed with rc: -1 when the whole session failed (rc in
 * *src), else this job alone ends, its channel to be closed.
 */
static int
channel_failed(struct sshc *c, struct job *j, int rc, const char *what,
    int *src)
{
	if (session_error(rc)) {
		*src = rc;
		return -1;
	}
	job_error(j, what, sess_err(c));
	j->st = J_CLOSE;
	return 0;
}

/* Returns -1 when the whole session failed (rc in *src). */
static int
job_step(struct sshc *c, struct job *j, int *src)
{
	char buf[16384];
	ssize_t n;
	int rc, progress;

	for (;;) {
		switch (j->st) {
		case J_OPEN:
			j->ch = libssh2_channel_open_session(c->s);
			if (j->ch == NULL) {
				rc = libssh2_session_last_errno(c->s);
				if (rc == LIBSSH2_ERROR_EAGAIN)
					return 0;
				if (session_error(rc)) {
					*src = rc;
					return -1;
				}
				job_error(j, "open channel", sess_err(c));
				j->st = J_DONE;
				return 0;
			}
			j->st = J_EXEC;
			j->phase_ms = mono_ms() + phase_limit_ms(c);
			break;
		case J_EXEC:
			rc = libssh2_channel_exec(j->ch, j->wire);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			if (rc < 0) {
				if (channel_failed(c, j, rc, "exec", src) == -1)
					return -1;
				break;
			}
			c->execs++;
			/* timed out while it started: the hang-up ends it */
			j->st = j->reported ? J_CLOSE : J_READ;
			break;
		case J_READ:
			if (j->ping) {
				n = libssh2_channel_write(j->ch, "\n", 1);
				if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
					if (channel_failed(c, j, (int)n, "write",
					    src) == -1)
						return -1;
					break;
				}
				if (n == 1)
					j->ping = 0;
			}
			progress = 0;
			while ((n = libssh2_channel_read(j->ch, buf,
			    sizeof(buf))) > 0) {
				if (j->line)
					feed_lines(c, j, buf, (size_t)n);
				else if (j->out.len < OUTPUT_CAP)
					sbuf_addn(&j->out, buf, (size_t)n);
				progress = 1;
			}
			if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
				if (channel_failed(c, j, (int)n, "read", src) == -1)
					return -1;
				break;
			}
			while ((n = libssh2_channel_read_stderr(j->ch, buf,
			    sizeof(buf))) > 0) {
				if (j->err.len < OUTPUT_CAP)
					sbuf_addn(&j->err, buf, (size_t)n);
			}
			if (progress)
				deliver_lines(j);
			if (!libssh2_channel_eof(j->ch))
				return 0;
			j->st = J_CLOSE;
			break;
		case J_CLOSE:
			rc = libssh2_channel_close(j->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			j->st = J_WAITCLOSED;
			break;
		case J_WAITCLOSED:
			rc = libssh2_channel_wait_closed(j->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			{
				char *sig = NULL;

				j->exit_code =
				    libssh2_channel_get_exit_status(j->ch);
				/*
				 * libssh2 1.10 reports 0 also when no status
				 * came: a signal tells the two apart.
				 */
				if (libssh2_channel_get_exit_signal(j->ch,
				    &sig, NULL, NULL, NULL, NULL, NULL) == 0 &&
				    sig) {
					if (!j->error) {
						snprintf(j->errbuf,
						    sizeof(j->errbuf),
						    "killed by signal %s", sig);
						j->error = j->errbuf;
					}
					libssh2_free(c->s, sig);
				}
			}
			j->st = J_FREE;
			break;
		case J_FREE:
			rc = libssh2_channel_free(j->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			j->ch = NULL;
			if (j->line && j->out.len)
				j->line(j->out.s, j->arg);
			j->st = J_DONE;
			return 0;
		case J_DONE:
			return 0;
		}
	}
}

/* How long a node may send nothing before it is lost, in ms. */
static uint64_t
silence_limit_ms(const struct sshc *c)
{
	/*
	 * Each keepalive asks for a reply, so a live node sends something
	 * about every keepalive_s. libssh2 schedules keepalives by whole
	 * seconds and skips them after other traffic, so replies can be up to
	 * ~2 s apart on a healthy idle session (measured): two intervals and
	 * one second more of silence is a lost node, never a slow one. With
	 * the heartbeat a line comes every keepalive_s: three missed are.
	 */
	uint64_t ms = (uint64_t)(2 * (c->p.keepalive_s < 1 ? 1 :
	    c->p.keepalive_s) * 1000) + 1000;

	if (c->heartbeat && 3 * c->p.keepalive_s * 1000 < ms)
		ms = (uint64_t)(3 * c->p.keepalive_s * 1000);
	return ms;
}

/* The kernel knows before any command would: closed, or silent too long. */
static int
check_alive(struct sshc *c, char *why, size_t whylen)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	uint64_t silent_ms = silence_limit_ms(c);

	if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return 0;
	c->quiet_ms = ti.tcpi_last_data_recv;
	if (ti.tcpi_state == TCP_CLOSE_WAIT || ti.tcpi_state == TCP_CLOSE ||
	    ti.tcpi_state == TCP_LAST_ACK) {
		snprintf(why, whylen, "%s closed the connection", c->p.host);
		return -1;
	}
	if (ti.tcpi_last_data_recv > silent_ms) {
		snprintf(why, whylen, "%s silent for %.1f s (keepalive)",
		    c->p.host, ti.tcpi_last_data_recv / 1000.0);
		return -1;
	}
	return 0;
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
	uv_timer_start(&c->tick, tick_cb, next < 1 ? 1 : next, 0);
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
	uint64_t now = mono_ms(), next = TICK_MS, limit;
	struct job *j;

	if (c->state == C_DOWN)
		return;
	if (c->state != C_UP) {
		if (c->deadline_ms < now + next)
			next = c->deadline_ms > now ? c->deadline_ms - now : 0;
		arm_tick(c, next);
		return;
	}
	{
		uint64_t lnow = uv_now(c->loop);

		if (c->heartbeat || c->next_beat_ms < lnow + next)
			next = c->next_beat_ms > lnow ? c->next_beat_ms -
			    lnow : 0;
	}
	/*
	 * From what check_alive read in the pump just run; kernel jiffies: a
	 * few ms late rather than a tick late.
	 */
	limit = silence_limit_ms(c) + 5;
	if (c->quiet_ms < limit && limit - c->quiet_ms < next)
		next = limit - c->quiet_ms;
	for (j = c->jobs; j; j = j->next) {
		if (j->deadline_ms && !j->reported &&
		    j->deadline_ms < now + next)
			next = j->deadline_ms > now ?
			    j->deadline_ms - now + 1 : 0;
		if (j->st <= J_EXEC && j->phase_ms < now + next)
			next = j->phase_ms > now ? j->phase_ms - now + 1 : 0;
	}
	arm_tick(c, next);
}

static void
pump(struct sshc *c)
{
	struct job *j, **jp, *finished = NULL, **ftail = &finished;
	char why[512];
	int rc, src = 0, fd_err;
	socklen_t len;
	uint64_t now = mono_ms();

	switch (c->state) {
	case C_DOWN:
	case C_RESOLVING:
		if (c->state == C_RESOLVING && now > c->deadline_ms) {
			snprintf(why, sizeof(why), "resolve %s: timed out",
			    c->p.host);
			conn_fail(c, why, 0);
		}
		return;
	case C_CONNECTING:
		len = sizeof(fd_err);
		fd_err = 0;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &fd_err, &len) ==
		    0 && fd_err) {
			snprintf(why, sizeof(why), "connect to %s:%d: %s",
			    c->p.host, c->p.port, strerror(fd_err));
			conn_fail(c, why, 0);
			return;
		}
		{
			struct tcp_info ti;

			len = sizeof(ti);
			if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti,
			    &len) != 0 || ti.tcpi_state != TCP_ESTABLISHED) {
				if (now > c->deadline_ms) {
					snprintf(why, sizeof(why), "connect to "
					    "%s:%d: timed out", c->p.host,
					    c->p.port);
					conn_fail(c, why, 0);
				} else
					arm(c);
				return;
			}
		}
		c->s = libssh2_session_init();
		if (c->s == NULL) {
			conn_fail(c, "libssh2_session_init failed", 0);
			return;
		}
		libssh2_session_set_blocking(c->s, 0);
		prefer_known_hostkeys(c);
		enter(c, C_HANDSHAKE);
		/* FALLTHROUGH */
	case C_HANDSHAKE:
		rc = libssh2_session_handshake(c->s, c->fd);
		if (rc == LIBSSH2_ERROR_EAGAIN && now >= c->deadline_ms) {
			/* accepted, but no sshd answers (stopped, overloaded) */
			snprintf(why, sizeof(why), "ssh handshake with %s:%d timed "
			    "out after %.1f s: the port accepts connections but "
			    "sshd does not answer", c->p.host, c->p.port,
			    c->p.connect_timeout_s);
			conn_fail(c, why, 0);
			return;
		}
		if (rc == LIBSSH2_ERROR_EAGAIN)
			goto wait;
		if (rc) {
			snprintf(why, sizeof(why), "ssh handshake with %s: %s",
			    c->p.host, sess_err(c));
			conn_fail(c, why, 0);
			return;
		}
		if (check_hostkey(c, why, sizeof(why)) == -1) {
			conn_fail(c, why, 1);
			return;
		}
		enter(c, C_AUTH);
		/* FALLTHROUGH */
	case C_AUTH:
		rc = libssh2_userauth_publickey_fromfile(c->s, c->p.user, NULL,
		    c->p.identity_file, NULL);
		if (rc == LIBSSH2_ERROR_EAGAIN && now >= c->deadline_ms) {
			/* not fatal: a stalled sshd is not a refused key */
			snprintf(why, sizeof(why), "ssh authentication as %s@%s:%d "
			    "timed out after %.1f s: sshd stalls in the login "
			    "(overloaded, or a hanging AuthorizedKeysCommand, PAM "
			    "or DNS lookup)", c->p.user, c->p.host, c->p.port,
			    c->p.connect_timeout_s);
			conn_fail(c, why, 0);
			return;
		}
		if (rc == LIBSSH2_ERROR_EAGAIN)
			goto wait;
		if (rc) {
			snprintf(why, sizeof(why), "ssh authentication as %s@%s "
			    "with %s refused: %s", c->p.user, c->p.host,
			    c->p.identity_file, sess_err(c));
			conn_fail(c, why, 1);
			return;
		}
		keepalives(c, 1);
		c->state = C_UP;
		c->quiet_ms = 0;
		start_heartbeat(c);
		c->cb(c, 1, "connected", 0, c->arg);
		if (c->state != C_UP)
			return;
		break;
	case C_UP:
		break;
	}

	/* C_UP: keepalive (libssh2 sends when due), liveness, then jobs. */
	{
		int next = 0;

		rc = libssh2_keepalive_send(c->s, &next);
		if (rc && rc != LIBSSH2_ERROR_EAGAIN && session_error(rc)) {
			snprintf(why, sizeof(why), "keepalive to %s: %s",
			    c->p.host, sess_err(c));
			conn_fail(c, why, 0);
			return;
		}
	}
	if (check_alive(c, why, sizeof(why)) == -1) {
		conn_fail(c, why, 0);
		return;
	}
	/*
	 * Beats are kept in the loop's time, which every timer of this
	 * iteration shares: all sessions' beat timers then expire together.
	 */
	if (uv_now(c->loop) >= c->next_beat_ms) {
		for (j = c->jobs; j; j = j->next)
			if (j->beats && j->st == J_READ)
				j->ping = 1;
		c->next_beat_ms = (uv_now(c->loop) / beat_ms(c) + 1) *
		    beat_ms(c);
	}
	for (jp = &c->jobs; (j = *jp);) {
		if (j->st <= J_EXEC && now >= j->phase_ms) {
			/*
			 * sshd answers an open or an exec at once when it can:
			 * one that cannot is stuck, and so is the whole node.
			 */
			snprintf(why, sizeof(why), "ssh %s on %s:%d timed out "
			    "after %.1f s: sshd accepts no new command",
			    j->st == J_OPEN ? "channel open" : "exec",
			    c->p.host, c->p.port, c->p.connect_timeout_s);
			*ftail = NULL;
			conn_fail(c, why, 0);
			goto callbacks;
		}
		if (j->deadline_ms && now > j->deadline_ms && !j->reported &&
		    j->st <= J_READ) {
			snprintf(j->errbuf, sizeof(j->errbuf), "timed out after "
			    "%.1f s", (double)(now - j->start_ms) / 1000.0);
			j->error = j->errbuf;
			/*
			 * Report now, through a copy that owns the output so
			 * far; the channel itself is closed in the background.
			 */
			*ftail = xcalloc(1, sizeof(struct job));
			**ftail = *j;
			(*ftail)->next = NULL;
			(*ftail)->cmd = NULL;
			(*ftail)->wire = NULL;
			(*ftail)->ch = NULL;
			(*ftail)->error = (*ftail)->errbuf;
			sbuf_init(&j->out);
			sbuf_init(&j->err);
			j->reported = 1;
			j->done = NULL;
			j->line = NULL;
			ftail = &(*ftail)->next;
			if (j->st == J_READ)
				j->st = J_CLOSE;
		}
		if (job_step(c, j, &src) == -1) {
			snprintf(why, sizeof(why), "connection to %s lost: %s",
			    c->p.host, sess_err(c));
			*ftail = NULL;
			conn_fail(c, why, 0);
			goto callbacks;
		}
		if (j->st == J_DONE) {
			*jp = j->next;
			j->next = NULL;
			*ftail = j;
			ftail = &j->next;
		} else
			jp = &j->next;
	}
wait:
	arm(c);
callbacks:
	while ((j = finished)) {
		finished = j->next;
		report(j);
		job_free(j);
	}
}

/*
 * sshd runs a command without a pty, and when the channel closes (a
 * timeout here, or the connection lost) it only closes the command's
 * pipes: a command that neither reads nor writes (a hung `docker exec`, a
 * `docker events` with nothing to say) would run on for ever. So each
 * command runs in a process group of its own (setsid, where there is one)
 * under a shell that reads its own stdin, which nothing ever writes to:
 * EOF there means the channel is gone, and it kills the group. The command
 * itself reads /dev/null; its exit status is the wrapper's. A pty would
 * end the command by SIGHUP instead, but it merges stderr into stdout and
 * turns every \n into \r\n.
 */
static char *
wrap(const char *cmd)
{
	struct sbuf b;

	sbuf_init(&b);
	sbuf_add(&b, "tandem_cmd=");
	shell_quote(&b, cmd);
	sbuf_add(&b, "; s=; command -v setsid >/dev/null 2>&1 && s=setsid; "
	    "exec 3<&0; $s sh -c \"$tandem_cmd\" </dev/null 3<&- & p=$!; "
	    "{ while read -r _; do :; done; kill -TERM -$p || kill -TERM $p; } "
	    "<&3 >/dev/null 2>&1 & w=$!; exec 3<&-; wait $p; r=$?; "
	    "kill $w 2>/dev/null; exit $r");
	return sbuf_take(&b);
}

static struct job *
add_job(struct sshc *c, const char *cmd, int wrapped, double timeout_s,
    ssh_line_fn *line, ssh_exec_fn *done, void *arg)
{
	struct job *j, **jp;

	if (c->state != C_UP)
		return NULL;
	j = xcalloc(1, sizeof(*j));
	j->cmd = xstrdup(cmd);
	j->wire = wrapped ? wrap(cmd) : xstrdup(cmd);
	j->done = done;
	j->line = line;
	j->arg = arg;
	j->start_ms = mono_ms();
	j->deadline_ms = timeout_s > 0 ? j->start_ms +
	    (uint64_t)(timeout_s * 1000) : 0;
	j->phase_ms = j->start_ms + phase_limit_ms(c);
	sbuf_init(&j->out);
	sbuf_init(&j->err);
	for (jp = &c->jobs; *jp; jp = &(*jp)->next)
		;
	*jp = j;
	kick(c);
	return j;
}

int
sshc_exec(struct sshc *c, const char *cmd, double timeout_s,
    ssh_exec_fn *done, void *arg)
{
	return add_job(c, cmd, 1, timeout_s, NULL, done, arg) ? 0 : -1;
}

int
sshc_stream(struct sshc *c, const char *cmd, ssh_line_fn *line,
    ssh_exec_fn *done, void *arg)
{
	return add_job(c, cmd, 1, 0, line, done, arg) ? 0 : -1;
}

void
sshc_disconnect(struct sshc *c, const char *why)
{
	conn_fail(c, why, 0);
}

void
sshc_free(struct sshc *c)
{
	c->freeing = 1;
	conn_fail(c, "shutting down", 0);
	free((char *)c->p.host);
	free((char *)c->p.user);
	free((char *)c->p.identity_file);
	free((char *)c->p.known_hosts_file);
	uv_close((uv_handle_t *)&c->tick, on_handle_closed);
	uv_close((uv_handle_t *)&c->kick, on_handle_closed);
}
