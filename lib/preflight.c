/*
 * The preflight's checks as pure functions (preflight.h): reachable with a
 * known host key, engine answers, image present and the same build on
 * every node, model directory present and the same on all nodes,
 * interface carries the IP, the fast link carries every pair of nodes
 * (linkcheck.c), the accelerator's devices visible and healthy with the
 * memory free that --gpu-memory-utilization will ask (accel.h), Ray port
 * free or ours, no foreign container with our name, the engine's NVIDIA
 * path present. The commands come from plan*.c; the answers come back
 * from whoever ran them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "dockerout.h"
#include "plan.h"
#include "preflight.h"
#include "preflight_link.h"
#include "quote.h"
#include "utf8.h"
#include "util.h"

/*
 * Not columns of the table: the unrelated-workload scan (only warnings,
 * workload.h) and whether the image archive is there (for settle_images).
 */
#define PF_WORKLOADS	PF_COUNT
#define PF_ARCHIVE	(PF_COUNT + 1)

static const char *const check_names[PF_COUNT] = {
	"ssh", "engine", "image", "model", "interface", "link", "devices",
	"memory", "ray port", "name free", "nvidia",
};

static const char *const status_names[] = {
	[PFS_PASSED] = "passed", [PFS_FAILED] = "failed",
	[PFS_NOT_CHECKED] = "not checked", [PFS_UNKNOWN] = "could not tell",
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
	int			 link_only;	/* preflight_new_link */
	struct pf_link		 lk;		/* the fast link's rounds */
	int			 lk_set;	/* its results are in res */
	double			 gmu;		/* what the start will ask */
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

static void
set_status(struct preflight *pf, size_t node, int check, enum pf_status s,
    const char *detail, const char *fix)
{
	struct pf_result *r = &pf->res[node][check];

	r->done = 1;
	r->status = s;
	r->ok = s == PFS_PASSED || s == PFS_NOT_CHECKED;
	utf8_copy(r->detail, sizeof(r->detail), detail);
	utf8_copy(r->fix, sizeof(r->fix), fix);
}

static void
set(struct preflight *pf, size_t node, int check, int ok, const char *detail,
    const char *fix)
{
	set_status(pf, node, check, ok ? PFS_PASSED : PFS_FAILED, detail, fix);
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
				set_status(pf, i, c, PFS_NOT_CHECKED, "-",
				    NULL);
	return pf;
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
	pflink_free(&pf->lk);
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

static enum pf_status
verdict_status(enum accel_verdict v)
{
	switch (v) {
	case AV_PASS:		return PFS_PASSED;
	case AV_FAIL:		return PFS_FAILED;
	case AV_NOT_CHECKED:	return PFS_NOT_CHECKED;
	case AV_UNKNOWN:	break;
	}
	return PFS_UNKNOWN;
}

/* What to do about an accelerator check that did not pass. */
static void
accel_fix(const struct config *cf, enum accel_query q, int check,
    const struct accel_info *ai, enum accel_verdict v, char *fix, size_t len)
{
	enum accel a = cf->container.accelerator;
	const char *tool = accel_tool(a);
	char *cmd;

	fix[0] = '\0';
	if (v == AV_FAIL && check == PF_GPUS)
		utf8_fmt(fix, len, "check the driver and the %s: %s",
		    accel_word(a, 1), a == ACCEL_ASCEND ? "npu-smi info (its "
		    "Health column)" : "nvidia-smi -L");
	else if (v == AV_FAIL)
		utf8_fmt(fix, len, "stop what holds the memory (%s lists it), "
		    "or lower --gpu-memory-utilization "
		    "(recovery.gpu_memory_utilization_steps lets tandem step "
		    "down)", tool);
	else if (v == AV_UNKNOWN && (cmd = cmd_accel(cf, q)) != NULL) {
		utf8_fmt(fix, len, "run %s on the node and see what it says; "
		    "tandem asks again", cmd);
		free(cmd);
	} else if (v == AV_NOT_CHECKED && ai->answer == AA_NO_TOOL)
		utf8_fmt(fix, len, "install %s with the driver, or set "
		    "container.accelerator to the nodes' devices (none: no "
		    "device checks)", tool);
}

/*
 * The devices column and the free memory, from the answers of the
 * accelerator's tool (accel.h): the devices it lists (their names, and
 * their health on Ascend), and whether every device has free the share
 * of its memory that the start's --gpu-memory-utilization asks. On Ascend
 * one answer, npu-smi info's, serves both.
 */
static void
accel_result(struct preflight *pf, size_t node, int tag,
    const struct cmd_result *r)
{
	const struct config *cf = pf->cf;
	enum accel a = cf->container.accelerator;
	enum accel_query q = tag == PF_GPUS ? accel_devices_query(a) :
	    AQ_MEMORY;
	struct accel_info *ai = xmalloc(sizeof(*ai));
	enum accel_verdict v;
	char msg[200], fix[200];

	accel_parse(a, q, r->exit_code, r->out, r->outlen, r->err, ai);
	if (tag == PF_GPUS) {
		v = accel_devices(ai, msg, sizeof(msg));
		accel_fix(cf, q, PF_GPUS, ai, v, fix, sizeof(fix));
		set_status(pf, node, PF_GPUS, verdict_status(v), msg, fix);
	}
	if (q == AQ_MEMORY) {
		v = accel_free(ai, pf->gmu, msg, sizeof(msg));
		accel_fix(cf, q, PF_MEMORY, ai, v, fix, sizeof(fix));
		set_status(pf, node, PF_MEMORY, verdict_status(v), msg, fix);
	}
	free(ai);
}

/* The accelerator's questions; none: both checks not made. */
static void	add(struct pf_cmd **, size_t *, int, char *);

static void
add_accel(struct preflight *pf, size_t node, struct pf_cmd **v, size_t *n)
{
	const struct config *cf = pf->cf;
	enum accel_query q = accel_devices_query(cf->container.accelerator);
	struct cmd_result none = { .exit_code = 0, .out = "", .err = "" };

	if (cf->container.accelerator == ACCEL_NONE) {
		accel_result(pf, node, PF_GPUS, &none);
		accel_result(pf, node, PF_MEMORY, &none);
		return;
	}
	add(v, n, PF_GPUS, cmd_accel(cf, q));
	if (q != AQ_MEMORY)
		add(v, n, PF_MEMORY, cmd_accel(cf, AQ_MEMORY));
}

static void	node_finished(struct preflight *, size_t node);

/*
 * The link check judged, or given up because a node could not be asked:
 * its column, once. Given up, it says nothing ("-"): the node's ssh
 * check says why.
 */
static void
link_settled(struct preflight *pf)
{
	size_t i;

	if (pf->lk.phase != LK_DONE || pf->lk_set)
		return;
	pf->lk_set = 1;
	for (i = 0; i < pf->nnodes; i++)
		if (pf->lk.ran)
			pflink_result(&pf->lk, pf->cf, i, &pf->res[i][PF_LINK]);
		else if (!pf->res[i][PF_LINK].done)
			set(pf, i, PF_LINK, 0, "-", NULL);
}

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
	size_t i, n = 0;
	char *model;

	*cmds = NULL;
	if (node >= pf->nnodes || pf->pending[node] != -1)
		return 0;
	set(pf, node, PF_SSH, 1, "host key known", NULL);
	add(&v, &n, PF_LINK, cmd_link_state(cf, node));
	if (pf->link_only)
		goto out;
	add(&v, &n, PF_ENGINE, cmd_engine_info(cf));
	add(&v, &n, PF_IMAGE, cmd_image_id(cf));
	add(&v, &n, PF_ARCHIVE, cmd_archive_present(cf, node));
	if ((model = cmd_model_fingerprint(cf)) != NULL)
		add(&v, &n, PF_MODEL, model);
	else
		set_status(pf, node, PF_MODEL, PFS_NOT_CHECKED, "not on a "
		    "volume (not checked)", NULL);
	add(&v, &n, PF_IFACE, cmd_iface_addr(cf, node));
	add_accel(pf, node, &v, &n);
	add(&v, &n, PF_NAME, cmd_name_owner(cf, node));
	add(&v, &n, PF_WORKLOADS, cmd_workloads(cf));
	if (nc->is_head && cf->topology == TOPO_RAY)
		add(&v, &n, PF_RAYPORT, cmd_ray_port(cf));
	else
		set(pf, node, PF_RAYPORT, 1, "-", NULL);
	if (plan_wants_nvidia(cf))
		add(&v, &n, PF_NVIDIA, cmd_nvidia_runtime(cf));
	else if (cf->container.accelerator != ACCEL_NVIDIA)
		set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED, cf->container.
		    accelerator == ACCEL_ASCEND ? "not used (container."
		    "accelerator is ascend)" : "not used (container.accelerator "
		    "is none)", NULL);
	else
		set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED, "not used "
		    "(container.extra_args pass the devices)", NULL);
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
	int running;
	enum name_owner owner;

	/* the pings come after the node's first round, maybe its end */
	if (tag >= PF_LINK_TAG_PING) {
		pflink_ping(&pf->lk, cf, node, tag, r);
		link_settled(pf);
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
	if (r->error && tag != PF_WORKLOADS) {
		set(pf, node, PF_SSH, 0, r->error, "check the node's sshd: it "
		    "answers too slowly or not at all");
		if (tag < PF_COUNT)
			set(pf, node, tag, 0, "-", NULL);
		node_finished(pf, node);
		return;
	}
	switch (tag) {
	case PF_LINK:
		pflink_state(&pf->lk, cf, node, r);
		link_settled(pf);
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
	case PF_MEMORY:
		accel_result(pf, node, tag, r);
		break;
	case PF_RAYPORT:
		/* ss prints a line when something listens on the port; whose
		 * it is is decided once the name check has answered too. */
		if (r->exit_code != 0)
			set_status(pf, node, PF_RAYPORT, PFS_NOT_CHECKED,
			    "not checked (no ss)", NULL);
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


/*
 * Memory that is freed before the start: our own container still runs on
 * the node (a daemon restarted beside a cluster it did not adopt), and the
 * teardown removes it; or container.stop_foreign stops an unrelated
 * container first. Too little free memory now says nothing about the
 * start then: not checked, with what was read.
 */
static void
own_memory(struct preflight *pf, size_t node)
{
	struct pf_result *r = &pf->res[node][PF_MEMORY];
	const struct workload *stopped = NULL;
	char buf[200];
	size_t i;

	if (r->status != PFS_FAILED)
		return;
	for (i = 0; pf->wl_known[node] && i < pf->wl[node].n; i++)
		if (pf->wl[node].w[i].kind == WL_CONTAINER &&
		    workload_stop_match(&pf->cf->container.stop_foreign,
		    pf->wl[node].w[i].name)) {
			stopped = &pf->wl[node].w[i];
			break;
		}
	if (pf->own_running[node])
		utf8_fmt(buf, sizeof(buf), "not checked: our container runs "
		    "here, its memory is freed by the teardown (read: %s)",
		    r->detail);
	else if (stopped)
		utf8_fmt(buf, sizeof(buf), "not checked: container.stop_foreign "
		    "stops %s first (read: %s)", stopped->name, r->detail);
	else
		return;
	set_status(pf, node, PF_MEMORY, PFS_NOT_CHECKED, buf, NULL);
}

/* A node's last answer came (or its session was down, or a command never
 * ran to its end: then the node is done, whatever else is outstanding). */
static void
node_finished(struct preflight *pf, size_t node)
{
	if (pf->pending[node] > 0 && pf->res[node][PF_SSH].ok)
		return;
	pf->pending[node] = 0;
	own_memory(pf, node);
	if (!pf->res[node][PF_SSH].ok) {
		/* a node not asked: no pair with it can be proven now */
		pflink_abandon(&pf->lk);
		link_settled(pf);
	}
	if (pf->port_held[node])
		set(pf, node, PF_RAYPORT, pf->own_running[node],
		    pf->own_running[node] ? "held by our container" :
		    "held by another process", pf->own_running[node] ? NULL :
		    "stop what listens there, or change ray.port");
	if (pf->nodes_pending == 0 || --pf->nodes_pending > 0)
		return;
	/* Every node answered: image and model must be the same everywhere. */
	if (pf->link_only)
		return;
	settle_images(pf);
	settle_models(pf);
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
			/* could not tell: asked again, never terminal */
			*code = r->status == PFS_UNKNOWN ? ACCEL_COULD_NOT_TELL :
			    recovery_preflight_diag((enum pf_check)c, r->detail);
			return 1;
		}
	return 0;
}
