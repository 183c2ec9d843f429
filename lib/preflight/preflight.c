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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "dockerout.h"
#include "gpucheck.h"
#include "hwfault.h"
#include "plan.h"
#include "preflight.h"
#include "preflight_link.h"
#include "quote.h"
#include "rdma.h"
#include "utf8.h"
#include "util.h"

/*
 * Not columns of the table: the unrelated-workload scan (only warnings,
 * workload.h) and whether the image archive is there (for settle_images).
 */
#define PF_WORKLOADS	PF_COUNT
#define PF_ARCHIVE	(PF_COUNT + 1)
/* The engine's NVIDIA runtimes or CDI specs: shown beside the GPU check. */
#define PF_RUNTIMES	(PF_COUNT + 2)
/* issue 33: the GPU driver's kernel lines and ECC counts (in the devices
 * column), ray.auth_token_file on the node (in the ray port column) */
#define PF_XID		(PF_COUNT + 3)
#define PF_ECC		(PF_COUNT + 4)
#define PF_RAYTOKEN	(PF_COUNT + 5)
/* issue 47: the fast interface's RDMA ports (in the link column) */
#define PF_RDMA		(PF_COUNT + 6)

/* What those said, per node (hw_answer). */
struct pf_hw {
	double			 since;		/* Unix time; 0: this boot */
	struct xid_scan		*scan;		/* NULL: no answer */
	struct gpu_ecc_list	*ecc;		/* NULL: no answer */
	struct accel_info	*npu;		/* Ascend's npu-smi info; NULL */
	int			 token_missing;
	char			 token_said[120];
};

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

struct preflight {
	struct config		*cf;		/* a reference of ours */
	size_t			 nnodes;
	struct pf_result	(*res)[PF_COUNT];
	struct pf_image		*image;		/* per node */
	struct model_print	*model;		/* per node */
	/* the node whose image all should hold; -1 none */
	int			 image_ref;
	int			*own_running;	/* our container runs there */
	int			*port_held;	/* something listens on ray.port */
	struct workloads	*wl;		/* unrelated workloads, per node */
	int			*wl_known;
	int			*pending;	/* answers a node still owes; -1: not asked */
	size_t			 nodes_pending;
	int			 link_only;	/* preflight_new_link */
	unsigned		 only;		/* preflight_new_only's ask; 0 all */
	struct pf_link		 lk;		/* the fast link's rounds */
	int			 lk_set;	/* its results are in res */
	double			 gmu;		/* what the start will ask */
	struct pf_gpu		*gpu;		/* the nvidia check */
	struct pf_hw		*hw;		/* per node */
	struct rdma_state	*rdma;		/* per node */
	int			*rdma_asked;	/* 1 asked, 2 answered */
	int			 rdma_set;	/* judged into the link column */
};

/*
 * The nvidia check: the engine's answer to a throwaway container with the
 * GPUs (gpucheck.h), and its runtime list (docker) or CDI specs (podman)
 * as information, put together once the node answered (nvidia_settle).
 */
struct pf_gpu {
	int		 answered;
	enum gpu_verdict verdict;
	int		 diag;		/* gpucheck's; -1: works */
	char		 detail[400];
	int		 listed;	/* the list answered */
	int		 nvidia;	/* docker: a runtime named nvidia */
	char		 list[200];
	char		 driver[32];	/* nvidia-smi's driver_version; "" */
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
				set_status(pf, i, c, PFS_NOT_CHECKED, "-",
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
				set_status(pf, i, c, PFS_NOT_CHECKED, "-",
				    NULL);
	/* no link question: its rounds have nothing to wait for */
	if (!(ask & PFA_LINK))
		pflink_abandon(&pf->lk);
	return pf;
}

static void	add(struct pf_cmd **, size_t *, int, char *);

/* The link column's first questions: the interface, and its RDMA ports. */
static void
add_link(struct preflight *pf, size_t node, struct pf_cmd **v, size_t *n)
{
	add(v, n, PF_LINK, cmd_link_state(pf->cf, node));
	add(v, n, PF_RDMA, cmd_rdma_state(pf->cf, node));
	pf->rdma_asked[node] = 1;
}

/* Only the recheck's questions, each for its column. */
static void
only_commands(struct preflight *pf, size_t node, struct pf_cmd **v,
    size_t *n)
{
	const struct config *cf = pf->cf;
	char *model;

	if (pf->only & PFA_LINK)
		add_link(pf, node, v, n);
	if (pf->only & PFA_ENGINE)
		add(v, n, PF_ENGINE, cmd_engine_info(cf));
	if (pf->only & PFA_IMAGE) {
		add(v, n, PF_IMAGE, cmd_image_identity(cf));
		add(v, n, PF_ARCHIVE, cmd_archive_present(cf, node));
	}
	if ((pf->only & PFA_MODEL) &&
	    (model = cmd_model_fingerprint(cf)) != NULL)
		add(v, n, PF_MODEL, model);
	else if (pf->only & PFA_MODEL)
		set_status(pf, node, PF_MODEL, PFS_NOT_CHECKED, "not on a "
		    "volume (not checked)", NULL);
	if (pf->only & PFA_IFACE)
		add(v, n, PF_IFACE, cmd_iface_addr(cf, node));
	if (pf->only & PFA_NAME)
		add(v, n, PF_NAME, cmd_name_owner(cf, node));
	if (pf->only & PFA_RAYTOKEN)
		add(v, n, PF_RAYTOKEN, cmd_ray_token_present(cf));
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
 * An answer a check does not recognise: what was asked (cmd, freed here),
 * the tool's own words and "could not tell", with no fix
 * (recovery_preflight_diag makes it unrecognised-answer: retried). The
 * engine's own words for down or permission denied are recognised
 * whatever was asked: "not checked" with them, and the engine check says
 * what to do.
 */
static void
could_not_tell(struct preflight *pf, size_t node, int check, char *cmd,
    const struct cmd_result *r)
{
	const struct diag *d = diag_match(r->err, NULL, 0);
	char buf[400], line[300];

	if (d == NULL)
		d = diag_match(r->out, NULL, 0);
	if (d && (d->id == DIAG_ENGINE_DOWN || d->id ==
	    DIAG_ENGINE_PERMISSION)) {
		(void)diag_match(r->errlen ? r->err : r->out, line,
		    sizeof(line));
		utf8_fmt(buf, sizeof(buf), "not checked: %s", line);
		set(pf, node, check, 0, buf, NULL);
	} else {
		diag_unknown_excerpt(buf, sizeof(buf), cmd ? cmd : "?",
		    r->exit_code, r->out, r->err);
		set_status(pf, node, check, PFS_UNKNOWN, buf, NULL);
	}
	free(cmd);
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
		set(pf, node, PF_ENGINE, 0, line, fix);
	} else if (d && d->id == DIAG_ENGINE_PERMISSION)
		set(pf, node, PF_ENGINE, 0, line, "add ssh.user to the docker "
		    "group on the node (usermod -aG docker USER), or log in as "
		    "root");
	else
		could_not_tell(pf, node, PF_ENGINE, cmd_engine_info(cf), r);
}

/* What cmd_gpu_run asks, for the check's lines. */
static void
gpu_asked(const struct config *cf, char *buf, size_t len)
{
	utf8_fmt(buf, len, "%s run %s", cf->container.engine,
	    strcmp(cf->container.engine, "podman") ? "--gpus all" :
	    "--device nvidia.com/gpu=all");
}

/*
 * The engine's answer to a container with the GPUs (gpucheck_verdict):
 * judged when the node is done, beside what the runtime list said.
 */
static void
gpu_answer(struct preflight *pf, size_t node, const struct cmd_result *r)
{
	struct pf_gpu *g = &pf->gpu[node];
	char asked[80];

	gpu_asked(pf->cf, asked, sizeof(asked));
	g->answered = 1;
	g->verdict = gpucheck_verdict(r->exit_code, r->out, r->err, asked,
	    g->detail, sizeof(g->detail), &g->diag);
	if (g->verdict == GPU_UNKNOWN) {
		/* the command itself, for whoever runs it by hand */
		char *cmd = cmd_gpu_run(pf->cf);

		diag_unknown_excerpt(g->detail, sizeof(g->detail), cmd,
		    r->exit_code, r->out, r->err);
		free(cmd);
	}
}

/*
 * docker: the runtimes `docker info` lists; podman: the CDI specs of kind
 * nvidia.com/gpu (grep -l names the files; its exit status says nothing
 * here: 2 whenever one of the two directories is missing, even when the
 * other holds the spec). Information only: dockerd needs just NVIDIA's
 * hook for --gpus, so a list without nvidia fails nothing, and a list that
 * could not be read says nothing.
 */
static void
runtimes_answer(struct preflight *pf, size_t node, const struct cmd_result *r)
{
	struct pf_gpu *g = &pf->gpu[node];
	size_t k;

	if (r->error)
		return;
	if (strcmp(pf->cf->container.engine, "podman") == 0) {
		utf8_copy(g->list, sizeof(g->list), r->out);
		for (k = 0; g->list[k]; k++)
			if (g->list[k] == '\n')
				g->list[k] = g->list[k + 1] ? ' ' : '\0';
		g->listed = 1;
	} else if (r->exit_code == 0) {
		g->nvidia = docker_runtimes_nvidia(r->out, g->list,
		    sizeof(g->list));
		g->listed = 1;
	}
}

/* The nvidia check's line: the engine's verdict, the list beside it. */
static void
nvidia_settle(struct preflight *pf, size_t node)
{
	const struct config *cf = pf->cf;
	struct pf_gpu *g = &pf->gpu[node];
	char buf[400], list[260] = "";
	int podman = strcmp(cf->container.engine, "podman") == 0;

	if (!g->answered || pf->res[node][PF_NVIDIA].done)
		return;
	if (g->listed && podman)
		utf8_fmt(list, sizeof(list), "; CDI spec %s", g->list[0] ?
		    g->list : "none in /etc/cdi or /var/run/cdi");
	else if (g->listed)
		utf8_fmt(list, sizeof(list), "; docker info Runtimes: %s%s",
		    g->list, g->nvidia || g->verdict != GPU_WORKS ? "" :
		    " (no nvidia runtime: NVIDIA's hook serves --gpus)");
	if (g->listed)
		set_value(pf, node, PF_NVIDIA, g->list);
	switch (g->verdict) {
	case GPU_WORKS:
		utf8_fmt(buf, sizeof(buf), "%s%s", g->detail, list);
		set(pf, node, PF_NVIDIA, 1, buf, NULL);
		break;
	case GPU_REFUSED:
		utf8_fmt(buf, sizeof(buf), "%s%s", g->detail, list);
		set(pf, node, PF_NVIDIA, 0, buf, podman ? "install "
		    "nvidia-container-toolkit, then nvidia-ctk cdi generate "
		    "--output=/etc/cdi/nvidia.yaml" : "install "
		    "nvidia-container-toolkit (its hook on dockerd's PATH), "
		    "then nvidia-ctk runtime configure --runtime=docker and "
		    "systemctl restart docker");
		break;
	case GPU_DRIVER:
		if (g->diag == DIAG_CUDA_DRIVER_TOO_OLD) {
			char fix[300];

			gpucheck_cuda_fix(g->detail, g->driver, fix,
			    sizeof(fix));
			set(pf, node, PF_NVIDIA, 0, g->detail, fix);
			break;
		}
		set(pf, node, PF_NVIDIA, 0, g->detail, "check the NVIDIA "
		    "driver on the node (nvidia-smi; a reboot after a driver "
		    "update), then tandemctl rebuild");
		break;
	case GPU_ENGINE:
		/*
		 * Not made: the engine down or refusing us, or no image to
		 * run. The engine's or the image's own check fails with those
		 * words and their fix; this column is "-", not a second ✗.
		 */
		set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED, g->detail,
		    NULL);
		break;
	case GPU_UNKNOWN:
		set_status(pf, node, PF_NVIDIA, PFS_UNKNOWN, g->detail, NULL);
		break;
	}
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
		/* the shell's cd: "can't cd" (dash), "No such file" (bash) */
		if (!strstr(r->err, "No such file or directory") &&
		    !strstr(r->err, "can't cd")) {
			could_not_tell(pf, node, PF_MODEL,
			    cmd_model_fingerprint(pf->cf), r);
			return;
		}
		utf8_fmt(buf, sizeof(buf), "directory missing: %s",
		    line1(r->err, line, sizeof(line)));
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
		/* cuda-driver-too-old's fix names it (nvidia_settle) */
		if (node < pf->nnodes)
			utf8_copy(pf->gpu[node].driver,
			    sizeof(pf->gpu[node].driver), ai->driver);
		v = accel_free(ai, pf->gmu, msg, sizeof(msg));
		accel_fix(cf, q, PF_MEMORY, ai, v, fix, sizeof(fix));
		set_status(pf, node, PF_MEMORY, verdict_status(v), msg, fix);
	}
	/* the NPUs' health, for /status's warnings (preflight_npu) */
	if (a == ACCEL_ASCEND && tag == PF_GPUS && node < pf->nnodes) {
		free(pf->hw[node].npu);
		pf->hw[node].npu = ai;
		return;
	}
	free(ai);
}

const struct accel_info *
preflight_npu(const struct preflight *pf, size_t node)
{
	return node < pf->nnodes ? pf->hw[node].npu : NULL;
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

/*
 * Issue 33: what a rebuild cannot fix, found before one starts. NVIDIA:
 * the driver's Xid lines in the kernel log since pf_hw.since, and the GPUs'
 * bus ids and uncorrectable ECC counts (lib/parse/xid.c, lib/policy/hwfault.c): a
 * fatal Xid fails the devices column, as gpu-xid. With Ray's token
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

/*
 * The image's identity (cmd_image_identity), settled once every node
 * answered (settle_images). The engines' words for an image that is not
 * there: docker's "No such image" (20.10 to 29, recorded), podman's "image
 * not known"; any other failure, or an answer not in the format asked
 * for, could not be told.
 */
static void
image_answer(struct preflight *pf, size_t node, const struct cmd_result *r)
{
	struct pf_image *im = &pf->image[node];
	char buf[400], line[300];

	im->id[0] = '\0';
	if (r->exit_code == 0 && image_ident_parse(r->out, &im->ident) == 0) {
		utf8_copy(im->id, sizeof(im->id), im->ident.id);
		utf8_copy(im->created, sizeof(im->created), im->ident.created);
		set(pf, node, PF_IMAGE, 1, "present", NULL);
		return;
	}
	memset(&im->ident, 0, sizeof(im->ident));
	if (r->exit_code != 0 && (strstr(r->err, "No such image") ||
	    strstr(r->err, "image not known"))) {
		utf8_fmt(buf, sizeof(buf), "absent: %s", line1(r->err, line,
		    sizeof(line)));
		set(pf, node, PF_IMAGE, 0, buf, NULL);
		return;
	}
	could_not_tell(pf, node, PF_IMAGE, cmd_image_identity(pf->cf), r);
}

static void
rdma_fail(struct preflight *pf, size_t node, enum diag_code code,
    const char *what)
{
	char buf[400];

	utf8_fmt(buf, sizeof(buf), "%s: %s", diag_code_name(code), what);
	set(pf, node, PF_LINK, 0, buf, diag_get(code)->remedy);
}

/*
 * Every node's RDMA answer in (or the node not asked), and the link
 * judged: a node whose link passed but whose RDMA port is down or
 * carries no RoCE v2 GID for its address fails the link column with the
 * RDMA diagnosis; so does a second link layer among the nodes. A node
 * without RDMA passes as it did. Once.
 */
static void
rdma_settle(struct preflight *pf)
{
	const struct config *cf = pf->cf;
	struct pf_result *r;
	char buf[300];
	size_t i, first = (size_t)-1;

	if (!pf->lk_set || pf->rdma_set)
		return;
	for (i = 0; i < pf->nnodes; i++)
		if (pf->rdma_asked[i] == 1 && pf->pending[i] > 0)
			return;
	pf->rdma_set = 1;
	for (i = 0; i < pf->nnodes; i++) {
		const struct rdma_state *st = &pf->rdma[i];

		r = &pf->res[i][PF_LINK];
		if (pf->rdma_asked[i] != 2 || st->v == RDMA_NONE || !r->ok ||
		    r->status != PFS_PASSED)
			continue;
		rdma_describe(st, cf->nodes[i].ifname, cf->nodes[i].ip, buf,
		    sizeof(buf));
		switch (st->v) {
		case RDMA_OK:
			if (first == (size_t)-1)
				first = i;
			else if (strcmp(st->link_layer, pf->rdma[first].
			    link_layer) != 0) {
				char both[400];

				utf8_fmt(both, sizeof(both), "%s %s %s, %s %s "
				    "%s", cf->nodes[first].name, pf->rdma[first].
				    dev, pf->rdma[first].link_layer, cf->nodes[i].
				    name, st->dev, st->link_layer);
				rdma_fail(pf, i, DIAG_RDMA_LINK_LAYER_MIXED,
				    both);
				break;
			}
			/* the value for the API, the detail for tandemctl check */
			utf8_fmt(r->value + strlen(r->value), sizeof(r->value) -
			    strlen(r->value), "%sRDMA %s", r->value[0] ? "; " :
			    "", buf);
			utf8_fmt(r->detail + strlen(r->detail), sizeof(r->detail) -
			    strlen(r->detail), "; RDMA %s", buf);
			break;
		case RDMA_PORT_DOWN:
			rdma_fail(pf, i, DIAG_RDMA_PORT_DOWN, buf);
			break;
		case RDMA_GID_MISSING:
			rdma_fail(pf, i, DIAG_RDMA_GID_MISSING, buf);
			break;
		case RDMA_UNKNOWN:
			/* asked again, never terminal */
			set_status(pf, i, PF_LINK, PFS_UNKNOWN, buf, NULL);
			break;
		case RDMA_NONE:
			break;
		}
	}
}

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
	rdma_settle(pf);
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
	if (pf->only) {
		only_commands(pf, node, &v, &n);
		goto out;
	}
	add_link(pf, node, &v, &n);
	if (pf->link_only)
		goto out;
	add(&v, &n, PF_ENGINE, cmd_engine_info(cf));
	add(&v, &n, PF_IMAGE, cmd_image_identity(cf));
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
	if (plan_wants_nvidia(cf)) {
		add(&v, &n, PF_NVIDIA, cmd_gpu_run(cf));
		add(&v, &n, PF_RUNTIMES, cmd_nvidia_runtime(cf));
	} else if (cf->container.accelerator != ACCEL_NVIDIA)
		set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED, cf->container.
		    accelerator == ACCEL_ASCEND ? "not used (container."
		    "accelerator is ascend)" : "not used (container.accelerator "
		    "is none)", NULL);
	else
		set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED, "not used "
		    "(container.extra_args pass the devices)", NULL);
	hw_commands(pf, node, &v, &n);
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
	/* nothing else was asked: not checked (-), never failed (x) */
	for (k = PF_ENGINE; k < PF_COUNT; k++)
		set_status(pf, node, k, PFS_NOT_CHECKED, "-", NULL);
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
	if (r->error && tag != PF_WORKLOADS && tag != PF_RUNTIMES) {
		snprintf(buf, sizeof(buf), "the %s check: %s", tag_name(tag),
		    r->error);
		set(pf, node, PF_SSH, 0, buf, "check the node: its commands "
		    "answer too slowly (load?) or not at all");
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
	case PF_RDMA:
		rdma_parse(r->exit_code, r->out, nc->ip, nc->ifname,
		    &pf->rdma[node]);
		pf->rdma_asked[node] = 2;
		rdma_settle(pf);
		break;
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
			engine_failed(pf, node, r);
		break;
	case PF_IMAGE:
		image_answer(pf, node, r);
		break;
	case PF_ARCHIVE:
		pf->image[node].archive_ok = r->exit_code == 0;
		break;
	case PF_NVIDIA:
		gpu_answer(pf, node, r);
		break;
	case PF_RUNTIMES:
		runtimes_answer(pf, node, r);
		break;
	case PF_MODEL:
		model_result(pf, node, r);
		break;
	case PF_IFACE:
		snprintf(want, sizeof(want), "inet %s/", nc->ip);
		if (r->exit_code == 0 && strstr(r->out, want))
			set(pf, node, PF_IFACE, 1, nc->ifname, NULL);
		/* iproute2: Device "X" does not exist. */
		else if (r->exit_code != 0 && !strstr(r->err,
		    "does not exist"))
			could_not_tell(pf, node, PF_IFACE, cmd_iface_addr(cf,
			    node), r);
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
		if (r->exit_code == 127 || (r->exit_code != 0 &&
		    strstr(r->err, "not found")))
			set_status(pf, node, PF_RAYPORT, PFS_NOT_CHECKED,
			    "not checked (no ss)", NULL);
		else if (r->exit_code != 0)
			could_not_tell(pf, node, PF_RAYPORT, cmd_ray_port(cf),
			    r);
		else if (r->outlen == 0)
			set(pf, node, PF_RAYPORT, 1, "free", NULL);
		else
			pf->port_held[node] = 1;
		break;
	case PF_NAME:
		if (r->exit_code != 0) {
			/* a failed ps says nothing about the name */
			could_not_tell(pf, node, PF_NAME, cmd_name_owner(cf,
			    node), r);
			break;
		}
		owner = docker_name_owner(r->out, cf->name, &running);
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
 * The GPU check runs the image: on a node that loads it first, the check
 * waits for the preflight after the load (the engine's "No such image"
 * now is no failure).
 */
static void
gpu_after_load(struct preflight *pf, size_t node)
{
	const struct pf_gpu *g = &pf->gpu[node];

	if (g->answered && g->verdict == GPU_ENGINE && g->diag ==
	    DIAG_IMAGE_MISSING)
		set_status(pf, node, PF_NVIDIA, PFS_NOT_CHECKED, "not checked "
		    "yet: it runs the image, which is loaded first", NULL);
}

/*
 * The image on every node against the one they should share (the
 * majority's build, else the head's), compared by what every image store
 * shows alike (image_ident_same: the creation date and the layers' diff
 * IDs): present and the same, absent, or another build of the tag. A node
 * with its archive readable is ok: tandemd loads it (load); without one it
 * fails, "differs" for image-mismatch. A node whose answer could not be
 * told stays as it is.
 */
static void
settle_images(struct preflight *pf)
{
	const struct config *cf = pf->cf;
	struct image_ident *ids = xcalloc(cf->nnodes, sizeof(*ids));
	const struct pf_image *ref;
	char buf[400], fix[200];
	size_t i;

	for (i = 0; i < cf->nnodes; i++)
		ids[i] = pf->image[i].ident;
	pf->image_ref = image_ident_reference(ids, cf->nnodes, cf->head);
	free(ids);
	ref = pf->image_ref < 0 ? NULL : &pf->image[pf->image_ref];
	for (i = 0; i < cf->nnodes; i++) {
		struct pf_image *im = &pf->image[i];
		struct pf_result *r = &pf->res[i][PF_IMAGE];
		const char *arc = cf->nodes[i].image_archive;
		char was[300];

		if (!r->done || r->detail[0] == '-' || (!im->id[0] &&
		    strncmp(r->detail, "absent", 6) != 0))
			continue;
		if (im->id[0] && ref && image_ident_same(&im->ident,
		    &ref->ident)) {
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
		if (im->id[0] && ref)
			utf8_fmt(was, sizeof(was), "differs: %.12s (%s) here, "
			    "%.12s (%s) on %s", im->id, im->created, ref->id,
			    ref->created, cf->nodes[pf->image_ref].name);
		else
			utf8_copy(was, sizeof(was), r->detail);
		if (arc && im->archive_ok) {
			im->load = 1;
			utf8_fmt(buf, sizeof(buf), "%s; loadable from %s", was,
			    arc);
			set(pf, i, PF_IMAGE, 1, buf, NULL);
			gpu_after_load(pf, i);
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
	nvidia_settle(pf, node);
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
	hw_finished(pf, node);
	rdma_settle(pf);
	if (pf->nodes_pending == 0 || --pf->nodes_pending > 0)
		return;
	/* Every node answered: image and model must be the same everywhere. */
	if (pf->link_only)
		return;
	if (!pf->only || (pf->only & PFA_IMAGE))
		settle_images(pf);
	if (!pf->only || (pf->only & PFA_MODEL))
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
