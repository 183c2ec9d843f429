#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "plan.h"
#include "quote.h"
#include "rdma.h"
#include "secret.h"
#include "vllmargs.h"

const char *
phase_name(enum phase p)
{
	switch (p) {
	case PH_TEARDOWN:	return "teardown";
	case PH_HEAD:		return "start head";
	case PH_WORKERS:	return "start worker";
	case PH_VLLM:		return "start vllm";
	case PH_COUNT:		break;
	}
	return "?";
}

void
plan_vllm_argv(const struct config *cf, size_t node, double gmu,
    struct strv *v)
{
	const struct node_conf *n = &cf->nodes[node];
	const struct node_conf *head = &cf->nodes[cf->head];

	strv_add(v, "vllm");
	strv_add(v, "serve");
	strv_add(v, cf->vllm.model);
	vllmargs_with_gmu(&cf->vllm.args, gmu, v);
	if (cf->topology == TOPO_RAY) {
		strv_add(v, "--distributed-executor-backend");
		strv_add(v, "ray");
	}
	if (cf->topology == TOPO_RAY || n->is_head) {
		strv_add(v, "--host");
		strv_add(v, "0.0.0.0");
		strv_add(v, "--port");
		strv_addf(v, "%d", cf->vllm.port);
		/* a --served-model-name in vllm.args agrees (config_parse) */
		if (cf->vllm.served_model_name && vllmargs_value(&cf->vllm.args,
		    VLLM_SERVED_FLAG, NULL) == NULL) {
			strv_add(v, "--served-model-name");
			strv_add(v, cf->vllm.served_model_name);
		}
	}
	if (cf->topology == TOPO_DP) {
		/* the Ascend data-parallel guide: the worker differs by start rank and --headless */
		if (!n->is_head)
			strv_add(v, "--headless");
		strv_add(v, "--data-parallel-size");
		strv_addf(v, "%d", cf->dp.size);
		strv_add(v, "--data-parallel-size-local");
		strv_addf(v, "%d", cf->dp.size_local);
		if (!n->is_head) {
			strv_add(v, "--data-parallel-start-rank");
			strv_addf(v, "%d", n->dp_start_rank);
		}
		strv_add(v, "--data-parallel-address");
		strv_add(v, head->ip);
		strv_add(v, "--data-parallel-rpc-port");
		strv_addf(v, "%d", cf->dp.rpc_port);
		if (n->is_head) {
			strv_add(v, "--api-server-count");
			strv_addf(v, "%d", cf->dp.api_server_count);
		}
		strv_add(v, "--seed");
		strv_addf(v, "%d", cf->dp.seed);
	}
}

int
plan_is_podman(const struct config *cf)
{
	return strcmp(cf->container.engine, "podman") == 0;
}

/*
 * docker rm -f kills at once; podman rm -f first stops the container with
 * its stop timeout (10 s, which bash as PID 1 always uses up): -t 0.
 */
void
plan_rm_argv(const struct config *cf, size_t node, struct strv *v)
{
	strv_add(v, cf->container.engine);
	strv_add(v, "rm");
	strv_add(v, "-f");
	if (plan_is_podman(cf)) {
		strv_add(v, "-t");
		strv_add(v, "0");
	}
	strv_add(v, cf->nodes[node].container_name);
}

/* "vllm serve ... > LOG 2>&1": the script a container's bash -c runs. */
static char *
vllm_script(const struct config *cf, size_t node, double gmu)
{
	struct strv v;
	struct sbuf b;

	strv_init(&v);
	plan_vllm_argv(cf, node, gmu, &v);
	sbuf_init(&b);
	shell_join(&b, v.v);
	sbuf_add(&b, " > ");
	shell_quote(&b, cf->vllm.log_file);
	sbuf_add(&b, " 2>&1");
	strv_free(&v);
	return sbuf_take(&b);
}

static void
add_env(struct strv *v, const char *key, const char *val)
{
	strv_add(v, "-e");
	strv_addf(v, "%s=%s", key, val);
}

static void
add_kvlist(struct strv *v, const struct kvlist *l, const struct node_conf *n)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		char *val = config_expand(l->v[i].val, n);

		add_env(v, l->v[i].key, val);
		free(val);
	}
}

static int
kv_has(const struct kvlist *l, const char *key)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, key) == 0)
			return 1;
	return 0;
}

/* extra_args that pass devices themselves replace our --gpus all. */
static int
sets_devices(const struct strv *extra)
{
	size_t i;

	for (i = 0; i < extra->n; i++)
		if (strncmp(extra->v[i], "--gpus", 6) == 0 ||
		    strncmp(extra->v[i], "--device", 8) == 0)
			return 1;
	return 0;
}

/*
 * NCCL over RoCE on this node (issue 47): the device and the RoCE v2 GID
 * index the preflight found for nodes[].ip (lib/parse/rdma.h), which
 * differ per node and can move after a reboot. NCCL's own choice (-1,
 * tests/unit/data/README.md "RDMA") goes by address family, not by the
 * node's fast-link address; one index for the whole cluster makes NCCL
 * fall back to sockets or hang. What the operator set in
 * container.env or nodes[].env stays theirs: tandem only checks the port.
 * Not hashed (plan_hash renders without it): the index is the node's
 * state, not the config's, and adoption must not take a moved index for
 * another config.
 */
static void
add_rdma_env(const struct config *cf, const struct node_conf *n,
    const struct rdma_state *rd, struct strv *v)
{
	if (rd == NULL || rd->v != RDMA_OK)
		return;
	if (rd->dev[0] && !kv_has(&cf->container.env, "NCCL_IB_HCA") &&
	    !kv_has(&n->env, "NCCL_IB_HCA"))
		add_env(v, "NCCL_IB_HCA", rd->dev);
	if (rd->gid_index >= 0 &&
	    !kv_has(&cf->container.env, "NCCL_IB_GID_INDEX") &&
	    !kv_has(&n->env, "NCCL_IB_GID_INDEX")) {
		char idx[16];

		snprintf(idx, sizeof(idx), "%d", rd->gid_index);
		add_env(v, "NCCL_IB_GID_INDEX", idx);
	}
}

/*
 * The node's cache for this image, model and flags (issue 47): a
 * directory of its own under container.cache_dir, so that a second start
 * of the same three finds vLLM's torch.compile cache (which vLLM keys
 * again by a hash of its whole config, so a stale entry is never loaded,
 * only missed), inductor's FX graphs and Triton's kernels warm. The hub
 * (HF_HOME) holds downloaded weights, which any flags share: one
 * directory beside the keyed ones. Each node's own disk: never shared.
 */
uint64_t
plan_cache_key(const struct config *cf)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */
	const char *parts[2] = { cf->container.image, cf->vllm.model };
	const char *c;
	size_t i;

	for (i = 0; ; i++) {
		const char *s = i < 2 ? parts[i] : i - 2 < cf->vllm.args.n ?
		    cf->vllm.args.v[i - 2] : NULL;

		if (s == NULL)
			break;
		for (c = s; ; c++) {
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
			if (*c == '\0')
				break;
		}
	}
	return h;
}

/* Where the cache is mounted in the container, and what lives under it. */
static const struct {
	const char *env, *sub;
} cache_env[] = {
	{ "VLLM_CACHE_ROOT",		PLAN_CACHE_MOUNT "/vllm" },
	{ "TORCHINDUCTOR_CACHE_DIR",	PLAN_CACHE_MOUNT "/inductor" },
	{ "TRITON_CACHE_DIR",		PLAN_CACHE_MOUNT "/triton" },
	{ "HF_HOME",			PLAN_HUB_MOUNT },
	{ NULL, NULL }
};

/* IIIIIIII-CCCCCCCC: the image's hash, then image+model+args' (32 bits each) */
char *
plan_cache_name(const struct config *cf)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */
	const char *c;

	for (c = cf->container.image; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	return xprintf("%08" PRIx32 "-%08" PRIx32, (uint32_t)(h ^ (h >> 32)),
	    (uint32_t)(plan_cache_key(cf) ^ (plan_cache_key(cf) >> 32)));
}

char *
plan_cache_dir(const struct config *cf)
{
	char *name, *dir;

	if (cf->container.cache_dir == NULL)
		return NULL;
	name = plan_cache_name(cf);
	dir = xprintf("%s/%s", cf->container.cache_dir, name);
	free(name);
	return dir;
}

/*
 * The mounts and the variables, unless the operator set a variable in
 * container.env or nodes[].env. Not hashed (plan_hash renders without
 * it): moving or turning off the cache must not make the cluster that
 * serves look like another config's to adoption.
 */
static void
add_cache(const struct config *cf, const struct node_conf *n, uint64_t hash,
    struct strv *v)
{
	char *dir;
	size_t i;

	if (hash == 0 || (dir = plan_cache_dir(cf)) == NULL)
		return;
	strv_add(v, "-v");
	strv_addf(v, "%s:%s", dir, PLAN_CACHE_MOUNT);
	strv_add(v, "-v");
	strv_addf(v, "%s/" PLAN_HUB_DIR ":%s", cf->container.cache_dir,
	    PLAN_HUB_MOUNT);
	free(dir);
	for (i = 0; cache_env[i].env; i++)
		if (!kv_has(&cf->container.env, cache_env[i].env) &&
		    !kv_has(&n->env, cache_env[i].env))
			add_env(v, cache_env[i].env, cache_env[i].sub);
}

static void
docker_run_argv(const struct config *cf, size_t node, double gmu,
    uint64_t hash, const struct rdma_state *rd, struct strv *v)
{
	const struct node_conf *n = &cf->nodes[node];
	const struct node_conf *head = &cf->nodes[cf->head];
	const struct accel_env *e;
	char *script, *val;
	size_t i;

	strv_add(v, cf->container.engine);
	strv_add(v, "run");
	strv_add(v, "-d");
	if (!plan_wants_nvidia(cf))
		;	/* Ascend NPUs, none, or devices the operator names */
	else if (plan_is_podman(cf)) {
		strv_add(v, "--device");
		strv_add(v, "nvidia.com/gpu=all");
	} else {
		strv_add(v, "--gpus");
		strv_add(v, "all");
	}
	strv_add(v, "--network");
	strv_add(v, "host");
	strv_addf(v, "--shm-size=%s", cf->container.shm_size);
	strv_add(v, "--name");
	strv_add(v, n->container_name);
	/*
	 * The labels tell tandem's containers from foreign ones, and which
	 * configuration started them: a daemon adopts only a cluster built
	 * from the config it has now.
	 */
	strv_add(v, "--label");
	strv_addf(v, "tandem.cluster=%s", cf->name);
	if (hash) {
		char label[PLAN_LABEL_MAX];

		plan_label(hash, label, sizeof(label));
		strv_add(v, "--label");
		strv_addf(v, "tandem.plan=%s", label);
	}
	strv_add(v, "--entrypoint");
	strv_add(v, "bash");
	for (i = 0; i < cf->container.volumes.n; i++) {
		strv_add(v, "-v");
		strv_add(v, cf->container.volumes.v[i]);
	}
	/*
	 * Ray 2.52's token auth: the token file every node holds goes in
	 * read-only, and Ray reads it from there (RAY_AUTH_TOKEN_PATH,
	 * authentication_token_loader.cc); RAY_AUTH_MODE is inherited by
	 * ray start, the GCS, raylets, ray status and vLLM's Ray executor.
	 */
	if (cf->topology == TOPO_RAY && cf->ray.auth_token_file) {
		strv_add(v, "-v");
		strv_addf(v, "%s:%s:ro", cf->ray.auth_token_file,
		    RAY_TOKEN_PATH);
		add_env(v, "RAY_AUTH_MODE", "token");
		add_env(v, "RAY_AUTH_TOKEN_PATH", RAY_TOKEN_PATH);
	}
	/*
	 * Derived per node, always (accel.h): the DGX Spark Ray guide's
	 * VLLM_HOST_IP, GLOO_ and NCCL_SOCKET_IFNAME; on Ascend the data-
	 * parallel guide's HCCL_IF_IP, HCCL_ and TP_SOCKET_IFNAME instead of
	 * NCCL's, and ASCEND_RT_VISIBLE_DEVICES.
	 */
	for (e = accel_env_table(cf->container.accelerator); e->name; e++)
		if ((val = accel_env_value(cf, n, e)) != NULL) {
			add_env(v, e->name, val);
			free(val);
		}
	add_rdma_env(cf, n, rd, v);
	/*
	 * vLLM's API server gives its engine cores VLLM_ENGINE_READY_TIMEOUT_S
	 * (600 s, vllm/envs.py) to load, then exits: a model that loads for
	 * longer would never serve, though tandem waits vllm.ready_timeout_s.
	 * tandem's own wait is the one that decides, unless the operator set
	 * the variable. Whole seconds: vLLM reads it with int(). The value
	 * is not hashed (hash 0 renders the plan for plan_hash): a reload
	 * changes vllm.ready_timeout_s live, and the containers it did not
	 * rebuild still belong to this config.
	 */
	if (!kv_has(&cf->container.env, VLLM_READY_ENV) &&
	    !kv_has(&n->env, VLLM_READY_ENV)) {
		val = hash ? xprintf("%.0f", ceil(cf->vllm.ready_timeout_s)) :
		    xstrdup("vllm.ready_timeout_s");
		add_env(v, VLLM_READY_ENV, val);
		free(val);
	}
	add_kvlist(v, &cf->container.env, n);
	add_kvlist(v, &n->env, n);
	add_cache(cf, n, hash, v);
	for (i = 0; i < cf->container.extra_args.n; i++)
		strv_add(v, cf->container.extra_args.v[i]);
	strv_add(v, cf->container.image);
	strv_add(v, "-c");
	if (cf->topology == TOPO_DP) {
		strv_add(v, script = vllm_script(cf, node, gmu));
		free(script);
		return;
	}
	{
		struct strv ray;
		struct sbuf b;

		strv_init(&ray);
		strv_add(&ray, "ray");
		strv_add(&ray, "start");
		if (n->is_head) {
			strv_add(&ray, "--head");
			strv_addf(&ray, "--node-ip-address=%s", n->ip);
			strv_addf(&ray, "--port=%d", cf->ray.port);
		} else {
			strv_addf(&ray, "--address=%s:%d", head->ip,
			    cf->ray.port);
			strv_addf(&ray, "--node-ip-address=%s", n->ip);
		}
		sbuf_init(&b);
		shell_join(&b, ray.v);
		sbuf_add(&b, " && sleep infinity");
		strv_add(v, b.s);
		sbuf_free(&b);
		strv_free(&ray);
	}
}

static void
add_cmd(const struct config *cf, struct plan *p, size_t node, enum phase ph,
    struct strv *argv)
{
	struct cmd *c;
	char *key = config_vllm_api_key(cf);

	p->cmds = xrealloc(p->cmds, (p->n + 1) * sizeof(*p->cmds));
	c = &p->cmds[p->n++];
	c->node = node;
	c->phase = ph;
	c->argv = *argv;
	c->shell = shell_command(argv->v);
	c->shown = secret_masked(c->shell, key);
	free(key);
}

/*
 * tandemctl check's read of the cache (lib/parse/cachedisk.h): its size,
 * or "-" without one, and the free space of the file system it is or
 * would be on (the nearest directory that exists). Read-only.
 */
char *
plan_cache_probe(const struct config *cf)
{
	struct sbuf b;

	if (cf->container.cache_dir == NULL)
		return NULL;
	sbuf_init(&b);
	sbuf_add(&b, "d=");
	shell_quote(&b, cf->container.cache_dir);
	sbuf_add(&b, "; du -sk -- \"$d\" 2>/dev/null || echo -; p=$d; "
	    "while [ ! -d \"$p\" ]; do p=${p%/*}; [ -n \"$p\" ] || p=/; "
	    "done; df -Pk -- \"$p\"");
	return sbuf_take(&b);
}

/*
 * Before each start, on the node, in the start's own shell (so no step of
 * its own): the entries of other images go, since their compiled
 * artifacts belong to another torch and Triton (a config change keeps only
 * the same image's); then, while du -s of the whole directory (the hub's
 * downloads included, which are never removed) exceeds cache_max_gib, the
 * least recently started entry other than this one goes. Only names
 * tandem makes (8 hex digits, '-', 8 hex digits) are removed, each path
 * quoted; the start's own entry is touched so that it counts as the
 * newest. docker would make a missing -v directory itself, podman refuses
 * one: tandem makes both (PRODUCT.md section 6: mkdir and du on
 * container.cache_dir), as the SSH user; a step that fails (an SSH user
 * who may not write there) does not stop the start: docker makes the
 * directory as root then, podman names the missing path in its own error.
 * In shell only: shown stays the docker run the operator reads in the plan
 * and in a failed start's message ("asked `docker run ...`").
 */
static void
prefix_cache(const struct config *cf, struct cmd *c)
{
	char *name, *t;
	struct sbuf b;

	if (cf->container.cache_dir == NULL)
		return;
	name = plan_cache_name(cf);
	sbuf_init(&b);
	sbuf_add(&b, "c=");
	shell_quote(&b, cf->container.cache_dir);
	t = xprintf(" k=%s i=%.8s m=%.0f; ", name, name,
	    cf->container.cache_max_gib * 1024 * 1024);
	sbuf_add(&b, t);
	free(t);
	sbuf_add(&b,
	    "mkdir -p -- \"$c/$k\" \"$c/" PLAN_HUB_DIR "\" 2>/dev/null; "
	    "touch -- \"$c/$k\" 2>/dev/null; "
	    "for e in \"$c\"/*-*; do n=${e##*/}; case $n in "
	    "[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-"
	    "[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]) "
	    "[ \"${n%-*}\" = \"$i\" ] || rm -rf -- \"$e\";; esac; done; "
	    "while s=$(du -sk -- \"$c\" 2>/dev/null) && "
	    "[ \"${s%%[!0-9]*}\" -gt \"$m\" ] && "
	    "o=$(ls -1tr -- \"$c\" | grep -xE "
	    "'[0-9a-f]{8}-[0-9a-f]{8}' | grep -vxF -- \"$k\" | head -n 1) && "
	    "[ -n \"$o\" ]; do rm -rf -- \"$c/$o\"; done; ");
	free(name);
	t = xprintf("%s%s", b.s, c->shell);
	free(c->shell);
	c->shell = t;
	sbuf_free(&b);
}

static void	build(const struct config *, double, uint64_t,
		    const struct rdma_state *, struct plan *);

void
plan_rebuild(const struct config *cf, double gmu, struct plan *p)
{
	build(cf, gmu, plan_hash(cf), NULL, p);
}

void
plan_rebuild_hashed(const struct config *cf, double gmu, uint64_t hash,
    struct plan *p)
{
	build(cf, gmu, hash, NULL, p);
}

void
plan_rebuild_rdma(const struct config *cf, double gmu, uint64_t hash,
    const struct rdma_state *rdma, struct plan *p)
{
	build(cf, gmu, hash, rdma, p);
}

static void
build(const struct config *cf, double gmu, uint64_t hash,
    const struct rdma_state *rdma, struct plan *p)
{
	struct strv v;
	size_t i;

	p->cmds = NULL;
	p->n = 0;
	for (i = 0; i < cf->nnodes; i++) {
		strv_init(&v);
		plan_rm_argv(cf, i, &v);
		add_cmd(cf, p, i, PH_TEARDOWN, &v);
	}
	strv_init(&v);
	docker_run_argv(cf, cf->head, gmu, hash, rdma ? &rdma[cf->head] : NULL,
	    &v);
	add_cmd(cf, p, cf->head, PH_HEAD, &v);
	if (hash)
		prefix_cache(cf, &p->cmds[p->n - 1]);
	for (i = 0; i < cf->nnodes; i++) {
		if (i == cf->head)
			continue;
		strv_init(&v);
		docker_run_argv(cf, i, gmu, hash, rdma ? &rdma[i] : NULL, &v);
		add_cmd(cf, p, i, PH_WORKERS, &v);
		if (hash)
			prefix_cache(cf, &p->cmds[p->n - 1]);
	}
	if (cf->topology == TOPO_RAY) {
		char *script = vllm_script(cf, cf->head, gmu);

		strv_init(&v);
		strv_add(&v, cf->container.engine);
		strv_add(&v, "exec");
		strv_add(&v, "-d");
		strv_add(&v, cf->nodes[cf->head].container_name);
		strv_add(&v, "bash");
		strv_add(&v, "-c");
		strv_add(&v, script);
		free(script);
		add_cmd(cf, p, cf->head, PH_VLLM, &v);
	}
}

void
plan_free(struct plan *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		strv_free(&p->cmds[i].argv);
		free(p->cmds[i].shell);
		free(p->cmds[i].shown);
	}
	free(p->cmds);
	p->cmds = NULL;
	p->n = 0;
}

/*
 * The hash the tandem.plan label carries (plan_label.h): the plan's own
 * commands, so here beside the builder, not in plan_label.c.
 */
uint64_t
plan_hash(const struct config *cf)
{
	struct plan p;
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */
	size_t i;
	const char *c;

	/* hash 0: no label in the text hashed, so the label can't vary it */
	plan_rebuild_hashed(cf, 0, 0, &p);
	for (i = 0; i < p.n; i++)
		for (c = p.cmds[i].shell; ; c++) {
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
			if (*c == '\0')
				break;
		}
	plan_free(&p);
	return h;
}

void
plan_print(const struct config *cf, const struct plan *p, const char *only,
    struct sbuf *out)
{
	size_t i, j;

	sbuf_addf(out, "# tandem rebuild plan for cluster %s (topology %s)\n"
	    "# Order: teardown on every node, then the head, then every "
	    "worker in parallel%s.\n", cf->name,
	    cf->topology == TOPO_RAY ? "ray" : "dp",
	    cf->topology == TOPO_RAY ? ", then vllm serve in the head "
	    "container once ray status shows every node and GPU" : "");
	for (i = 0; i < cf->nnodes; i++) {
		const struct node_conf *n = &cf->nodes[i];

		if (only && strcmp(only, n->name) != 0)
			continue;
		sbuf_addf(out, "\n# node %s (%s): ssh -p %d %s@%s\n", n->name,
		    n->is_head ? "head" : "worker", n->ssh_port, cf->ssh.user,
		    n->ssh_host);
		for (j = 0; j < p->n; j++)
			if (p->cmds[j].node == i)
				sbuf_addf(out, "## %s\n%s\n",
				    phase_name(p->cmds[j].phase),
				    p->cmds[j].shown);
	}
}
/* Preflight commands (tandemctl check, tandemd before its first rebuild) -- */

/* Where the model lives on the node: vllm.model through container.volumes. */
char *
plan_model_dir(const struct config *cf)
{
	size_t i;

	for (i = 0; i < cf->container.volumes.n; i++) {
		const char *v = cf->container.volumes.v[i];
		const char *colon = strchr(v, ':'), *ctr, *end;
		size_t clen;

		if (colon == NULL)
			continue;
		ctr = colon + 1;
		end = strchr(ctr, ':');
		clen = end ? (size_t)(end - ctr) : strlen(ctr);
		if (strncmp(cf->vllm.model, ctr, clen) == 0 &&
		    (cf->vllm.model[clen] == '/' || cf->vllm.model[clen] == '\0'))
			return xprintf("%.*s%s", (int)(colon - v), v,
			    cf->vllm.model + clen);
	}
	return NULL;
}

/*
 * Whether the containers get their GPUs through the engine's NVIDIA path:
 * NVIDIA GPUs, and extra_args that pass no devices themselves.
 */
int
plan_wants_nvidia(const struct config *cf)
{
	return cf->container.accelerator == ACCEL_NVIDIA &&
	    !sets_devices(&cf->container.extra_args);
}
