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
 * all answered, the loop stops and the next step starts.
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
#include "initconf.h"
#include "linkcheck.h"
#include "plan.h"
#include "portholder.h"
#include "rdma.h"
#include "ssh.h"
#include "utf8.h"

/*
 * Everything init prints goes through here: it quotes what the nodes
 * answered (engine versions, image names, model directories, the key
 * install's stderr), and an ESC sequence a node sent (clear the screen,
 * retitle the window, OSC 52 to write the clipboard) must reach the
 * operator's terminal as text, "\x1b...", never as a control (issue 43).
 */
static void	tell(FILE *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static void
tell(FILE *fp, const char *fmt, ...)
{
	va_list ap;
	char *s, *t;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		s = NULL;
	va_end(ap);
	t = utf8_term(s);
	fputs(t, fp);
	free(t);
	free(s);
}

/* What a command's answer is for. */
enum ask {
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
	enum ask	 what;
	size_t		 peer;
};

static void
step_done(struct init *in)
{
	if (--in->outstanding == 0)
		uv_stop(in->loop);
}

/* Runs the loop until the step's answers are all in. */
static void
run_step(struct init *in)
{
	if (in->outstanding > 0)
		uv_run(in->loop, UV_RUN_DEFAULT);
}

/* Host keys ------------------------------------------------------------- */

static void
on_scan(struct sshc *c, int up, const char *why, int fatal, void *arg)
{
	struct inode *nd = arg;

	(void)up;
	(void)fatal;
	if (nd->seen.seen || nd->why[0])
		return;
	nd->seen = *sshc_seen_key(c);
	if (!nd->seen.seen)
		snprintf(nd->why, sizeof(nd->why), "%s", why);
	step_done(nd->in);
}

static struct ssh_params
params(struct inode *nd, const char *known_hosts)
{
	struct ssh_params p;

	memset(&p, 0, sizeof(p));
	p.host = nd->host;
	p.port = nd->port;
	p.user = nd->in->user;
	p.identity_file = nd->in->identity;
	p.known_hosts_file = known_hosts;
	p.connect_timeout_s = 5;
	p.keepalive_s = 5;
	return p;
}

/* Frees the sessions and lets their handles close. */
static void
drop_sessions(struct init *in)
{
	size_t k;

	for (k = 0; k < in->n; k++)
		if (in->nodes[k].ssh) {
			sshc_free(in->nodes[k].ssh);
			in->nodes[k].ssh = NULL;
			in->nodes[k].up = 0;
		}
	uv_run(in->loop, UV_RUN_NOWAIT);
}

static void
scan_keys(struct init *in)
{
	size_t k;

	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		struct ssh_params p = params(nd, in->known_hosts);

		nd->ssh = sshc_new(in->loop, &p, on_scan, nd);
		sshc_scan_only(nd->ssh);
		in->outstanding++;
		sshc_connect(nd->ssh);
	}
	run_step(in);
	drop_sessions(in);
}

/* One line from standard input: the operator's answer; NULL at its end. */
static char *
answer(char *buf, size_t len)
{
	if (fgets(buf, (int)len, stdin) == NULL)
		return NULL;
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf;
}

/*
 * Each node's key: known already, accepted by --accept-fingerprint or by
 * the operator at the prompt. Returns 0 when every node is trusted.
 */
static int
trust_keys(struct init *in, struct sbuf *lines)
{
	size_t k;
	int bad = 0;
	char buf[64];

	tell(stdout, "host keys (compare each with ssh-keygen -lf "
	    "/etc/ssh/ssh_host_ed25519_key.pub on the node):\n");
	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		const struct ssh_seen_key *s = &nd->seen;

		if (!s->seen) {
			tell(stdout, "  %s: no host key: %s\n", nd->host, nd->why);
			bad = 1;
			continue;
		}
		tell(stdout, "  %s: %s %s", nd->host, s->label, s->fp);
		if (s->known == SEEN_KNOWN) {
			tell(stdout, " (already in %s)\n", in->known_hosts);
			continue;
		}
		if (s->known == SEEN_CHANGED) {
			tell(stdout, " CHANGED: %s holds another key for it. Verify "
			    "the node; if the new key is right, ssh-keygen -R "
			    "%s -f %s and run tandemctl init again\n",
			    in->known_hosts, nd->host, in->known_hosts);
			bad = 1;
			continue;
		}
		if (in->accept.n) {
			if (strv_has(&in->accept, s->fp)) {
				tell(stdout, " (accepted: --accept-fingerprint)\n");
				sbuf_add(lines, s->line);
			} else {
				tell(stdout, " NOT one of the --accept-fingerprint "
				    "values: not trusted\n");
				bad = 1;
			}
			continue;
		}
		tell(stdout, "\n  trust this key of %s? [y/N] ", nd->host);
		fflush(stdout);
		if (answer(buf, sizeof(buf)) && (strcmp(buf, "y") == 0 ||
		    strcmp(buf, "yes") == 0)) {
			tell(stdout, "  %s: trusted\n", nd->host);
			sbuf_add(lines, s->line);
		} else {
			tell(stdout, "\n  %s: not trusted\n", nd->host);
			bad = 1;
		}
	}
	fflush(stdout);
	return bad ? -1 : 0;
}

/*
 * The known_hosts this run verifies against: the real one with the new
 * lines appended, or with --dry-run a copy of it in a temporary file.
 */
/* 1 when fd is a regular file; 0 with errno set. */
static int
regular(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return 0;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return 0;
	}
	return 1;
}

static int
write_known(struct init *in, const struct sbuf *lines)
{
	char tmpl[] = "/tmp/tandemctl-init-known_hosts.XXXXXX";
	FILE *src, *dst;
	char buf[4096];
	size_t r;
	int fd;

	if (!in->dry_run) {
		in->kh_work = xstrdup(in->known_hosts);
		if (lines->len == 0)
			return 0;
		/*
		 * Never through a symlink someone placed at the name, never
		 * into a FIFO or a device (issue 43): a regular file only.
		 */
		if ((fd = open(in->known_hosts, O_WRONLY | O_CREAT | O_APPEND |
		    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644)) < 0 ||
		    !regular(fd) || write(fd, lines->s, lines->len) !=
		    (ssize_t)lines->len || close(fd) != 0) {
			tell(stderr, "tandemctl init: %s: %s\n",
			    in->known_hosts, errno == ELOOP ? "a symbolic "
			    "link; refused" : strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		tell(stdout, "wrote %s: %s\n", in->known_hosts, lines->s[0] ?
		    "the host keys trusted above" : "");
		return 0;
	}
	if ((fd = mkstemp(tmpl)) < 0 || (dst = fdopen(fd, "w")) == NULL)
		return -1;
	if ((src = fopen(in->known_hosts, "r")) != NULL) {
		while ((r = fread(buf, 1, sizeof(buf), src)) > 0)
			fwrite(buf, 1, r, dst);
		fclose(src);
	}
	if (lines->len)
		fwrite(lines->s, 1, lines->len, dst);
	fclose(dst);
	in->kh_work = xstrdup(tmpl);
	return 0;
}

/* The SSH key -------------------------------------------------------- */

static int
run_argv(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A directory for a file, made (0750) when missing; said so. */
static int
ensure_dir(const char *file)
{
	char *copy = xstrdup(file), *dir = dirname(copy);
	int rc = 0;

	if (access(dir, F_OK) != 0) {
		if (mkdir(dir, 0750) != 0) {
			tell(stderr, "tandemctl init: mkdir %s: %s\n", dir,
			    strerror(errno));
			rc = -1;
		} else
			tell(stdout, "made %s (mode 0750)\n", dir);
	}
	free(copy);
	return rc;
}

/* ssh.identity_file: kept when there, else made with ssh-keygen. */
static int
ensure_key(struct init *in)
{
	char *pub = xprintf("%s.pub", in->identity), line[4096];
	char host[256] = "tandem", *comment;
	FILE *fp;

	if (access(in->identity, F_OK) == 0)
		tell(stdout, "ssh key: %s (there already)\n", in->identity);
	else if (in->dry_run)
		tell(stdout, "ssh key: would make %s (ed25519, no passphrase)\n",
		    in->identity);
	else {
		char keygen[] = "ssh-keygen", q[] = "-q", t[] = "-t",
		    ed[] = "ed25519", nflag[] = "-N", empty[] = "", c[] = "-C",
		    f[] = "-f";
		char *file = xstrdup(in->identity);
		char *argv[] = { keygen, q, t, ed, nflag, empty, c, NULL, f,
		    file, NULL };

		gethostname(host, sizeof(host) - 1);
		comment = xprintf("tandem@%s", host);
		argv[7] = comment;
		if (ensure_dir(in->identity) == -1 || run_argv(argv) != 0) {
			tell(stderr, "tandemctl init: ssh-keygen could not "
			    "make %s\n", in->identity);
			free(comment);
			free(file);
			free(pub);
			return -1;
		}
		free(comment);
		free(file);
		in->made_key = 1;
		tell(stdout, "ssh key: made %s (ed25519, no passphrase)\n",
		    in->identity);
	}
	if ((fp = fopen(pub, "r")) != NULL) {
		if (fgets(line, sizeof(line), fp)) {
			line[strcspn(line, "\r\n")] = '\0';
			in->pubkey = xstrdup(line);
		}
		fclose(fp);
	}
	free(pub);
	return 0;
}

/* Asking the nodes ---------------------------------------------------- */

static void	on_answer(const struct cmd_result *, void *);

static void
ask(struct inode *nd, enum ask what, char *cmd, size_t peer)
{
	struct ask_op *op = xcalloc(1, sizeof(*op));

	op->nd = nd;
	op->what = what;
	op->peer = peer;
	nd->in->outstanding++;
	if (sshc_exec(nd->ssh, cmd, 30, on_answer, op) == -1) {
		free(op);
		nd->in->outstanding--;
	}
	free(cmd);
}

static void
on_login(struct sshc *c, int up, const char *why, int fatal, void *arg)
{
	struct inode *nd = arg;

	(void)c;
	(void)fatal;
	if (nd->up || nd->why[0])
		return;	/* the step heard already; a later drop is no news */
	if (up)
		nd->up = 1;
	else
		snprintf(nd->why, sizeof(nd->why), "%s", why);
	step_done(nd->in);
}

/* Every node logged in (identity, else the agent); -1 when one is not. */
static int
login(struct init *in)
{
	size_t k;
	int bad = 0;

	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		struct ssh_params p = params(nd, in->kh_work);

		nd->why[0] = '\0';
		nd->ssh = sshc_new(in->loop, &p, on_login, nd);
		sshc_use_agent(nd->ssh);
		in->outstanding++;
		sshc_connect(nd->ssh);
	}
	run_step(in);
	tell(stdout, "login as %s:\n", in->user);
	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		const char *by;

		if (!nd->up) {
			tell(stdout, "  %s: %s\n", nd->host, nd->why);
			if (strstr(nd->why, "authentication")) {
				char port[16] = "";

				if (nd->port != 22)
					snprintf(port, sizeof(port), " -p %d",
					    nd->port);
				tell(stdout, "  on a machine that logs in there: "
				    "ssh-copy-id -i %s.pub%s %s@%s, or run "
				    "tandemctl init where ssh-agent holds a "
				    "key the node takes\n", in->identity, port,
				    in->user, nd->host);
			}
			bad = 1;
			continue;
		}
		by = sshc_auth_by(nd->ssh);
		if (by && strcmp(by, "key") == 0) {
			tell(stdout, "  %s: with %s\n", nd->host, in->identity);
			continue;
		}
		if (in->dry_run || in->pubkey == NULL) {
			tell(stdout, "  %s: with the agent's key; would install "
			    "%s.pub in %s@%s:~/.ssh/authorized_keys\n",
			    nd->host, in->identity, in->user, nd->host);
			continue;
		}
		tell(stdout, "  %s: with the agent's key; installing %s.pub in "
		    "%s@%s:~/.ssh/authorized_keys (the one change tandemctl "
		    "init makes on a node)\n", nd->host, in->identity, in->user,
		    nd->host);
		ask(nd, ASK_AUTHORIZE, cmd_authorize_key(in->pubkey), 0);
	}
	fflush(stdout);
	run_step(in);
	return bad ? -1 : 0;
}

static void
line1(const char *s, char *buf, size_t len)
{
	while (*s == ' ' || *s == '\n')
		s++;
	snprintf(buf, len, "%.*s", (int)strcspn(s, "\n"), s);
}

static void
files_answer(struct inode *nd, const struct cmd_result *r)
{
	struct model_print mp;
	size_t i;

	if (r->exit_code != 0)
		return;
	memset(&mp, 0, sizeof(mp));
	model_print_parse(r->out, &mp);
	nd->node.model_found = model_print_has(&mp, "config.json");
	nd->node.model_files = mp.n;
	for (i = 0; i < mp.n; i++)
		nd->node.model_bytes += mp.f[i].size;
	model_print_free(&mp);
}

static void
on_answer(const struct cmd_result *r, void *arg)
{
	struct ask_op *op = arg;
	struct inode *nd = op->nd;
	struct init *in = nd->in;
	struct init_node *x = &nd->node;
	const char *out = r->out ? r->out : "", *err = r->err ? r->err : "";
	char e[ERRLEN];

	switch (op->what) {
	case ASK_FACTS:
		if (!r->error && r->exit_code == 0)
			facts_parse(out, &x->facts);
		break;
	case ASK_ADDRS:
		if (!r->error && r->exit_code == 0 && net_parse_ip_addr(out,
		    strlen(out), &x->ifs, e, sizeof(e)) == -1)
			tell(stdout, "  %s: ip -j addr: %s\n", nd->host, e);
		else if (r->exit_code != 0)
			tell(stdout, "  %s: ip -j addr answered %d: %s\n", nd->host,
			    r->exit_code, r->error ? r->error : err);
		break;
	case ASK_SPEEDS:
		/* the interfaces may not be parsed yet: see discover */
		if (r->exit_code == 0)
			nd->speeds = xstrdup(out);
		break;
	case ASK_GPUS:
		if (r->exit_code == 0)
			x->gpus = gpus_parse(out, x->gpu_name,
			    sizeof(x->gpu_name));
		break;
	case ASK_GPUMEM:
		x->gpu_free = r->exit_code == 0 ? gpu_free_share(out) : -1;
		break;
	case ASK_DIRS:
		if (r->exit_code == 0)
			dirs_parse(out, &x->model_dirs);
		break;
	case ASK_ENGINE:
		if (r->exit_code == 0)
			line1(out, x->engine_version,
			    sizeof(x->engine_version));
		else {
			line1(r->error ? r->error : err, x->engine_error,
			    sizeof(x->engine_error));
			x->engine = NULL;
		}
		break;
	case ASK_IMAGES:
		if (r->exit_code == 0)
			images_parse(out, &x->images);
		break;
	case ASK_FILES:
		files_answer(nd, r);
		break;
	case ASK_AUTHORIZE:
		if (r->exit_code != 0)
			tell(stdout, "  %s: installing the key failed (%d): %s\n",
			    nd->host, r->exit_code, r->error ? r->error : err);
		else
			tell(stdout, "  %s: key installed\n", nd->host);
		break;
	case ASK_STATE:
		linkcheck_state(r->error ? 255 : r->exit_code, out, r->error ?
		    r->error : err, in->cf->nodes[nd->idx].ifname,
		    in->cf->nodes[nd->idx].ip, &in->st[nd->idx]);
		break;
	case ASK_RDMA:
		rdma_parse(r->error ? 255 : r->exit_code, out,
		    in->cf->nodes[nd->idx].ip, in->cf->nodes[nd->idx].ifname,
		    &in->rdma[nd->idx]);
		break;
	case ASK_PING_BIG:
	case ASK_PING_SMALL:
		linkcheck_ping(r->error ? 255 : r->exit_code, out, r->error ?
		    r->error : err, &(op->what == ASK_PING_BIG ? in->big :
		    in->small)[nd->idx * in->n + op->peer]);
		break;
	}
	free(op);
	step_done(in);
}

static void
discover(struct init *in, const char *model)
{
	size_t k;

	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];

		if (model) {
			nd->node.model_found = 0;
			nd->node.model_files = 0;
			nd->node.model_bytes = 0;
			ask(nd, ASK_FILES, cmd_dir_files(model), 0);
			continue;
		}
		ask(nd, ASK_FACTS, cmd_node_facts(), 0);
		ask(nd, ASK_ADDRS, cmd_net_addrs(), 0);
		ask(nd, ASK_SPEEDS, cmd_net_speeds(), 0);
		ask(nd, ASK_GPUS, cmd_gpu_list(), 0);
		ask(nd, ASK_GPUMEM, cmd_gpu_memory(), 0);
		ask(nd, ASK_DIRS, cmd_model_dirs(), 0);
	}
	run_step(in);
	if (model)
		return;
	for (k = 0; k < in->n; k++)
		if (in->nodes[k].speeds) {
			net_parse_speeds(in->nodes[k].speeds,
			    &in->nodes[k].node.ifs);
			free(in->nodes[k].speeds);
			in->nodes[k].speeds = NULL;
		}
	/* what the engine has: docker where both are, as tandem's default */
	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		const struct node_facts *f = &nd->node.facts;

		nd->node.engine = f->docker ? "docker" : f->podman ? "podman" :
		    NULL;
		if (nd->node.engine == NULL) {
			snprintf(nd->node.engine_error,
			    sizeof(nd->node.engine_error), "neither docker nor "
			    "podman on the PATH");
			continue;
		}
		ask(nd, ASK_ENGINE, cmd_engine_version(nd->node.engine), 0);
		ask(nd, ASK_IMAGES, cmd_image_list(nd->node.engine), 0);
	}
	run_step(in);
}

/* The fast link, proven ---------------------------------------------- */

/* 0 when it carries every pair; 1 with f set. */
static int
prove_link(struct init *in, struct link_finding *f)
{
	size_t a, b, n = in->n;
	struct linkcheck_in lc;
	const char **names = xcalloc(n, sizeof(*names));
	const char **ifn = xcalloc(n, sizeof(*ifn));
	const char **ips = xcalloc(n, sizeof(*ips));
	uint64_t t0 = mono_ms();
	int rc, unpinged = 0;

	in->st = xcalloc(n, sizeof(*in->st));
	in->big = xcalloc(n * n, sizeof(*in->big));
	in->small = xcalloc(n * n, sizeof(*in->small));
	for (a = 0; a < n * n; a++)
		in->big[a].v = in->small[a].v = PING_NOT_ASKED;
	in->rdma = xcalloc(n, sizeof(*in->rdma));
	for (a = 0; a < n; a++) {
		ask(&in->nodes[a], ASK_STATE, cmd_link_state(in->cf, a), 0);
		ask(&in->nodes[a], ASK_RDMA, cmd_rdma_state(in->cf, a), 0);
	}
	run_step(in);
	/*
	 * Both pings of a pair at once: a lost one waits its second, and
	 * the small one tells an MTU problem from an unreachable peer.
	 */
	for (a = 0; a < n; a++)
		for (b = 0; b < n; b++)
			if (a != b && in->st[a].v == LS_OK) {
				ask(&in->nodes[a], ASK_PING_BIG, cmd_link_ping(
				    in->cf, a, b, linkcheck_ping_size(
				    in->st[a].mtu)), b);
				ask(&in->nodes[a], ASK_PING_SMALL,
				    cmd_link_ping(in->cf, a, b, 0), b);
			}
	run_step(in);
	for (a = 0; a < n; a++) {
		names[a] = in->cf->nodes[a].name;
		ifn[a] = in->cf->nodes[a].ifname;
		ips[a] = in->cf->nodes[a].ip;
	}
	lc = (struct linkcheck_in){ n, names, ifn, ips, in->st, in->big,
	    in->small };
	rc = linkcheck_judge(&lc, f);
	tell(stdout, "fast link check (%.1f s):\n", (double)(mono_ms() - t0) / 1000);
	for (a = 0; a < n; a++) {
		char d[240];

		linkcheck_node_detail(&in->st[a], ifn[a], d, sizeof(d));
		tell(stdout, "  %s: %s\n", names[a], d);
		/* what tandemd will pass (NCCL_IB_GID_INDEX) or refuse */
		rdma_describe(&in->rdma[a], ifn[a], ips[a], d, sizeof(d));
		tell(stdout, "    RDMA: %s\n", d);
		for (b = 0; b < n; b++)
			if (b != a && in->big[a * n + b].v == PING_MISSING) {
				tell(stdout, "    its peers not pinged: no ping on the "
				    "node (apt install iputils-ping)\n");
				unpinged = 1;
				break;
			}
	}
	if (rc == 0 && !unpinged)
		tell(stdout, "  every node reaches every other over it with packets "
		    "of the MTU, unfragmented\n");
	else
		tell(stdout, "  %s%s: %s\n  fix: %s\n", f->could_not_tell ?
		    "could not tell: " : "", diag_code_name(f->code),
		    f->message, f->fix);
	free(names);
	free(ifn);
	free(ips);
	return rc;
}

/* Writing ------------------------------------------------------------- */

/* The API token: 32 random bytes, base64, mode 0600; kept when there. */
static int
write_token(struct init *in)
{
	unsigned char raw[32];
	char b64[64];
	int fd;

	if (access(in->token_file, F_OK) == 0) {
		tell(stdout, "kept %s (there already)\n", in->token_file);
		return 0;
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
	    base64_encode(raw, sizeof(raw), 1, b64, sizeof(b64) - 1) < 0)
		return -1;
	strcat(b64, "\n");
	if (ensure_dir(in->token_file) == -1 || (fd = open(in->token_file,
	    O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0) {
		tell(stderr, "tandemctl init: %s: %s\n", in->token_file,
		    strerror(errno));
		return -1;
	}
	if (write(fd, b64, strlen(b64)) != (ssize_t)strlen(b64) ||
	    close(fd) != 0)
		return -1;
	tell(stdout, "wrote %s (mode 0600)\n", in->token_file);
	return 0;
}

static int
write_config(struct init *in, const char *text)
{
	/*
	 * A fresh name of our own beside it (mkstemp: O_EXCL), never a
	 * fixed "<out>.tmp" that someone could have made a symlink first
	 * (issue 43); renamed over the config once whole.
	 */
	char *tmp = xprintf("%s.XXXXXX", in->out);
	size_t len = strlen(text);
	int fd = -1, rc = -1, ok;

	if (ensure_dir(in->out) == 0 && (fd = mkostemp(tmp, O_CLOEXEC)) >= 0) {
		ok = fchmod(fd, 0640) == 0 && write(fd, text, len) ==
		    (ssize_t)len && fsync(fd) == 0;
		ok = close(fd) == 0 && ok;
		if (ok && rename(tmp, in->out) == 0)
			rc = 0;
	}
	if (rc == -1) {
		tell(stderr, "tandemctl init: %s: %s\n", in->out,
		    strerror(errno));
		if (fd >= 0)
			unlink(tmp);
	}
	if (rc == 0)
		tell(stdout, "wrote %s\n", in->out);
	free(tmp);
	return rc;
}

/* tandemctl check on what was written: its table; 1 when a check fails. */
static int
check_written(struct init *in, struct config *cf)
{
	(void)in;
	tell(stdout, "\ntandemctl check:\n");
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
				tell(stderr, "tandemctl init: "
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
		tell(stderr, "tandemctl init: unexpected argument: %s\n",
		    argv[optind]);
		goto bad;
	}
	if (head == NULL || workers.n == 0) {
		tell(stderr, "tandemctl init: --head and at least one "
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
			tell(stderr, "tandemctl init: %s: not HOST or "
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
		tell(stdout, "%s\n", title);
	for (i = 0; i < v->n; i++)
		tell(stdout, "  %s%s\n", v->v[i][0] == ' ' ? "" : "- ", v->v[i]);
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
		drop_sessions(in);
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
		tell(stderr, "tandemctl init: %s exists and is not a shipped "
		    "example: --force replaces it, -o FILE writes another\n",
		    in.out);
		rc = 2;
		goto out;
	}
	log_init(0);
	signal(SIGPIPE, SIG_IGN);
	if (sshc_ssh_init() != 0) {
		tell(stderr, "tandemctl init: cannot initialise libssh2\n");
		goto out;
	}
	in.loop = uv_default_loop();
	if (setup_nodes(&in, &hosts) == -1) {
		rc = 2;
		goto out;
	}
	tell(stdout, "tandemctl init: %zu nodes, head %s%s\n", in.n,
	    in.nodes[0].host, in.dry_run ? " (dry run: nothing is written "
	    "or changed)" : "");
	/* 1. host keys, trusted by the operator */
	scan_keys(&in);
	sbuf_init(&lines);
	if (trust_keys(&in, &lines) == -1 || (!in.dry_run &&
	    ensure_dir(in.known_hosts) == -1) || write_known(&in, &lines) ==
	    -1) {
		sbuf_free(&lines);
		goto out;
	}
	sbuf_free(&lines);
	/* 2. tandem's key, and a login on every node */
	if (ensure_key(&in) == -1 || login(&in) == -1)
		goto out;
	/* 3. what the nodes have */
	discover(&in, NULL);
	if ((model = pick_model(&in, &errs)) != NULL)
		discover(&in, model);
	/* 4. the decisions */
	strv_init(&picked);
	pick_listen(&in, &picked);
	decide(&in, model, &plan);
	for (k = 0; k < picked.n; k++)
		strv_add(&plan.notes, picked.v[k]);
	strv_free(&picked);
	for (k = 0; k < errs.n; k++)
		strv_add(&plan.errors, errs.v[k]);
	tell(stdout, "what the nodes have:\n");
	for (k = 0; k < plan.notes.n; k++)
		tell(stdout, "  %s\n", plan.notes.v[k]);
	if (plan.errors.n || plan.config == NULL) {
		print_list("cannot write a config:", &plan.errors);
		goto out;
	}
	if ((text = config_text(plan.config)) == NULL)
		goto out;
	if ((in.cf = config_parse(text, in.out, err, sizeof(err))) == NULL) {
		tell(stderr, "tandemctl init: the config made does not "
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
	link_rc = prove_link(&in, &lf);
	drop_sessions(&in);
	if (in.dry_run) {
		tell(stdout, "\nwould write %s:\n%s", in.out, text);
		tell(stdout, "would write %s (mode 0600) unless it is there\n",
		    in.token_file);
		tell(stdout, "would add to %s: the host keys trusted above\n",
		    in.known_hosts);
		print_list("\nleft to do:", &plan.todo);
		rc = link_rc ? 1 : 0;
		goto out;
	}
	/* 6. the files, then tandemctl check on them */
	if (write_token(&in) == -1 || write_config(&in, text) == -1)
		goto out;
	if (in.replaces)
		tell(stdout, "(it replaced %s: no one's config)\n", in.replaces);
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
