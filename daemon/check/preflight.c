/*
 * The preflight of every node, over the same SSH code as the daemon:
 * reachable with a known host key, engine answers, image present, model
 * directory present and the same on all nodes, interface carries the IP,
 * GPUs visible, Ray port free or ours, no foreign container with our name,
 * the engine's NVIDIA path present. tandemctl check prints it as a table
 * (or JSON); tandemd runs it before its first rebuild and turns failures
 * into diagnoses. The commands come from plan.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quote.h"
#include "ssh.h"
#include "dockerout.h"
#include "plan.h"
#include "tandemd.h"

/*
 * Not columns of the table: the unrelated-workload scan (only warnings,
 * workload.h) and whether the image archive is there (for settle_images).
 */
#define PF_WORKLOADS	PF_COUNT
#define PF_ARCHIVE	(PF_COUNT + 1)

static const char *const check_names[PF_COUNT] = {
	"ssh", "engine", "image", "model", "interface", "gpus", "ray port",
	"name free", "nvidia",
};

const char *
preflight_check_name(int c)
{
	return c >= 0 && c < PF_COUNT ? check_names[c] : "?";
}

struct pf_node {
	struct preflight	*pf;
	size_t			 idx;
	struct sshc		*ssh;
	int			 pending;
	int			 connected;
};

struct pf_op {
	struct pf_node	*n;
	int		 check;
};

static void	node_finished(struct pf_node *);
static void	pf_release(struct preflight *);

static void
set(struct pf_node *n, int check, int ok, const char *detail, const char *fix)
{
	struct pf_result *r = &n->pf->res[n->idx][check];

	r->done = 1;
	r->ok = ok;
	utf8_copy(r->detail, sizeof(r->detail), detail);
	utf8_copy(r->fix, sizeof(r->fix), fix);
}

static void
set_value(struct pf_node *n, int check, const char *value)
{
	struct pf_result *r = &n->pf->res[n->idx][check];

	utf8_copy(r->value, sizeof(r->value), value);
}

static const char *
line1(const char *s, char *buf, size_t len)
{
	utf8_copyn(buf, len, s, strcspn(s, "\n"));
	return buf;
}

/*
 * docker: a runtime named nvidia in `docker info`; podman: a CDI spec of
 * kind nvidia.com/gpu (grep -l names the files; its exit status says
 * nothing here: 2 whenever one of the two directories is missing, even
 * when the other holds the spec).
 */
static void
nvidia_result(struct pf_node *n, const struct ssh_result *r)
{
	const struct config *cf = n->pf->cf;
	char list[200], buf[200], line[160];
	int podman = strcmp(cf->container.engine, "podman") == 0;

	if (r->error || (!podman && r->exit_code != 0)) {
		utf8_fmt(buf, sizeof(buf), "not checked: %s", line1(r->error ?
		    r->error : r->err, line, sizeof(line)));
		set(n, PF_NVIDIA, 0, buf, "start the engine: systemctl start "
		    "docker");
		return;
	}
	if (podman) {
		size_t k;

		utf8_copy(list, sizeof(list), r->out);
		for (k = 0; list[k]; k++)
			if (list[k] == '\n')
				list[k] = list[k + 1] ? ' ' : '\0';
		if (list[0]) {
			utf8_fmt(buf, sizeof(buf), "present: CDI spec %s", list);
			set(n, PF_NVIDIA, 1, buf, NULL);
			set_value(n, PF_NVIDIA, list);
		} else
			set(n, PF_NVIDIA, 0, "absent: no CDI spec for "
			    "nvidia.com/gpu in /etc/cdi or /var/run/cdi",
			    "nvidia-ctk cdi generate --output=/etc/cdi/"
			    "nvidia.yaml");
		return;
	}
	if (docker_runtimes_nvidia(r->out, list, sizeof(list))) {
		utf8_fmt(buf, sizeof(buf), "present: docker info Runtimes: %s",
		    list);
		set(n, PF_NVIDIA, 1, buf, NULL);
	} else {
		utf8_fmt(buf, sizeof(buf), "absent: docker info Runtimes: %s",
		    list);
		set(n, PF_NVIDIA, 0, buf, "install nvidia-container-toolkit, "
		    "then nvidia-ctk runtime configure --runtime=docker and "
		    "systemctl restart docker");
	}
	set_value(n, PF_NVIDIA, list);
}

/*
 * The model's fingerprint: its files and sizes, the small JSON files
 * checksummed. Compared between the nodes in settle_models.
 */
static void
model_result(struct pf_node *n, const struct ssh_result *r)
{
	struct model_print *m = &n->pf->model[n->idx];
	char buf[200], line[160];

	if (r->exit_code != 0) {
		utf8_fmt(buf, sizeof(buf), "directory missing: %s",
		    line1(r->error ? r->error : r->err, line, sizeof(line)));
		set(n, PF_MODEL, 0, buf, "copy the model to the same path on "
		    "every node");
		return;
	}
	model_print_parse(r->out, m);
	if (!model_print_has(m, "config.json")) {
		set(n, PF_MODEL, 0, "config.json missing", "copy the model to "
		    "the same path on every node");
		return;
	}
	snprintf(buf, sizeof(buf), "%zu files", m->n);
	set(n, PF_MODEL, 1, buf, NULL);
}

static void
on_result(const struct ssh_result *r, void *arg)
{
	struct pf_op *op = arg;
	struct pf_node *n = op->n;
	const struct config *cf = n->pf->cf;

	n->pf->ops--;
	if (n->pf->freeing) {
		struct preflight *pf = n->pf;

		free(op);
		if (pf->borrowed && pf->ops == 0)
			pf_release(pf);
		return;
	}
	const struct node_conf *nc = &cf->nodes[n->idx];
	char buf[200], want[64];
	int count = 0, running;
	enum name_owner owner;
	const char *p;

	/*
	 * A command that never ran to its end (channel open or exec timed
	 * out, the session dropped) says nothing about what it checks: the
	 * node is unreachable for now, which a retry can fix. Read as the
	 * check's answer, a loaded node's slow channel became a fatal
	 * image-missing and stopped the retries. The workload scan only
	 * warns, so its failure changes nothing.
	 */
	if (r->error && op->check != PF_WORKLOADS) {
		set(n, PF_SSH, 0, r->error, "check the node's sshd: it "
		    "answers too slowly or not at all");
		if (op->check < PF_COUNT)
			set(n, op->check, 0, "-", NULL);
		free(op);
		node_finished(n);
		return;
	}
	switch (op->check) {
	case PF_WORKLOADS:
		if (!r->error) {
			workloads_parse(r->out, r->outlen, cf->name,
			    &n->pf->wl[n->idx]);
			n->pf->wl_known[n->idx] = 1;
		}
		break;
	case PF_ENGINE:
		if (r->exit_code == 0)
			set(n, PF_ENGINE, 1, line1(r->out, buf, sizeof(buf)),
			    NULL);
		else
			set(n, PF_ENGINE, 0, line1(r->error ? r->error : r->err,
			    buf, sizeof(buf)), "start the engine: systemctl "
			    "start docker");
		break;
	case PF_IMAGE:
		/* settled once every node answered (settle_images) */
		if (r->exit_code == 0 && image_inspect_parse(r->out,
		    n->pf->image[n->idx].id, IMAGE_ID_LEN,
		    n->pf->image[n->idx].created,
		    sizeof(n->pf->image[n->idx].created)) == 0)
			set(n, PF_IMAGE, 1, "present", NULL);
		else {
			char line[160];

			n->pf->image[n->idx].id[0] = '\0';
			utf8_fmt(buf, sizeof(buf), "absent: %s", line1(r->error ?
			    r->error : r->errlen ? r->err : r->out, line,
			    sizeof(line)));
			set(n, PF_IMAGE, 0, buf, NULL);
		}
		break;
	case PF_ARCHIVE:
		n->pf->image[n->idx].archive_ok = r->exit_code == 0;
		break;
	case PF_NVIDIA:
		nvidia_result(n, r);
		break;
	case PF_MODEL:
		model_result(n, r);
		break;
	case PF_IFACE:
		snprintf(want, sizeof(want), "inet %s/", nc->ip);
		if (r->exit_code == 0 && strstr(r->out, want))
			set(n, PF_IFACE, 1, nc->ifname, NULL);
		else
			set(n, PF_IFACE, 0, r->exit_code == 0 ? "does not carry "
			    "the node's ip" : "no such interface", "set "
			    "nodes[].ifname to the interface carrying "
			    "nodes[].ip (ip -o addr)");
		break;
	case PF_GPUS:
		for (p = r->out; r->exit_code == 0 && (p = strstr(p, "GPU "));
		    p += 4)
			count++;
		snprintf(buf, sizeof(buf), "%d visible", count);
		if (r->exit_code == 127 || strstr(r->err, "not found"))
			set(n, PF_GPUS, 1, "no nvidia-smi (not checked)", NULL);
		else
			set(n, PF_GPUS, count > 0, buf, count > 0 ? NULL :
			    "check the driver: nvidia-smi -L");
		break;
	case PF_RAYPORT:
		/* ss prints a line when something listens on the port; whose
		 * it is is decided once the name check has answered too. */
		if (r->exit_code != 0)
			set(n, PF_RAYPORT, 1, "not checked (no ss)", NULL);
		else if (r->outlen == 0)
			set(n, PF_RAYPORT, 1, "free", NULL);
		else
			n->pf->port_held[n->idx] = 1;
		break;
	case PF_NAME:
		owner = r->exit_code != 0 ? OWNER_FREE :
		    docker_name_owner(r->out, cf->name, &running);
		if (owner == OWNER_FREE) {
			set(n, PF_NAME, 1, "free", NULL);
		} else if (owner == OWNER_OURS) {
			n->pf->own_running[n->idx] = running;
			set(n, PF_NAME, 1, "ours", NULL);
		} else {
			utf8_fmt(buf, sizeof(buf), "%s exists, not started by "
			    "tandem", nc->container_name);
			set(n, PF_NAME, 0, buf, "remove it (docker rm -f) or "
			    "set nodes[].container_name");
		}
		break;
	}
	free(op);
	node_finished(n);
}

static void
run(struct pf_node *n, int check, const char *cmd)
{
	struct pf_op *op = xcalloc(1, sizeof(*op));

	op->n = n;
	op->check = check;
	n->pending++;
	/* twice a probe's: a check may list a model directory (20 s at the
	 * defaults); a node slower than that is treated as unreachable */
	if (sshc_exec(n->ssh, cmd, 2 * n->pf->cf->probe.timeout_s, on_result,
	    op) == -1) {
		n->pending--;
		free(op);
	} else
		n->pf->ops++;
}

static void
start_checks(struct pf_node *n)
{
	const struct config *cf = n->pf->cf;
	const struct node_conf *nc = &cf->nodes[n->idx];
	char *cmd;

	cmd = cmd_engine_info(cf);
	run(n, PF_ENGINE, cmd);
	free(cmd);
	cmd = cmd_image_id(cf);
	run(n, PF_IMAGE, cmd);
	free(cmd);
	if ((cmd = cmd_archive_present(cf, n->idx)) != NULL) {
		run(n, PF_ARCHIVE, cmd);
		free(cmd);
	}
	if ((cmd = cmd_model_fingerprint(cf)) != NULL) {
		run(n, PF_MODEL, cmd);
		free(cmd);
	} else
		set(n, PF_MODEL, 1, "not on a volume (not checked)", NULL);
	cmd = cmd_iface_addr(cf, n->idx);
	run(n, PF_IFACE, cmd);
	free(cmd);
	cmd = cmd_gpu_list();
	run(n, PF_GPUS, cmd);
	free(cmd);
	cmd = cmd_name_owner(cf, n->idx);
	run(n, PF_NAME, cmd);
	free(cmd);
	cmd = cmd_workloads(cf);
	run(n, PF_WORKLOADS, cmd);
	free(cmd);
	if (nc->is_head && cf->topology == TOPO_RAY) {
		cmd = cmd_ray_port(cf);
		run(n, PF_RAYPORT, cmd);
		free(cmd);
	} else
		set(n, PF_RAYPORT, 1, "-", NULL);
	if (plan_wants_nvidia(cf)) {
		cmd = cmd_nvidia_runtime(cf);
		run(n, PF_NVIDIA, cmd);
		free(cmd);
	} else
		set(n, PF_NVIDIA, 1, "not used (container.extra_args pass "
		    "the devices)", NULL);
}

/*
 * The image on every node against the one they should share (the
 * majority's, else the head's): present and the same, absent, or another
 * build of the tag. A node with its archive readable is ok: tandemd loads
 * it (load); without one it fails, "differs" for image-mismatch.
 */
static void
settle_images(struct preflight *pf)
{
	const struct config *cf = pf->cf;
	const char **ids = xcalloc(cf->nnodes, sizeof(*ids));
	char buf[200], fix[200];
	size_t i;
	int ref;

	for (i = 0; i < cf->nnodes; i++)
		ids[i] = pf->image[i].id;
	ref = image_reference(ids, cf->nnodes, cf->head);
	free(ids);
	utf8_copy(pf->image_ref, sizeof(pf->image_ref), ref < 0 ? "" :
	    pf->image[ref].id);
	for (i = 0; i < cf->nnodes; i++) {
		struct pf_image *im = &pf->image[i];
		struct pf_result *r = &pf->res[i][PF_IMAGE];
		const char *arc = cf->nodes[i].image_archive;
		char was[200];

		if (!r->done || r->detail[0] == '-')
			continue;
		if (im->id[0] && strcmp(im->id, pf->image_ref) == 0) {
			/* IDs as docker images shows them: 12 hex digits */
			utf8_fmt(buf, sizeof(buf), "present: %s %.12s (%s)",
			    cf->container.image, im->id, im->created);
			set(&pf->n[i], PF_IMAGE, 1, buf, NULL);
			/* the ID as the engine prints it */
			utf8_fmt(buf, sizeof(buf), "%s%s", strcmp(
			    cf->container.engine, "podman") ? "sha256:" : "",
			    im->id);
			set_value(&pf->n[i], PF_IMAGE, buf);
			continue;
		}
		if (im->id[0])
			utf8_fmt(was, sizeof(was), "differs: %.12s (%s) here, "
			    "%.12s (%s) on %s", im->id, im->created,
			    pf->image_ref, pf->image[ref].created,
			    cf->nodes[ref].name);
		else
			utf8_copy(was, sizeof(was), r->detail);
		if (arc && im->archive_ok) {
			im->load = 1;
			utf8_fmt(buf, sizeof(buf), "%s; loadable from %s", was,
			    arc);
			set(&pf->n[i], PF_IMAGE, 1, buf, NULL);
			continue;
		}
		utf8_fmt(buf, sizeof(buf), "%s%s%s%s", was, arc ? "; archive "
		    : "", arc ? arc : "", arc ? " not readable" : "");
		if (arc)
			utf8_fmt(fix, sizeof(fix), "%s save -o %s %s on a node "
			    "that has the right build, copy it to %s here",
			    cf->container.engine, arc, cf->container.image,
			    arc);
		else
			utf8_fmt(fix, sizeof(fix), "%s pull %s on %s (or %s "
			    "load -i FILE of a docker save)%s",
			    cf->container.engine, cf->container.image,
			    cf->nodes[i].name, cf->container.engine,
			    im->id[0] ? ", so every node holds one build" :
			    "");
		set(&pf->n[i], PF_IMAGE, 0, buf, fix);
	}
}

/* The model on every node against the head's (or the first found). */
static void
settle_models(struct preflight *pf)
{
	const struct config *cf = pf->cf;
	size_t i, ref = cf->head;
	char names[160], buf[200];

	if (!pf->res[ref][PF_MODEL].ok || pf->model[ref].n == 0)
		for (ref = 0; ref < cf->nnodes; ref++)
			if (pf->res[ref][PF_MODEL].ok && pf->model[ref].n)
				break;
	if (ref == cf->nnodes)
		return;
	for (i = 0; i < cf->nnodes; i++) {
		size_t d;

		if (i == ref || !pf->res[i][PF_MODEL].ok ||
		    pf->model[i].n == 0)
			continue;
		d = model_print_diff(&pf->model[ref], &pf->model[i], names,
		    sizeof(names));
		if (d == 0)
			continue;
		utf8_fmt(buf, sizeof(buf), "differs from %s's in %zu file%s: "
		    "%s", cf->nodes[ref].name, d, d == 1 ? "" : "s", names);
		set(&pf->n[i], PF_MODEL, 0, buf, "copy the same model to "
		    "every node (rsync -a from the head)");
	}
}

static void
node_finished(struct pf_node *n)
{
	struct preflight *pf = n->pf;
	if (--n->pending > 0)
		return;
	if (pf->port_held[n->idx])
		set(n, PF_RAYPORT, pf->own_running[n->idx],
		    pf->own_running[n->idx] ? "held by our container" :
		    "held by another process", pf->own_running[n->idx] ? NULL :
		    "stop what listens there, or change ray.port");
	if (--pf->nodes_pending > 0)
		return;
	/* Every node answered: image and model must be the same everywhere. */
	settle_images(pf);
	settle_models(pf);
	pf->done(pf, pf->arg);
}

static void
on_state(struct sshc *c, int up, const char *why, int fatal, void *arg)
{
	struct pf_node *n = arg;

	(void)c;
	(void)fatal;
	if (n->connected || n->pf->freeing)
		return;
	n->connected = 1;
	if (!up) {
		size_t k;

		set(n, PF_SSH, 0, why, strncmp(why, "ssh ", 4) == 0 &&
		    strstr(why, "timed out") ?
		    "check the node's sshd: it answers too slowly or not at "
		    "all (load, a hanging AuthorizedKeysCommand or PAM)" :
		    strstr(why, "host key") ?
		    "verify the node, then ssh-keyscan it into "
		    "ssh.known_hosts_file" : strstr(why, "authentication") ?
		    "add the key's .pub to the node's authorized_keys" :
		    "check the node is up and ssh_host/ssh_port");
		for (k = PF_ENGINE; k < PF_COUNT; k++)
			set(n, (int)k, 0, "-", NULL);
		n->pending = 1;
		node_finished(n);
		return;
	}
	set(n, PF_SSH, 1, "host key known", NULL);
	n->pending = 1;		/* held until every check is queued */
	start_checks(n);
	node_finished(n);
}

/*
 * The borrowed sessions' checks start from the loop, not inside
 * preflight_start: a node found down finishes at once, and the last one
 * calls done, which must not run before the caller holds the preflight.
 */
static void
on_kick(uv_timer_t *t)
{
	struct preflight *pf = t->data;
	size_t i, nn = pf->nnodes;

	for (i = 0; i < nn; i++) {
		struct pf_node *n = &pf->n[i];
		int up = sshc_is_up(n->ssh);

		/* the last node's done may free pf: nothing after it */
		on_state(n->ssh, up, up ? "connected" : "ssh: not connected "
		    "(the daemon's session to the node is down)", 0, n);
	}
}

struct preflight *
preflight_start(uv_loop_t *loop, const struct config *cf,
    struct sshc *const *sessions,
    void (*done)(struct preflight *, void *), void *arg)
{
	struct preflight *pf = xcalloc(1, sizeof(*pf));
	size_t i;

	pf->cf = cf;
	pf->nnodes = cf->nnodes;
	pf->borrowed = sessions != NULL;
	pf->done = done;
	pf->arg = arg;
	pf->res = xcalloc(cf->nnodes, sizeof(*pf->res));
	pf->n = xcalloc(cf->nnodes, sizeof(*pf->n));
	pf->image = xcalloc(cf->nnodes, sizeof(*pf->image));
	pf->model = xcalloc(cf->nnodes, sizeof(*pf->model));
	pf->own_running = xcalloc(cf->nnodes, sizeof(int));
	pf->port_held = xcalloc(cf->nnodes, sizeof(int));
	pf->wl = xcalloc(cf->nnodes, sizeof(*pf->wl));
	pf->wl_known = xcalloc(cf->nnodes, sizeof(int));
	pf->nodes_pending = (int)cf->nnodes;
	for (i = 0; i < cf->nnodes; i++) {
		struct ssh_params p;

		pf->n[i].pf = pf;
		pf->n[i].idx = i;
		if (sessions) {
			pf->n[i].ssh = sessions[i];
			continue;
		}
		p.host = cf->nodes[i].ssh_host;
		p.port = cf->nodes[i].ssh_port;
		p.user = cf->ssh.user;
		p.identity_file = cf->ssh.identity_file;
		p.known_hosts_file = cf->ssh.known_hosts_file;
		p.connect_timeout_s = cf->ssh.connect_timeout_s;
		p.keepalive_s = cf->ssh.keepalive_s;
		pf->n[i].ssh = sshc_new(loop, &p, on_state, &pf->n[i]);
		sshc_connect(pf->n[i].ssh);
	}
	if (sessions) {
		pf->kick = xcalloc(1, sizeof(*pf->kick));
		uv_timer_init(loop, pf->kick);
		pf->kick->data = pf;
		uv_timer_start(pf->kick, on_kick, 0, 0);
	}
	return pf;
}

static int
shown(const struct preflight *pf, size_t node, const char *only)
{
	return only == NULL || strcmp(only, pf->cf->nodes[node].name) == 0;
}

int
preflight_ok(const struct preflight *pf, const char *only)
{
	size_t i;
	int c;

	for (i = 0; i < pf->cf->nnodes; i++)
		for (c = 0; c < PF_COUNT; c++)
			if (shown(pf, i, only) && !pf->res[i][c].ok)
				return 0;
	return 1;
}

void
preflight_print(const struct preflight *pf, const char *only,
    struct sbuf *b)
{
	size_t i;
	int c, any = 0;

	sbuf_addf(b, "%-16s", "node");
	for (c = 0; c < PF_COUNT; c++)
		sbuf_addf(b, " %-10s", check_names[c]);
	sbuf_add(b, "\n");
	for (i = 0; i < pf->cf->nnodes; i++) {
		if (!shown(pf, i, only))
			continue;
		sbuf_addf(b, "%-16s", pf->cf->nodes[i].name);
		/* one column each; the marks are 3 bytes of UTF-8 */
		for (c = 0; c < PF_COUNT; c++)
			sbuf_addf(b, " %s%9s", pf->res[i][c].ok ?
			    "\xe2\x9c\x93" : "\xe2\x9c\x97", "");
		sbuf_add(b, "\n");
	}
	for (i = 0; i < pf->cf->nnodes; i++)
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = &pf->res[i][c];

			if (!shown(pf, i, only))
				break;
			/* what the engine has is worth seeing when ok too */
			if ((r->ok && c != PF_IMAGE && c != PF_NVIDIA) ||
			    r->detail[0] == '-' || r->detail[0] == '\0')
				continue;
			sbuf_addf(b, "\n%s %s: %s", pf->cf->nodes[i].name,
			    check_names[c], r->detail);
			any = 1;
			if (r->fix[0])
				sbuf_addf(b, "\n  fix: %s", r->fix);
		}
	for (i = 0; i < pf->cf->nnodes; i++) {
		char msg[300];
		size_t j;

		for (j = 0; shown(pf, i, only) && j < pf->wl[i].n; j++) {
			workload_message(&pf->wl[i].w[j], pf->cf->nodes[i].name,
			    msg, sizeof(msg));
			sbuf_addf(b, "\nwarning: foreign-workload: %s", msg);
			any = 1;
		}
	}
	/* a blank line between the details and the verdict */
	sbuf_add(b, !preflight_ok(pf, only) ? "\n" : any ?
	    "\n\nall checks passed\n" : "\nall checks passed\n");
}

static void
free_timer(uv_handle_t *h)
{
	free(h);
}

void
preflight_free(struct preflight *pf)
{
	size_t i;

	pf->freeing = 1;	/* the sessions' last callbacks find it so */
	if (pf->kick) {
		uv_timer_stop(pf->kick);
		uv_close((uv_handle_t *)pf->kick, free_timer);
		pf->kick = NULL;
	}
	if (pf->borrowed) {
		/* the sessions are the caller's: their answers free it */
		if (pf->ops > 0)
			return;
	} else
		for (i = 0; i < pf->nnodes; i++)
			sshc_free(pf->n[i].ssh);
	pf_release(pf);
}

static void
pf_release(struct preflight *pf)
{
	size_t i;

	free(pf->res);
	free(pf->n);
	for (i = 0; i < pf->nnodes; i++)
		model_print_free(&pf->model[i]);
	free(pf->image);
	free(pf->model);
	free(pf->own_running);
	free(pf->port_held);
	free(pf->wl);
	free(pf->wl_known);
	if (pf->cf_owned)
		config_free(pf->cf_owned);
	free(pf);
}
