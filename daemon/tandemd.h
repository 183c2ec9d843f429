/*
 * tandemd's private header: the pieces of daemon/ that wire lib/ to the
 * libuv loop, libssh2, libcurl, libmicrohttpd and systemd.
 */
#ifndef TANDEMD_H
#define TANDEMD_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "util.h"
#include "utf8.h"

/* log.c; prio is syslog's (LOG_INFO...), as journald's PRIORITY= */
#include <syslog.h>

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
void	log_fields(int prio, const struct log_fields *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	log_node(int prio, const char *node, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
double	now_s(void);		/* wall clock, seconds */
uint64_t mono_ms(void);		/* monotonic, milliseconds */

/* http.c: HTTP client requests on libcurl multi, driven by the loop */
struct http_result {
	long		 status;	/* 0 when no response */
	const char	*body;
	size_t		 bodylen;
	const char	*error;		/* curl's message when status is 0 */
	double		 elapsed_s;
};

typedef void	http_done_fn(const struct http_result *, void *arg);
typedef void	http_chunk_fn(const char *data, size_t len, void *arg);

int	http_init(uv_loop_t *);
void	http_shutdown(void);
/*
 * body NULL: GET; else POST with Content-Type: application/json. arg must
 * come from malloc: a request still unanswered at shutdown frees it.
 */
void	http_request(const char *url, const char *body, double timeout_s,
	    http_done_fn *, void *arg);
/* As http_request, but the body goes to chunk as it arrives (SSE). */
void	http_request_stream(const char *url, const char *body, double timeout_s,
	    http_chunk_fn *chunk, http_done_fn *, void *arg);

/* notify.c */
void	notify_init(uv_loop_t *);
void	notify_ready(void);
void	notify_status(const char *);
void	notify_extend(double seconds);
void	notify_reloading(void);
void	notify_stopping(void);
void	notify_close(void);

#include "config.h"
#include "plan.h"		/* preflight.c runs its cmd_* */
#include "workload.h"

/* preflight.c: tandemctl check, and tandemd before its first rebuild */
#include "recovery.h"	/* enum pf_check */
#include "imagecheck.h"

struct pf_result {
	int	 done;
	int	 ok;
	char	 detail[200];
	char	 fix[200];
	char	 value[200];	/* what was found: image ID, runtimes, specs */
};

struct pf_node;
struct sshc;

/* What the image check found on a node; load: tandemd loads the archive. */
struct pf_image {
	char	 id[IMAGE_ID_LEN];	/* "" absent */
	char	 created[40];
	int	 archive_ok;		/* image_archive readable there */
	int	 load;
};

struct preflight {
	const struct config	*cf;
	/*
	 * cf, when the preflight is its last user: a reload that replaced
	 * the daemon's config hands the old one over instead of freeing it
	 * under the running checks. preflight_free frees it.
	 */
	struct config		*cf_owned;
	struct pf_result	(*res)[PF_COUNT];
	struct pf_node		*n;
	struct pf_image		*image;		/* per node */
	struct model_print	*model;		/* per node */
	/* the ID every node should hold (bare hex), "" when none has it */
	char			 image_ref[IMAGE_ID_LEN];
	int			*own_running;
	int			*port_held;
	struct workloads	*wl;		/* unrelated workloads, per node */
	int			*wl_known;
	int			 nodes_pending;
	void			(*done)(struct preflight *, void *);
	void			*arg;
	uint64_t		 arg_epoch;	/* the caller's, for staleness */
	int			 freeing;
	size_t			 nnodes;
	/*
	 * borrowed: the checks run on the caller's sessions (the daemon's,
	 * one per node), which the preflight neither connects nor frees; kick
	 * starts them from the loop. ops: commands not yet answered, which a
	 * freed preflight waits for (their answers still find it).
	 */
	int			 borrowed;
	uv_timer_t		*kick;
	size_t			 ops;
};

/* sessions: one per node to run the checks on, or NULL to open its own */
struct preflight *preflight_start(uv_loop_t *, const struct config *,
		    struct sshc *const *sessions,
		    void (*done)(struct preflight *, void *), void *arg);
/* only: a node's name, or NULL for every node */
int		 preflight_ok(const struct preflight *, const char *only);
void		 preflight_print(const struct preflight *, const char *only,
		    struct sbuf *);
void		 preflight_free(struct preflight *);
const char	*preflight_check_name(int);

struct cluster;

/* httpd.c */
int	 httpd_start(struct cluster *, char *err, size_t errlen);
void	 httpd_stop(void);
/* render.c: the /status document and the /metrics text */
char	*render_status(struct cluster *);
char	*render_metrics(struct cluster *);
int	 httpd_token_read(const char *path, char **tok, char *err,
	    size_t errlen);
const char *httpd_listen_warning(const struct config *, char *buf,
	    size_t len);

#endif
