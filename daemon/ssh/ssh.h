/*
 * SSH to the nodes: one persistent session per node (ssh_session.c) watched for
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

/* ssh_libssh2.c: the parameters of node's session, from the config. */
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
int		 sshc_ssh_init(void);	/* ssh_libssh2.c: libssh2_init */

/*
 * tandemctl init's first contact with a node. The daemon never calls
 * these: its sessions accept only a host key that known_hosts holds, and
 * log in only with ssh.identity_file.
 */
enum ssh_seen_known {
	SEEN_UNKNOWN,	/* known_hosts (if any) has no key for the node */
	SEEN_KNOWN,	/* known_hosts holds exactly this key */
	SEEN_CHANGED,	/* known_hosts holds another key of this type */
};

struct ssh_seen_key {
	int			 seen;
	char			 type[64];	/* "ssh-ed25519" */
	char			 label[16];	/* "ed25519" */
	char			 fp[64];	/* "SHA256:..." as ssh-keygen -l */
	char			 line[2048];	/* its known_hosts line */
	enum ssh_seen_known	 known;
};

/*
 * Before sshc_connect: the session stops after the key exchange, trusts
 * nothing and logs in to nothing; it reports down ("host key read") with
 * the key the node presented in sshc_seen_key. OpenSSH's order of key
 * types is asked for (ed25519 first) unless known_hosts names the node.
 */
void		 sshc_scan_only(struct sshc *);
const struct ssh_seen_key *sshc_seen_key(const struct sshc *);
/*
 * Before sshc_connect: when identity_file is missing or refused, log in
 * with the keys of the user's ssh-agent (SSH_AUTH_SOCK), as ssh does.
 */
void		 sshc_use_agent(struct sshc *);
/* How the session logged in: "key", "agent", or NULL while not up. */
const char	*sshc_auth_by(const struct sshc *);

#endif
