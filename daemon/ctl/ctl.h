/*
 * What tandemctl.c and bench.c share. tandemctl takes from the daemon only
 * log.c, and ssh.c with preflight.c for check and http.c for bench: nothing
 * that runs the cluster (cluster, state, httpd, notify).
 */
#ifndef CTL_H
#define CTL_H

#include <getopt.h>
#include <stdio.h>

#include "tandemd.h"

/* tandemctl.c */

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

int	 ctl_global(int ch, const char *arg);
void	 ctl_global_help(FILE *);
/* vllm.url from the configuration, or vLLM's default address. */
char	*ctl_vllm_url(void);

/* bench.c: tandemctl bench, the load test of the DGX Spark Ray guide */
int	 bench_main(int argc, char **argv);

#endif
