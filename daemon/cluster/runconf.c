/*
 * The running config as the runtime reads it: the rebuild's commands built
 * from it once (cluster_plan, with each node's RDMA as the preflight found
 * it), its topology, vLLM's API key and tandemd's API token. cluster.c
 * loads a config (runconf_loaded); the actions, the probes and the
 * executor read it here, below the funnel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "tokenfile.h"

/*
 * cl->cf is new: what was built from the old one goes. The hash of the
 * plan labels every container (adoption compares it at each container
 * probe); the rebuild's plan is built again when a rebuild needs it.
 */
void
runconf_loaded(struct cluster *cl)
{
	if (cl->plan.built)
		plan_free(&cl->plan.plan);
	cl->plan.built = 0;
	cl->plan.hash = plan_hash(cl->cf);
	/* sized for the old nodes: the next preflight finds them again */
	free(cl->plan.rdma);
	cl->plan.rdma = NULL;
}

/*
 * The start's NCCL_IB_GID_INDEX and NCCL_IB_HCA are each node's own, read
 * by the preflight before this rebuild (a reboot can move the index): a
 * change builds the commands again. A preflight of another config (a
 * reload meanwhile) says nothing about this one's nodes.
 */
void
cluster_rdma_seen(struct cluster *cl, const struct preflight *pf)
{
	const struct rdma_state *st;
	struct rdma_state *v;
	size_t i, n = cl->cf->nnodes;

	if (preflight_config(pf) != cl->cf)
		return;
	v = xcalloc(n, sizeof(*v));
	for (i = 0; i < n; i++)
		if ((st = preflight_rdma(pf, i)) != NULL)
			v[i] = *st;
		else
			v[i].v = RDMA_NONE;
	if (cl->plan.rdma && memcmp(cl->plan.rdma, v, n * sizeof(*v)) == 0) {
		free(v);
		return;
	}
	free(cl->plan.rdma);
	cl->plan.rdma = v;
	if (cl->plan.built)
		plan_free(&cl->plan.plan);
	cl->plan.built = 0;
}

/*
 * The rebuild's commands: built when its first phase runs and reused by the
 * others. Only a new config (config_loaded) or a new remedy step (the gmu
 * in vllm serve) builds them again.
 */
const struct plan *
cluster_plan(struct cluster *cl)
{
	double gmu = cluster_gmu(cl);

	if (cl->plan.built && cl->plan.gmu == gmu)
		return &cl->plan.plan;
	if (cl->plan.built)
		plan_free(&cl->plan.plan);
	plan_rebuild_rdma(cl->cf, gmu, cl->plan.hash, cl->plan.rdma,
	    &cl->plan.plan);
	cl->plan.gmu = gmu;
	cl->plan.built = 1;
	return &cl->plan.plan;
}

int
is_ray(const struct cluster *cl)
{
	return cl->cf->topology == TOPO_RAY;
}

char *
runconf_read_token(const char *path)
{
	char err[ERRLEN], *tok;

	if (token_file_read(path, 1, &tok, err, sizeof(err)) == -1)
		log_warnx("%s; POST endpoints answer 403", err);
	return tok;
}

/*
 * The key vLLM wants on /v1 (vllm serve --api-key): vllm.api_key_file on
 * this host, kept from other users as api_token_file is, or the config's
 * own (cluster_vllm_key). Every output masks either from here on
 * (log_secret). -1 when the file cannot be read.
 */
int
runconf_vllm_key_read(const struct config *cf, char **key, char *err, size_t len)
{
	char *own = config_vllm_api_key(cf);

	log_secret(own);
	free(own);
	*key = NULL;
	if (len)
		err[0] = '\0';
	if (token_file_read(cf->vllm.api_key_file, 1, key, err, len) == -1)
		return -1;
	/*
	 * token_file_read leaves an unopenable file to its caller (a missing
	 * api_token_file only refuses POSTs); a key file named and unread
	 * would send every probe without its key and end in a
	 * vllm-unauthorized that hides why.
	 */
	if (cf->vllm.api_key_file && *key == NULL) {
		char why[256];

		/* its words name the token's setting (tokenfile.c): say ours */
		snprintf(why, sizeof(why), "%s", len && err[0] ? err : "empty");
		snprintf(err, len, "vllm.api_key_file %s: cannot be read (%s)",
		    cf->vllm.api_key_file, why);
		return -1;
	}
	log_secret(*key);
	return 0;
}

void
runconf_vllm_key_set(struct cluster *cl, char *key)
{
	free(cl->vllm_key_file);
	cl->vllm_key_file = key;
}

char *
cluster_vllm_key(const struct cluster *cl)
{
	char *k = config_vllm_api_key(cl->cf);

	if (k == NULL && cl->cf->vllm.api_key_file && cl->vllm_key_file)
		k = xstrdup(cl->vllm_key_file);
	return k;
}
