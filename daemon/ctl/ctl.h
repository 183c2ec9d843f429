/*
 * What tandemctl's files share. tandemctl takes from the daemon only sys/
 * (log, clock, the config file), ssh/ for check (which runs
 * lib/preflight/preflight_steps.c) and http/ for bench: nothing that runs the cluster (cluster/, api/).
 */
#ifndef CTL_H
#define CTL_H

#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>

#include "cachedisk.h"
#include "config.h"
#include "plan.h"
#include "http.h"
#include "log.h"
#include "preflight.h"

#define CTL_DEFAULT_CONFIG	"/etc/tandem/tandem.json"
/*
 * api_socket's default (lib/config/config_table.c): when the config cannot
 * be read
 */
#define CTL_DEFAULT_SOCKET	"/run/tandem/api.sock"

/* The command line: the global options and the command's flags. */
struct ctl_args {
	const char	*config;	/* --config, $TANDEM_CONFIG or default */
	int		 config_named;	/* by --config or $TANDEM_CONFIG */
	const char	*api_url;	/* --api; NULL: from the config */
	const char	*token_file;	/* --token-file */
	const char	*cmd;
	int		 json;
	int		 follow;
	int		 reset;
	int		 wait;
	const char	*node;		/* --node: only this one */
	int		 quiet;		/* status -q: the exit status only */
	const char	*arg;		/* wait: the state */
	double		 timeout_s;	/* wait --timeout; 0: none */
	const char	*output;	/* bundle -o FILE */
	const char	*pid;		/* reload --pid: tandemd's */
	int		 no_rollback;	/* apply --no-rollback */
	int		 argc;		/* the command and what follows it */
	char		**argv;
};

/* options.c */

/*
 * The options every command takes, before or after its name (tandemctl
 * plan --config F, as with git and systemctl). A command's getopt_long
 * list includes CTL_GLOBAL_OPTIONS and its short options "hc:"; it hands
 * each answer to ctl_global first, which takes the global ones (1) and
 * leaves -h and the command's own to it (0).
 */
enum { CTL_OPT_API = 256, CTL_OPT_TOKEN_FILE };

#define CTL_GLOBAL_OPTIONS \
	{ "config",	required_argument,	NULL, 'c' }, \
	{ "api",	required_argument,	NULL, CTL_OPT_API }, \
	{ "token-file",	required_argument,	NULL, CTL_OPT_TOKEN_FILE }, \
	{ "help",	no_argument,		NULL, 'h' }

/*
 * Reads the command line into a. Returns -1 to run a->cmd, else the exit
 * status: 0 after --help or --version, 2 after a usage error. bench's own
 * options are left to bench_main (a->argc, a->argv).
 */
int	 ctl_parse(int argc, char **argv, struct ctl_args *a);
int	 ctl_global(struct ctl_args *, int ch, const char *arg);
void	 ctl_global_help(FILE *);

/*
 * ctl_vllm.c: vllm.url from the configuration; vLLM's default only when
 * no config was named and the default one does not exist. NULL (said on
 * stderr) when the config does not load.
 */
char	*ctl_vllm_url(const char *config, int named);
/*
 * vLLM's API key from the config (vllm.args, the containers' env or
 * vllm.api_key_file); 0 with *key NULL when there is none or no config,
 * -1 (said) when the config or the key file cannot be read.
 */
int	 ctl_vllm_key(const char *config, int named, char **key);

/* json.c */
void	 ctl_put_json(const char *);	/* with a final newline */
int	 ctl_put_built(json_t *);	/* takes it; 1 when NULL */
/* only: a node's name, or NULL for every node */
json_t	*ctl_plan_json(const struct config *, const struct plan *,
	    const char *only);
/*
 * A node's container.cache_dir as tandemctl check found it (issue 47):
 * line is the text the table prints, NULL when the node was not asked (no
 * cache_dir, no SSH); read: du/df's answer was readable, cd holds it.
 */
struct ctl_cache {
	char			*line;
	int			 read;
	struct cache_disk	 cd;
};
/* caches: one per node of the config */
json_t	*ctl_check_json(const struct preflight *, const struct ctl_cache *,
	    const char *only);

/* check.c: tandemctl check on cf; the exit status */
int	 ctl_run_check(struct config *, int as_json, const char *only);

/*
 * ctl_api.c: tandemd's API. ctl_api_open says where it is: url (--api),
 * else the config's api_socket (config named by --config or
 * $TANDEM_CONFIG when named); -1 (said) when the config does not load.
 */
int	 ctl_api_open(const char *config, int named, const char *url);
const char *ctl_api_url(void);
/*
 * Points a request at the API's Unix socket when tandemctl uses it (no
 * --api); its URL then names localhost.
 */
void	 ctl_api_route(CURL *);
/*
 * One request to the daemon's API. Returns the HTTP status, or -1 with a
 * message naming the API address when the daemon cannot be reached
 * (unless ctl_api_quiet was called: wait says "not running" once).
 */
long	 ctl_api(const char *method, const char *path, const char *token,
	    struct sbuf *out);
/* As ctl_api, with a body to POST (tandemctl apply's file); body may be NULL */
long	 ctl_api_body(const char *method, const char *path, const char *token,
	    const struct sbuf *body, struct sbuf *out);
void	 ctl_api_quiet(void);
/*
 * The wait for a change's verdict (reload, apply): floor_s, or longer when
 * the config read for the socket has a longer probe.timeout_s.
 */
double	 ctl_api_verdict_s(double floor_s);

/*
 * ctl_show.c: tandemctl status, wait, events, trace; each the exit
 * status. ctl_show_color: the table's colours on (a terminal, no NO_COLOR).
 */
void	 ctl_show_color(int on);
int	 ctl_show_status(int as_json, int quiet);
int	 ctl_show_wait(const char *want, double timeout_s);
int	 ctl_show_events(int follow, int as_json);
int	 ctl_show_trace(int as_json);
/* GET /status as JSON; NULL (said unless quiet_refused) when it fails */
json_t	*ctl_show_get_status(int quiet_refused);
/* GET /events?since=: 0, or -1 (said) */
int	 ctl_show_get_events(long long since, struct sbuf *out);
/* o's member k: its string or "-"; its integer or 0; or -1 when absent */
const char *ctl_show_str(json_t *o, const char *k);
json_int_t ctl_show_int(json_t *o, const char *k);
json_int_t ctl_show_int_or(json_t *o, const char *k);

/*
 * ctl_post.c: tandemctl rebuild [--wait], pause, resume, reload, apply and
 * rollback; each the exit status. cfgfile: the config, for the token.
 */
void	 ctl_post_token_file(const char *path);	/* --token-file */
/* the token as tandemd reads it; NULL (said) when there is none */
char	*ctl_post_token(const char *cfgfile);
int	 ctl_post(const char *cfgfile, const char *path);
int	 ctl_post_rebuild_wait(const char *cfgfile, const char *path);
int	 ctl_post_reload(const char *pidarg, double timeout_s);
/* applyfile NULL: rollback */
int	 ctl_post_apply(const char *cfgfile, const char *applyfile,
	    int no_rollback, double timeout_s);

/*
 * bundle.c: tandemctl bundle, GET /bundle into a file. token may be NULL
 * (the daemon then says 401 or 403).
 */
int	 ctl_bundle(const char *base_url, const char *token, const char *out);

/* bench.c: tandemctl bench, the load test of the DGX Spark Ray guide */
int	 bench_main(int argc, char **argv, struct ctl_args *);

/* init.c: tandemctl init, a checked config from what the nodes report */
int	 init_main(int argc, char **argv, struct ctl_args *);

#endif
