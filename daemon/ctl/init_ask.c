/*
 * tandemctl init asks the nodes, read-only, what they have
 * (lib/plan/plan_init.c): the login with tandem's key (installing it where
 * the operator's own login works), facts, addresses, GPUs, engines, images,
 * model directories; then proves the fast link with pings
 * (lib/preflight/linkcheck.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init_int.h"
#include "hostkey.h"
#include "imagecheck.h"
#include "log.h"
#include "plan.h"

/* Asking the nodes ---------------------------------------------------- */

static void	on_answer(const struct cmd_result *, void *);

static void
ask(struct inode *nd, enum init_ask what, char *cmd, size_t peer)
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
	init_step_done(nd->in);
}

/* Every node logged in (identity, else the agent); -1 when one is not. */
int
init_ask_login(struct init *in)
{
	size_t k;
	int bad = 0;

	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		struct ssh_params p = init_step_params(nd, in->kh_work);

		nd->why[0] = '\0';
		nd->ssh = sshc_new(in->loop, &p, on_login, nd);
		sshc_use_agent(nd->ssh);
		in->outstanding++;
		sshc_connect(nd->ssh);
	}
	init_step_run(in);
	init_tell(stdout, "login as %s:\n", in->user);
	for (k = 0; k < in->n; k++) {
		struct inode *nd = &in->nodes[k];
		const char *by;

		if (!nd->up) {
			init_tell(stdout, "  %s: %s\n", nd->host, nd->why);
			if (strstr(nd->why, "authentication")) {
				char port[16] = "";

				if (nd->port != 22)
					snprintf(port, sizeof(port), " -p %d",
					    nd->port);
				init_tell(stdout,
				    "  on a machine that logs in there: "
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
			init_tell(stdout, "  %s: with %s\n", nd->host,
			    in->identity);
			continue;
		}
		if (in->dry_run || in->pubkey == NULL) {
			init_tell(stdout,
			    "  %s: with the agent's key; would install "
			    "%s.pub in %s@%s:~/.ssh/authorized_keys\n",
			    nd->host, in->identity, in->user, nd->host);
			continue;
		}
		init_tell(stdout,
		    "  %s: with the agent's key; installing %s.pub in "
		    "%s@%s:~/.ssh/authorized_keys (the one change tandemctl "
		    "init makes on a node)\n", nd->host, in->identity, in->user,
		    nd->host);
		ask(nd, ASK_AUTHORIZE, cmd_authorize_key(in->pubkey), 0);
	}
	fflush(stdout);
	init_step_run(in);
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
			init_tell(stdout, "  %s: ip -j addr: %s\n",
			    nd->host, e);
		else if (r->exit_code != 0)
			init_tell(stdout, "  %s: ip -j addr answered %d: %s\n",
			    nd->host, r->exit_code, r->error ? r->error : err);
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
			init_tell(stdout,
			    "  %s: installing the key failed (%d): %s\n",
			    nd->host, r->exit_code, r->error ? r->error : err);
		else
			init_tell(stdout, "  %s: key installed\n", nd->host);
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
	init_step_done(in);
}

void
init_ask_discover(struct init *in, const char *model)
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
	init_step_run(in);
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
	init_step_run(in);
}

/* The fast link, proven ---------------------------------------------- */

/* 0 when it carries every pair; 1 with f set. */
int
init_ask_link(struct init *in, struct link_finding *f)
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
	init_step_run(in);
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
	init_step_run(in);
	for (a = 0; a < n; a++) {
		names[a] = in->cf->nodes[a].name;
		ifn[a] = in->cf->nodes[a].ifname;
		ips[a] = in->cf->nodes[a].ip;
	}
	lc = (struct linkcheck_in){ n, names, ifn, ips, in->st, in->big,
	    in->small };
	rc = linkcheck_judge(&lc, f);
	init_tell(stdout, "fast link check (%.1f s):\n",
	    (double)(mono_ms() - t0) / 1000);
	for (a = 0; a < n; a++) {
		char d[240];

		linkcheck_node_detail(&in->st[a], ifn[a], d, sizeof(d));
		init_tell(stdout, "  %s: %s\n", names[a], d);
		/* what tandemd will pass (NCCL_IB_GID_INDEX) or refuse */
		rdma_describe(&in->rdma[a], ifn[a], ips[a], d, sizeof(d));
		init_tell(stdout, "    RDMA: %s\n", d);
		for (b = 0; b < n; b++)
			if (b != a && in->big[a * n + b].v == PING_MISSING) {
				init_tell(stdout,
				    "    its peers not pinged: no ping on the "
				    "node (apt install iputils-ping)\n");
				unpinged = 1;
				break;
			}
	}
	if (rc == 0 && !unpinged)
		init_tell(stdout,
		    "  every node reaches every other over it with packets "
		    "of the MTU, unfragmented\n");
	else
		init_tell(stdout, "  %s%s: %s\n  fix: %s\n", f->could_not_tell ?
		    "could not tell: " : "", diag_code_name(f->code),
		    f->message, f->fix);
	free(names);
	free(ifn);
	free(ips);
	return rc;
}
