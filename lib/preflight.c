/*
 * The preflight's checks as pure functions (preflight.h): reachable with a
 * known host key, engine answers, image present and the same build on
 * every node, model directory present and the same on all nodes,
 * interface carries the IP, GPUs visible, Ray port free or ours, no
 * foreign container with our name, the engine's NVIDIA path present. The
 * commands come from plan*.c; the answers come back from whoever ran them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dockerout.h"
#include "hwfault.h"
#include "plan.h"
#include "preflight.h"
#include "quote.h"
#include "utf8.h"
#include "util.h"

/*
 * Not columns of the table: the unrelated-workload scan (only warnings,
 * workload.h) and whether the image archive is there (for settle_images).
 */
#define PF_WORKLOADS	PF_COUNT
#define PF_ARCHIVE	(PF_COUNT + 1)
/* issue 33: the GPU driver's kernel lines and ECC counts (in the gpus
 * column), ray.auth_token_file on the node (in the ray port column) */
#define PF_XID		(PF_COUNT + 2)
#define PF_ECC		(PF_COUNT + 3)
#define PF_RAYTOKEN	(PF_COUNT + 4)

/* What those said, per node (hw_answer). */
struct pf_hw {
	double			 since;		/* Unix time; 0: this boot */
	struct xid_scan		*scan;		/* NULL: no answer */
	struct gpu_ecc_list	*ecc;		/* NULL: no answer */
	int			 token_missing;
	char			 token_said[120];
};

static const char *const check_names[PF_COUNT] = {
	"ssh", "engine", "image", "model", "interface", "gpus", "ray port",
	"name free", "nvidia",
};

struct preflight {
	struct config		*cf;		/* a reference of ours */
	size_t			 nnodes;
	struct pf_result	(*res)[PF_COUNT];
	struct pf_image		*image;		/* per node */
	struct model_print	*model;		/* per node */
	char			 image_ref[IMAGE_ID_LEN];
	int			*own_running;	/* our container runs there */
	int			*port_held;	/* something listens on ray.port */
	struct workloads	*wl;		/* unrelated workloads, per node */
	int			*wl_known;
	int			*pending;	/* answers a node still owes; -1: not asked */
	size_t			 nodes_pending;
	struct pf_hw		*hw;		/* per node */
};

const char *
preflight_check_name(int c)
{
	return c >= 0 && c < PF_COUNT ? check_names[c] : "?";
}

static void
set(struct preflight *pf, size_t node, int check, int ok, const char *detail,
    const char *fix)
{
	struct pf_result *r = &pf->res[node][check];

	r->done = 1;
	r->ok = ok;
	utf8_copy(r->detail, sizeof(r->detail), detail);
	utf8_copy(r->fix, sizeof(r->fix), fix);
}

static void
set_value(struct preflight *pf, size_t node, int check, const char *value)
{
	utf8_copy(pf->res[node][check].value, sizeof(pf->res[node][check].value),
	    value);
}

static const char *
line1(const char *s, char *buf, size_t len)
{
	utf8_copyn(buf, len, s, strcspn(s, "\n"));
	return buf;
}

struct preflight *
preflight_new(struct config *cf)
{
	struct preflight *pf = xcalloc(1, sizeof(*pf));
	size_t i;

	pf->cf = config_ref(cf);
	pf->nnodes = cf->nnodes;
	pf->res = xcalloc(cf->nnodes, sizeof(*pf->res));
	pf->image = xcalloc(cf->nnodes, sizeof(*pf->image));
	pf->model = xcalloc(cf->nnodes, sizeof(*pf->model));
	pf->own_running = xcalloc(cf->nnodes, sizeof(int));
	pf->port_held = xcalloc(cf->nnodes, sizeof(int));
	pf->wl = xcalloc(cf->nnodes, sizeof(*pf->wl));
	pf->wl_known = xcalloc(cf->nnodes, sizeof(int));
	pf->pending = xcalloc(cf->nnodes, sizeof(int));
	pf->hw = xcalloc(cf->nnodes, sizeof(*pf->hw));
	for (i = 0; i < cf->nnodes; i++)
		pf->pending[i] = -1;
	pf->nodes_pending = cf->nnodes;
	return pf;
}

void
preflight_free(struct preflight *pf)
{
	size_t i;

	if (pf == NULL)
		return;
	for (i = 0; i < pf->nnodes; i++)
		model_print_free(&pf->model[i]);
	free(pf->res);
	free(pf->image);
	free(pf->model);
	free(pf->own_running);
	free(pf->port_held);
	free(pf->wl);
	free(pf->wl_known);
	free(pf->pending);
	for (i = 0; i < pf->nnodes; i++) {
		free(pf->hw[i].scan);
		free(pf->hw[i].ecc);
	}
	free(pf->hw);
	config_free(pf->cf);	/* our reference */
	free(pf);
}

/* Twice a probe's: a check may list a model directory (20 s at the
 * defaults); a node slower than that is treated as unreachable. */
double
preflight_timeout_s(const struct config *cf)
{
	return 2 * cf->probe.timeout_s;
}

/*
 * docker: a runtime named nvidia in `docker info`; podman: a CDI spec of
 * kind nvidia.com/gpu (grep -l names the files; its exit status says
 * nothing here: 2 whenever one of the two directories is missing, even
 * when the other holds the spec).
 */
static void
nvidia_result(struct preflight *pf, size_t node, const struct cmd_result *r)
{
	const struct config *cf = pf->cf;
	char list[200], buf[200], line[160];
	int podman = strcmp(cf->container.engine, "podman") == 0;

	if (r->error || (!podman && r->exit_code != 0)) {
		utf8_fmt(buf, sizeof(buf), "not checked: %s", line1(r->error ?
		    r->error : r->err, line, sizeof(line)));
		set(pf, node, PF_NVIDIA, 0, buf, "start the engine: systemctl start "
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
			set(pf, node, PF_NVIDIA, 1, buf, NULL);
			set_value(pf, node, PF_NVIDIA, list);
		} else
			set(pf, node, PF_NVIDIA, 0, "absent: no CDI spec for "
			    "nvidia.com/gpu in /etc/cdi or /var/run/cdi",
			    "nvidia-ctk cdi generate --output=/etc/cdi/"
			    "nvidia.yaml");
		return;
	}
	if (docker_runtimes_nvidia(r->out, list, sizeof(list))) {
		utf8_fmt(buf, sizeof(buf), "present: docker info Runtimes: %s",
		    list);
		set(pf, node, PF_NVIDIA, 1, buf, NULL);
	} else {
		utf8_fmt(buf, sizeof(buf), "absent: docker info Runtimes: %s",
		    list);
		set(pf, node, PF_NVIDIA, 0, buf, "install nvidia-container-toolkit, "
		    "then nvidia-ctk runtime configure --runtime=docker and "
		    "systemctl restart docker");
	}
	set_value(pf, node, PF_NVIDIA, list);
}

/*
 * The model's fingerprint: its files and sizes, the small JSON files
 * checksummed. Compared between the nodes in settle_models.
 */
static void
model_result(struct preflight *pf, size_t node, const struct cmd_result *r)
{
	struct model_print *m = &pf->model[node];
	char buf[200], line[160];

	if (r->exit_code != 0) {
		utf8_fmt(buf, sizeof(buf), "directory missing: %s",
		    line1(r->error ? r->error : r->err, line, sizeof(line)));
		set(pf, node, PF_MODEL, 0, buf, "copy the model to the same path on "
		    "every node");
		return;
	}
	model_print_parse(r->out, m);
	if (!model_print_has(m, "config.json")) {
		set(pf, node, PF_MODEL, 0, "config.json missing", "copy the model to "
		    "the same path on every node");
		return;
	}
	snprintf(buf, sizeof(buf), "%zu files", m->n);
	set(pf, node, PF_MODEL, 1, buf, NULL);
}


/*
 * Issue 33: what a rebuild cannot fix, found before one starts. NVIDIA:
 * the driver's Xid lines in the kernel log since pf_hw.since, and the GPUs'
 * bus ids and uncorrectable ECC counts (lib/xid.c, lib/hwfault.c): a
 * fatal Xid fails the gpus column, as gpu-xid. With Ray's token
 * authentication on, ray.auth_token_file must be a file with something in
 * it on every node (docker would mount a directory in its place): else the
 * ray port column fails, as ray-token-missing.
 */
void
preflight_hw_since(struct preflight *pf, size_t node, double since)
{
	if (node < pf->nnodes)
		pf->hw[node].since = since;
}

const struct xid_scan *
preflight_xid(const struct preflight *pf, size_t node,
    const struct gpu_ecc_list **ecc)
{
	*ecc = node < pf->nnodes ? pf->hw[node].ecc : NULL;
	return node < pf->nnodes ? pf->hw[node].scan : NULL;
}

static void	add(struct pf_cmd **, size_t *, int, char *);

static void
hw_commands(struct preflight *pf, size_t node, struct pf_cmd **v, size_t *n)
{
	const struct config *cf = pf->cf;

	if (cf->container.accelerator == ACCEL_NVIDIA) {
		add(v, n, PF_XID, cmd_kernel_xid(pf->hw[node].since));
		add(v, n, PF_ECC, cmd_gpu_ecc());
	}
	add(v, n, PF_RAYTOKEN, cmd_ray_token_present(cf));
}

static void
hw_answer(struct preflight *pf, size_t node, int tag,
    const struct cmd_result *r)
{
	struct pf_hw *h = &pf->hw[node];
	char line[100];

	switch (tag) {
	case PF_XID:
		if (h->scan == NULL)
			h->scan = xmalloc(sizeof(*h->scan));
		xid_scan(r->out, r->outlen, h->since, h->scan);
		break;
	case PF_ECC:
		/* no nvidia-smi, or a GPU without ECC: nothing to name GPUs by */
		if (h->ecc == NULL)
			h->ecc = xcalloc(1, sizeof(*h->ecc));
		if (r->exit_code != 0 || gpu_ecc_parse(r->out, r->outlen, h->ecc,
		    line, sizeof(line)) != 0)
			h->ecc->n = 0;
		break;
	case PF_RAYTOKEN:
		h->token_missing = r->exit_code != 0;
		utf8_fmt(h->token_said, sizeof(h->token_said), "%s",
		    line1(r->err, line, sizeof(line)));
		break;
	}
}

/* The node answered everything: these verdicts outrank the columns'. */
static void
hw_finished(struct preflight *pf, size_t node)
{
	const struct config *cf = pf->cf;
	struct pf_hw *h = &pf->hw[node];
	const struct hw_finding *f;
	struct hw_report *rep;
	char buf[200];

	if (h->token_missing) {
		utf8_fmt(buf, sizeof(buf), "ray.auth_token_file %s: missing or "
		    "empty%s%s", cf->ray.auth_token_file, h->token_said[0] ?
		    ": " : "", h->token_said);
		set(pf, node, PF_RAYPORT, 0, buf, "copy the token file to the "
		    "same path on every node (chmod 600)");
	}
	if (h->scan == NULL)
		return;
	rep = xmalloc(sizeof(*rep));
	hw_judge_nvidia(cf->nodes[node].name, h->scan, NULL, h->ecc, rep);
	if ((f = hw_fatal(rep)) != NULL) {
		utf8_fmt(buf, sizeof(buf), "fatal GPU fault: %s", f->msg);
		set(pf, node, PF_GPUS, 0, buf, "drain the node, reset the GPU "
		    "(nvidia-smi -r) or reboot it, then tandemctl resume");
	}
	free(rep);
}

static void	node_finished(struct preflight *, size_t node);

static void
add(struct pf_cmd **v, size_t *n, int tag, char *cmd)
{
	if (cmd == NULL)
		return;
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].tag = tag;
	(*v)[*n].cmd = cmd;
	(*n)++;
}

size_t
preflight_commands(struct preflight *pf, size_t node, struct pf_cmd **cmds)
{
	const struct config *cf = pf->cf;
	const struct node_conf *nc = &cf->nodes[node];
	struct pf_cmd *v = NULL;
	size_t n = 0;
	char *model;

	*cmds = NULL;
	if (node >= pf->nnodes || pf->pending[node] != -1)
		return 0;
	set(pf, node, PF_SSH, 1, "host key known", NULL);
	add(&v, &n, PF_ENGINE, cmd_engine_info(cf));
	add(&v, &n, PF_IMAGE, cmd_image_id(cf));
	add(&v, &n, PF_ARCHIVE, cmd_archive_present(cf, node));
	if ((model = cmd_model_fingerprint(cf)) != NULL)
		add(&v, &n, PF_MODEL, model);
	else
		set(pf, node, PF_MODEL, 1, "not on a volume (not checked)", NULL);
	add(&v, &n, PF_IFACE, cmd_iface_addr(cf, node));
	add(&v, &n, PF_GPUS, cmd_gpu_list());
	add(&v, &n, PF_NAME, cmd_name_owner(cf, node));
	add(&v, &n, PF_WORKLOADS, cmd_workloads(cf));
	if (nc->is_head && cf->topology == TOPO_RAY)
		add(&v, &n, PF_RAYPORT, cmd_ray_port(cf));
	else
		set(pf, node, PF_RAYPORT, 1, "-", NULL);
	if (plan_wants_nvidia(cf))
		add(&v, &n, PF_NVIDIA, cmd_nvidia_runtime(cf));
	else
		set(pf, node, PF_NVIDIA, 1, "not used (container.extra_args pass "
		    "the devices)", NULL);
	hw_commands(pf, node, &v, &n);
	pf->pending[node] = (int)n;
	*cmds = v;
	if (n == 0)
		node_finished(pf, node);
	return n;
}

void
preflight_cmds_free(struct pf_cmd *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].cmd);
	free(v);
}

void
preflight_node_down(struct preflight *pf, size_t node, const char *why)
{
	int k;

	if (node >= pf->nnodes || pf->pending[node] != -1)
		return;
	set(pf, node, PF_SSH, 0, why, strncmp(why, "ssh ", 4) == 0 &&
	    strstr(why, "timed out") ?
	    "check the node's sshd: it answers too slowly or not at all "
	    "(load, a hanging AuthorizedKeysCommand or PAM)" :
	    strstr(why, "host key") ?
	    "verify the node, then ssh-keyscan it into ssh.known_hosts_file" :
	    strstr(why, "authentication") ?
	    "add the key's .pub to the node's authorized_keys" :
	    "check the node is up and ssh_host/ssh_port");
	for (k = PF_ENGINE; k < PF_COUNT; k++)
		set(pf, node, k, 0, "-", NULL);
	pf->pending[node] = 0;
	node_finished(pf, node);
}

void
preflight_answer(struct preflight *pf, size_t node, int tag,
    const struct cmd_result *r)
{
	const struct config *cf = pf->cf;
	const struct node_conf *nc;
	char buf[200], want[64], line[160];
	int count = 0, running;
	enum name_owner owner;
	const char *p;

	if (node >= pf->nnodes || pf->pending[node] <= 0)
		return;
	nc = &cf->nodes[node];
	/*
	 * A command that never ran to its end (channel open or exec timed
	 * out, the session dropped) says nothing about what it checks: the
	 * node is unreachable for now, which a retry can fix. Read as the
	 * check's answer, a loaded node's slow channel became a fatal
	 * image-missing and stopped the retries. The workload scan only
	 * warns, so its failure changes nothing.
	 */
	if (r->error && tag != PF_WORKLOADS) {
		set(pf, node, PF_SSH, 0, r->error, "check the node's sshd: it "
		    "answers too slowly or not at all");
		if (tag < PF_COUNT)
			set(pf, node, tag, 0, "-", NULL);
		node_finished(pf, node);
		return;
	}
	switch (tag) {
	case PF_XID:
	case PF_ECC:
	case PF_RAYTOKEN:
		hw_answer(pf, node, tag, r);
		break;
	case PF_WORKLOADS:
		if (!r->error) {
			workloads_parse(r->out, r->outlen, cf->name,
			    &pf->wl[node]);
			pf->wl_known[node] = 1;
		}
		break;
	case PF_ENGINE:
		if (r->exit_code == 0)
			set(pf, node, PF_ENGINE, 1, line1(r->out, buf,
			    sizeof(buf)), NULL);
		else
			set(pf, node, PF_ENGINE, 0, line1(r->err, buf,
			    sizeof(buf)), "start the engine: systemctl start "
			    "docker");
		break;
	case PF_IMAGE:
		/* settled once every node answered (settle_images) */
		if (r->exit_code == 0 && image_inspect_parse(r->out,
		    pf->image[node].id, IMAGE_ID_LEN, pf->image[node].created,
		    sizeof(pf->image[node].created)) == 0)
			set(pf, node, PF_IMAGE, 1, "present", NULL);
		else {
			pf->image[node].id[0] = '\0';
			utf8_fmt(buf, sizeof(buf), "absent: %s", line1(r->errlen ?
			    r->err : r->out, line, sizeof(line)));
			set(pf, node, PF_IMAGE, 0, buf, NULL);
		}
		break;
	case PF_ARCHIVE:
		pf->image[node].archive_ok = r->exit_code == 0;
		break;
	case PF_NVIDIA:
		nvidia_result(pf, node, r);
		break;
	case PF_MODEL:
		model_result(pf, node, r);
		break;
	case PF_IFACE:
		snprintf(want, sizeof(want), "inet %s/", nc->ip);
		if (r->exit_code == 0 && strstr(r->out, want))
			set(pf, node, PF_IFACE, 1, nc->ifname, NULL);
		else
			set(pf, node, PF_IFACE, 0, r->exit_code == 0 ? "does not "
			    "carry the node's ip" : "no such interface", "set "
			    "nodes[].ifname to the interface carrying "
			    "nodes[].ip (ip -o addr)");
		break;
	case PF_GPUS:
		for (p = r->out; r->exit_code == 0 && (p = strstr(p, "GPU "));
		    p += 4)
			count++;
		snprintf(buf, sizeof(buf), "%d visible", count);
		if (r->exit_code == 127 || strstr(r->err, "not found"))
			set(pf, node, PF_GPUS, 1, "no nvidia-smi (not checked)",
			    NULL);
		else
			set(pf, node, PF_GPUS, count > 0, buf, count > 0 ? NULL :
			    "check the driver: nvidia-smi -L");
		break;
	case PF_RAYPORT:
		/* ss prints a line when something listens on the port; whose
		 * it is is decided once the name check has answered too. */
		if (r->exit_code != 0)
			set(pf, node, PF_RAYPORT, 1, "not checked (no ss)", NULL);
		else if (r->outlen == 0)
			set(pf, node, PF_RAYPORT, 1, "free", NULL);
		else
			pf->port_held[node] = 1;
		break;
	case PF_NAME:
		owner = r->exit_code != 0 ? OWNER_FREE :
		    docker_name_owner(r->out, cf->name, &running);
		if (owner == OWNER_FREE) {
			set(pf, node, PF_NAME, 1, "free", NULL);
		} else if (owner == OWNER_OURS) {
			pf->own_running[node] = running;
			set(pf, node, PF_NAME, 1, "ours", NULL);
		} else {
			utf8_fmt(buf, sizeof(buf), "%s exists, not started by "
			    "tandem", nc->container_name);
			set(pf, node, PF_NAME, 0, buf, "remove it (docker rm -f) "
			    "or set nodes[].container_name");
		}
		break;
	}
	if (--pf->pending[node] == 0)
		node_finished(pf, node);
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
			set(pf, i, PF_IMAGE, 1, buf, NULL);
			/* the ID as the engine prints it */
			utf8_fmt(buf, sizeof(buf), "%s%s", strcmp(
			    cf->container.engine, "podman") ? "sha256:" : "",
			    im->id);
			set_value(pf, i, PF_IMAGE, buf);
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
			set(pf, i, PF_IMAGE, 1, buf, NULL);
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
		set(pf, i, PF_IMAGE, 0, buf, fix);
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
		set(pf, i, PF_MODEL, 0, buf, "copy the same model to "
		    "every node (rsync -a from the head)");
	}
}


/* A node's last answer came (or its session was down, or a command never
 * ran to its end: then the node is done, whatever else is outstanding). */
static void
node_finished(struct preflight *pf, size_t node)
{
	if (pf->pending[node] > 0 && pf->res[node][PF_SSH].ok)
		return;
	pf->pending[node] = 0;
	if (pf->port_held[node])
		set(pf, node, PF_RAYPORT, pf->own_running[node],
		    pf->own_running[node] ? "held by our container" :
		    "held by another process", pf->own_running[node] ? NULL :
		    "stop what listens there, or change ray.port");
	hw_finished(pf, node);
	if (pf->nodes_pending == 0 || --pf->nodes_pending > 0)
		return;
	/* Every node answered: image and model must be the same everywhere. */
	settle_images(pf);
	settle_models(pf);
}

int
preflight_complete(const struct preflight *pf)
{
	return pf->nodes_pending == 0;
}

const struct config *
preflight_config(const struct preflight *pf)
{
	return pf->cf;
}

const struct pf_result *
preflight_result(const struct preflight *pf, size_t node, int check)
{
	return &pf->res[node][check];
}

const struct pf_image *
preflight_image(const struct preflight *pf, size_t node)
{
	return &pf->image[node];
}

const char *
preflight_image_ref(const struct preflight *pf)
{
	return pf->image_ref;
}

const struct workloads *
preflight_workloads(const struct preflight *pf, size_t node)
{
	return pf->wl_known[node] ? &pf->wl[node] : NULL;
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

	for (i = 0; i < pf->nnodes; i++)
		for (c = 0; c < PF_COUNT; c++)
			if (shown(pf, i, only) && !pf->res[i][c].ok)
				return 0;
	return 1;
}

int
preflight_failure(const struct preflight *pf, size_t *node,
    enum diag_code *code, char *excerpt, size_t len)
{
	size_t i;
	int c;

	for (i = 0; i < pf->nnodes; i++)
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = &pf->res[i][c];

			if (r->ok || r->detail[0] == '-')
				continue;
			utf8_fmt(excerpt, len, "preflight %s: %s%s%s",
			    preflight_check_name(c), r->detail, r->fix[0] ?
			    "; fix: " : "", r->fix);
			*node = i;
			*code = recovery_preflight_diag((enum pf_check)c,
			    r->detail);
			return 1;
		}
	return 0;
}
