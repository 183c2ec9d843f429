/*
 * The preflight's checks as pure functions (preflight.h): reachable with a
 * known host key, engine answers, image present and the same build on
 * every node, model directory present and the same on all nodes,
 * interface carries the IP, the fast link carries every pair of nodes
 * (linkcheck.c), the accelerator's devices visible and healthy with the
 * memory free that --gpu-memory-utilization will ask (accel.h), Ray port
 * free or ours, no foreign container with our name, the engine hands the
 * GPUs to a container. The commands come from plan*.c; the answers come
 * back from whoever ran them. Only an answer a check recognises may fail
 * it with a cause and a fix; any other says what was asked, what came
 * back and that tandem could not tell (PFS_UNKNOWN, unrecognised-answer:
 * retried, never terminal).
 *
 * This file is the checks' steps: the commands due, the answers in, a node
 * finished (preflight_run.c hands them to a runner); each family of checks
 * has a file of its own (preflight_int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight_int.h"
#include "utf8.h"

static const char *const check_names[PF_COUNT] = {
	"ssh", "engine", "image", "model", "interface", "link", "devices",
	"memory", "ray port", "name free", "nvidia",
};

/* What a command's tag asks, for a message about the command itself. */
static const char *
tag_name(int tag)
{
	switch (tag) {
	case PF_ARCHIVE:
		return "image archive";
	case PF_XID:
		return "kernel log";
	case PF_ECC:
		return "ECC";
	case PF_RAYTOKEN:
		return "ray token";
	case PF_RDMA:
		return "RDMA";
	}
	return tag >= 0 && tag < PF_COUNT ? check_names[tag] : "preflight";
}

static const char *const status_names[] = {
	[PFS_PASSED] = "passed", [PFS_FAILED] = "failed",
	[PFS_NOT_CHECKED] = "not checked", [PFS_UNKNOWN] = "could not tell",
};

const char *
preflight_check_name(int c)
{
	return c >= 0 && c < PF_COUNT ? check_names[c] : "?";
}

const char *
preflight_status_name(enum pf_status s)
{
	return s <= PFS_UNKNOWN ? status_names[s] : "?";
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
	pf->gpu = xcalloc(cf->nnodes, sizeof(*pf->gpu));
	pf->image_ref = -1;
	pf->hw = xcalloc(cf->nnodes, sizeof(*pf->hw));
	pf->rdma = xcalloc(cf->nnodes, sizeof(*pf->rdma));
	pf->rdma_asked = xcalloc(cf->nnodes, sizeof(int));
	for (i = 0; i < cf->nnodes; i++)
		pf->pending[i] = -1;
	pf->nodes_pending = cf->nnodes;
	pflink_init(&pf->lk, cf->nnodes);
	pf->gmu = recovery_gmu_in_force(cf->recovery.gmu_steps,
	    cf->recovery.ngmu_steps, -1, cf->vllm.gpu_memory_utilization);
	return pf;
}

struct preflight *
preflight_new_link(struct config *cf)
{
	struct preflight *pf = preflight_new(cf);
	size_t i;
	int c;

	pf->link_only = 1;
	for (i = 0; i < pf->nnodes; i++)
		for (c = PF_ENGINE; c < PF_COUNT; c++)
			if (c != PF_LINK)
				preflight_set_status(pf, i, c, PFS_NOT_CHECKED,
				    "-",
				    NULL);
	return pf;
}

/* The columns each question fills: the others are "not checked". */
static int
asked_column(unsigned ask, int c)
{
	switch (c) {
	case PF_LINK:		return (ask & PFA_LINK) != 0;
	case PF_IFACE:		return (ask & PFA_IFACE) != 0;
	case PF_IMAGE:		return (ask & PFA_IMAGE) != 0;
	case PF_MODEL:		return (ask & PFA_MODEL) != 0;
	case PF_RAYPORT:	return (ask & PFA_RAYTOKEN) != 0;
	case PF_NAME:		return (ask & PFA_NAME) != 0;
	case PF_ENGINE:		return (ask & PFA_ENGINE) != 0;
	}
	return 0;
}

struct preflight *
preflight_new_only(struct config *cf, unsigned ask)
{
	struct preflight *pf;
	size_t i;
	int c;

	if (ask == PFA_LINK)
		return preflight_new_link(cf);
	pf = preflight_new(cf);
	pf->only = ask;
	for (i = 0; i < pf->nnodes; i++)
		for (c = PF_ENGINE; c < PF_COUNT; c++)
			if (!asked_column(ask, c) || c == PF_RAYPORT)
				preflight_set_status(pf, i, c, PFS_NOT_CHECKED,
				    "-",
				    NULL);
	/* no link question: its rounds have nothing to wait for */
	if (!(ask & PFA_LINK))
		pflink_abandon(&pf->lk);
	return pf;
}

/* Only the recheck's questions, each for its column. */
static void
only_commands(struct preflight *pf, size_t node, struct pf_cmd **v,
    size_t *n)
{
	const struct config *cf = pf->cf;
	char *model;

	if (pf->only & PFA_LINK)
		preflight_rdma_link_cmds(pf, node, v, n);
	if (pf->only & PFA_ENGINE)
		preflight_set_cmd(v, n, PF_ENGINE, cmd_engine_info(cf));
	if (pf->only & PFA_IMAGE) {
		preflight_set_cmd(v, n, PF_IMAGE, cmd_image_identity(cf));
		preflight_set_cmd(v, n, PF_ARCHIVE, cmd_archive_present(cf,
		    node));
	}
	if ((pf->only & PFA_MODEL) &&
	    (model = cmd_model_fingerprint(cf)) != NULL)
		preflight_set_cmd(v, n, PF_MODEL, model);
	else if (pf->only & PFA_MODEL)
		preflight_set_status(pf, node, PF_MODEL, PFS_NOT_CHECKED,
		    "not on a "
		    "volume (not checked)", NULL);
	if (pf->only & PFA_IFACE)
		preflight_set_cmd(v, n, PF_IFACE, cmd_iface_addr(cf, node));
	if (pf->only & PFA_NAME)
		preflight_set_cmd(v, n, PF_NAME, cmd_name_owner(cf, node));
	if (pf->only & PFA_RAYTOKEN)
		preflight_set_cmd(v, n, PF_RAYTOKEN, cmd_ray_token_present(cf));
}

int
preflight_link_only(const struct preflight *pf)
{
	return pf->link_only;
}

void
preflight_set_gmu(struct preflight *pf, double gmu)
{
	if (gmu > 0)
		pf->gmu = gmu;
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
	free(pf->gpu);
	pflink_free(&pf->lk);
	for (i = 0; i < pf->nnodes; i++) {
		free(pf->hw[i].scan);
		free(pf->hw[i].ecc);
		free(pf->hw[i].npu);
	}
	free(pf->hw);
	free(pf->rdma);
	free(pf->rdma_asked);
	config_free(pf->cf);	/* our reference */
	free(pf);
}

/*
 * Twice a probe's, and never under 20 s (the default's): a check may list
 * a model directory or start a container (`docker run --rm --gpus all`),
 * which a busy node does in seconds however short the probes' timeout is.
 * Tied to probe.timeout_s alone, the test bed's 3 s made 6 s, and CI's
 * loaded machine took healthy nodes for unreachable preflight after
 * preflight. A node slower than that is treated as unreachable.
 */
#define PREFLIGHT_TIMEOUT_MIN_S	20.0

double
preflight_timeout_s(const struct config *cf)
{
	double t = 2 * cf->probe.timeout_s;

	return t > PREFLIGHT_TIMEOUT_MIN_S ? t : PREFLIGHT_TIMEOUT_MIN_S;
}

double
preflight_verdict_timeout_s(const struct config *cf, double floor_s)
{
	/* two rounds (the second asks after the first's answer), a margin */
	double t = 2 * preflight_timeout_s(cf) + 10;

	return t > floor_s ? t : floor_s;
}

/*
 * The engine did not give its version. Its own words say why: down (start
 * it) or the socket refused ssh.user (the docker group). Anything else,
 * such as a template the engine rejects, could not be told: no fix, since
 * "start the engine" would be a guess.
 */
static void
engine_failed(struct preflight *pf, size_t node, const struct cmd_result *r)
{
	const struct config *cf = pf->cf;
	const struct diag *d;
	char line[300], fix[200];

	d = diag_match(r->err, line, sizeof(line));
	if (d == NULL)
		d = diag_match(r->out, line, sizeof(line));
	if (d && d->id == DIAG_ENGINE_DOWN) {
		utf8_fmt(fix, sizeof(fix), "start the engine: systemctl start "
		    "%s", strcmp(cf->container.engine, "podman") ? "docker" :
		    "podman.socket");
		preflight_set(pf, node, PF_ENGINE, 0, line, fix);
	} else if (d && d->id == DIAG_ENGINE_PERMISSION)
		preflight_set(pf, node, PF_ENGINE, 0, line,
		    "add ssh.user to the docker "
		    "group on the node (usermod -aG docker USER), or log in as "
		    "root");
	else
		preflight_set_unknown(pf, node, PF_ENGINE, cmd_engine_info(cf),
		    r);
}

/* The accelerator's questions; none: both checks not made. */

static void	node_finished(struct preflight *, size_t node);

size_t
preflight_commands(struct preflight *pf, size_t node, struct pf_cmd **cmds)
{
	const struct config *cf = pf->cf;
	const struct node_conf *nc = &cf->nodes[node];
	struct pf_cmd *v = NULL;
	size_t i, n = 0;
	char *model;

	*cmds = NULL;
	if (node >= pf->nnodes || pf->pending[node] != -1)
		return 0;
	preflight_set(pf, node, PF_SSH, 1, "host key known", NULL);
	if (pf->only) {
		only_commands(pf, node, &v, &n);
		goto out;
	}
	preflight_rdma_link_cmds(pf, node, &v, &n);
	if (pf->link_only)
		goto out;
	preflight_set_cmd(&v, &n, PF_ENGINE, cmd_engine_info(cf));
	preflight_set_cmd(&v, &n, PF_IMAGE, cmd_image_identity(cf));
	preflight_set_cmd(&v, &n, PF_ARCHIVE, cmd_archive_present(cf, node));
	if ((model = cmd_model_fingerprint(cf)) != NULL)
		preflight_set_cmd(&v, &n, PF_MODEL, model);
	else
		preflight_set_status(pf, node, PF_MODEL, PFS_NOT_CHECKED,
		    "not on a "
		    "volume (not checked)", NULL);
	preflight_set_cmd(&v, &n, PF_IFACE, cmd_iface_addr(cf, node));
	preflight_gpu_cmds(pf, node, &v, &n);
	preflight_set_cmd(&v, &n, PF_NAME, cmd_name_owner(cf, node));
	preflight_set_cmd(&v, &n, PF_WORKLOADS, cmd_workloads(cf));
	if (nc->is_head && cf->topology == TOPO_RAY)
		preflight_set_cmd(&v, &n, PF_RAYPORT, cmd_ray_port(cf));
	else
		preflight_set(pf, node, PF_RAYPORT, 1, "-", NULL);
	if (plan_wants_nvidia(cf)) {
		preflight_set_cmd(&v, &n, PF_NVIDIA, cmd_gpu_run(cf));
		preflight_set_cmd(&v, &n, PF_RUNTIMES, cmd_nvidia_runtime(cf));
	} else if (cf->container.accelerator != ACCEL_NVIDIA)
		preflight_set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED,
		    cf->container.
		    accelerator == ACCEL_ASCEND ? "not used (container."
		    "accelerator is ascend)" : "not used (container.accelerator "
		    "is none)", NULL);
	else
		preflight_set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED,
		    "not used "
		    "(container.extra_args pass the devices)", NULL);
	preflight_hw_cmds(pf, node, &v, &n);
out:
	for (i = 0; i < n; i++)
		v[i].node = node;
	pf->pending[node] = (int)n;
	*cmds = v;
	if (n == 0)
		node_finished(pf, node);
	return n;
}

size_t
preflight_more(struct preflight *pf, struct pf_cmd **cmds)
{
	return pflink_more(&pf->lk, cmds);
}

void
preflight_node_down(struct preflight *pf, size_t node, const char *why)
{
	int k;

	if (node >= pf->nnodes || pf->pending[node] != -1)
		return;
	preflight_set(pf, node, PF_SSH, 0, why, strncmp(why, "ssh ", 4) == 0 &&
	    strstr(why, "timed out") ?
	    "check the node's sshd: it answers too slowly or not at all "
	    "(load, a hanging AuthorizedKeysCommand or PAM)" :
	    strstr(why, "host key") ?
	    "verify the node, then ssh-keyscan it into ssh.known_hosts_file" :
	    strstr(why, "authentication") ?
	    "add the key's .pub to the node's authorized_keys" :
	    "check the node is up and ssh_host/ssh_port");
	/* nothing else was asked: not checked (-), never failed (x) */
	for (k = PF_ENGINE; k < PF_COUNT; k++)
		preflight_set_status(pf, node, k, PFS_NOT_CHECKED, "-", NULL);
	pf->pending[node] = 0;
	node_finished(pf, node);
}

void
preflight_answer(struct preflight *pf, size_t node, int tag,
    const struct cmd_result *r)
{
	const struct config *cf = pf->cf;
	const struct node_conf *nc;
	char buf[200], want[64];
	int running;
	enum name_owner owner;

	/* the pings come after the node's first round, maybe its end */
	if (tag >= PF_LINK_TAG_PING) {
		pflink_ping(&pf->lk, cf, node, tag, r);
		preflight_rdma_link_settled(pf);
		return;
	}
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
	if (r->error && tag != PF_WORKLOADS && tag != PF_RUNTIMES) {
		snprintf(buf, sizeof(buf), "the %s check: %s", tag_name(tag),
		    r->error);
		preflight_set(pf, node, PF_SSH, 0, buf,
		    "check the node: its commands "
		    "answer too slowly (load?) or not at all");
		if (tag < PF_COUNT)
			preflight_set(pf, node, tag, 0, "-", NULL);
		node_finished(pf, node);
		return;
	}
	switch (tag) {
	case PF_LINK:
		pflink_state(&pf->lk, cf, node, r);
		preflight_rdma_link_settled(pf);
		break;
	case PF_RDMA:
		rdma_parse(r->exit_code, r->out, nc->ip, nc->ifname,
		    &pf->rdma[node]);
		pf->rdma_asked[node] = 2;
		preflight_rdma_settle(pf);
		break;
	case PF_XID:
	case PF_ECC:
	case PF_RAYTOKEN:
		preflight_hw_answer(pf, node, tag, r);
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
			preflight_set(pf, node, PF_ENGINE, 1,
			    preflight_set_line1(r->out, buf,
			    sizeof(buf)), NULL);
		else
			engine_failed(pf, node, r);
		break;
	case PF_IMAGE:
		preflight_image_answer(pf, node, r);
		break;
	case PF_ARCHIVE:
		pf->image[node].archive_ok = r->exit_code == 0;
		break;
	case PF_NVIDIA:
		preflight_gpu_answer(pf, node, r);
		break;
	case PF_RUNTIMES:
		preflight_gpu_runtimes(pf, node, r);
		break;
	case PF_MODEL:
		preflight_image_model(pf, node, r);
		break;
	case PF_IFACE:
		snprintf(want, sizeof(want), "inet %s/", nc->ip);
		if (r->exit_code == 0 && strstr(r->out, want))
			preflight_set(pf, node, PF_IFACE, 1, nc->ifname, NULL);
		/* iproute2: Device "X" does not exist. */
		else if (r->exit_code != 0 && !strstr(r->err,
		    "does not exist"))
			preflight_set_unknown(pf, node, PF_IFACE,
			    cmd_iface_addr(cf,
			    node), r);
		else
			preflight_set(pf, node, PF_IFACE, 0,
			    r->exit_code == 0 ? "does not "
			    "carry the node's ip" : "no such interface", "set "
			    "nodes[].ifname to the interface carrying "
			    "nodes[].ip (ip -o addr)");
		break;
	case PF_GPUS:
	case PF_MEMORY:
		preflight_gpu_accel(pf, node, tag, r);
		break;
	case PF_RAYPORT:
		/* ss prints a line when something listens on the port; whose
		 * it is is decided once the name check has answered too. */
		if (r->exit_code == 127 || (r->exit_code != 0 &&
		    strstr(r->err, "not found")))
			preflight_set_status(pf, node, PF_RAYPORT,
			    PFS_NOT_CHECKED,
			    "not checked (no ss)", NULL);
		else if (r->exit_code != 0)
			preflight_set_unknown(pf, node, PF_RAYPORT,
			    cmd_ray_port(cf),
			    r);
		else if (r->outlen == 0)
			preflight_set(pf, node, PF_RAYPORT, 1, "free", NULL);
		else
			pf->port_held[node] = 1;
		break;
	case PF_NAME:
		if (r->exit_code != 0) {
			/* a failed ps says nothing about the name */
			preflight_set_unknown(pf, node, PF_NAME,
			    cmd_name_owner(cf,
			    node), r);
			break;
		}
		owner = docker_name_owner(r->out, cf->name, &running);
		if (owner == OWNER_FREE) {
			preflight_set(pf, node, PF_NAME, 1, "free", NULL);
		} else if (owner == OWNER_OURS) {
			pf->own_running[node] = running;
			preflight_set(pf, node, PF_NAME, 1, "ours", NULL);
		} else {
			utf8_fmt(buf, sizeof(buf), "%s exists, not started by "
			    "tandem", nc->container_name);
			preflight_set(pf, node, PF_NAME, 0, buf,
			    "remove it (docker rm -f) "
			    "or set nodes[].container_name");
		}
		break;
	}
	if (--pf->pending[node] == 0)
		node_finished(pf, node);
}

/* A node's last answer came (or its session was down, or a command never
 * ran to its end: then the node is done, whatever else is outstanding). */
static void
node_finished(struct preflight *pf, size_t node)
{
	if (pf->pending[node] > 0 && pf->res[node][PF_SSH].ok)
		return;
	pf->pending[node] = 0;
	preflight_gpu_settle(pf, node);
	preflight_gpu_own_memory(pf, node);
	if (!pf->res[node][PF_SSH].ok) {
		/* a node not asked: no pair with it can be proven now */
		pflink_abandon(&pf->lk);
		preflight_rdma_link_settled(pf);
	}
	if (pf->port_held[node])
		preflight_set(pf, node, PF_RAYPORT, pf->own_running[node],
		    pf->own_running[node] ? "held by our container" :
		    "held by another process", pf->own_running[node] ? NULL :
		    "stop what listens there, or change ray.port");
	preflight_hw_finished(pf, node);
	preflight_rdma_settle(pf);
	if (pf->nodes_pending == 0 || --pf->nodes_pending > 0)
		return;
	/* Every node answered: image and model must be the same everywhere. */
	if (pf->link_only)
		return;
	if (!pf->only || (pf->only & PFA_IMAGE))
		preflight_image_settle(pf);
	if (!pf->only || (pf->only & PFA_MODEL))
		preflight_image_settle_models(pf);
}

int
preflight_complete(const struct preflight *pf)
{
	return pf->nodes_pending == 0 && pf->lk.phase == LK_DONE;
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

const struct rdma_state *
preflight_rdma(const struct preflight *pf, size_t node)
{
	return node < pf->nnodes && pf->rdma_asked[node] == 2 ?
	    &pf->rdma[node] : NULL;
}

const struct pf_image *
preflight_image(const struct preflight *pf, size_t node)
{
	return &pf->image[node];
}

const struct image_ident *
preflight_image_ref(const struct preflight *pf)
{
	return pf->image_ref < 0 ? NULL : &pf->image[pf->image_ref].ident;
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

/*
 * A check that recognised its answer names the cause before one that
 * could not tell: the docker 20.10 CLI answers `info --format` with a
 * template error where `image inspect` says "permission denied".
 */
int
preflight_failure(const struct preflight *pf, size_t *node,
    enum diag_code *code, char *excerpt, size_t len)
{
	enum diag_code d;
	size_t i;
	int c, pass;

	for (pass = 0; pass < 2; pass++)
	for (i = 0; i < pf->nnodes; i++)
		for (c = 0; c < PF_COUNT; c++) {
			const struct pf_result *r = &pf->res[i][c];

			if (r->ok || r->detail[0] == '-')
				continue;
			/* could not tell: asked again, never terminal */
			d = r->status == PFS_UNKNOWN ? ACCEL_COULD_NOT_TELL :
			    recovery_preflight_diag((enum pf_check)c, r->detail);
			if (pass == 0 && d == DIAG_UNRECOGNISED_ANSWER)
				continue;
			utf8_fmt(excerpt, len, "preflight %s: %s%s%s",
			    preflight_check_name(c), r->detail, r->fix[0] ?
			    "; fix: " : "", r->fix);
			*node = i;
			*code = d;
			return 1;
		}
	return 0;
}
