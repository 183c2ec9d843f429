/*
 * What tandemctl.c and bench.c share. tandemctl takes from the daemon only
 * log.c, and ssh.c with preflight.c for check and http.c for bench: nothing
 * that runs the cluster (cluster, state, httpd, notify).
 */
#ifndef CTL_H
#define CTL_H

#include "tandemd.h"

/* bench.c: tandemctl bench, the load test of the DGX Spark Ray guide */
int	bench_main(int argc, char **argv, const char *default_url);

#endif
