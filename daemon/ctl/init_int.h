/*
 * What the files of tandemctl init share (init.c the command; init_ask.c
 * asks the nodes, init_hostkey.c trusts their keys, init_write.c writes
 * the files, init_step.c runs one step on every node, init_tell.c prints).
 */
#ifndef INIT_INT_H
#define INIT_INT_H

#include <stdio.h>
#include <uv.h>

#include "config.h"
#include "initconf.h"
#include "linkcheck.h"
#include "rdma.h"
#include "ssh.h"
#include "util.h"

/* What a command's answer is for. */
enum init_ask {
	ASK_FACTS, ASK_ADDRS, ASK_SPEEDS, ASK_GPUS, ASK_GPUMEM, ASK_DIRS,
	ASK_ENGINE,
	ASK_IMAGES, ASK_FILES, ASK_AUTHORIZE, ASK_STATE, ASK_PING_BIG,
	ASK_PING_SMALL, ASK_RDMA,
};

struct inode;

struct init {
	uv_loop_t		*loop;
	int			 outstanding;	/* answers the step waits for */
	struct inode		*nodes;
	size_t			 n;
	/* the options */
	const char		*out, *identity, *known_hosts, *token_file;
	const char		*user, *name, *model, *image, *link, *listen;
	struct strv		 accept;	/* --accept-fingerprint */
	char			**vllm_args;	/* after "--" */
	size_t			 nvllm_args;
	int			 dry_run, force;
	int			 made_key;	/* the identity is new */
	const char		*replaces;	/* the placeholder at out */
	char			 listen_buf[64];	/* a port init chose */
	char			*kh_work;	/* known_hosts this run uses */
	char			*pubkey;	/* the identity's .pub line */
	/* the link check */
	struct config		*cf;
	struct link_state	*st;
	struct ping_res		*big, *small;
	struct rdma_state	*rdma;		/* per node, for the operator */
};

struct inode {
	struct init		*in;
	size_t			 idx;
	char			*host;
	int			 port;
	struct sshc		*ssh;
	int			 up;
	char			 why[512];	/* why the session ended */
	struct ssh_seen_key	 seen;
	struct init_node	 node;
	char			*speeds;	/* read once ip -j addr is */
};

struct ask_op {
	struct inode	*nd;
	enum init_ask	 what;
	size_t		 peer;
};

/* init_tell.c: prints, a node's control characters made text (issue 43) */
void	 init_tell(FILE *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/* init_step.c */
void	 init_step_done(struct init *);	/* one answer in */
void	 init_step_run(struct init *);	/* until the step's answers are in */
struct ssh_params init_step_params(struct inode *, const char *known_hosts);
void	 init_step_drop(struct init *);	/* frees the sessions */

/* init_hostkey.c */
void	 init_hostkey_scan(struct init *);
/* 0 when every node's key is trusted; the new known_hosts lines in lines */
int	 init_hostkey_trust(struct init *, struct sbuf *lines);

/* init_write.c: each 0, or -1 said on stderr */
int	 init_write_known(struct init *, const struct sbuf *lines);
int	 init_write_dir(const char *file);	/* its directory, made 0750 */
int	 init_write_key(struct init *);
int	 init_write_token(struct init *);
int	 init_write_config(struct init *, const char *text);

/* init_ask.c */
int	 init_ask_login(struct init *);	/* -1 when a node is not in */
/* what the nodes have; with model, that model directory's files too */
void	 init_ask_discover(struct init *, const char *model);
/* 0 when the fast link carries every pair; 1 with f set */
int	 init_ask_link(struct init *, struct link_finding *);

#endif
