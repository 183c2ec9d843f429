/*
 * What the files of the HTTP API's server share: its limits, its one place
 * of state (httpd_state.c), the answers (httpd_reply.c), the routes
 * (httpd_route.c) and their handlers (httpd_get.c, httpd_post.c), the
 * listen sockets (httpd_listen.c); httpd.c runs MHD on the loop.
 */
#ifndef HTTPD_INT_H
#define HTTPD_INT_H

#include <microhttpd.h>
#include <stdint.h>
#include <uv.h>

#include "connq.h"
#include "util.h"

struct cluster;
struct config;

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

/*
 * One per TCP connection, queued in httpd_state.q (lib/api/connq.c) by
 * what it waits for and until when. MHD's own timeout closes only a
 * connection that is silent; one that sends a header byte a second would
 * keep its slot for ever, so the head and the request each have a deadline
 * of their own, and at the limit the connection that has waited longest
 * for its head makes room for a new one.
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
struct httpd_state {
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
	/* the body of the request being answered (POST /apply) */
	const struct sbuf	*req_text;
};
extern struct httpd_state httpd_state;

/* The API (docs/api.md): GET (and HEAD) reads, POST changes. */
struct route {
	const char	*path;
	int		 post;	/* POST, after httpd_post_door; else GET */
	enum MHD_Result	 (*fn)(struct cluster *, struct MHD_Connection *);
};

/* httpd_state.c: 1 when c came by tandemctl's Unix socket */
int	 httpd_state_via_socket(struct MHD_Connection *c);

/* httpd_reply.c: body is taken (freed by MHD after the last sender) */
struct MHD_Response *httpd_reply_new(char *body, size_t len);
struct MHD_Response *httpd_reply_typed(unsigned code, const char *type,
	    char *body);
enum MHD_Result httpd_reply(struct MHD_Connection *, unsigned code,
	    const char *type, char *body);
enum MHD_Result httpd_reply_json(struct MHD_Connection *, unsigned code,
	    const char *msg);
/* 1 with a 503 queued in *ret when a large document must wait */
int	 httpd_reply_busy(struct MHD_Connection *, enum MHD_Result *ret);
/* whether sh holds a document for this key */
int	 httpd_reply_fresh(const struct shared *sh, uint64_t k1, uint64_t k2);
void	 httpd_reply_keep(struct shared *sh, struct MHD_Response *r,
	    uint64_t k1, uint64_t k2);
enum MHD_Result httpd_reply_shared(struct MHD_Connection *,
	    struct shared *sh, uint64_t k1, uint64_t k2, const char *type,
	    char *body);

/* httpd_get.c */
enum MHD_Result httpd_get_page(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_get_status(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_get_healthz(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_get_metrics(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_get_events(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_get_trace(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_get_bundle(struct cluster *, struct MHD_Connection *);

/* httpd_post.c: httpd_post_door is 1, with the refusal in *ret, when the
 * request may not pass */
int	 httpd_post_door(struct cluster *, struct MHD_Connection *,
	    enum MHD_Result *ret);
enum MHD_Result httpd_post_rebuild(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_post_pause(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_post_resume(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_post_apply(struct cluster *, struct MHD_Connection *);
enum MHD_Result httpd_post_rollback(struct cluster *,
	    struct MHD_Connection *);

/* httpd_route.c */
const struct route *httpd_route_find(const char *path);	/* or NULL */
enum MHD_Result httpd_route_not_found(struct MHD_Connection *);
enum MHD_Result httpd_route_not_allowed(struct MHD_Connection *,
	    const struct route *);

/* httpd_listen.c: the fd, or -1 with err set */
int	 httpd_listen_tcp(const struct config *, char *err, size_t errlen);
int	 httpd_listen_unix(const char *path, char *err, size_t errlen);

#endif
