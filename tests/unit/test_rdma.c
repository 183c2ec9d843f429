/*
 * RDMA per node (issue 47): cmd_rdma_state's answers read by
 * lib/parse/rdma.c (tests/unit/data/rdma/, README.md "RDMA"), and the
 * start commands that carry each node's own NCCL_IB_GID_INDEX.
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
#include "plan.h"
#include "rdma.h"
#include "util.h"

#include "slurp.h"

#define DATA	"tests/unit/data/rdma/"

static void
parse_file(const char *name, const char *ip, const char *ifname,
    struct rdma_state *st)
{
	char path[200], *out;

	snprintf(path, sizeof(path), DATA "%s.out", name);
	out = slurp(path);
	rdma_parse(0, out, ip, ifname, st);
	free(out);
}

static void
test_ipv4_gid(void **state)
{
	char gid[64];

	(void)state;
	assert_int_equal(rdma_ipv4_gid("10.10.10.1", gid, sizeof(gid)), 0);
	assert_string_equal(gid, "0000:0000:0000:0000:0000:ffff:0a0a:0a01");
	assert_int_equal(rdma_ipv4_gid("192.168.110.97", gid, sizeof(gid)), 0);
	assert_string_equal(gid, "0000:0000:0000:0000:0000:ffff:c0a8:6e61");
	assert_int_equal(rdma_ipv4_gid("fd00::1", gid, sizeof(gid)), -1);
	assert_int_equal(rdma_ipv4_gid("10.10.10.256", gid, sizeof(gid)), -1);
	assert_int_equal(rdma_ipv4_gid("10.10.10.1x", gid, sizeof(gid)), -1);
	assert_int_equal(rdma_ipv4_gid("10.10.10.1", gid, 10), -1);
}

static void
test_parse(void **state)
{
	struct rdma_state st;
	char buf[200];

	(void)state;
	parse_file("node1-on", "10.10.10.1", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_OK);
	assert_string_equal(st.dev, "rocep1s0f0");
	assert_int_equal(st.port, 1);
	assert_int_equal(st.gid_index, 3);	/* not 2, its RoCE v1 twin */
	assert_string_equal(st.link_layer, "Ethernet");
	parse_file("node2-on", "10.10.10.2", "enp1s0f0np0", &st);
	assert_int_equal(st.gid_index, 5);
	/* the show_gids example's table: 10.110.0.33 at index 3 (v2) */
	parse_file("show-gids-mlx5", "10.110.0.33", "eth05", &st);
	assert_int_equal(st.v, RDMA_OK);
	assert_string_equal(st.dev, "mlx5_0");
	assert_int_equal(st.gid_index, 3);
	/* another node's address is not on this port */
	parse_file("node1-on", "10.10.10.2", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_GID_MISSING);
	assert_int_equal(st.gid_index, -1);
	rdma_describe(&st, "enp1s0f0np0", "10.10.10.2", buf, sizeof(buf));
	assert_string_equal(buf, "rocep1s0f0 port 1 of enp1s0f0np0 has no "
	    "RoCE v2 GID for 10.10.10.2");
	parse_file("gid-missing", "10.10.10.2", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_GID_MISSING);
	parse_file("port-down", "10.10.10.2", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_PORT_DOWN);
	assert_string_equal(st.state, "1: DOWN");
	rdma_describe(&st, "enp1s0f0np0", "10.10.10.2", buf, sizeof(buf));
	assert_string_equal(buf, "rocep1s0f0 port 1 of enp1s0f0np0 is \"1: "
	    "DOWN\", not ACTIVE");
	/* InfiniBand: no IPv4 GID needed, the HCA alone */
	parse_file("infiniband", "10.10.10.2", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_OK);
	assert_int_equal(st.gid_index, -1);
	assert_string_equal(st.link_layer, "InfiniBand");
	/* an IPv6 fast link: the port checked, the index not looked up */
	parse_file("node1-on", "fd00::1", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_OK);
	assert_int_equal(st.gid_index, -1);
	parse_file("off", "10.10.10.2", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_NONE);
	/* a device on another interface: no line, none here */
	rdma_parse(0, "", "10.10.10.2", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_NONE);
}

/* What tandem cannot read is could-not-tell, never a verdict. */
static void
test_parse_unknown(void **state)
{
	struct rdma_state st;

	(void)state;
	rdma_parse(0, "port\trocep1s0f0\n", "10.10.10.1", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_UNKNOWN);
	assert_string_equal(st.said, "port\trocep1s0f0");
	rdma_parse(1, "", "10.10.10.1", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_UNKNOWN);
	rdma_parse(0, NULL, "10.10.10.1", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_NONE);
	/* a GID line for a port never listed: ignored, no port is RDMA */
	rdma_parse(0, "gid\tx\t1\t3\t0000:0000:0000:0000:0000:ffff:0a0a:0a01"
	    "\tRoCE v2\tenp1s0f0np0\n", "10.10.10.1", "enp1s0f0np0", &st);
	assert_int_equal(st.v, RDMA_NONE);
}

/* The command reads only, ifname quoted. */
static void
test_command(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	char *c;
	const char *p;

	(void)state;
	assert_non_null(cf);
	free(cf->nodes[0].ifname);
	cf->nodes[0].ifname = xstrdup("en'p; rm -rf /");
	c = cmd_rdma_state(cf, 0);
	assert_non_null(strstr(c, "i='en'\\''p; rm -rf /'; "));
	/* read-only: its only redirections send read's errors nowhere */
	for (p = strchr(c, '>'); p; p = strchr(p + 1, '>'))
		assert_memory_equal(p - 1, "2>/dev/null", 11);
	assert_non_null(strstr(c, "${TANDEM_SYSFS:-/sys}/class/infiniband"));
	free(c);
	config_free(cf);
}

static const char *
start_of(const struct plan *p, size_t node)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->cmds[i].node == node && (p->cmds[i].phase == PH_HEAD ||
		    p->cmds[i].phase == PH_WORKERS))
			return p->cmds[i].shell;
	fail();
	return NULL;
}

/* Each node's start carries its own index; none without RDMA. */
static void
test_plan_env(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	struct rdma_state rd[2];
	struct plan p;
	uint64_t h;

	(void)state;
	assert_non_null(cf);
	h = plan_hash(cf);
	parse_file("node1-on", "10.10.10.1", "enp1s0f0np0", &rd[0]);
	parse_file("node2-on", "10.10.10.2", "enp1s0f0np0", &rd[1]);
	plan_rebuild_rdma(cf, 0, h, rd, &p);
	assert_non_null(strstr(start_of(&p, 0), " -e NCCL_IB_HCA=rocep1s0f0 "
	    "-e NCCL_IB_GID_INDEX=3 "));
	assert_non_null(strstr(start_of(&p, 1), " -e NCCL_IB_GID_INDEX=5 "));
	assert_null(strstr(start_of(&p, 1), "NCCL_IB_GID_INDEX=3"));
	plan_free(&p);
	/* the index is the node's state, not the config's */
	assert_true(plan_hash(cf) == h);
	/* no RDMA, or a port down: nothing added */
	parse_file("off", "10.10.10.1", "enp1s0f0np0", &rd[0]);
	parse_file("port-down", "10.10.10.2", "enp1s0f0np0", &rd[1]);
	plan_rebuild_rdma(cf, 0, h, rd, &p);
	assert_null(strstr(start_of(&p, 0), "NCCL_IB_"));
	assert_null(strstr(start_of(&p, 1), "NCCL_IB_"));
	plan_free(&p);
	plan_rebuild_rdma(cf, 0, h, NULL, &p);
	assert_null(strstr(start_of(&p, 0), "NCCL_IB_"));
	plan_free(&p);
	config_free(cf);
}

/* The operator's own NCCL_IB_GID_INDEX stays theirs. */
static void
test_plan_env_operator(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	struct rdma_state rd[2];
	struct kv *kv;
	struct plan p;
	const char *s;

	(void)state;
	assert_non_null(cf);
	cf->nodes[1].env.v = xrealloc(cf->nodes[1].env.v,
	    (cf->nodes[1].env.n + 1) * sizeof(*cf->nodes[1].env.v));
	kv = &cf->nodes[1].env.v[cf->nodes[1].env.n++];
	kv->key = xstrdup("NCCL_IB_GID_INDEX");
	kv->val = xstrdup("7");
	parse_file("node1-on", "10.10.10.1", "enp1s0f0np0", &rd[0]);
	parse_file("node2-on", "10.10.10.2", "enp1s0f0np0", &rd[1]);
	plan_rebuild_rdma(cf, 0, plan_hash(cf), rd, &p);
	s = start_of(&p, 1);
	assert_non_null(strstr(s, "NCCL_IB_GID_INDEX=7"));
	assert_null(strstr(s, "NCCL_IB_GID_INDEX=5"));
	assert_non_null(strstr(s, "NCCL_IB_HCA=rocep1s0f0"));
	assert_non_null(strstr(start_of(&p, 0), "NCCL_IB_GID_INDEX=3"));
	plan_free(&p);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_gid),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_unknown),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_plan_env),
		cmocka_unit_test(test_plan_env_operator),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
