/*
 * SSH to the nodes: one persistent session per node (ssh.c) watched for
 * liveness (ssh_alive.c), commands run on it as channel jobs (ssh_job.c),
 * host keys checked against known_hosts (ssh_hostkey.c). Everything runs on
 * the libuv loop and never blocks it.
 */
#ifndef TANDEM_SSH_H
#define TANDEM_SSH_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "result.h"

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


/* up: 1 connected, 0 down. fatal: a retry cannot help (auth, host key). */
typedef void	ssh_state_fn(struct sshc *, int up, const char *why, int fatal,
		    void *arg);
typedef cmd_done_fn	ssh_exec_fn;
typedef void	ssh_line_fn(const char *line, void *arg);

/* The parameters of node's session, from the config. */
void		 ssh_params_of(const struct config *, size_t node,
		    struct ssh_params *);
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
/* Channels (commands) at once on one session, at most: sshd allows 10. */
#define SSH_CHANNELS_MAX	8
/* How long a refusal by sshd shows as a warning. */
#define SSH_REFUSAL_SHOWN_MS	(600 * 1000)
/*
 * How many channels were open when the node's sshd last refused one (its
 * MaxSessions is lower), if it did in the last 10 minutes; else 0.
 */
size_t		 sshc_channels_refused(const struct sshc *);
int		 sshc_ssh_init(void);

#endif
