/*
 * tandemctl check: the preflight (lib/preflight/preflight_steps.c) over SSH
 * sessions of its own, on every node at once, printed as a table or as JSON (json.c). The
 * same checks and verdicts as tandemd's before its first rebuild.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "plan.h"
#include "preflight.h"
#include "preflight_run.h"
#include "ssh.h"

struct check_node {
	struct check_run	*run;
	size_t			 idx;
	struct sshc		*ssh;
	int			 asked;
	struct ctl_cache	 cache;		/* its line NULL: not asked */
};

struct check_run {
	struct preflight	*pf;
	struct pf_runner	 runner;	/* the driver, on our sessions */
	struct check_node	*n;
	uv_loop_t		*loop;
	int			 cache_pending;	/* du/df still out */
};

struct check_op {
	struct check_node	*n;
	int			 tag;
};

static void
finish_if_complete(struct check_run *run)
{
	if (preflight_complete(run->pf) && run->cache_pending == 0)
		uv_stop(run->loop);
}

static void
on_answer(const struct cmd_result *r, void *arg)
{
	struct check_op *op = arg;
	struct check_run *run = op->n->run;

	preflight_run_answer(&run->runner, op->n->idx, op->tag, r);
	free(op);
	finish_if_complete(run);
}

/* The driver's send (lib/preflight/preflight_run.c): on the node's session. */
static int
send_cmd(void *ctx, const struct pf_cmd *c)
{
	struct check_run *run = ctx;
	struct check_op *op = xcalloc(1, sizeof(*op));

	op->n = &run->n[c->node];
	op->tag = c->tag;
	if (sshc_exec(op->n->ssh, c->cmd,
	    preflight_timeout_s(preflight_config(run->pf)), on_answer,
	    op) == -1) {
		free(op);
		return -1;
	}
	return 0;
}

/* container.cache_dir's size and the disk's free space (issue 47). */
static void
on_cache(const struct cmd_result *r, void *arg)
{
	struct check_node *n = arg;
	const struct config *cf = preflight_config(n->run->pf);
	char line[400];

	n->run->cache_pending--;
	if (r->error == NULL && cache_disk_parse(r->out, &n->cache.cd) == 0) {
		cache_disk_format(&n->cache.cd, cf->container.cache_dir,
		    cf->container.cache_max_gib, line, sizeof(line));
		n->cache.line = xstrdup(line);
		n->cache.read = 1;
	} else
		n->cache.line = xstrdup("could not tell (du/df answered "
		    "nothing readable)");
	finish_if_complete(n->run);
}

static void
ask_cache(struct check_node *n)
{
	char *cmd = plan_cache_probe(preflight_config(n->run->pf));

	if (cmd == NULL)
		return;
	if (sshc_exec(n->ssh, cmd, 10, on_cache, n) != -1)
		n->run->cache_pending++;
	free(cmd);
}

/* The session's first word: up, run the checks; down, say why. */
static void
on_state(struct sshc *c, int up, const char *why, int fatal, void *arg)
{
	struct check_node *n = arg;
	struct check_run *run = n->run;

	(void)c;
	(void)fatal;
	if (n->asked)
		return;
	n->asked = 1;
	preflight_run_node(&run->runner, n->idx, up, why);
	if (up)
		ask_cache(n);
	preflight_run_more(&run->runner);
	finish_if_complete(run);
}

/*
 * A check's mark: passed, failed, not checked (it stops nothing but was
 * not made: never shown as passed), could not tell.
 */
static const char *
mark(const struct pf_result *r)
{
	switch (r->status) {
	case PFS_PASSED:	return "\xe2\x9c\x93";
	case PFS_FAILED:	break;
	case PFS_NOT_CHECKED:	return "-";
	case PFS_UNKNOWN:	return "?";
	}
	return "\xe2\x9c\x97";
}

/* What was found is worth seeing for these when they pass too (the
 * link: each interface, its speed and MTU). */
static int
shown_when_passed(int c)
{
	return c == PF_IMAGE || c == PF_NVIDIA || c == PF_GPUS ||
	    c == PF_MEMORY || c == PF_LINK;
}

static void
print_table(const struct preflight *pf, const struct check_node *nodes,
    const char *only, struct sbuf *b)
{
	const struct config *cf = preflight_config(pf);
	size_t i;
	int c, any = 0, skipped = 0;

	sbuf_addf(b, "%-16s", "node");
	for (c = 0; c < PF_COUNT; c++)
		sbuf_addf(b, " %-10s", preflight_check_name(c));
	sbuf_add(b, "\n");
	for (i = 0; i < cf->nnodes; i++) {
		if (only && strcmp(only, cf->nodes[i].name) != 0)
			continue;
		sbuf_addf(b, "%-16s", cf->nodes[i].name);
		/* one column each; a mark is one character */
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = preflight_result(pf, i, c);

			sbuf_addf(b, " %s%9s", mark(r), "");
			skipped += r->status == PFS_NOT_CHECKED;
		}
		sbuf_add(b, "\n");
	}
	for (i = 0; i < cf->nnodes; i++)
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = preflight_result(pf, i, c);

			if (only && strcmp(only, cf->nodes[i].name) != 0)
				break;
			if ((r->status == PFS_PASSED && !shown_when_passed(c)) ||
			    r->detail[0] == '-' || r->detail[0] == '\0')
				continue;
			sbuf_addf(b, "\n%s %s: %s", cf->nodes[i].name,
			    preflight_check_name(c), r->detail);
			any = 1;
			if (r->fix[0])
				sbuf_addf(b, "\n  fix: %s", r->fix);
		}
	for (i = 0; i < cf->nnodes; i++) {
		const struct workloads *wl = preflight_workloads(pf, i);
		char msg[300];
		size_t j;

		if (wl == NULL || (only && strcmp(only, cf->nodes[i].name)))
			continue;
		for (j = 0; j < wl->n; j++) {
			workload_message(&wl->w[j], cf->nodes[i].name, msg,
			    sizeof(msg));
			sbuf_addf(b, "\nwarning: foreign-workload: %s", msg);
			any = 1;
		}
	}
	for (i = 0; i < cf->nnodes; i++) {
		const char *line = nodes[i].cache.line;

		if (line == NULL || (only && strcmp(only, cf->nodes[i].name)))
			continue;
		sbuf_addf(b, "\n%s cache: %s", cf->nodes[i].name, line);
		any = 1;
	}
	/* a blank line between the details and the verdict */
	if (!preflight_ok(pf, only))
		sbuf_add(b, "\n");
	else if (skipped)
		sbuf_addf(b, "%sno check failed; %d not checked (-)\n", any ?
		    "\n\n" : "\n", skipped);
	else
		sbuf_add(b, any ? "\n\nall checks passed\n" :
		    "\nall checks passed\n");
}

int
ctl_run_check(struct config *cf, int as_json, const char *only)
{
	struct check_run run;
	struct sbuf out;
	struct ctl_cache *caches;
	size_t i;
	int ok;

	memset(&run, 0, sizeof(run));
	run.loop = uv_default_loop();
	log_init(0);
	signal(SIGPIPE, SIG_IGN);
	if (sshc_ssh_init() != 0) {
		fprintf(stderr, "tandemctl: cannot initialise libssh2\n");
		return 1;
	}
	run.pf = preflight_new(cf);
	run.runner = (struct pf_runner){ .pf = run.pf, .send = send_cmd,
	    .ctx = &run };
	run.n = xcalloc(cf->nnodes, sizeof(*run.n));
	for (i = 0; i < cf->nnodes; i++) {
		struct ssh_params p;

		ssh_params_of(cf, i, &p);
		run.n[i].run = &run;
		run.n[i].idx = i;
		run.n[i].ssh = sshc_new(run.loop, &p, on_state, &run.n[i]);
		sshc_connect(run.n[i].ssh);
	}
	if (!preflight_complete(run.pf))
		uv_run(run.loop, UV_RUN_DEFAULT);
	ok = preflight_ok(run.pf, only);
	if (as_json) {
		caches = xcalloc(cf->nnodes, sizeof(*caches));
		for (i = 0; i < cf->nnodes; i++)
			caches[i] = run.n[i].cache;
		if (ctl_put_built(ctl_check_json(run.pf, caches, only)) != 0)
			ok = 0;
		free(caches);
	} else {
		sbuf_init(&out);
		print_table(run.pf, run.n, only, &out);
		fputs(out.s, stdout);
		sbuf_free(&out);
	}
	/* the sessions answer what is still running: "shutting down" */
	for (i = 0; i < cf->nnodes; i++) {
		sshc_free(run.n[i].ssh);
		free(run.n[i].cache.line);
	}
	preflight_free(run.pf);
	free(run.n);
	uv_run(run.loop, UV_RUN_NOWAIT);
	return ok ? 0 : 1;
}
