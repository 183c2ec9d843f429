/*
 * tandemctl's command line, like git's or systemctl's: -h/--help on the
 * program and on every command prints the usage on standard output (exit
 * 0), a usage error prints the synopsis on standard error (exit 2), and
 * the global options go before or after the command.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "version.h"

int
ctl_global(struct ctl_args *a, int ch, const char *arg)
{
	switch (ch) {
	case 'c':
		a->config = arg;
		a->config_named = 1;
		return 1;
	case CTL_OPT_API:
		a->api_url = arg;
		return 1;
	case CTL_OPT_TOKEN_FILE:
		a->token_file = arg;
		return 1;
	default:
		return 0;
	}
}

void
ctl_global_help(FILE *fp)
{
	fprintf(fp,
	    "global options (before or after the command):\n"
	    "  -c, --config FILE    the configuration (default: $TANDEM_CONFIG, "
	    "else\n"
	    "                       " CTL_DEFAULT_CONFIG ")\n"
	    "      --api URL        the tandemd API over TCP, which then "
	    "gets the token\n"
	    "                       too (default: the Unix socket, the "
	    "config's api_socket)\n"
	    "      --token-file F   the API token (default: the config's "
	    "api_token_file)\n"
	    "  -h, --help           this help\n");
}

/* The commands' own flags (bench has its list in bench.c). */
enum { O_JSON = 'j', O_FOLLOW = 'f', O_RESET = 'r', O_WAIT = 'w', O_NODE = 'n',
	O_QUIET = 'q', O_TIMEOUT = 't', O_OUTPUT = 'o', O_PID = 'p',
	O_NO_ROLLBACK = 'R' };

#define OPT_JSON	{ "json",	no_argument,	NULL, O_JSON }
#define OPT_END		{ NULL, 0, NULL, 0 }

static const struct option opts_json[] = { OPT_JSON, CTL_GLOBAL_OPTIONS,
	OPT_END };
static const struct option opts_status[] = { OPT_JSON,
	{ "quiet", no_argument, NULL, O_QUIET }, CTL_GLOBAL_OPTIONS, OPT_END };
static const struct option opts_wait[] = {
	{ "timeout", required_argument, NULL, O_TIMEOUT }, CTL_GLOBAL_OPTIONS,
	OPT_END };
static const struct option opts_events[] = { OPT_JSON,
	{ "follow", no_argument, NULL, O_FOLLOW }, CTL_GLOBAL_OPTIONS, OPT_END };
static const struct option opts_rebuild[] = {
	{ "reset", no_argument, NULL, O_RESET },
	{ "wait", no_argument, NULL, O_WAIT }, CTL_GLOBAL_OPTIONS, OPT_END };
static const struct option opts_reload[] = {
	{ "pid", required_argument, NULL, O_PID },
	{ "timeout", required_argument, NULL, O_TIMEOUT }, CTL_GLOBAL_OPTIONS,
	OPT_END };
static const struct option opts_apply[] = {
	{ "no-rollback", no_argument, NULL, O_NO_ROLLBACK },
	{ "timeout", required_argument, NULL, O_TIMEOUT }, CTL_GLOBAL_OPTIONS,
	OPT_END };
static const struct option opts_rollback[] = {
	{ "timeout", required_argument, NULL, O_TIMEOUT }, CTL_GLOBAL_OPTIONS,
	OPT_END };
static const struct option opts_none[] = { CTL_GLOBAL_OPTIONS, OPT_END };
static const struct option opts_node[] = { OPT_JSON,
	{ "node", required_argument, NULL, O_NODE }, CTL_GLOBAL_OPTIONS, OPT_END };
static const struct option opts_bundle[] = {
	{ "output", required_argument, NULL, O_OUTPUT }, CTL_GLOBAL_OPTIONS,
	OPT_END };

/* The commands: the usage and --help of each, and the flags it takes. */
static const struct command {
	const char		*name;
	const struct option	*opts;
	const char		*synopsis;	/* its options */
	const char		*what;		/* one line, for tandemctl -h */
	const char		*help;		/* its options, a line each */
	const char		*arg;		/* its one operand, or NULL */
} commands[] = {
	{ "status", opts_status, "[-q] [--json]",
	    "cluster state, nodes, Ray, vLLM, diagnosis",
	    "  -q, --quiet          print nothing: exit 0 when serving, 1 "
	    "when not\n"
	    "                       (or tandemd cannot be asked)\n"
	    "      --json           the GET /status document\n", NULL },
	{ "wait", opts_wait, "STATE [--timeout S]",
	    "wait until the cluster is in STATE (serving, ...)",
	    "      --timeout S      give up after S seconds (exit 1); "
	    "default: none\n\n"
	    "STATE is one of: absent ray-up nodes-up serving degraded\n"
	    "(nodes-up is topology dp's ray-up; serving reaches both). A "
	    "line per change\n"
	    "of state or action; exit 0 in STATE, 1 at the timeout, when "
	    "the retries\n"
	    "stopped (a diagnosis that needs you) or when tandemd stops "
	    "answering for 10 s.\n", "STATE" },
	{ "events", opts_events, "[--follow] [--json]",
	    "recent transitions and actions",
	    "      --follow         keep printing new events (every second)\n"
	    "      --json           the GET /events array; with --follow one "
	    "event\n"
	    "                       per line\n", NULL },
	{ "rebuild", opts_rebuild, "[--reset] [--wait]",
	    "tear down and rebuild every node",
	    "      --reset          forget the remedy step: start again from "
	    "the\n"
	    "                       configured --gpu-memory-utilization\n"
	    "      --wait           follow the rebuild, a line per step; exit "
	    "0 once\n"
	    "                       serving, 1 if it ends in a diagnosis\n",
	    NULL },
	{ "trace", opts_json, "[--json]",
	    "the last rebuild's remote steps and tandem's own overhead",
	    "      --json           the GET /rebuilds/last document\n", NULL },
	{ "reload", opts_reload, "[--pid PID] [--timeout S]",
	    "reload the config (SIGHUP) and wait for its verdict",
	    "      --pid PID        tandemd's process (default: $MAINPID, as "
	    "systemd sets\n"
	    "                       it for the unit's ExecReload)\n"
	    "      --timeout S      give up after S seconds (exit 1); "
	    "default: 80\n\n"
	    "Exit 0 once tandemd took the new config (a change of the image, "
	    "model,\n"
	    "flags, env or volumes once every node passed its check); 1 when "
	    "the file\n"
	    "was refused or the change's check failed (the running config "
	    "stays), with\n"
	    "the reason and the fix on stderr. systemctl reload runs it.\n",
	    NULL },
	{ "apply", opts_apply, "FILE [--no-rollback]",
	    "run FILE's config (the file tandemd reads stays as it is)",
	    "      --no-rollback    a change that does not reach serving "
	    "stays (no return\n"
	    "                       to the last config that served)\n"
	    "      --timeout S      give up after S seconds (exit 1); "
	    "default: 80\n\n"
	    "FILE is parsed and checked as tandemd's own config; a change of "
	    "the image,\n"
	    "model, flags, env or volumes is checked on every node while the "
	    "cluster\n"
	    "serves, then applied, as a reload of a changed file. Exit 0 once "
	    "tandemd\n"
	    "took it; 1 when FILE or the change was refused, with the reason "
	    "on stderr.\n"
	    "It runs until the next reload of tandemd's own file.\n", "FILE" },
	{ "rollback", opts_rollback, "[--timeout S]",
	    "return to the last config that reached serving",
	    "      --timeout S      give up after S seconds (exit 1); "
	    "default: 80\n\n"
	    "The state dir's last-good.json, taken as tandemctl apply takes a "
	    "file.\n"
	    "Refused (exit 1) when there is none, or when it is what runs.\n",
	    NULL },
	{ "pause", opts_none, "", "stop all automatic action", "", NULL },
	{ "resume", opts_none, "",
	    "restart automatic action (after a stop or the cap: rebuild now)",
	    "", NULL },
	{ "plan", opts_node, "[--node NAME] [--json]",
	    "the commands a rebuild runs, per node (touches no node)",
	    "      --node NAME      only this node's commands\n"
	    "      --json           the plan as JSON\n", NULL },
	{ "check", opts_node, "[--node NAME] [--json]",
	    "preflight on every node over SSH",
	    "      --node NAME      only this node's results (and exit status)\n"
	    "      --json           the results as JSON\n", NULL },
	{ "bundle", opts_bundle, "[-o FILE]",
	    "fetch the evidence kept when retries stopped (a tar)",
	    "  -o, --output FILE    write the tar there (- for stdout, which "
	    "must not\n"
	    "                       be a terminal); default: the bundle's own "
	    "name\n"
	    "                       in the current directory\n", NULL },
	{ "bench", NULL, "[OPTIONS]",
	    "the DGX Spark Ray guide's load test (tandemctl bench -h)", NULL,
	    NULL },
	{ "init", NULL, "--head H --worker H",
	    "a checked config from what the nodes report (init -h)", NULL,
	    NULL },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *fp)
{
	size_t i;

	fprintf(fp, "usage: tandemctl [OPTIONS] COMMAND [COMMAND OPTIONS]\n"
	    "       tandemctl --version\n\ncommands:\n");
	for (i = 0; i < NCOMMANDS; i++) {
		char left[40];

		snprintf(left, sizeof(left), "%s %s", commands[i].name,
		    commands[i].synopsis);
		fprintf(fp, "  %-27s %s\n", left, commands[i].what);
	}
	fputc('\n', fp);
	ctl_global_help(fp);
	fprintf(fp, "      --version        print the version\n\n"
	    "tandemctl COMMAND --help tells more. Exit status: 0 success, 1 "
	    "failure,\n2 usage or configuration error.\n");
}

/* --help: the whole of it; after a usage error, the synopsis (stderr). */
static void
command_usage(const struct command *c, FILE *fp, int full)
{
	fprintf(fp, "usage: tandemctl %s %s%s[OPTIONS]\n", c->name,
	    c->synopsis, c->synopsis[0] ? " " : "");
	if (!full) {
		fprintf(fp, "tandemctl %s --help tells more.\n", c->name);
		return;
	}
	fprintf(fp, "%s\n\n", c->what);
	if (c->help[0])
		fprintf(fp, "options:\n%s\n", c->help);
	ctl_global_help(fp);
}

static int
parse_seconds(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end != '\0' || !(v > 0) || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

/*
 * A command's flags, the global options among them. Returns -1 to go on,
 * else the exit status (0 after --help).
 */
static int
parse(const struct command *c, int argc, char **argv, struct ctl_args *a)
{
	int ch;

	optind = 0;	/* glibc: a fresh scan, without the first one's "+" */
	while ((ch = getopt_long(argc, argv, c->opts == opts_bundle ? "hc:o:" :
	    "hc:q", c->opts, NULL)) != -1) {
		if (ctl_global(a, ch, optarg))
			continue;
		switch (ch) {
		case 'h':
			command_usage(c, stdout, 1);
			return 0;
		case O_JSON:
			a->json = 1;
			break;
		case O_FOLLOW:
			a->follow = 1;
			break;
		case O_RESET:
			a->reset = 1;
			break;
		case O_WAIT:
			a->wait = 1;
			break;
		case O_NODE:
			a->node = optarg;
			break;
		case O_QUIET:
			if (c->opts != opts_status) {
				command_usage(c, stderr, 0);
				return 2;
			}
			a->quiet = 1;
			break;
		case O_TIMEOUT:
			if (parse_seconds(optarg, &a->timeout_s) == -1) {
				fprintf(stderr, "%s: --timeout: a number of "
				    "seconds, not %s\n", argv[0], optarg);
				return 2;
			}
			break;
		case O_OUTPUT:
			a->output = optarg;
			break;
		case O_PID:
			a->pid = optarg;
			break;
		case O_NO_ROLLBACK:
			a->no_rollback = 1;
			break;
		default:
			command_usage(c, stderr, 0);
			return 2;
		}
	}
	/* glibc's getopt_long moved the operands behind the options */
	if (c->arg && optind < argc)
		a->arg = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument: %s\n", argv[0],
		    argv[optind]);
		command_usage(c, stderr, 0);
		return 2;
	}
	if (c->arg && a->arg == NULL) {
		fprintf(stderr, "%s: missing %s\n", argv[0], c->arg);
		command_usage(c, stderr, 0);
		return 2;
	}
	return -1;
}

static void
short_usage(void)
{
	fprintf(stderr, "usage: tandemctl [OPTIONS] COMMAND [COMMAND OPTIONS]\n"
	    "tandemctl --help lists the commands and options.\n");
}

int
ctl_parse(int argc, char **argv, struct ctl_args *a)
{
	static const struct option opts[] = {
		CTL_GLOBAL_OPTIONS,
		{ "version",	no_argument,		NULL, 'V' },
		OPT_END
	};
	static char prog[64];	/* argv points at it once we return */
	const struct command *c = NULL;
	size_t i;
	int ch;

	memset(a, 0, sizeof(*a));
	a->config = getenv("TANDEM_CONFIG") ? getenv("TANDEM_CONFIG") :
	    CTL_DEFAULT_CONFIG;
	a->config_named = getenv("TANDEM_CONFIG") != NULL;
	/* "+" stops at the command: its flags are parsed with its own list. */
	while ((ch = getopt_long(argc, argv, "+hc:", opts, NULL)) != -1) {
		if (ctl_global(a, ch, optarg))
			continue;
		switch (ch) {
		case 'V':
			printf("tandemctl %s\n", TANDEM_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			/* getopt named the option; the whole help would bury it */
			short_usage();
			return 2;
		}
	}
	if (optind >= argc) {
		short_usage();
		return 2;
	}
	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[optind], commands[i].name) == 0)
			c = &commands[i];
	if (c == NULL) {
		fprintf(stderr, "tandemctl: unknown command: %s (tandemctl "
		    "--help lists them)\n", argv[optind]);
		return 2;
	}
	/* getopt's messages then name the command: "tandemctl status: ..." */
	snprintf(prog, sizeof(prog), "tandemctl %s", c->name);
	argv[optind] = prog;
	a->cmd = c->name;
	a->argc = argc - optind;
	a->argv = argv + optind;
	if (c->opts == NULL)
		return -1;	/* bench and init parse their own */
	return parse(c, a->argc, a->argv, a);
}
