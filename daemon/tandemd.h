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

/* log.c */
void	log_init(int verbose);
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
double	now_s(void);		/* wall clock, seconds */
uint64_t mono_ms(void);		/* monotonic, milliseconds */

/* ssh.c */
struct sshc;

struct ssh_params {
	const char	*host;
	int		 port;
	const char	*user;
	const char	*identity_file;
	const char	*known_hosts_file;
	double		 connect_timeout_s;
	double		 keepalive_s;
};

struct ssh_result {
	int		 exit_code;	/* -1: no exit status (see error) */
	const char	*out;
	size_t		 outlen;
	const char	*err;
	size_t		 errlen;
	const char	*error;		/* transport failure or timeout */
	double		 elapsed_s;
};

/* up: 1 connected, 0 down. fatal: a retry cannot help (auth, host key). */
typedef void	ssh_state_fn(struct sshc *, int up, const char *why, int fatal,
		    void *arg);
typedef void	ssh_exec_fn(const struct ssh_result *, void *arg);
typedef void	ssh_line_fn(const char *line, void *arg);

struct sshc	*sshc_new(uv_loop_t *, const struct ssh_params *,
		    ssh_state_fn *, void *arg);
void		 sshc_connect(struct sshc *);
int		 sshc_is_up(const struct sshc *);
int		 sshc_is_connecting(const struct sshc *);
/* Runs cmd; done is called exactly once. Returns -1 (no call) when down. */
int		 sshc_exec(struct sshc *, const char *cmd, double timeout_s,
		    ssh_exec_fn *done, void *arg);
/* Like sshc_exec, but lines of stdout go to line as they arrive. */
int		 sshc_stream(struct sshc *, const char *cmd, ssh_line_fn *line,
		    ssh_exec_fn *done, void *arg);
void		 sshc_disconnect(struct sshc *, const char *why);
void		 sshc_free(struct sshc *);
uint64_t	 sshc_execs(const struct sshc *);
int		 sshc_ssh_init(void);

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

/* bench.c: tandemctl bench, the seed-000 load test */
#include "benchstat.h"

struct bench_opts {
	const char		*url;
	const char		*model;
	int			 levels[64];
	size_t			 nlevels;
	int			 requests;
	int			 max_tokens;
	double			 temperature;
	struct strv		 prompts;	/* JSON "messages" arrays */
	int			 stream;
	double			 timeout_s;
	enum bench_format	 format;
	int			 find_knee;
	double			 max_p95;
};

int	bench_main(int argc, char **argv, const char *default_url);

/* notify.c */
void	notify_init(uv_loop_t *);
void	notify_ready(void);
void	notify_status(const char *);
void	notify_extend(double seconds);
void	notify_reloading(void);
void	notify_stopping(void);
void	notify_close(void);

/* cluster.c: the runtime the state machine drives */
#include "config.h"

/* preflight.c: tandemctl check, and tandemd before its first rebuild */
#include "recovery.h"	/* enum pf_check */

struct pf_result {
	int	 done;
	int	 ok;
	char	 detail[200];
	char	 fix[200];
};

struct pf_node;

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
	uint64_t		*model_sum;
	size_t			*model_len;
	int			*own_running;
	int			*port_held;
	int			 nodes_pending;
	void			(*done)(struct preflight *, void *);
	void			*arg;
	uint64_t		 arg_epoch;	/* the caller's, for staleness */
	int			 freeing;
};

struct preflight *preflight_start(uv_loop_t *, const struct config *,
		    void (*done)(struct preflight *, void *), void *arg);
int		 preflight_ok(const struct preflight *);
void		 preflight_print(const struct preflight *, struct sbuf *);
void		 preflight_free(struct preflight *);
const char	*preflight_check_name(int);


#include "config.h"
#include "diagnose.h"
#include "plan.h"
#include "fsm.h"
#include "metrics.h"

#define EVENTS_MAX	1000

enum ctr_state { CTR_UNKNOWN, CTR_RUNNING, CTR_EXITED, CTR_MISSING };

struct node_rt {
	size_t			 idx;
	const struct node_conf	*conf;
	struct sshc		*ssh;
	struct cluster		*cl;
	int			 reachable;
	int			 fatal;		/* host key / auth: no retry */
	int			 tried;		/* one connect attempt done */
	uint64_t		 next_connect_ms;
	double			 connect_delay_s;
	enum ctr_state		 container;
	char			 cid[80];	/* container we started/adopted */
	char			 dead_id[80];	/* died before run -d answered */
	int			 gpus;		/* -1 unknown */
	int			 events_on;
	uint64_t		 events_retry_ms;
	uint64_t		 events_end_ms;	/* last stream ended; 0 none */
	char			 last_error[256];
};

struct event_rec {
	uint64_t	 seq;
	double		 time;
	char		 from[20];
	char		 to[20];
	char		 action[24];
	char		 reason[300];
};

/* The first failure of a probe cycle: the one reported. */
struct probe_failure {
	const struct diag	*d;	/* NULL: none yet */
	char			 node[64];
	char			 why[300];
};

/*
 * A state file written off the loop thread (state.c): one write at a time,
 * and a newer content replaces one still waiting, since only the last counts.
 */
struct file_writer {
	uv_work_t	 req;
	const char	*dir;
	const char	*name;
	char		*data;		/* being written */
	size_t		 len;
	char		*next;		/* waiting its turn */
	size_t		 nextlen;
	int		 err;		/* errno of a failed write */
};

struct cluster {
	uv_loop_t		*loop;
	struct config		*cf;
	char			*state_dir;
	struct file_writer	 w_state;	/* state.json */
	struct file_writer	 w_events;	/* events.json */
	struct fsm		 fsm;
	double			 since;
	uint64_t		 generation;
	struct node_rt		*nodes;
	size_t			 nnodes;
	uv_timer_t		 cron;
	uint64_t		 epoch;		/* bumped when the action changes */
	uint64_t		 action_ms;	/* when the action began */
	int			 adopted;
	int			 pending;	/* outstanding ops of this step */
	int			 phase;		/* sub-step within an action */
	uint64_t		 next_poll_ms;
	uint64_t		 next_log_ms;
	uint64_t		 next_extend_ms;
	uint64_t		 deadline_ms;

	/* what the probes saw */
	int			 ray_known;
	int			 ray_alive;
	double			 ray_gpus;
	int			 vllm_healthy;
	int			 probe_running;
	struct probe_failure	 first_failure;	/* of the running cycle */
	int			 probe_fails;
	char			 probe_reason[300];
	uint64_t		 next_probe_ms;
	uint64_t		 next_container_probe_ms;
	double			 last_generate;
	int			 generate_ok;

	/* diagnosis */
	const struct diag	*diag;
	char			 diag_msg[600];

	/* recovery */
	int			 attempt;
	double			 next_attempt;
	double			 rebuilds[REBUILDS_HISTORY];	/* start times, ring */
	size_t			 nrebuilds;
	int			 rebuild_open;	/* the last one still runs */
	double			 serving_since;
	double			 degraded_at;
	int			 gmu_step;	/* -1: configured value */

	/* /events */
	struct event_rec	 ev[EVENTS_MAX];
	size_t			 ev_n;
	uint64_t		 ev_seq;

	/* /metrics */
	uint64_t		 rebuilds_total;
	struct fail_count	 failures[32];
	size_t			 nfailures;
	struct histogram	 h_probe[4];
	struct histogram	 h_recover;

	struct preflight	*preflight;	/* running, before 1st rebuild */
	struct preflight	*preflight_done; /* freed by the next cron */
	int			 preflight_passed;
	int			 ssh_remake;	/* ssh.* reloaded, not applied */
	char			*token;		/* api_token_file content */
	int			 once;		/* tandemd --once */
	double			 once_start;
	int			 exit_code;
	int			 stopping;
	int			 ready_sent;
	int			 starts_inflight; /* docker run / exec -d */
	struct stopper		*stopper;	/* waits for them to answer */
};

struct stopper;

enum probe_kind { PR_CONTAINER, PR_RAY, PR_HEALTH, PR_GENERATE };

struct cluster	*cluster_new(uv_loop_t *, struct config *, const char *state_dir,
		    int once);
void		 cluster_start(struct cluster *);
void		 cluster_event(struct cluster *, enum event, const char *reason);
int		 cluster_reload(struct cluster *, const char *file, char *err,
		    size_t errlen);
void		 cluster_stop(struct cluster *, void (*done)(void *), void *arg);
void		 cluster_free(struct cluster *);
int		 cluster_rebuilds_last_hour(const struct cluster *);
double		 cluster_gmu(const struct cluster *);
void		 cluster_reset_remedy(struct cluster *);

/* state.c: the state dir, written atomically */
void	 state_load(struct cluster *);
void	 state_save(struct cluster *);
void	 state_save_events(struct cluster *);
void	 state_flush(struct cluster *);
json_t	*events_json(const struct cluster *, uint64_t since);

/* httpd.c */
int	 httpd_start(struct cluster *, char *err, size_t errlen);
void	 httpd_stop(void);
char	*render_status(struct cluster *);
int	 httpd_token_read(const char *path, char **tok, char *err,
	    size_t errlen);
const char *httpd_listen_warning(const struct config *, char *buf,
	    size_t len);

#endif
