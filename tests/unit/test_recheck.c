/*
 * lib/preflight/recheck.c: which read-only check sees each stopping diagnosis, and
 * the preflight restricted to it (preflight_new_only): only that check's
 * commands, none that starts a container or changes a node, and the
 * verdict on their answers (recorded texts, tests/unit/data/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conffile.h"
#include "recheck.h"
#include "slurp.h"

static struct config *
load(void)
{
	char err[512];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));

	if (cf == NULL)
		fail_msg("%s", err);
	return cf;
}

/*
 * Every diagnosis that stops the retries is decided: the ones the bed
 * and the operators fix on a node have a check; the others wait for the
 * operator, each for a reason the table says.
 */
static void
test_table(void **state)
{
	static const enum diag_code with[] = { DIAG_MTU_MISMATCH,
	    DIAG_INTERFACE_WRONG, DIAG_IMAGE_MISSING, DIAG_IMAGE_MISMATCH,
	    DIAG_MODEL_MISSING, DIAG_MODEL_MISMATCH, DIAG_RAY_TOKEN_MISSING,
	    DIAG_FOREIGN_CONTAINER, DIAG_ENGINE_PERMISSION,
	    DIAG_RDMA_PORT_DOWN, DIAG_RDMA_GID_MISSING,
	    DIAG_RDMA_LINK_LAYER_MIXED };
	static const enum diag_code without[] = { DIAG_GLOO_LOOPBACK,
	    DIAG_KV_CACHE_NO_MEMORY, DIAG_KV_CACHE_TOO_SMALL,
	    DIAG_PLACEMENT_GROUP, DIAG_ARCH_UNSUPPORTED,
	    DIAG_NVIDIA_RUNTIME_MISSING,
	    DIAG_GPUS_MISSING, DIAG_ENGINE_READY_TIMEOUT,
	    DIAG_NODE_IP_MISMATCH, DIAG_VLLM_UNAUTHORIZED, DIAG_VLLM_MODEL_NAME,
	    DIAG_CUDA_DRIVER_TOO_OLD };
	/* asked otherwise than by the preflight (issue 41 item 9) */
	static const enum diag_code other[] = { DIAG_SSH_AUTH, DIAG_HOST_KEY,
	    DIAG_GPU_XID };
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < sizeof(with) / sizeof(with[0]); i++)
		assert_int_not_equal(recheck_asks(with[i]), 0);
	for (i = 0; i < sizeof(without) / sizeof(without[0]); i++) {
		assert_int_equal(recheck_asks(without[i]), 0);
		assert_string_equal(recheck_what(without[i]), "none");
		assert_int_equal(recheck_kind(without[i]), RK_NONE);
	}
	for (i = 0; i < sizeof(with) / sizeof(with[0]); i++)
		assert_int_equal(recheck_kind(with[i]), RK_PREFLIGHT);
	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_int_equal(recheck_asks(other[i]), 0);
	assert_int_equal(recheck_kind(DIAG_SSH_AUTH), RK_LOGIN);
	assert_int_equal(recheck_kind(DIAG_HOST_KEY), RK_LOGIN);
	assert_string_equal(recheck_what(DIAG_HOST_KEY), "ssh login");
	assert_int_equal(recheck_kind(DIAG_GPU_XID), RK_BOOT);
	assert_string_equal(recheck_what(DIAG_GPU_XID), "boot id");
	/* the two lists are every diagnosis that stops the retries */
	for (i = 0; i < diag_count(); i++)
		n += !diag_at(i)->retryable;
	assert_int_equal(n, sizeof(with) / sizeof(with[0]) +
	    sizeof(without) / sizeof(without[0]) +
	    sizeof(other) / sizeof(other[0]));
	assert_int_equal(recheck_asks(DIAG_MTU_MISMATCH), PFA_LINK);
	assert_int_equal(recheck_asks(DIAG_INTERFACE_WRONG),
	    PFA_IFACE | PFA_LINK);
	assert_string_equal(recheck_what(DIAG_MTU_MISMATCH), "link");
	/* an RDMA port that comes up: the link question reads it again */
	assert_int_equal(recheck_asks(DIAG_RDMA_PORT_DOWN), PFA_LINK);
	assert_string_equal(recheck_what(DIAG_IMAGE_MISMATCH), "image");
	assert_string_equal(recheck_what(DIAG_RAY_TOKEN_MISSING), "ray token");
}

/* Linux's random/boot_id: a UUID and a newline (drivers/char/random.c). */
static void
test_boot_id(void **state)
{
	char id[40];

	(void)state;
	assert_int_equal(recheck_boot_id("0f4c6d2e-8a1b-4c3d-9e5f-a6b7c8d9e0f1\n",
	    id, sizeof(id)), 0);
	assert_string_equal(id, "0f4c6d2e-8a1b-4c3d-9e5f-a6b7c8d9e0f1");
	assert_int_equal(recheck_boot_id("0f4c6d2e-8a1b-4c3d-9e5f-a6b7c8d9e0f1",
	    id, sizeof(id)), 0);
	assert_int_equal(recheck_boot_id("cat: /proc/sys/kernel/random/boot_id:"
	    " No such file or directory\n", id, sizeof(id)), -1);
	assert_int_equal(recheck_boot_id("", id, sizeof(id)), -1);
	assert_int_equal(recheck_boot_id("0f4c6d2e-8a1b-4c3d-9e5f-a6b7c8d9e0f1x",
	    id, sizeof(id)), -1);
	assert_int_equal(recheck_boot_id("0f4c6d2e-8a1b-4c3d-9e5f-a6b7c8d9e0f1",
	    id, 20), -1);
}

/* The commands of an ask on a node: only these, and none that changes. */
static void
commands_of(struct preflight *pf, const char *const *want, size_t nwant)
{
	struct pf_cmd *cmds;
	size_t i, j, k = preflight_commands(pf, 0, &cmds);

	assert_int_equal(k, nwant);
	for (i = 0; i < k; i++) {
		int found = 0;

		for (j = 0; j < nwant; j++)
			found |= strstr(cmds[i].cmd, want[j]) != NULL;
		if (!found)
			fail_msg("not asked for: %s", cmds[i].cmd);
		assert_null(strstr(cmds[i].cmd, " run "));
		assert_null(strstr(cmds[i].cmd, "rm -f"));
		assert_null(strstr(cmds[i].cmd, "load"));
	}
	preflight_cmds_free(cmds, k);
}

static void
test_only_commands(void **state)
{
	static const char *const image[] = { "image inspect" };
	static const char *const model[] = { "cksum" };
	static const char *const link[] = { "ip -j addr show dev",
	    "class/infiniband" };
	static const char *const token[] = { "test -f" };
	static const char *const name[] = { "ps -a" };
	static const char *const iface[] = { "ip -j addr show dev",
	    "class/infiniband", "ip -o addr show dev" };
	static const char *const engine[] = { "ServerVersion" };
	struct config *cf = load();
	struct preflight *pf;

	(void)state;
	pf = preflight_new_only(cf, PFA_IMAGE);
	commands_of(pf, image, 1);
	assert_int_equal(preflight_result(pf, 0, PF_GPUS)->status,
	    PFS_NOT_CHECKED);
	assert_int_equal(preflight_result(pf, 0, PF_NVIDIA)->status,
	    PFS_NOT_CHECKED);
	preflight_free(pf);
	pf = preflight_new_only(cf, PFA_MODEL);
	commands_of(pf, model, 1);
	preflight_free(pf);
	pf = preflight_new_only(cf, PFA_LINK);
	commands_of(pf, link, 2);
	preflight_free(pf);
	pf = preflight_new_only(cf, PFA_NAME);
	commands_of(pf, name, 1);
	preflight_free(pf);
	/* interface-wrong: the address, and the link check with it */
	pf = preflight_new_only(cf, PFA_IFACE | PFA_LINK);
	commands_of(pf, iface, 3);
	assert_false(preflight_complete(pf));
	preflight_free(pf);
	pf = preflight_new_only(cf, PFA_ENGINE);
	commands_of(pf, engine, 1);
	preflight_free(pf);
	/* no ray.auth_token_file: nothing to ask */
	pf = preflight_new_only(cf, PFA_RAYTOKEN);
	commands_of(pf, token, 0);
	preflight_free(pf);
	cf->ray.auth_token_file = strdup("/etc/tandem/ray-token");
	pf = preflight_new_only(cf, PFA_RAYTOKEN);
	commands_of(pf, token, 1);
	preflight_free(pf);
	config_free(cf);
}

/* Every node answers its image inspect: out and exit code per node. */
static struct preflight *
image_round(struct config *cf, const char *const *out, const int *rc,
    const char *const *err)
{
	struct preflight *pf = preflight_new_only(cf, PFA_IMAGE);
	struct pf_cmd *cmds;
	size_t i, j, k;

	for (i = 0; i < cf->nnodes; i++) {
		k = preflight_commands(pf, i, &cmds);
		for (j = 0; j < k; j++) {
			struct cmd_result r = { .exit_code = rc[i],
			    .out = out[i], .outlen = strlen(out[i]),
			    .err = err[i], .errlen = strlen(err[i]) };

			preflight_answer(pf, i, cmds[j].tag, &r);
		}
		preflight_cmds_free(cmds, k);
	}
	assert_true(preflight_complete(pf));
	return pf;
}

static void
test_judge(void **state)
{
	struct config *cf = load();
	char *id = slurp("tests/unit/data/docker-20.10.24/image-identity.out");
	char *miss = slurp("tests/unit/data/docker-28/image-missing.err");
	const char *out[2] = { id, "" }, *err[2] = { "", miss };
	const char *untold[2] = { id, "something else\n" };
	int rc[2] = { 0, 1 }, rc_ok[2] = { 0, 0 };
	struct preflight *pf;
	enum diag_code code;
	char finding[400];
	size_t node;

	(void)state;
	pf = image_round(cf, out, rc, err);
	assert_int_equal(recheck_judge(pf, &node, &code, finding,
	    sizeof(finding)), RCV_STILL);
	assert_int_equal(node, 1);
	assert_int_equal(code, DIAG_IMAGE_MISSING);
	assert_non_null(strstr(finding, "image: absent: "));
	preflight_free(pf);
	/* an answer the check does not know: could not tell */
	err[1] = "";
	pf = image_round(cf, untold, rc_ok, err);
	assert_int_equal(recheck_judge(pf, &node, &code, finding,
	    sizeof(finding)), RCV_UNTOLD);
	assert_int_equal(code, DIAG_UNRECOGNISED_ANSWER);
	preflight_free(pf);
	out[1] = id;
	pf = image_round(cf, out, rc_ok, err);
	assert_int_equal(recheck_judge(pf, &node, &code, finding,
	    sizeof(finding)), RCV_CLEARED);
	preflight_free(pf);
	/* a node that could not be asked: never cleared */
	pf = preflight_new_only(cf, PFA_IMAGE);
	preflight_node_down(pf, 0, "ssh: not connected");
	preflight_node_down(pf, 1, "ssh: not connected");
	assert_true(preflight_complete(pf));
	assert_int_equal(recheck_judge(pf, &node, &code, finding,
	    sizeof(finding)), RCV_UNTOLD);
	preflight_free(pf);
	free(id);
	free(miss);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_boot_id),
		cmocka_unit_test(test_only_commands),
		cmocka_unit_test(test_judge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
