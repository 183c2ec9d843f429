/*
 * The executor (op.c): an operation, one SSH command or HTTP request, is
 * owned by whoever started it (an action, or the cluster's standing
 * work), and goes where struct exec says (node.c's sessions and libcurl,
 * or a unit test's fake). Below the actions: they and the runtime include
 * this, and op.c includes nothing of theirs.
 */
#ifndef TANDEM_OP_H
#define TANDEM_OP_H

#include <sys/queue.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "log.h"		/* the log, and mono_ms: the monotonic clock */
#include "result.h"
#include "trace.h"

struct exec;
struct op;

/* What came back for an op: an SSH command's result, or an HTTP answer. */
struct answer {
	const struct cmd_result		*cmd;	/* NULL for HTTP */
	const struct http_result	*http;	/* NULL for SSH */
};

/*
 * Whoever starts ops: an action, or the cluster's standing work (its
 * scans, the GPU fault read, the evidence, a change's check). An owner
 * embedded in a larger struct finds it again from w (container_of).
 */
struct owner {
	TAILQ_HEAD(, op)	 ops;
	struct exec		*exec;	/* where its ops go */
	void			(*answered)(struct owner *, struct op *,
				    const struct answer *);
};

/* The struct of type whose member (a path: "hw.own") p points at. */
#ifndef container_of
#define container_of(p, type, member)					\
	((type *)(void *)((char *)(p) - offsetof(type, member)))
#endif

enum op_flags {
	OP_START = 1,	/* docker run / exec -d: a stop waits for its answer */
};

struct op {
	TAILQ_ENTRY(op)	 entry;
	struct owner	*owner;		/* NULL: cancelled, its answer dropped */
	struct exec	*exec;		/* its owner's when it was sent */
	size_t		 node;		/* the node asked, or asked about */
	int		 tag;		/* the owner's: which question */
	int		 flags;
	uint64_t	 start_ms;
	long		 step;		/* its step in the rebuild's trace; -1 */
	uint64_t	 trace_ms;	/* that trace's start */
};

/*
 * The cluster's standing owners (op.c's registry), each with when its ops
 * are cancelled: OWNERS_SESSIONS when the nodes' sessions are made again
 * (a reload of the nodes or of ssh.*: the answers on the old ones are
 * void; the current action's own goes with them), OWNERS_FREE when the
 * cluster goes. The evidence bundle's questions are not voided by new
 * sessions: they end with the old sessions' error, and the bundle is
 * written whole.
 */
enum { OWNERS_SESSIONS = 1, OWNERS_FREE = 2 };
#define OWNERS_MAX	8

struct owner_reg {
	struct owner	*w;
	int		 when;
};

/*
 * The executor: where ops go (the nodes' SSH sessions and libcurl,
 * node.c, or a unit test's fake), who listens to them, and what op.c
 * keeps of all owners. ssh returns -1 without calling done when the
 * node's session is down; http always calls done once.
 */
struct exec {
	int	(*ssh)(void *ctx, size_t node, const char *cmd,
		    double timeout_s, cmd_done_fn *done, void *arg);
	void	(*http)(void *ctx, const char *url, const char *body,
		    double timeout_s, http_done_fn *done, void *arg);
	int	(*up)(void *ctx, size_t node);
	void	*ctx;
	/*
	 * Told of every op as it is sent (k: its step of the rebuild's trace,
	 * TS_COUNT none) and as it is answered, before its owner hears, with
	 * hook_arg: the trace and the stop listen here, so that op.c calls
	 * nothing above it. NULL: no one listens.
	 */
	void	(*sent)(void *hook_arg, struct op *, enum trace_kind k);
	void	(*answered)(void *hook_arg, struct op *);
	void	*hook_arg;
	/* the registry of the standing owners (owners_register) */
	struct owner_reg owners[OWNERS_MAX];
	size_t	 nowners;
	/* the machine's current action's own (NULL: none), which
	   OWNERS_SESSIONS cancels too; action_begin sets it */
	struct owner *acting;
	/* docker run / exec -d sent and not answered: a stop waits for them
	   (op.c counts them, before the answered hook hears) */
	int	 starts_inflight;
};

/* op.c */
void	owner_init(struct owner *, struct exec *,
	    void (*answered)(struct owner *, struct op *,
	    const struct answer *));
/* Every op of the owner: its answer will be dropped. */
void	owner_cancel(struct owner *);
size_t	owner_count(const struct owner *);
/* The registry of the standing owners: w's ops are cancelled by when. */
void	owners_register(struct owner *w, int when);
/* Every registered owner's ops whose when matches (and, for
 * OWNERS_SESSIONS, the current action's): their answers are dropped. */
void	owners_cancel(struct exec *, int when);
/*
 * Runs cmd on node for the owner; k (TS_COUNT: none) stamps it as a step
 * of the running rebuild's trace. -1 when the node's session is down.
 */
int	op_ssh(struct owner *, size_t node, int tag, int flags,
	    const char *cmd, double timeout_s, enum trace_kind k);
/* node: the one the request is about (vLLM's API runs on the head). */
void	op_http(struct owner *, size_t node, int tag, const char *url,
	    const char *body, double timeout_s, enum trace_kind k);
/* Whether node's session is up. */
int	op_node_up(const struct exec *, size_t node);

#endif
