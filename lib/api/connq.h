/*
 * The HTTP API's connections and their deadlines, without I/O: which
 * connection to close when its deadline passes, and which to close to make
 * room when a new one arrives at the limit. httpd.c owns the sockets and
 * the clock; docs/architecture.md ("The API under hostile clients") has
 * the figures behind the numbers.
 *
 * A connection first waits for its request head (the request line and
 * headers), which a real client sends at once, in one packet: it gets
 * head_ms. Once the head is in, the body and the answer get request_ms.
 * After the answer, a kept-alive connection waits for its next head again.
 * At the limit, the connection that has waited longest for a head is
 * closed for the newcomer (then the oldest request, if no connection waits
 * for a head): clients that trickle their heads or hold connections idle
 * lose their slots to new ones, so a complete GET /status always gets in
 * and is answered in the same round, whoever holds the other slots and
 * from whichever address.
 */
#ifndef TANDEM_CONNQ_H
#define TANDEM_CONNQ_H

#include <sys/queue.h>
#include <stddef.h>
#include <stdint.h>

/* Connections the API keeps open at most. */
#define CONNQ_MAX		8192
/* The least it runs with, however few files it may open. */
#define CONNQ_MIN		16
/* Files tandemd needs besides API connections: SSH, vLLM, state, logs. */
#define CONNQ_FD_RESERVE	256
/* Connections closed for a newcomer that the HTTP library still counts. */
#define CONNQ_SLACK		64

enum connq_phase {
	CONNQ_HEAD,		/* waiting for a complete request head */
	CONNQ_REQUEST,		/* its head is in: the body, the answer */
	CONNQ_CLOSING,		/* chosen to close; in neither queue */
};

struct connq_ent {
	TAILQ_ENTRY(connq_ent)	 entry;
	enum connq_phase	 phase;
	uint64_t		 deadline;	/* ms on the caller's clock */
};

TAILQ_HEAD(connq_list, connq_ent);

struct connq {
	struct connq_list	 heads;		/* earliest deadline first */
	struct connq_list	 requests;	/* earliest deadline first */
	size_t			 n;		/* in either queue */
	size_t			 limit;
	uint64_t		 head_ms;
	uint64_t		 request_ms;
	/* what was closed and why, since connq_init */
	uint64_t		 evicted;
	uint64_t		 head_timeouts;
	uint64_t		 request_timeouts;
};

/*
 * The connection limit for a process that may open nofile files:
 * CONNQ_MAX, or fewer when the files run short (CONNQ_MIN at least).
 */
size_t		 connq_limit_for(uint64_t nofile);

void		 connq_init(struct connq *, size_t limit, uint64_t head_ms,
		    uint64_t request_ms);
/*
 * A new connection, waiting for its head from now. Returns the connection
 * to close to stay within the limit (already out of the queues, phase
 * CONNQ_CLOSING), or NULL; never the new one.
 */
struct connq_ent *connq_add(struct connq *, struct connq_ent *, uint64_t now);
/* Its head is in: request_ms from now for the body and the answer. */
void		 connq_head_done(struct connq *, struct connq_ent *,
		    uint64_t now);
/* Its answer left: a kept-alive connection waits for its next head. */
void		 connq_answered(struct connq *, struct connq_ent *,
		    uint64_t now);
/* It closed (any phase). */
void		 connq_remove(struct connq *, struct connq_ent *);
/*
 * A connection whose deadline is at or before now, out of the queues and
 * CONNQ_CLOSING; NULL when none is overdue.
 */
struct connq_ent *connq_overdue(struct connq *, uint64_t now);
/* The earliest deadline, or UINT64_MAX when nothing waits. */
uint64_t	 connq_next_deadline(const struct connq *);

#endif
