/*
 * The evidence bundle: what tandem keeps when retries stop (the hourly cap
 * reached, or a diagnosis no retry fixes), before anything is torn down,
 * so that a person (or a bug report) has what happened without running
 * the failure again. What goes in and the commands that fetch it
 * (bundle_plan, lib/plan/plan_bundle.c), the tar with its README
 * (bundle_tar, lib/ustar.c), its name, and which old bundles go
 * (bundle_rotate). Pure: the daemon runs the commands and writes the file.
 */
#ifndef TANDEM_BUNDLE_H
#define TANDEM_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "util.h"

#define BUNDLE_DIR		"bundles"	/* under the state dir */
#define BUNDLE_PART_MAX		(1024 * 1024)	/* a file keeps its tail */
#define BUNDLE_MAX		(16 * 1024 * 1024)	/* one bundle */
#define BUNDLE_KEEP		5		/* bundles kept */
#define BUNDLE_KEEP_BYTES	(64ULL * 1024 * 1024)	/* all of them */
#define BUNDLE_LOG_LINES	2000		/* docker logs --tail */
#define BUNDLE_NAME_MAX		96
/* The daemon's own documents in every bundle, beside the nodes' answers. */
#define BUNDLE_STATUS		"tandem/status.json"	/* GET /status */
#define BUNDLE_EVENTS		"tandem/events.json"	/* GET /events */
#define BUNDLE_TRACE		"tandem/rebuild-trace.json" /* /rebuilds/last */

/* One remote command whose answer becomes a file in the bundle. */
struct bundle_item {
	char		 name[128];	/* path in the tar */
	size_t		 node;		/* config index of the node it runs on */
	char		*cmd;		/* lib/plan/plan_bundle.c's shell string */
	const char	*what;		/* a line of the README */
};

struct bundle_plan {
	struct bundle_item	*v;
	size_t			 n;
};

/*
 * Every node: its containers' logs and state, nvidia-smi, the driver's
 * kernel lines since SINCE (Unix seconds); the head: vLLM's log and, in
 * topology ray, ray status.
 */
void	bundle_plan(const struct config *, double since, struct bundle_plan *);
void	bundle_plan_free(struct bundle_plan *);

/* A collected file: remote answers, or the daemon's own documents. */
struct bundle_part {
	char	 name[128];
	char	*data;
	size_t	 len;
	size_t	 cut;		/* bytes left out at the front */
	int	 rc;		/* exit status; -1: not run or no answer */
	char	 note[160];	/* why it is missing or short, or "" */
};

struct bundle {
	struct bundle_part	*v;
	size_t			 n;
};

/* Keeps the last BUNDLE_PART_MAX bytes of DATA (copied). */
void	bundle_add(struct bundle *, const char *name, const char *data,
	    size_t len, int rc, const char *note);
void	bundle_free(struct bundle *);

/*
 * The tar: README.txt first (SUMMARY, then one line per file: what it is,
 * its exit status, what was cut), then the parts in order, the whole at
 * most MAX bytes: a part that does not fit is left out and the README
 * says so. Returns 0, or -1 with a message.
 */
int	bundle_tar(const struct bundle *, const char *summary, uint64_t mtime,
	    size_t max, struct sbuf *out, char *err, size_t errlen);

/* "tandem-bundle-20261102T091240Z-g17.tar": sorts by time. */
void	bundle_name(double now, uint64_t generation, char *buf, size_t len);
int	bundle_name_valid(const char *);
/*
 * Which files of a bundles directory to remove once a new one is written:
 * the newest KEEP stay, as long as together they stay under MAX_TOTAL
 * bytes (the newest always stays). NAMES (any order, foreign names
 * ignored), SIZES; the indexes to remove go into DEL (room for N).
 * Returns how many.
 */
size_t	bundle_rotate(char *const *names, const uint64_t *sizes, size_t n,
	    size_t keep, uint64_t max_total, size_t *del);
/* The newest bundle's index in NAMES, or -1. */
long	bundle_latest(char *const *names, size_t n);

#endif
