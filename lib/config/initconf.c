/*
 * tandemctl init's decisions. Each follows what an operator of the DGX
 * Spark Ray guide's cluster would do by hand, and says so:
 *
 * - the fast link: the subnet every node shares with the fastest slowest
 *   end (netinfo.c link_choices), so NCCL, Gloo and Ray get the QSFP
 *   interface and its 10.10.10.x, not the management LAN;
 * - the parallel sizes from the GPUs: one GPU a node (DGX Spark) is the
 *   guide's --tensor-parallel-size over all nodes; several a node is
 *   vLLM's multi-node rule, tensor parallel within a node and pipeline
 *   parallel across them;
 * - the image and the model directory that every node holds, since each
 *   node runs its own container from its own copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"
#include "initconf.h"

#define NOTE(v, ...)	strv_addf((v), __VA_ARGS__)

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of every node's list (the head's order), into out. */
static void
common(const struct init_node *nodes, size_t n, size_t off, struct strv *out)
{
	const struct strv *first = (const struct strv *)((const char *)&nodes[0]
	    + off);
	size_t i, k;

	strv_init(out);
	for (i = 0; i < first->n; i++) {
		for (k = 1; k < n; k++)
			if (!strv_has((const struct strv *)((const char *)
			    &nodes[k] + off), first->v[i]))
				break;
		if (k == n)
			strv_add(out, first->v[i]);
	}
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
}

static void
join(const struct strv *v, char *buf, size_t len)
{
	size_t i, l = 0;

	buf[0] = '\0';
	for (i = 0; i < v->n && l + 1 < len; i++) {
		snprintf(buf + l, len - l, "%s%s", i ? ", " : "", v->v[i]);
		l = strlen(buf);
	}
}

char *
init_pick_model(const struct init_node *nodes, size_t n,
    const struct init_opts *o, struct strv *errors)
{
	struct strv both;
	char list[600];
	char *m = NULL;

	if (o->model)
		return xstrdup(o->model);
	common(nodes, n, offsetof(struct init_node, model_dirs), &both);
	join(&both, list, sizeof(list));
	if (both.n == 1)
		m = xstrdup(both.v[0]);
	else if (both.n == 0)
		NOTE(errors, "no model directory (with a config.json) under "
		    "/model or /models is on every node: pass --model PATH, "
		    "the same path on every node");
	else
		NOTE(errors, "several model directories are on every node "
		    "(%s): pass --model PATH for the one to serve", list);
	strv_free(&both);
	return m;
}

static const char *
engine_of(const struct init_node *nn)
{
	return nn->engine ? nn->engine : "docker";
}

/* The vLLM images every node holds, or --image if every node holds it. */
static char *
pick_image(const struct init_node *nodes, size_t n, const struct init_opts *o,
    struct init_plan *p)
{
	struct strv both, vllm;
	char list[600], *img = NULL;
	size_t i, k;

	if (o->image) {
		for (k = 0; k < n; k++)
			if (!strv_has(&nodes[k].images, o->image))
				NOTE(&p->errors, "image %s is not on %s: %s "
				    "pull %s there (or %s load -i a docker "
				    "save of it)", o->image, nodes[k].ssh_host,
				    engine_of(&nodes[k]), o->image,
				    engine_of(&nodes[k]));
		return p->errors.n ? NULL : xstrdup(o->image);
	}
	common(nodes, n, offsetof(struct init_node, images), &both);
	strv_init(&vllm);
	for (i = 0; i < both.n; i++)
		if (strstr(both.v[i], "vllm"))
			strv_add(&vllm, both.v[i]);
	join(&vllm, list, sizeof(list));
	if (vllm.n == 1)
		img = xstrdup(vllm.v[0]);
	else if (vllm.n == 0)
		NOTE(&p->errors, "no vLLM image is on every node: docker pull "
		    "one on each (the DGX Spark guide: vllm/vllm-openai:"
		    "cu130-nightly), then pass --image REF");
	else
		NOTE(&p->errors, "several vLLM images are on every node (%s): "
		    "pass --image REF for the one to run (the DGX Spark guide: "
		    "cu130-nightly for qwen3_5_moe, not nvcr.io/nvidia/vllm "
		    "26.01/26.02)", list);
	strv_free(&both);
	strv_free(&vllm);
	return img;
}

static int
link_matches(const struct link_choice *c, const char *want)
{
	return strcmp(c->subnet, want) == 0 || strcmp(c->end[0].ifname, want)
	    == 0;
}

static void
describe_link(const struct link_choice *c, char *buf, size_t len)
{
	char speed[32];

	net_speed_label(c->speed, speed, sizeof(speed));
	snprintf(buf, len, "%s on %s (%s%s, MTU %d%s%s)", c->subnet,
	    c->end[0].ifname, speed, c->speed > 0 ? " at the slowest end" : "",
	    c->mtu, c->mtu_agree ? "" : ", MTUs differ", c->all_up ? "" :
	    ", NOT UP on every node");
}

/* 0 with p->link set, or -1 with an error. */
static int
pick_link(const struct init_node *nodes, size_t n, const struct init_opts *o,
    struct init_plan *p)
{
	struct link_node *ln = xcalloc(n, sizeof(*ln));
	char d[200];
	size_t k;

	for (k = 0; k < n; k++) {
		ln[k].name = nodes[k].ssh_host;
		ln[k].ifs = &nodes[k].ifs;
		ln[k].ssh_ip = nodes[k].facts.ssh_ip[0] ?
		    nodes[k].facts.ssh_ip : NULL;
	}
	p->nlinks = link_choices(ln, n, &p->links);
	free(ln);
	if (p->nlinks == 0) {
		NOTE(&p->errors, "no subnet is shared by every node (each with "
		    "an address of its own): give the fast interfaces "
		    "addresses on one subnet (the DGX Spark guide: 10.10.10.1 "
		    "and 10.10.10.2 on enp1s0f0np0), then run tandemctl init "
		    "again");
		return -1;
	}
	p->link = 0;
	if (o->link) {
		for (k = 0; k < p->nlinks; k++)
			if (link_matches(&p->links[k], o->link))
				break;
		if (k == p->nlinks) {
			NOTE(&p->errors, "--link %s: no subnet every node "
			    "shares is on that interface or subnet", o->link);
			return -1;
		}
		p->link = k;
	}
	describe_link(&p->links[p->link], d, sizeof(d));
	NOTE(&p->notes, "fast link: %s%s", d, o->link ? " (--link)" : "");
	for (k = 0; k < n; k++)
		NOTE(&p->notes, "  %s: %s %s", nodes[k].ssh_host,
		    p->links[p->link].end[k].ifname,
		    p->links[p->link].end[k].ip);
	for (k = 0; k < p->nlinks; k++) {
		if (k == p->link)
			continue;
		describe_link(&p->links[k], d, sizeof(d));
		NOTE(&p->notes, "  also shared: %s%s", d, p->links[k].ssh ?
		    ": the network SSH uses" : "");
	}
	if (p->links[p->link].ssh) {
		for (k = 0; k < p->nlinks; k++)
			if (!p->links[k].ssh && !p->links[k].all_up)
				break;
		if (k < p->nlinks)
			NOTE(&p->todo, "the fast link chosen is the network "
			    "SSH uses (%s): %s (%s) is shared by every node "
			    "too, but not up on every node. If that is the "
			    "fast link, tandemctl init --link %s says what is "
			    "wrong with it", p->links[p->link].subnet,
			    p->links[k].end[0].ifname, p->links[k].subnet,
			    p->links[k].end[0].ifname);
		else
			NOTE(&p->todo, "the fast link is the network SSH uses "
			    "(%s): no other subnet is shared by every node. If "
			    "the nodes have a faster link, give its interfaces "
			    "addresses on one subnet and run tandemctl init "
			    "again", p->links[p->link].subnet);
	}
	if (!p->links[p->link].all_up)
		NOTE(&p->todo, "the fast link is not up on every node: see "
		    "tandemctl check (link-down)");
	if (!p->links[p->link].mtu_agree)
		NOTE(&p->todo, "the fast link's MTU differs between nodes: "
		    "give every node's interface one MTU (mtu-mismatch)");
	return 0;
}

/* The nodes' names: their hostnames when usable and distinct. */
static void
names(const struct init_node *nodes, size_t n, struct strv *out)
{
	size_t k, j;
	int ok = 1;

	strv_init(out);
	for (k = 0; k < n && ok; k++) {
		ok = cf_valid_name(nodes[k].facts.hostname);
		for (j = 0; j < k && ok; j++)
			ok = strcmp(nodes[j].facts.hostname,
			    nodes[k].facts.hostname) != 0;
	}
	for (k = 0; k < n; k++) {
		if (ok)
			strv_add(out, nodes[k].facts.hostname);
		else if (k == 0)
			strv_add(out, "head");
		else
			strv_addf(out, "worker%zu", k);
	}
}

/* The same engine everywhere; NULL with errors otherwise. */
static const char *
pick_engine(const struct init_node *nodes, size_t n, struct init_plan *p)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (nodes[k].engine == NULL)
			NOTE(&p->errors, "no container engine answers on "
			    "%s%s%s: install docker (or podman) with NVIDIA's "
			    "container toolkit there", nodes[k].ssh_host,
			    nodes[k].engine_error[0] ? ": " : "",
			    nodes[k].engine_error);
		else if (strcmp(nodes[k].engine, nodes[0].engine) != 0)
			NOTE(&p->errors, "%s runs %s, %s runs %s: tandem "
			    "drives one engine on every node",
			    nodes[0].ssh_host, nodes[0].engine,
			    nodes[k].ssh_host, nodes[k].engine);
	return p->errors.n ? NULL : nodes[0].engine;
}

/* TP and PP from the GPUs; -1 with errors when they do not add up. */
static int
pick_sizes(const struct init_node *nodes, size_t n, struct init_plan *p)
{
	size_t k;
	int g = nodes[0].gpus;

	for (k = 0; k < n; k++) {
		if (nodes[k].gpus > 0)
			continue;
		if (nodes[k].facts.npu_smi && !nodes[k].facts.nvidia_smi)
			NOTE(&p->errors, "%s has Ascend NPUs (npu-smi): "
			    "tandemctl init writes NVIDIA clusters; start from "
			    "etc/tandem-dp.json (the Ascend data-parallel "
			    "guide's cluster)", nodes[k].ssh_host);
		else
			NOTE(&p->errors, "no GPU on %s (%s): check the driver "
			    "there (nvidia-smi -L)", nodes[k].ssh_host,
			    nodes[k].facts.nvidia_smi ? "nvidia-smi -L lists "
			    "none" : "no nvidia-smi on the PATH");
	}
	if (p->errors.n)
		return -1;
	for (k = 1; k < n; k++)
		if (nodes[k].gpus != g) {
			NOTE(&p->errors, "%s has %d GPUs, %s %d: vLLM needs "
			    "the same number on every node", nodes[0].ssh_host,
			    g, nodes[k].ssh_host, nodes[k].gpus);
			return -1;
		}
	if (g == 1) {
		/* the DGX Spark guide: one GB10 a node, TP over the nodes */
		p->tp = (int)n;
		p->pp = 1;
	} else {
		p->tp = g;
		p->pp = (int)n;
	}
	if (p->pp > 1)
		NOTE(&p->notes, "GPUs: %d a node (%s): --tensor-parallel-size "
		    "%d within a node, --pipeline-parallel-size %d across them",
		    g, nodes[0].gpu_name[0] ? nodes[0].gpu_name : "NVIDIA",
		    p->tp, p->pp);
	else
		NOTE(&p->notes, "GPUs: 1 a node (%s): --tensor-parallel-size "
		    "%d across the nodes, as the DGX Spark guide",
		    nodes[0].gpu_name[0] ? nodes[0].gpu_name : "NVIDIA", p->tp);
	if (g == 1 && (n & (n - 1)) != 0)
		NOTE(&p->todo, "--tensor-parallel-size %d: a model's attention "
		    "heads must divide by it; if yours do not, use "
		    "--tensor-parallel-size 1 --pipeline-parallel-size %zu in "
		    "vllm.args", p->tp, n);
	return 0;
}

/*
 * --gpu-memory-utilization from what the fullest GPU has free, less 5 %,
 * down to a multiple of 0.05 (the DGX Spark guide's node: 40 of 119.7 GiB
 * held by other programs, 0.61 less the margin: 0.60, the value the guide
 * found to start where 0.90 failed), and the remedy ladder below it. 0
 * when no node reports its GPU memory (GB10's unified memory may not):
 * then only the ladder, from vLLM's 0.9 down.
 */
static double
pick_gmu(const struct init_node *nodes, size_t n, struct init_plan *p,
    json_t **steps)
{
	double free = 2, gmu;
	size_t k;

	for (k = 0; k < n; k++)
		if (nodes[k].gpu_free < 0)
			break;
		else if (nodes[k].gpu_free < free)
			free = nodes[k].gpu_free;
	if (k < n) {
		*steps = json_pack("[f, f, f, f]", 0.8, 0.7, 0.6, 0.5);
		NOTE(&p->notes, "GPU memory: not reported by every node "
		    "(GB10's unified memory may not): vLLM's "
		    "--gpu-memory-utilization 0.9, and tandem steps down 0.8, "
		    "0.7, 0.6, 0.5 when vLLM says the memory is short");
		return 0;
	}
	gmu = (double)(long)((free - 0.05) * 20 + 1e-9) / 20;
	if (gmu > 0.9)
		gmu = 0.9;
	if (gmu < 0.3) {
		NOTE(&p->todo, "only %.0f %% of the GPU memory is free on the "
		    "fullest node: stop what holds it (nvidia-smi lists it) "
		    "before tandem starts vLLM", free * 100);
		gmu = 0.3;
	}
	*steps = gmu - 0.1 >= 0.3 ? json_pack("[f, f]", gmu, gmu - 0.1) :
	    json_pack("[f]", gmu);
	NOTE(&p->notes, "GPU memory: %.0f %% free on the fullest node: "
	    "--gpu-memory-utilization %.2f, then %.2f if vLLM finds it short",
	    free * 100, gmu, gmu - 0.1 >= 0.3 ? gmu - 0.1 : gmu);
	return gmu;
}

/* The model's files on every node: present, the same count and size. */
static void
check_model(const struct init_node *nodes, size_t n, const char *model,
    struct init_plan *p)
{
	size_t k;
	int same = 1;

	for (k = 0; k < n; k++)
		if (!nodes[k].model_found)
			NOTE(&p->errors, "model %s is not on %s (no "
			    "config.json there): copy it to the same path on "
			    "every node", model, nodes[k].ssh_host);
	if (p->errors.n)
		return;
	for (k = 1; k < n; k++)
		same &= nodes[k].model_files == nodes[0].model_files &&
		    nodes[k].model_bytes == nodes[0].model_bytes;
	NOTE(&p->notes, "model: %s, %zu files, %.1f GiB%s", model,
	    nodes[0].model_files, (double)nodes[0].model_bytes /
	    (1024.0 * 1024 * 1024), same ? " on every node" : "");
	if (!same)
		NOTE(&p->todo, "the model's copies differ between nodes (files "
		    "or sizes): copy the same one to every node (rsync -a from "
		    "the head); tandemctl check names the files");
}

/* Whether the operator's own vllm.args (after --) set this flag. */
static int
given(const struct init_opts *o, const char *flag)
{
	size_t k, l = strlen(flag);

	for (k = 0; k < o->nvllm_args; k++)
		if (strncmp(o->vllm_args[k], flag, l) == 0 &&
		    (o->vllm_args[k][l] == '\0' || o->vllm_args[k][l] == '='))
			return 1;
	return 0;
}

/* The volume that shows the model in the container: its parent. */
static char *
model_volume(const char *model)
{
	const char *slash = strrchr(model, '/');
	size_t l = slash && slash != model ? (size_t)(slash - model) :
	    strlen(model);

	return xprintf("%.*s:%.*s", (int)l, model, (int)l, model);
}

void
init_derive(const struct init_node *nodes, size_t n,
    const struct init_opts *o, const char *model, struct init_plan *p)
{
	const struct link_choice *lc;
	const char *engine;
	struct strv nm;
	json_t *cfg, *jn, *args, *steps = NULL;
	double gmu;
	char *vol;
	size_t k;

	memset(p, 0, sizeof(*p));
	strv_init(&p->notes);
	strv_init(&p->errors);
	strv_init(&p->todo);
	for (k = 0; k < n; k++)
		NOTE(&p->notes, "%s: %s%s%s, %d GPU%s%s%s", nodes[k].ssh_host,
		    nodes[k].engine ? nodes[k].engine : "no engine",
		    nodes[k].engine ? " " : "", nodes[k].engine_version,
		    nodes[k].gpus, nodes[k].gpus == 1 ? "" : "s",
		    nodes[k].gpu_name[0] ? ", " : "", nodes[k].gpu_name);
	engine = pick_engine(nodes, n, p);
	pick_sizes(nodes, n, p);
	if (engine)
		p->image = pick_image(nodes, n, o, p);
	pick_link(nodes, n, o, p);
	if (model) {
		p->model = xstrdup(model);
		check_model(nodes, n, model, p);
	}
	if (p->errors.n || model == NULL)
		return;
	NOTE(&p->notes, "image: %s (on every node)", p->image);
	lc = &p->links[p->link];
	names(nodes, n, &nm);
	jn = json_array();
	for (k = 0; k < n; k++) {
		json_t *node = json_pack("{s:s, s:s, s:s}", "name", nm.v[k],
		    "role", k == 0 ? "head" : "worker", "ssh_host",
		    nodes[k].ssh_host);

		if (nodes[k].ssh_port != 22)
			json_object_set_new(node, "ssh_port",
			    json_integer(nodes[k].ssh_port));
		json_object_set_new(node, "ip", json_string(lc->end[k].ip));
		json_object_set_new(node, "ifname",
		    json_string(lc->end[k].ifname));
		json_array_append_new(jn, node);
	}
	strv_free(&nm);
	args = json_array();
	if (!given(o, "--tensor-parallel-size")) {
		json_array_append_new(args, json_string(
		    "--tensor-parallel-size"));
		json_array_append_new(args, json_sprintf("%d", p->tp));
	}
	if (p->pp > 1 && !given(o, "--pipeline-parallel-size")) {
		json_array_append_new(args, json_string(
		    "--pipeline-parallel-size"));
		json_array_append_new(args, json_sprintf("%d", p->pp));
	}
	gmu = pick_gmu(nodes, n, p, &steps);
	if (gmu > 0 && !given(o, "--gpu-memory-utilization")) {
		json_array_append_new(args, json_string(
		    "--gpu-memory-utilization"));
		json_array_append_new(args, json_sprintf("%.2f", gmu));
	}
	for (k = 0; k < o->nvllm_args; k++)
		json_array_append_new(args, json_string(o->vllm_args[k]));
	vol = model_volume(model);
	cfg = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s}, "
	    "s:{s:s, s:s, s:s, s:[s]}, s:o, s:{s:s, s:o}}",
	    "name", o->name ? o->name : "tandem",
	    "api_token_file", o->token_file,
	    "topology", "ray",
	    "ssh", "user", o->user, "identity_file", o->identity_file,
	    "known_hosts_file", o->known_hosts_file,
	    "container", "engine", engine, "image", p->image, "shm_size", "16g",
	    "volumes", vol,
	    "nodes", jn,
	    "vllm", "model", model, "args", args);
	free(vol);
	if (cfg == NULL) {
		/* a value from a node that is not UTF-8 (an image name) */
		json_decref(steps);
		NOTE(&p->errors, "a value the nodes gave is not text tandem.json "
		    "can hold (not UTF-8): pass --image and --model");
		return;
	}
	json_object_set_new(cfg, "recovery", json_pack("{s:o}",
	    "gpu_memory_utilization_steps", steps));
	if (o->listen)
		json_object_set_new(cfg, "listen", json_string(o->listen));
	if (!o->head_is_local) {
		/* tandemd probes vLLM where it runs; the default is the head */
		json_object_set_new(json_object_get(cfg, "vllm"), "url",
		    json_sprintf("http://%s:8000", lc->end[0].ip));
		NOTE(&p->notes, "vllm.url: http://%s:8000 (tandemd is not on "
		    "the head: it probes vLLM over the fast link)",
		    lc->end[0].ip);
	}
	p->config = cfg;
	if (o->nvllm_args == 0)
		NOTE(&p->todo, "vllm.args holds the parallel sizes and the GPU "
		    "memory share only: add what your model needs (the DGX "
		    "Spark guide's Qwen3.5-122B: --max-model-len 2048 "
		    "--enforce-eager --trust-remote-code; tandemctl init ... "
		    "-- ARGS puts them there), then tandemd --check");
}

void
init_plan_free(struct init_plan *p)
{
	json_decref(p->config);
	link_choices_free(p->links, p->nlinks);
	free(p->model);
	free(p->image);
	strv_free(&p->notes);
	strv_free(&p->errors);
	strv_free(&p->todo);
	memset(p, 0, sizeof(*p));
}

void
init_node_free(struct init_node *nn)
{
	net_ifaces_free(&nn->ifs);
	strv_free(&nn->images);
	strv_free(&nn->model_dirs);
}

int
init_conf_replaceable(const char *text, size_t len,
    const struct init_example *ex, size_t nex)
{
	size_t i;

	if (len == 0)
		return INIT_CONF_EMPTY;
	for (i = 0; i < nex; i++)
		if (ex[i].len == len && memcmp(ex[i].text, text, len) == 0)
			return (int)i;
	return INIT_CONF_OWN;
}
