/*
 * A restart budget that explains itself: once recovery.max_rebuilds_per_hour
 * is reached (or a diagnosis no retry fixes stopped the retries), what
 * /status, the status page and the bundle's README say: how many
 * rebuilds, which diagnoses how often, when retries start again, and what
 * a person should look at first. Pure: the daemon passes the rebuild
 * history (lib/policy/recovery.c's ring), the events and the time in.
 */
#ifndef TANDEM_BUDGET_H
#define TANDEM_BUDGET_H

#include <stddef.h>
#include <jansson.h>

#define BUDGET_DIAGS_MAX	8

/* An event as /events keeps it: reasons begin "code: message". */
struct budget_event {
	double		 time;
	const char	*reason;
};

struct budget_diag {
	char	 code[40];
	int	 count;
	double	 last;		/* when it last came */
	char	 message[200];	/* its last message */
};

struct budget_summary {
	int			 rebuilds_last_hour;
	int			 cap;
	int			 capped;	/* the hour is full */
	double			 retry_in_s;	/* until the oldest leaves it */
	struct budget_diag	 diags[BUDGET_DIAGS_MAX];	/* most first */
	size_t			 ndiags;
	char			 look_first[300];
	char			 bundle[96];	/* "" : none kept */
	char			 text[1200];	/* all of it, for people */
};

/*
 * REBUILDS/N as lib/policy/recovery.c keeps them, on the clock NOW reads (the
 * monotonic one in tandemd); EV the events, any order, on the clock
 * EV_NOW reads (the wall clock: /events' times); the diagnoses counted
 * are those of the last hour. BUNDLE is the newest evidence bundle's
 * name, or NULL.
 */
void	budget_summarize(const double *rebuilds, size_t n, int cap, double now,
	    const struct budget_event *ev, size_t nev, double ev_now,
	    const char *bundle, struct budget_summary *);
/*
 * /status's "budget": {"capped", "rebuilds_last_hour", "max_per_hour",
 * "retry_in_s", "diagnoses": [{"code", "count", "last_message"}],
 * "look_first", "bundle"}.
 */
json_t	*budget_json(const struct budget_summary *);
/* Which file of the bundle says most about a diagnosis. */
const char *budget_look_first(const char *code);

#endif
