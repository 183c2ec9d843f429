/*
 * tandemd: keeps a multi-node vLLM cluster serving (PRODUCT.md).
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libssh2.h>

#include "ssh.h"
#include "bundle_store.h"
#include "conffile.h"
#include "cluster.h"
#include "api.h"
#include "http.h"
#include "log.h"
#include "notify.h"
#include "statelock.h"
#include "tokenfile.h"
#include "unitpaths.h"
#include "version.h"

#define DEFAULT_CONFIG		"/etc/tandem/tandem.json"
#define DEFAULT_STATE_DIR	"/var/lib/tandem"

/*
 * The daemon's one place of state outside the cluster: the one cluster,
 * the signal handles and what --once waits for. Signals arrive as libuv
 * callbacks on the loop, so none of this is touched from a handler.
 */
static struct cluster	*cluster;
static const char	*config_file = DEFAULT_CONFIG;
static uv_signal_t	 sig_term, sig_int, sig_hup;
static int		 stopping;
static uv_timer_t	 once_deadline;
static double		 once_timeout_s;
static char		 once_why[200];	/* why --once ended without serving */

/*
 * tandemd --once gives up after --timeout: by default the longest a
 * rebuild may wait on Ray and on vLLM, and ten minutes for the rest
 * (preflight, teardown, image load, nodes coming back).
 */
#define ONCE_MARGIN_S	600

static void
usage(FILE *fp, int full)
{
	fprintf(fp, "usage: tandemd [--config FILE] [--state-dir DIR] "
	    "[--verbose]\n"
	    "       tandemd --check [--config FILE]\n"
	    "       tandemd --once [--config FILE] [--state-dir DIR] "
	    "[--timeout SECONDS] [--verbose]\n"
	    "       tandemd --help | --version\n");
	if (!full)
		return;
	fprintf(fp, "Keeps a multi-node vLLM cluster serving (tandemd(8)).\n\n"
	    "  -c, --config FILE    the configuration (default: "
	    "$TANDEM_CONFIG,\n"
	    "                       else " DEFAULT_CONFIG ")\n"
	    "      --state-dir DIR  events and remedy steps (default: "
	    "$STATE_DIRECTORY,\n"
	    "                       else " DEFAULT_STATE_DIR ")\n"
	    "      --check          validate the configuration and exit\n"
	    "      --once           bring the cluster to serving and exit: 0 "
	    "serving,\n"
	    "                       1 with the diagnosis\n"
	    "      --timeout S      with --once: give up after S seconds\n"
	    "  -v, --verbose        log every SSH command and its duration\n"
	    "  -h, --help           this help\n"
	    "      --version        print the version\n\n"
	    "Exit status: 0 success, 1 failure, 2 usage or configuration "
	    "error.\n");
}

/*
 * An error that stops the start. --check is a command at a terminal:
 * "tandemd: why". The daemon logs it at err (journal PRIORITY=3), which is
 * where an operator looks when systemctl says the unit failed.
 */
static void __attribute__((format(printf, 2, 3)))
start_error(int check, const char *fmt, ...)
{
	char msg[ERRLEN + 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (check)
		fprintf(stderr, "tandemd: %s\n", msg);
	else
		log_node(LOG_ERR, NULL, "%s", msg);
}

static void
stopped(void *arg)
{
	uv_loop_t *loop = arg;

	uv_stop(loop);
}

static void
on_signal(uv_signal_t *s, int signum)
{
	char err[ERRLEN];
	int rc;

	if (signum == SIGHUP && stopping) {
		/* a reload now would rebuild what the stop is taking down */
		log_warnx("SIGHUP while stopping: not reloaded");
		return;
	}
	if (signum == SIGHUP) {
		/*
		 * sd_notify(3): RELOADING=1 puts the unit in "reloading"
		 * until READY=1. READY=1 went out at start, before the
		 * signals were taken, so every reload reports both.
		 * systemctl reload checks the file first (the unit's
		 * ExecReload runs tandemd --check): a refusal here is a
		 * file changed in between, or a plain kill -HUP.
		 */
		notify_reloading();
		log_info("SIGHUP: reloading %s", config_file);
		rc = cluster_reload(cluster, config_file, err, sizeof(err));
		if (rc == -1) {
			log_node(LOG_ERR, NULL, "reload failed, keeping the "
			    "running config: %s", err);
			notify_status("reload failed, keeping the running "
			    "config");
		} else
			log_info("reloaded: %s", rc == 1 ? "cluster changed, "
			    "rebuilding" : rc == 2 ? "the image, model or "
			    "flags changed: checking every node before the "
			    "switch" : "no change the cluster depends on");
		notify_ready();
		return;
	}
	if (stopping) {
		log_warnx("second signal: exiting now");
		exit(1);
	}
	stopping = 1;
	if (cluster_once(cluster))
		snprintf(once_why, sizeof(once_why), "stopped by signal %d "
		    "before serving", signum);
	log_info("signal %d: stopping (on_stop: %s)", signum,
	    cluster_config(cluster)->systemd.on_stop_teardown ? "teardown" : "keep");
	notify_stopping();
	cluster_stop(cluster, stopped, s->loop);
}

static void
on_once_deadline(uv_timer_t *t)
{
	snprintf(once_why, sizeof(once_why), "not serving within --timeout "
	    "(%.0f s): %s/%s", once_timeout_s,
	    state_name(cluster_fsm(cluster)->state, cluster_fsm(cluster)->dp),
	    action_name(cluster_fsm(cluster)->action));
	cluster_set_exit_code(cluster, 1);
	uv_stop(t->loop);
}

static void
close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/*
 * tandemd's own memory is mostly malloc's and its threads' (docs/
 * architecture.md, Memory). The loop thread does nearly all the work; libuv's
 * pool threads only resolve a node's name and write the state files. glibc
 * gives every thread that allocates an arena of its own, whose pages stay
 * with the process: one arena for all (the pool threads allocate little,
 * rarely, so they never wait for it), and two pool threads instead of four
 * (one state file can be fsynced while a name is resolved). An operator's
 * UV_THREADPOOL_SIZE or MALLOC_ARENA_MAX still wins.
 */
static void
memory_setup(void)
{
	if (getenv("MALLOC_ARENA_MAX") == NULL)
		mallopt(M_ARENA_MAX, 1);
	setenv("UV_THREADPOOL_SIZE", "2", 0);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config",	required_argument,	NULL, 'c' },
		{ "check",	no_argument,		NULL, 'k' },
		{ "once",	no_argument,		NULL, 'o' },
		{ "state-dir",	required_argument,	NULL, 's' },
		{ "timeout",	required_argument,	NULL, 't' },
		{ "verbose",	no_argument,		NULL, 'v' },
		{ "version",	no_argument,		NULL, 'V' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *state_dir = getenv("STATE_DIRECTORY");
	char err[ERRLEN], *tok;
	struct strv hidden;
	struct config *cf;
	const struct config *run;
	uv_loop_t *loop;
	int ch, check = 0, once = 0, verbose = 0, rc, state_dir_named = 1;
	size_t i;
	double timeout_s = 0;
	char *end;

	/* as tandemctl: the unit's /etc/default/tandemd may set it */
	if (getenv("TANDEM_CONFIG") && *getenv("TANDEM_CONFIG"))
		config_file = getenv("TANDEM_CONFIG");
	if (state_dir == NULL) {
		state_dir = DEFAULT_STATE_DIR;
		state_dir_named = 0;
	}
	while ((ch = getopt_long(argc, argv, "c:vh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			config_file = optarg;
			break;
		case 'k':
			check = 1;
			break;
		case 'o':
			once = 1;
			break;
		case 's':
			state_dir = optarg;
			state_dir_named = 1;
			break;
		case 't':
			timeout_s = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || !(timeout_s > 0) ||
			    timeout_s > 1e7) {
				fprintf(stderr, "tandemd: --timeout: a number of "
				    "seconds, not %s\n", optarg);
				return 2;
			}
			break;
		case 'v':
			verbose = 1;
			break;
		case 'V':
			printf("tandemd %s\n", TANDEM_VERSION);
			return 0;
		case 'h':
			usage(stdout, 1);
			return 0;
		default:
			usage(stderr, 0);
			return 2;
		}
	}
	if (optind != argc || (check && once) || (timeout_s > 0 && !once)) {
		usage(stderr, 0);
		return 2;
	}
	log_init(verbose);
	if ((cf = conffile_load(config_file, err, sizeof(err))) == NULL) {
		start_error(check, "%s", err);
		return 2;
	}
	if (token_file_read(cf->api_token_file, 1, &tok, err, sizeof(err)) == -1) {
		start_error(check, "%s", err);
		config_free(cf);
		return 2;
	}
	/* a file that cannot be opened only disables POST: said, not refused */
	if (tok == NULL && cf->api_token_file && check)
		fprintf(stderr, "tandemd: warning: %s: POST /rebuild, /pause and "
		    "/resume are refused until it can be read\n", err);
	free(tok);
	strv_init(&hidden);
	unit_hidden_paths(cf, &hidden);
	for (i = 0; i < cf->warnings.n; i++)
		log_warnx("%s", cf->warnings.v[i]);
	/*
	 * The daemon would start and then fail every SSH handshake: say it
	 * here, where --check and the start stop (exit 2: the unit's
	 * RestartPreventExitStatus, no restart loop on a broken config).
	 */
	if (conffile_check_files(cf, err, sizeof(err)) == -1) {
		start_error(check, "%s", err);
		for (i = 0; i < hidden.n; i++)
			start_error(check, "%s", hidden.v[i]);
		strv_free(&hidden);
		config_free(cf);
		return 2;
	}
	if (check) {
		if (httpd_listen_warning(cf, err, sizeof(err)) != NULL)
			fprintf(stderr, "tandemd: warning: %s\n", err);
		for (i = 0; i < hidden.n; i++)
			fprintf(stderr, "tandemd: warning: %s\n", hidden.v[i]);
		strv_free(&hidden);
		printf("%s: ok (cluster %s, topology %s, %zu nodes)\n",
		    config_file, cf->name, cf->topology == TOPO_RAY ? "ray" :
		    "dp", cf->nnodes);
		config_free(cf);
		return 0;
	}
	strv_free(&hidden);
	/*
	 * The default is made as systemd's StateDirectory= would; a dir the
	 * operator named and mistyped is an error (2), not a daemon that
	 * keeps no state. A dir another tandemd holds is 1, as a taken
	 * port: it frees itself when that one stops.
	 */
	switch (state_lock(state_dir, !state_dir_named, err, sizeof(err))) {
	case STATE_LOCK_OK:
		break;
	case STATE_LOCK_HELD:
		start_error(0, "%s", err);
		config_free(cf);
		return 1;
	case STATE_LOCK_BAD:
		start_error(0, "%s", err);
		config_free(cf);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	memory_setup();
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	loop = uv_default_loop();
	if (sshc_ssh_init() != 0 || http_init(loop) != 0)
		fatalx("cannot initialise libssh2 or libcurl");
	notify_init(loop);
	bundle_store_init(state_dir);
	cluster = cluster_new(loop, cf, state_dir, once);
	/*
	 * The cluster owns cf now, and after a rollback it starts on the last
	 * good config instead and frees cf: read the one it runs.
	 */
	cf = NULL;
	run = cluster_config(cluster);
	/* the evidence bundle holds GET /status's document too */
	cluster_status_doc(cluster, render_status);
	if (httpd_start(cluster, err, sizeof(err)) == -1) {
		/* a taken port may free itself: 1, systemd restarts (bounded) */
		log_node(LOG_ERR, NULL, "%s", err);
		return 1;
	}
	log_info("tandemd %s: cluster %s, %zu nodes, topology %s, API on "
	    "http://%s:%d and %s", TANDEM_VERSION, run->name, run->nnodes,
	    run->topology == TOPO_RAY ? "ray" : "dp", run->listen_host,
	    run->listen_port, run->api_socket);
	/*
	 * The readiness contract (PRODUCT.md section 3, rule 8): ready is
	 * "up and managing": the config is loaded and the API answers. No
	 * boot, systemctl start or package upgrade waits on the cluster,
	 * which may need a worker that is off; deploy-and-wait is tandemctl
	 * wait serving, rebuild --wait or tandemd --once.
	 */
	notify_ready();
	uv_signal_init(loop, &sig_term);
	uv_signal_init(loop, &sig_int);
	uv_signal_init(loop, &sig_hup);
	uv_signal_start(&sig_term, on_signal, SIGTERM);
	uv_signal_start(&sig_int, on_signal, SIGINT);
	uv_signal_start(&sig_hup, on_signal, SIGHUP);
	if (once) {
		if (timeout_s == 0)
			timeout_s = run->probe.ray_wait_timeout_s +
			    run->vllm.ready_timeout_s + ONCE_MARGIN_S;
		log_info("--once: serving within %.0f s, or exit 1", timeout_s);
		once_timeout_s = timeout_s;
		uv_timer_init(loop, &once_deadline);
		uv_timer_start(&once_deadline, on_once_deadline,
		    (uint64_t)(timeout_s * 1000), 0);
	}
	cluster_start(cluster);
	uv_run(loop, UV_RUN_DEFAULT);

	rc = cluster_exit_code(cluster);
	if (once && rc == 0)
		log_info("serving: done (--once)");
	else if (once)
		log_warnx("--once: not serving: %s%s%s", once_why[0] ? once_why :
		    cluster_diag_msg(cluster) ? cluster_diag_msg(cluster) :
		    "gave up", once_why[0] && cluster_diag_msg(cluster) ?
		    "; last diagnosis: " : "", once_why[0] &&
		    cluster_diag_msg(cluster) ? cluster_diag_msg(cluster) : "");
	else
		log_info("stopped");
	httpd_stop();
	cluster_free(cluster);
	http_shutdown();
	notify_close();
	uv_walk(loop, close_walk, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	libssh2_exit();
	return rc;
}
