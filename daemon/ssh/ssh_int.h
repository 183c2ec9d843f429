/*
 * Inside the ssh subsystem: what the session (ssh_session.c), its liveness
 * watch (ssh_alive.c), its channel jobs (ssh_job.c) and the host key check
 * (ssh_hostkey.c) share. Nothing outside them includes it; everyone else
 * uses ssh.h, where struct sshc is opaque.
 */
#ifndef TANDEM_SSH_INT_H
#define TANDEM_SSH_INT_H

#include <sys/socket.h>
#include <libssh2.h>

#include "silence.h"
#include "ssh.h"

struct job;

enum connstate {
	C_DOWN,
	C_RESOLVING,
	C_CONNECTING,
	C_HANDSHAKE,
	C_AUTH,
	C_UP,
};

/*
 * Channels at once on a session. sshd refuses one beyond its MaxSessions;
 * the count it refused at is the limit then, though it may be low (sshd
 * frees a session only once its command is gone), so the limit rises
 * again by one a second, to SSH_CHANNELS_MAX.
 */
struct chan_limit {
	size_t			 max;
	uint64_t		 raise_ms;	/* max below SSH_CHANNELS_MAX */
	size_t			 refused_at;	/* channels open at the last */
	uint64_t		 refused_ms;	/* refusal; 0: none */
};

struct sshc {
	uv_loop_t		*loop;
	struct ssh_params	 p;
	char			*own[4];	/* p's strings, ours to free */
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
	struct chan_limit	 lim;
	int			 unread;	/* jobs_run left bytes for later */
	/*
	 * Who left a packet half-sent (a struct job, or the sshc itself for
	 * a keepalive); NULL: none. libssh2 1.10 lets only the same call
	 * finish it (transport.c send_existing): until then no one else
	 * calls anything that may send (see ssh_job.c).
	 */
	const void		*sender;
	int			 heartbeat;	/* its lines arrive */
	int			 hb_job;	/* its channel runs (pinged each beat) */
	uint64_t		 next_beat_ms;
	uint64_t		 last_beat_ms;
	uint64_t		 asked_ms;	/* silence counts from here */
	uint64_t		 quiet_ms;	/* since the oldest unanswered beat */
	struct silence		 beats;		/* asked, written, answered */
	char			 why[256];
	/* tandemctl init only (ssh.h): zero for the daemon's sessions */
	int			 scan_only;
	int			 use_agent;
	struct ssh_seen_key	 seen;
	LIBSSH2_AGENT		*agent;
	struct libssh2_agent_publickey *agent_id;	/* being tried */
	int			 auth_phase;	/* enum auth_phase */
	const char		*auth_by;
};

/* ssh_session.c */
/*
 * Tests only (tests/ssh/send_partial.c): what every new session sends
 * through (LIBSSH2_CALLBACK_SEND); NULL, libssh2's own send.
 */
extern LIBSSH2_SEND_FUNC((*ssh_send_hook));
/* Tears the session down; every job fails; the owner hears once. */
void		 ssh_fail(struct sshc *, const char *why, int fatal);
/* A new job on an up session (flags: enum job_flags); NULL when down. */
struct job	*ssh_add_job(struct sshc *, const char *cmd, int flags,
		    double timeout_s, ssh_line_fn *, ssh_exec_fn *, void *arg);

/* ssh_libssh2.c (and ssh.h's sshc_ssh_init, ssh_params_of) */
/* libssh2's message for the session's last error. */
const char	*ssh_errmsg(LIBSSH2_SESSION *);
/* A packet libssh2 sent only in part waits for the socket to take the rest. */
int		 ssh_send_pending(LIBSSH2_SESSION *);
/* Socket-level libssh2 errors end the session; others end one job. */
int		 ssh_session_error(int rc);
/*
 * Every phase of a connection (resolve, connect, handshake, authentication)
 * and of a channel (open, exec) has connect_timeout_s of its own.
 */
uint64_t	 ssh_phase_limit_ms(const struct ssh_params *);

/* ssh_job.c: one command on a channel of the session, one job each */

/* What a job needs of its session while it runs. */
struct job_env {
	LIBSSH2_SESSION		*s;
	const struct ssh_params	*p;
	uint64_t		*execs;		/* counts the commands started */
	struct chan_limit	*lim;
	const void		**sender;	/* struct sshc's */
	/* set by jobs_run for its turn: */
	size_t			 budget;	/* bytes the turn may still read */
	int			 unread;	/* a job stopped at its budget */
};

enum job_flags {
	JOB_WRAP	= 1,	/* under the wrapper that ends it with the channel */
	JOB_HEARTBEAT	= 2,	/* the session's heartbeat: pinged each beat */
};

struct job	*job_new(const struct ssh_params *, const char *cmd, int flags,
		    double timeout_s, ssh_line_fn *, ssh_exec_fn *, void *arg);
void		 jobs_append(struct job **list, struct job *);
/* Asks every heartbeat channel for an echo. */
void		 jobs_beat(struct job *list);
/*
 * The daemon stood still for ms: the jobs' clocks ran on meanwhile, the
 * node's answers waited unread. Their deadlines move on by as much.
 */
void		 jobs_stood_still(struct job *list, uint64_t ms);
/* The ms from now to the first deadline of a job, if sooner than next. */
uint64_t	 jobs_wake_ms(const struct job *list, const struct chan_limit *,
		    uint64_t now, uint64_t next);
/*
 * Moves every job on as far as it goes without waiting, reading at most a
 * budget of bytes (env->unread then: what is left may already be inside
 * libssh2, where no poll of the socket sees it, so the session must run
 * again soon on its own). Those that ended
 * (or timed out: reported through a copy) leave the list for *finished, to
 * be reported by jobs_report once the session is consistent again. -1: the
 * whole session failed (why says how); the other jobs stay on the list.
 */
int		 jobs_run(struct job **list, struct job_env *, uint64_t now,
		    struct job **finished, char *why, size_t whylen);
/* Frees the jobs' channels, with the session blocking, before it goes. */
void		 jobs_free_channels(struct job *list);
/* Calls each job's done (an error: why, unless it had one) and frees it. */
void		 jobs_report(struct job *list, const char *why);

/* ssh_alive.c: whether the node is still there, while the session is up */
/*
 * Keepalives off, the silence clocks started; at C_UP. The heartbeat's job,
 * for the caller to put on the session.
 */
struct job	*alive_start(struct sshc *);
/*
 * Keepalive, the kernel's view, the beat; -1: the session failed (why says
 * how; the caller fails it).
 */
int		 alive_watch(struct sshc *, char *why, size_t whylen);
/* The ms until the next beat or the silence limit, if sooner than next. */
uint64_t	 alive_wake_ms(const struct sshc *, uint64_t next);

/* ssh_hostkey.c */
/* Asks first for the host key types known_hosts holds for the node. */
void		 ssh_prefer_known_hostkeys(LIBSSH2_SESSION *,
		    const struct ssh_params *);
/* scan: when known_hosts names no type for the node, OpenSSH's order. */
void		 ssh_prefer_hostkeys(LIBSSH2_SESSION *, const struct ssh_params *,
		    int scan);
/* What the node presented, against known_hosts (tandemctl init). */
void		 ssh_read_hostkey(LIBSSH2_SESSION *, const struct ssh_params *,
		    struct ssh_seen_key *);
/* 0: the node's key matches known_hosts exactly; else -1 and why. */
int		 ssh_check_hostkey(LIBSSH2_SESSION *, const struct ssh_params *,
		    char *why, size_t whylen);

#endif
