/*
 * tandemctl init (tandemctl(1)): from bare nodes to a checked config. It
 * trusts each node's host key only once the operator has seen its
 * fingerprint (or named it with --accept-fingerprint), makes tandem's SSH
 * key and installs it where the operator's own login (ssh-agent) works,
 * asks every node read-only what it has (lib/plan/plan_init.c), decides the
 * config (lib/config/initconf.c), proves the fast link with pings
 * (lib/preflight/linkcheck.c), writes tandem.json, known_hosts and the API token,
 * then runs tandemctl check on what it wrote. Nothing changes on a node
 * but the key in authorized_keys, and init says so when it does.
 * --dry-run writes nothing and changes nothing.
 *
 * The steps run one after another, each on every node at once over the
 * daemon's SSH client (daemon/ssh*.c) on a libuv loop: a step's commands
 * all answered, the loop stops and the next step starts (init_step.c).
 * This file is the command: its options, the decision and the order of the
 * steps; init_hostkey.c trusts the keys, init_ask.c asks the nodes,
 * init_write.c writes the files.
 */
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "hostkey.h"
#include "imagecheck.h"
#include "init_int.h"
#include "initconf.h"
#include "linkcheck.h"
#include "plan.h"
#include "portholder.h"
#include "rdma.h"
#include "ssh.h"
#include "utf8.h"

/* tandemctl check on what was written: its table; 1 when a check fails. */
static int
check_written(struct init *in, struct config *cf)
{
	(void)in;
	init_tell(stdout, "\ntandemctl check:\n");
	fflush(stdout);
	return ctl_run_check(cf, 0, NULL);
}

/*
 * Whether the API's address is free here: 127.0.0.1:9100 is also
 * node_exporter's, often running on GPU nodes, and tandemd stops at start
 * when it cannot listen.
 */
static int
listen_free(const struct config *cf)
{
	struct sockaddr_in sin;
	int fd, ok;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)cf->listen_port);
	if (inet_pton(AF_INET, cf->listen_host, &sin.sin_addr) != 1 ||
	    (fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return 1;	/* not ours to judge: tandemd says at start */
	ok = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 ||
	    errno != EADDRINUSE;
	close(fd);
	return ok;
}

/* Whether this machine is the head: tandemd then probes vLLM locally. */
static int
head_is_local(const struct inode *head, const char *fast_ip)
{
	struct ifaddrs *ifa, *i;
	char a[INET_ADDRSTRLEN];
	int local = 0;

	if (getifaddrs(&ifa) != 0)
		return 1;
	for (i = ifa; i && !local; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)
		    i->ifa_addr)->sin_addr, a, sizeof(a));
		local = strcmp(a, head->node.facts.ssh_ip) == 0 ||
		    strcmp(a, head->host) == 0 || (fast_ip && strcmp(a,
		    fast_ip) == 0);
	}
	freeifaddrs(ifa);
	return local;
}

/* The command line ----------------------------------------------------- */

static void
usage(FILE *fp, int full)
{
	fprintf(fp, "usage: tandemctl init --head HOST --worker HOST "
	    "[--worker HOST ...] [--model PATH]\n"
	    "       [--image REF] [-o FILE] [--dry-run] [OPTIONS] "
	    "[-- VLLM-ARGS]\n");
	if (!full) {
		fprintf(fp, "tandemctl init --help tells more.\n");
		return;
	}
	fprintf(fp, "Writes a checked tandem.json from what the nodes report: "
	    "their host keys (the\n"
	    "fingerprints shown and confirmed), the fast link's interfaces "
	    "and addresses,\n"
	    "GPUs, engine, image and model. Changes nothing on a node but "
	    "tandem's key in\n"
	    "authorized_keys, and says so. VLLM-ARGS, after --, go to "
	    "vllm.args\n(--max-model-len 2048 --enforce-eager ...).\n\n"
	    "options:\n"
	    "      --head HOST      the head node (HOST or HOST:PORT), as "
	    "tandemd reaches it\n"
	    "      --worker HOST    a worker node; once per worker\n"
	    "      --model PATH     the model directory, the same path on "
	    "every node\n"
	    "                       (default: the one under /model or /models "
	    "on all)\n"
	    "      --image REF      the image (default: the one vLLM image on "
	    "every node)\n"
	    "  -o, --output FILE    the config to write (default: --config's "
	    "file)\n"
	    "      --identity FILE  tandem's SSH key, made when missing "
	    "(default: beside\n"
	    "                       the config, id_ed25519)\n"
	    "      --known-hosts FILE  where trusted host keys go (default: "
	    "beside the\n"
	    "                       config, known_hosts)\n"
	    "      --user USER      the SSH login (root)\n"
	    "      --name NAME      the cluster's name (tandem)\n"
	    "      --listen ADDR    the API's address (127.0.0.1:9100)\n"
	    "      --link IF|NET    the fast link's interface or subnet "
	    "(default: the\n"
	    "                       fastest subnet every node shares)\n"
	    "      --accept-fingerprint FP  trust a host key with this "
	    "SHA256 fingerprint\n"
	    "                       without asking; once per key\n"
	    "      --dry-run        print the config; write and change "
	    "nothing\n"
	    "      --force          replace an existing config\n\n");
	ctl_global_help(fp);
}

enum {
	O_HEAD = 300, O_WORKER, O_MODEL, O_IMAGE, O_IDENTITY, O_KNOWN, O_USER,
	O_NAME, O_LINK, O_ACCEPT, O_DRY, O_FORCE, O_LISTEN,
};

/* HOST or HOST:PORT; -1 when PORT is not one. */
static int
split_host(const char *arg, char **host, int *port)
{
	const char *colon = strrchr(arg, ':');
	char *end;
	long p = 22;

	if (colon && strchr(arg, ':') == colon) {
		p = strtol(colon + 1, &end, 10);
		if (*end || p < 1 || p > 65535 || colon == arg)
			return -1;
		*host = xprintf("%.*s", (int)(colon - arg), arg);
	} else
		*host = xstrdup(arg);
	*port = (int)p;
	return 0;
}

static char *
beside(const char *file, const char *name)
{
	char *copy = xstrdup(file), *s = xprintf("%s/%s", dirname(copy), name);

	free(copy);
	return s;
}

/* Parses the command line into in; -1 to go on, else the exit status. */
static int
parse(int argc, char **argv, struct ctl_args *g, struct init *in,
    struct strv *hosts)
{
	static const struct option opts[] = {
		{ "head",	 required_argument, NULL, O_HEAD },
		{ "worker",	 required_argument, NULL, O_WORKER },
		{ "model",	 required_argument, NULL, O_MODEL },
		{ "image",	 required_argument, NULL, O_IMAGE },
		{ "output",	 required_argument, NULL, 'o' },
		{ "identity",	 required_argument, NULL, O_IDENTITY },
		{ "known-hosts", required_argument, NULL, O_KNOWN },
		{ "user",	 required_argument, NULL, O_USER },
		{ "name",	 required_argument, NULL, O_NAME },
		{ "link",	 required_argument, NULL, O_LINK },
		{ "accept-fingerprint", required_argument, NULL, O_ACCEPT },
		{ "dry-run",	 no_argument,	    NULL, O_DRY },
		{ "force",	 no_argument,	    NULL, O_FORCE },
		{ "listen",	 required_argument, NULL, O_LISTEN },
		CTL_GLOBAL_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	const char *head = NULL;
	struct strv workers;
	size_t i;
	int ch;

	strv_init(&workers);
	/* after "--": more of vllm.args, as vllm serve takes them */
	for (i = 1; i < (size_t)argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			in->vllm_args = argv + i + 1;
			in->nvllm_args = (size_t)argc - i - 1;
			argc = (int)i;
			break;
		}
	optind = 0;
	while ((ch = getopt_long(argc, argv, "hc:o:", opts, NULL)) != -1) {
		if (ctl_global(g, ch, optarg))
			continue;
		switch (ch) {
		case 'h':
			usage(stdout, 1);
			strv_free(&workers);
			return 0;
		case O_HEAD:
			head = optarg;
			break;
		case O_WORKER:
			strv_add(&workers, optarg);
			break;
		case O_MODEL:
			in->model = optarg;
			break;
		case O_IMAGE:
			in->image = optarg;
			break;
		case 'o':
			in->out = optarg;
			break;
		case O_IDENTITY:
			in->identity = optarg;
			break;
		case O_KNOWN:
			in->known_hosts = optarg;
			break;
		case O_USER:
			in->user = optarg;
			break;
		case O_NAME:
			in->name = optarg;
			break;
		case O_LINK:
			in->link = optarg;
			break;
		case O_ACCEPT:
			if (!hostkey_fp_valid(optarg)) {
				init_tell(stderr, "tandemctl init: "
				    "--accept-fingerprint %s: not a SHA256:... "
				    "fingerprint as ssh-keygen -l prints it\n",
				    optarg);
				goto bad;
			}
			strv_add(&in->accept, optarg);
			break;
		case O_DRY:
			in->dry_run = 1;
			break;
		case O_FORCE:
			in->force = 1;
			break;
		case O_LISTEN:
			in->listen = optarg;
			break;
		default:
			goto bad;
		}
	}
	if (optind < argc) {
		init_tell(stderr, "tandemctl init: unexpected argument: %s\n",
		    argv[optind]);
		goto bad;
	}
	if (head == NULL || workers.n == 0) {
		init_tell(stderr, "tandemctl init: --head and at least one "
		    "--worker are needed\n");
		goto bad;
	}
	strv_add(hosts, head);
	for (i = 0; i < workers.n; i++)
		strv_add(hosts, workers.v[i]);
	strv_free(&workers);
	return -1;
bad:
	strv_free(&workers);
	usage(stderr, 0);
	return 2;
}

/* The nodes of the command line, HOST or HOST:PORT; -1 when one is not. */
static int
setup_nodes(struct init *in, const struct strv *hosts)
{
	size_t k;

	in->n = hosts->n;
	in->nodes = xcalloc(in->n, sizeof(*in->nodes));
	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];

		nd->in = in;
		nd->idx = k;
		strv_init(&nd->node.images);
		strv_init(&nd->node.model_dirs);
		if (split_host(hosts->v[k], &nd->host, &nd->port) == -1) {
			init_tell(stderr, "tandemctl init: %s: not HOST or "
			    "HOST:PORT\n", hosts->v[k]);
			return -1;
		}
		nd->node.ssh_host = nd->host;
		nd->node.ssh_port = nd->port;
	}
	return 0;
}

/* What every node said, as lib/config/initconf.c takes it (a shallow copy). */
static struct init_node *
said(const struct init *in)
{
	struct init_node *nodes = xcalloc(in->n, sizeof(*nodes));
	size_t k;

	for (k = 0; k < in->n; k++)
		nodes[k] = in->nodes[k].node;
	return nodes;
}

static char *
pick_model(const struct init *in, struct strv *errs)
{
	struct init_node *nodes = said(in);
	struct init_opts o;
	char *model;

	memset(&o, 0, sizeof(o));
	o.model = in->model;
	model = init_pick_model(nodes, in->n, &o, errs);
	free(nodes);
	return model;
}

/*
 * The config, decided. Where this machine is not the head, tandemd will
 * not find vLLM on 127.0.0.1: decided again with that known.
 */
static void
decide(const struct init *in, const char *model, struct init_plan *plan)
{
	struct init_node *nodes = said(in);
	struct init_opts o;

	memset(&o, 0, sizeof(o));
	o.name = in->name;
	o.user = in->user;
	o.identity_file = in->identity;
	o.known_hosts_file = in->known_hosts;
	o.token_file = in->token_file;
	o.model = in->model;
	o.image = in->image;
	o.link = in->link;
	o.listen = in->listen;
	o.vllm_args = in->vllm_args;
	o.nvllm_args = in->nvllm_args;
	o.head_is_local = 1;
	init_derive(nodes, in->n, &o, model, plan);
	if (plan->config && !head_is_local(&in->nodes[0],
	    plan->links[plan->link].end[0].ip)) {
		init_plan_free(plan);
		o.head_is_local = 0;
		init_derive(nodes, in->n, &o, model, plan);
	}
	free(nodes);
}

/* The config as written: indented, 0.6 and not 0.59999999999999998. */
static char *
config_text(const json_t *cfg)
{
	char *text = json_dumps(cfg, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	size_t l;

	if (text == NULL)
		return NULL;
	l = strlen(text);
	text = xrealloc(text, l + 2);
	memcpy(text + l, "\n", 2);
	return text;
}

static void
print_list(const char *title, const struct strv *v)
{
	size_t i;

	if (v->n)
		init_tell(stdout, "%s\n", title);
	for (i = 0; i < v->n; i++)
		init_tell(stdout, "  %s%s\n", v->v[i][0] == ' ' ? "" : "- ",
		    v->v[i]);
}

/* etc/tandem*.json, as the package and make install ship them (gen/examples.c) */
extern unsigned char	 tandem_json[], tandem_dp_json[];
extern unsigned int	 tandem_json_len, tandem_dp_json_len;

/*
 * What is at the output path already: NULL when nothing is, or an empty
 * file or a shipped example (what init replaces without --force), with
 * what it is in *what; else 1 in *own (someone's config).
 */
static int
existing(const struct init *in, const char **what)
{
	const struct init_example ex[] = {
		{ "the shipped example etc/tandem.json", tandem_json,
		    tandem_json_len },
		{ "the shipped example etc/tandem-dp.json", tandem_dp_json,
		    tandem_dp_json_len },
	};
	char buf[8192];
	size_t n = 0;
	ssize_t r;
	int fd, k;

	*what = NULL;
	if ((fd = open(in->out, O_RDONLY | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : 1;
	/* larger than every example: someone's */
	while (n < sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	close(fd);
	if (n == sizeof(buf))
		return 1;
	k = init_conf_replaceable(buf, n, ex, sizeof(ex) / sizeof(ex[0]));
	if (k == INIT_CONF_OWN)
		return 1;
	*what = k == INIT_CONF_EMPTY ? "an empty file (the package's "
	    "placeholder)" : ex[k].name;
	return 0;
}

/*
 * The API's address when --listen did not name one: 127.0.0.1:9100 (the
 * product's), unless another program holds it here (node_exporter's
 * default is 9100 too): then the next free port, said in words. A tandemd
 * on it keeps it: that is this cluster's own daemon, and the config it
 * gets is the one being written.
 */
static void
pick_listen(struct init *in, struct strv *notes)
{
	struct port_holder h;
	struct config probe;
	char who[128], host[] = "127.0.0.1";
	int port;

	if (in->listen)
		return;
	memset(&probe, 0, sizeof(probe));
	probe.listen_host = host;
	probe.listen_port = 9100;
	if (listen_free(&probe))
		return;
	port_holder_find("127.0.0.1", 9100, &h);
	if (h.tandemd)
		return;
	for (port = 9101; port < 9200; port++) {
		probe.listen_port = port;
		if (listen_free(&probe))
			break;
	}
	if (port == 9200)
		return;	/* the taken 9100 is then in "left to do" */
	snprintf(in->listen_buf, sizeof(in->listen_buf), "127.0.0.1:%d", port);
	in->listen = in->listen_buf;
	strv_addf(notes, "listen: %s, the first free port: 127.0.0.1:9100 "
	    "is held by %s", in->listen, port_holder_words(&h, who,
	    sizeof(who)));
}

static void
init_free(struct init *in)
{
	size_t k;

	if (in->nodes) {
		init_step_drop(in);
		for (k = 0; k < in->n; k++) {
			free(in->nodes[k].host);
			free(in->nodes[k].speeds);
			init_node_free(&in->nodes[k].node);
		}
	}
	free(in->nodes);
	if (in->dry_run && in->kh_work)
		unlink(in->kh_work);
	free(in->kh_work);
	free(in->pubkey);
	strv_free(&in->accept);
	config_free(in->cf);
	free(in->st);
	free(in->rdma);
	free(in->big);
	free(in->small);
}

int
init_main(int argc, char **argv, struct ctl_args *g)
{
	struct init in;
	struct init_plan plan;
	struct strv hosts, errs, picked;
	struct link_finding lf;
	struct sbuf lines;
	char *model = NULL, *text = NULL, *own[3] = { NULL, NULL, NULL };
	char err[ERRLEN];
	size_t k;
	int rc, link_rc = 0;

	memset(&in, 0, sizeof(in));
	memset(&plan, 0, sizeof(plan));
	strv_init(&in.accept);
	strv_init(&hosts);
	in.user = "root";
	if ((rc = parse(argc, argv, g, &in, &hosts)) >= 0) {
		strv_free(&hosts);
		strv_free(&in.accept);
		return rc;
	}
	strv_init(&errs);
	if (in.out == NULL)
		in.out = g->config;
	if (in.identity == NULL)
		in.identity = own[0] = beside(in.out, "id_ed25519");
	if (in.known_hosts == NULL)
		in.known_hosts = own[1] = beside(in.out, "known_hosts");
	in.token_file = g->token_file ? g->token_file : (own[2] =
	    beside(in.out, "api-token"));
	rc = 1;
	if (!in.dry_run && !in.force && existing(&in, &in.replaces)) {
		init_tell(stderr,
		    "tandemctl init: %s exists and is not a shipped "
		    "example: --force replaces it, -o FILE writes another\n",
		    in.out);
		rc = 2;
		goto out;
	}
	log_init(0);
	signal(SIGPIPE, SIG_IGN);
	if (sshc_ssh_init() != 0) {
		init_tell(stderr,
		    "tandemctl init: cannot initialise libssh2\n");
		goto out;
	}
	in.loop = uv_default_loop();
	if (setup_nodes(&in, &hosts) == -1) {
		rc = 2;
		goto out;
	}
	init_tell(stdout, "tandemctl init: %zu nodes, head %s%s\n", in.n,
	    in.nodes[0].host, in.dry_run ? " (dry run: nothing is written "
	    "or changed)" : "");
	/* 1. host keys, trusted by the operator */
	init_hostkey_scan(&in);
	sbuf_init(&lines);
	if (init_hostkey_trust(&in, &lines) == -1 || (!in.dry_run &&
	    init_write_dir(in.known_hosts) == -1) ||
	    init_write_known(&in, &lines) == -1) {
		sbuf_free(&lines);
		goto out;
	}
	sbuf_free(&lines);
	/* 2. tandem's key, and a login on every node */
	if (init_write_key(&in) == -1 || init_ask_login(&in) == -1)
		goto out;
	/* 3. what the nodes have */
	init_ask_discover(&in, NULL);
	if ((model = pick_model(&in, &errs)) != NULL)
		init_ask_discover(&in, model);
	/* 4. the decisions */
	strv_init(&picked);
	pick_listen(&in, &picked);
	decide(&in, model, &plan);
	for (k = 0; k < picked.n; k++)
		strv_add(&plan.notes, picked.v[k]);
	strv_free(&picked);
	for (k = 0; k < errs.n; k++)
		strv_add(&plan.errors, errs.v[k]);
	init_tell(stdout, "what the nodes have:\n");
	for (k = 0; k < plan.notes.n; k++)
		init_tell(stdout, "  %s\n", plan.notes.v[k]);
	if (plan.errors.n || plan.config == NULL) {
		print_list("cannot write a config:", &plan.errors);
		goto out;
	}
	if ((text = config_text(plan.config)) == NULL)
		goto out;
	if ((in.cf = config_parse(text, in.out, err, sizeof(err))) == NULL) {
		init_tell(stderr, "tandemctl init: the config made does not "
		    "pass: %s\n%s", err, text);
		goto out;
	}
	if (!listen_free(in.cf))
		strv_addf(&plan.todo, "%s:%d, the API's address, is in use "
		    "here (node_exporter listens on 9100 by default): unless "
		    "that is a tandemd already running, tandemd would not "
		    "start; stop what holds it, or run tandemctl init again "
		    "with --listen 127.0.0.1:PORT", in.cf->listen_host,
		    in.cf->listen_port);
	/* 5. the fast link, proven over the sessions */
	link_rc = init_ask_link(&in, &lf);
	init_step_drop(&in);
	if (in.dry_run) {
		init_tell(stdout, "\nwould write %s:\n%s", in.out, text);
		init_tell(stdout,
		    "would write %s (mode 0600) unless it is there\n",
		    in.token_file);
		init_tell(stdout,
		    "would add to %s: the host keys trusted above\n",
		    in.known_hosts);
		print_list("\nleft to do:", &plan.todo);
		rc = link_rc ? 1 : 0;
		goto out;
	}
	/* 6. the files, then tandemctl check on them */
	if (init_write_token(&in) == -1 || init_write_config(&in, text) == -1)
		goto out;
	if (in.replaces)
		init_tell(stdout, "(it replaced %s: no one's config)\n",
		    in.replaces);
	rc = check_written(&in, in.cf);
	if (link_rc)
		strv_addf(&plan.todo, "%s: %s; fix: %s",
		    diag_code_name(lf.code), lf.message, lf.fix);
	if (rc)
		strv_add(&plan.todo, "fix what tandemctl check shows above, "
		    "then tandemctl check again");
	strv_addf(&plan.todo, "then: systemctl enable --now tandemd "
	    "(tandemd --config %s)", in.out);
	print_list("\nleft to do:", &plan.todo);
	rc = rc || link_rc;
out:
	fflush(stdout);
	free(text);
	free(model);
	init_plan_free(&plan);
	init_free(&in);
	strv_free(&hosts);
	strv_free(&errs);
	for (k = 0; k < 3; k++)
		free(own[k]);
	return rc;
}
