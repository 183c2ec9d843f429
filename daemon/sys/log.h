/*
 * Logging to the journal (or stderr) with the cluster's context as journal
 * fields, and the daemon's two clocks (clock.c). Every part of tandemd and
 * tandemctl includes this.
 */
#ifndef TANDEM_LOG_H
#define TANDEM_LOG_H

#include <stdint.h>
#include <syslog.h>	/* prio is syslog's (LOG_INFO...), as journald's PRIORITY= */

#include "util.h"
#include "utf8.h"

struct log_fields {
	const char	*node;
	const char	*state;		/* NULL: the cluster's, as of now */
	const char	*action;
	const char	*diagnosis;	/* its code */
	long long	 generation;	/* < 0: the cluster's */
	enum { LOG_PLAIN, LOG_TRANSITION, LOG_DIAGNOSIS } msg;	/* MESSAGE_ID */
};

void	log_init(int verbose);
/* The cluster every later entry is about (its journal fields). */
void	log_context(const char *cluster, const char *state,
	    const char *action, unsigned long long generation);
/*
 * A secret no output may show (vLLM's API key; NULL or "": none): every
 * log entry, /status, /events and bundle passes through log_mask. The
 * keys of earlier configs stay masked too (a reload may go back to one).
 */
void	log_secret(const char *);
/* A copy of text with every secret as *** (lib/secret.h). */
char	*log_mask(const char *text);
/* The same for len bytes that may hold NULs (a bundle's files). */
char	*log_mask_n(const char *text, size_t len, size_t *outlen);
void	log_fields(int prio, const struct log_fields *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	log_node(int prio, const char *node, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

/* clock.c */
double	now_s(void);		/* wall clock, seconds: for people */
uint64_t mono_ms(void);		/* monotonic, milliseconds: for deadlines */

#endif
