/*
 * tandemd: keeps a multi-node vLLM cluster serving (PRODUCT.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "version.h"

#define DEFAULT_CONFIG "/etc/tandem/tandem.json"

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: tandemd [--config FILE] [--check | --once] "
	    "[--state-dir DIR]\n       tandemd --version\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config",	required_argument,	NULL, 'c' },
		{ "check",	no_argument,		NULL, 'k' },
		{ "once",	no_argument,		NULL, 'o' },
		{ "state-dir",	required_argument,	NULL, 's' },
		{ "version",	no_argument,		NULL, 'V' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *file = DEFAULT_CONFIG;
	char err[ERRLEN];
	struct config *cf;
	int ch, check = 0;

	while ((ch = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'k':
			check = 1;
			break;
		case 'o':
		case 's':
			break;
		case 'V':
			printf("tandemd %s\n", TANDEM_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if ((cf = config_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemd: %s\n", err);
		return 2;
	}
	if (check) {
		printf("%s: ok (cluster %s, topology %s, %zu nodes)\n", file,
		    cf->name, cf->topology == TOPO_RAY ? "ray" : "dp",
		    cf->nnodes);
		config_free(cf);
		return 0;
	}
	config_free(cf);
	return 1;
}
