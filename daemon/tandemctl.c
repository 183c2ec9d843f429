/*
 * tandemctl: the operator's command line (PRODUCT.md section 5).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "plan.h"
#include "version.h"

#define DEFAULT_CONFIG "/etc/tandem/tandem.json"

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: tandemctl [--config FILE] [--api URL] [--token-file F] "
	    "COMMAND\n"
	    "commands:\n"
	    "  status [--json]   cluster state, nodes, Ray, vLLM, diagnosis\n"
	    "  events [--follow] recent transitions and actions\n"
	    "  rebuild [--reset] tear down and rebuild every node\n"
	    "  pause | resume    stop or restart automatic action\n"
	    "  plan              the commands a rebuild runs, per node\n"
	    "  check             preflight on every node over SSH\n"
	    "  bench             the seed-000 load test\n"
	    "  --version\n");
}

static int
cmd_plan(const char *file)
{
	char err[ERRLEN];
	struct config *cf;
	struct plan p;
	struct sbuf out;

	if ((cf = config_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return 2;
	}
	plan_rebuild(cf, 0, &p);
	sbuf_init(&out);
	plan_print(cf, &p, &out);
	fputs(out.s, stdout);
	sbuf_free(&out);
	plan_free(&p);
	config_free(cf);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config",	required_argument,	NULL, 'c' },
		{ "api",	required_argument,	NULL, 'a' },
		{ "token-file",	required_argument,	NULL, 't' },
		{ "version",	no_argument,		NULL, 'V' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *file = DEFAULT_CONFIG, *cmd;
	int ch;

	/* "+" stops at the command so its own flags reach it untouched. */
	while ((ch = getopt_long(argc, argv, "+c:", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'a':
		case 't':
			break;
		case 'V':
			printf("tandemctl %s\n", TANDEM_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (strcmp(cmd, "plan") == 0 && optind + 1 == argc)
		return cmd_plan(file);
	fprintf(stderr, "tandemctl: unknown command or arguments: %s\n", cmd);
	usage(stderr);
	return 2;
}
