/*
 * The preflight's link check in its rounds (lib/preflight/preflight_steps.c,
 * preflight_link.c) on what ip and ping printed on Debian 12
 * (tests/unit/data/net-debian-12): the interfaces with the first
 * commands, the pings handed out by preflight_more once every interface
 * answered, the small and repeated pings where a full-size one got no
 * reply; the link column's results and the diagnosis preflight_failure
 * gives; the link check alone (preflight_new_link).
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
#include "preflight.h"
#include "util.h"
#include "slurp.h"

#define NET	"tests/unit/data/net-debian-12/"
#define HEAD	0
#define WORKER	1

static struct config *cf;

static int
setup(void **state)
{
	char err[256];

	(void)state;
	cf = conffile_load("etc/tandem.json", err, sizeof(err));
	assert_non_null(cf);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	config_free(cf);
	return 0;
}

/* A recorded answer: NAME.out, NAME.err, NAME.rc. */
static void
answer_rec(struct preflight *pf, size_t node, int tag, const char *name)
{
	char path[256], *out, *err, *rc;
	struct cmd_result r;

	snprintf(path, sizeof(path), NET "%s.out", name);
	out = slurp(path);
	snprintf(path, sizeof(path), NET "%s.err", name);
	err = slurp(path);
	snprintf(path, sizeof(path), NET "%s.rc", name);
	rc = slurp(path);
	assert_non_null(out);
	assert_non_null(err);
	assert_non_null(rc);
	r = (struct cmd_result){ .exit_code = atoi(rc), .out = out,
	    .outlen = strlen(out), .err = err, .errlen = strlen(err) };
	preflight_answer(pf, node, tag, &r);
	free(out);
	free(err);
	free(rc);
}

static void
answer(struct preflight *pf, size_t node, int tag, int rc, const char *out,
    const char *err)
{
	struct cmd_result r = { .exit_code = rc, .out = out,
	    .outlen = strlen(out), .err = err, .errlen = strlen(err) };

	preflight_answer(pf, node, tag, &r);
}

/*
 * The link-only preflight's commands on node: the interface's tag
 * returned, the RDMA question answered with rdma (cmd_rdma_state's "none":
 * no RDMA there).
 */
static int
link_cmds(struct preflight *pf, size_t node, const char *rdma)
{
	struct pf_cmd *v;
	size_t i, n = preflight_commands(pf, node, &v);
	int tag = -1;

	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		if (strstr(v[i].cmd, "ip -j addr show dev"))
			tag = v[i].tag;
		else {
			assert_non_null(strstr(v[i].cmd, "class/infiniband"));
			answer(pf, node, v[i].tag, 0, rdma, "");
		}
	preflight_cmds_free(v, n);
	assert_int_not_equal(tag, -1);
	return tag;
}

/*
 * The node's first commands: every one but the link's answered as a
 * healthy node answers (docker 20.10.24's texts); the link's tag returned.
 */
static int
first_round(struct preflight *pf, size_t node)
{
	char *info = slurp("tests/unit/data/docker-20.10.24/info-version.out");
	char *image = slurp("tests/unit/data/docker-20.10.24/image-identity.out");
	char *rt = slurp("tests/unit/data/docker-20.10.24/info-runtimes.out");
	struct pf_cmd *v;
	size_t i, n = preflight_commands(pf, node, &v);
	int link = -1;

	for (i = 0; i < n; i++) {
		const char *c = v[i].cmd, *out = "";

		assert_int_equal(v[i].node, node);
		if (strstr(c, "ip -j addr show dev enp1s0f0np0")) {
			link = v[i].tag;
			continue;
		}
		if (strstr(c, "ServerVersion"))
			out = info;
		else if (strstr(c, "image inspect"))
			out = image;
		else if (strstr(c, "cksum"))
			out = "f 4096 config.json\nc 1234567 4096 ./config.json\n";
		else if (strstr(c, "ip -o"))
			out = node == HEAD ? "2: enp1s0f0np0    inet 10.10.10.1/24 "
			    "scope global enp1s0f0np0\n" : "2: enp1s0f0np0    "
			    "inet 10.10.10.2/24 scope global enp1s0f0np0\n";
		else if (strstr(c, "nvidia-smi -L"))
			out = "GPU 0: NVIDIA GB10 (UUID: GPU-1)\n";
		else if (strstr(c, "nvidia-smi --query-gpu"))
			out = "0, NVIDIA GB10, [N/A], [N/A]\n";
		else if (strstr(c, "Runtimes"))
			out = rt;
		answer(pf, node, v[i].tag, 0, out, "");
	}
	preflight_cmds_free(v, n);
	free(info);
	free(image);
	free(rt);
	assert_int_not_equal(link, -1);
	return link;
}

struct due {
	struct pf_cmd	*v;
	size_t		 n;
};

static void
more(struct preflight *pf, struct due *d)
{
	d->n = preflight_more(pf, &d->v);
}

/* The due command from node holding needle. */
static const struct pf_cmd *
due_find(const struct due *d, size_t node, const char *needle)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->v[i].node == node && strstr(d->v[i].cmd, needle))
			return &d->v[i];
	fail_msg("nothing due on node %zu holds \"%s\"", node, needle);
	return NULL;
}

/* Both interfaces up at 1500: the two full-size pings are due. */
static void
states_up(struct preflight *pf, int tag_h, int tag_w, struct due *d)
{
	answer_rec(pf, HEAD, tag_h, "state-up");
	more(pf, d);
	assert_int_equal(d->n, 0);	/* the worker's not in yet */
	answer_rec(pf, WORKER, tag_w, "state-up-b");
	more(pf, d);
	assert_int_equal(d->n, 2);
	assert_string_equal(due_find(d, HEAD, "ping")->cmd, "ping -n -c 1 -W 1 "
	    "-M do -s 1472 -I enp1s0f0np0 10.10.10.2");
	assert_string_equal(due_find(d, WORKER, "ping")->cmd, "ping -n -c 1 -W "
	    "1 -M do -s 1472 -I enp1s0f0np0 10.10.10.1");
}

static void
test_healthy(void **state)
{
	struct preflight *pf = preflight_new(cf);
	const struct pf_result *r;
	int th, tw;
	struct due d;

	(void)state;
	th = first_round(pf, HEAD);
	tw = first_round(pf, WORKER);
	assert_false(preflight_complete(pf));
	states_up(pf, th, tw, &d);
	assert_false(preflight_complete(pf));
	answer_rec(pf, HEAD, due_find(&d, HEAD, "ping")->tag, "ping-big-ok");
	assert_false(preflight_complete(pf));
	answer_rec(pf, WORKER, due_find(&d, WORKER, "ping")->tag,
	    "ping-big-ok-b");
	preflight_cmds_free(d.v, d.n);
	assert_true(preflight_complete(pf));
	more(pf, &d);
	assert_int_equal(d.n, 0);
	r = preflight_result(pf, HEAD, PF_LINK);
	assert_true(r->ok);
	assert_string_equal(r->detail, "enp1s0f0np0 up, 10 Gb/s, MTU 1500");
	assert_string_equal(r->value, "10 Gb/s, MTU 1500");
	assert_true(preflight_result(pf, WORKER, PF_LINK)->ok);
	assert_string_equal(preflight_check_name(PF_LINK), "link");
	assert_true(preflight_ok(pf, NULL));
	preflight_free(pf);
}

/* The check alone: one command a node, every other check "-". */
static void
test_link_only(void **state)
{
	struct preflight *pf = preflight_new_link(cf);
	struct due d;
	size_t node;
	int tag[2], c;
	enum diag_code code;
	char ex[700];

	(void)state;
	assert_true(preflight_link_only(pf));
	for (node = 0; node < 2; node++) {
		tag[node] = link_cmds(pf, node, "none\n");
	}
	states_up(pf, tag[0], tag[1], &d);
	answer_rec(pf, HEAD, due_find(&d, HEAD, "ping")->tag, "ping-big-ok");
	answer_rec(pf, WORKER, due_find(&d, WORKER, "ping")->tag,
	    "ping-big-ok-b");
	preflight_cmds_free(d.v, d.n);
	assert_true(preflight_complete(pf));
	assert_true(preflight_ok(pf, NULL));
	assert_int_equal(preflight_failure(pf, &node, &code, ex, sizeof(ex)),
	    0);
	for (c = PF_ENGINE; c < PF_COUNT; c++)
		if (c != PF_LINK)
			assert_string_equal(preflight_result(pf, HEAD,
			    c)->detail, "-");
	preflight_free(pf);
}

/*
 * The link alone, each node's RDMA answered with tests/unit/data/rdma/
 * FILE.out (the bed's fake trees read by cmd_rdma_state): the link passes
 * and the preflight's verdict on the RDMA answers is returned.
 */
static struct preflight *
link_with_rdma(const char *head, const char *worker)
{
	struct preflight *pf = preflight_new_link(cf);
	char path[200], *out[2];
	struct due d;
	int tag[2];
	size_t node;

	snprintf(path, sizeof(path), "tests/unit/data/rdma/%s.out", head);
	out[0] = slurp(path);
	snprintf(path, sizeof(path), "tests/unit/data/rdma/%s.out", worker);
	out[1] = slurp(path);
	for (node = 0; node < 2; node++)
		tag[node] = link_cmds(pf, node, out[node]);
	states_up(pf, tag[0], tag[1], &d);
	answer_rec(pf, HEAD, due_find(&d, HEAD, "ping")->tag, "ping-big-ok");
	answer_rec(pf, WORKER, due_find(&d, WORKER, "ping")->tag,
	    "ping-big-ok-b");
	preflight_cmds_free(d.v, d.n);
	assert_true(preflight_complete(pf));
	free(out[0]);
	free(out[1]);
	return pf;
}

/* Each node's own GID index, in the link column and for the start. */
static void
test_rdma_per_node(void **state)
{
	struct preflight *pf = link_with_rdma("node1-on", "node2-on");
	const struct rdma_state *st;

	(void)state;
	assert_true(preflight_ok(pf, NULL));
	st = preflight_rdma(pf, HEAD);
	assert_non_null(st);
	assert_int_equal(st->v, RDMA_OK);
	assert_int_equal(st->gid_index, 3);
	assert_string_equal(st->dev, "rocep1s0f0");
	assert_int_equal(preflight_rdma(pf, WORKER)->gid_index, 5);
	assert_string_equal(preflight_result(pf, WORKER, PF_LINK)->value,
	    "10 Gb/s, MTU 1500; RDMA rocep1s0f0 port 1 GID index 5 (RoCE v2, "
	    "Ethernet)");
	assert_string_equal(preflight_result(pf, HEAD, PF_LINK)->detail,
	    "enp1s0f0np0 up, 10 Gb/s, MTU 1500; RDMA rocep1s0f0 port 1 GID "
	    "index 3 (RoCE v2, Ethernet)");
	preflight_free(pf);
	/* no RDMA: passes as before, nothing found */
	pf = link_with_rdma("off", "off");
	assert_true(preflight_ok(pf, NULL));
	assert_int_equal(preflight_rdma(pf, HEAD)->v, RDMA_NONE);
	assert_string_equal(preflight_result(pf, HEAD, PF_LINK)->value,
	    "10 Gb/s, MTU 1500");
	preflight_free(pf);
}

static void
rdma_fails(const char *head, const char *worker, enum diag_code want,
    size_t want_node)
{
	struct preflight *pf = link_with_rdma(head, worker);
	enum diag_code code;
	size_t node;
	char ex[700];

	assert_false(preflight_ok(pf, NULL));
	assert_int_equal(preflight_failure(pf, &node, &code, ex, sizeof(ex)),
	    1);
	assert_int_equal(code, want);
	assert_int_equal(node, want_node);
	assert_non_null(strstr(ex, diag_code_name(want)));
	assert_non_null(strstr(ex, "; fix: "));
	preflight_free(pf);
}

/* A port down, no GID for the address, two link layers: named, stopping. */
static void
test_rdma_diagnoses(void **state)
{
	(void)state;
	rdma_fails("node1-on", "port-down", DIAG_RDMA_PORT_DOWN, WORKER);
	rdma_fails("node1-on", "gid-missing", DIAG_RDMA_GID_MISSING, WORKER);
	rdma_fails("node1-on", "infiniband", DIAG_RDMA_LINK_LAYER_MIXED,
	    WORKER);
	assert_false(diag_get(DIAG_RDMA_PORT_DOWN)->retryable);
}

/* The worker's cable: link-down named from its interface, no ping. */
static void
test_link_down(void **state)
{
	struct preflight *pf = preflight_new(cf);
	enum diag_code code;
	char ex[700];
	size_t node;
	int th, tw;
	struct due d;

	(void)state;
	th = first_round(pf, HEAD);
	tw = first_round(pf, WORKER);
	answer_rec(pf, HEAD, th, "state-up");
	answer_rec(pf, WORKER, tw, "state-no-carrier");
	more(pf, &d);
	assert_int_equal(d.n, 0);
	assert_true(preflight_complete(pf));
	assert_int_equal(preflight_failure(pf, &node, &code, ex, sizeof(ex)),
	    1);
	assert_int_equal(node, WORKER);
	assert_int_equal(code, DIAG_LINK_DOWN);
	assert_string_equal(ex, "preflight link: link-down: spark-worker: "
	    "enp1s0f0np0 has no carrier (NO-CARRIER, state DOWN): the cable, "
	    "the transceiver or the port at the other end is down; fix: check "
	    "the cable of spark-worker's enp1s0f0np0 and the port it plugs "
	    "into (ip link show enp1s0f0np0 on both ends must say LOWER_UP)");
	/* the head's line says what it saw there */
	assert_true(preflight_result(pf, HEAD, PF_LINK)->ok);
	preflight_free(pf);
}

/* MTU 9000 against 1500: mtu-mismatch from the interfaces, no ping. */
static void
test_mtu_mismatch(void **state)
{
	struct preflight *pf = preflight_new_link(cf);
	enum diag_code code;
	char ex[700];
	size_t node;
	int tag[2];
	struct due d;

	(void)state;
	for (node = 0; node < 2; node++) {
		tag[node] = link_cmds(pf, node, "none\n");
	}
	answer_rec(pf, HEAD, tag[0], "state-up");
	answer_rec(pf, WORKER, tag[1], "state-mtu9000");
	more(pf, &d);
	assert_int_equal(d.n, 0);
	assert_true(preflight_complete(pf));
	assert_int_equal(preflight_failure(pf, &node, &code, ex, sizeof(ex)),
	    1);
	assert_int_equal(node, WORKER);
	assert_int_equal(code, DIAG_MTU_MISMATCH);
	assert_non_null(strstr(ex, "spark-worker enp1s0f0np0 9000, spark-head "
	    "enp1s0f0np0 1500"));
	assert_string_equal(preflight_result(pf, WORKER, PF_LINK)->value,
	    "10 Gb/s, MTU 9000");
	preflight_free(pf);
}

/*
 * The head's full-size ping lost: its small one and the full-size one
 * again, both at once, on the head only. Both lost: link-unreachable; the
 * small one passing and the big one lost again: the path's MTU; the big
 * one passing the second time: the link passes.
 */
static void
unreachable_case(const char *small, const char *again, int want_fail,
    enum diag_code want)
{
	struct preflight *pf = preflight_new_link(cf);
	enum diag_code code;
	char ex[700];
	size_t node;
	int tag[2];
	struct due d, d2;

	for (node = 0; node < 2; node++) {
		tag[node] = link_cmds(pf, node, "none\n");
	}
	states_up(pf, tag[0], tag[1], &d);
	answer_rec(pf, HEAD, due_find(&d, HEAD, "ping")->tag, "ping-lost");
	more(pf, &d2);
	assert_int_equal(d2.n, 0);	/* the worker's not in yet */
	answer_rec(pf, WORKER, due_find(&d, WORKER, "ping")->tag,
	    "ping-big-ok-b");
	preflight_cmds_free(d.v, d.n);
	more(pf, &d);
	assert_int_equal(d.n, 2);
	assert_false(preflight_complete(pf));
	answer_rec(pf, HEAD, due_find(&d, HEAD, "ping -n -c 1 -W 1 -I")->tag,
	    small);
	assert_false(preflight_complete(pf));
	answer_rec(pf, HEAD, due_find(&d, HEAD, "-M do -s 1472")->tag, again);
	preflight_cmds_free(d.v, d.n);
	assert_true(preflight_complete(pf));
	assert_int_equal(preflight_failure(pf, &node, &code, ex, sizeof(ex)),
	    want_fail);
	if (want_fail) {
		assert_int_equal(node, HEAD);
		assert_int_equal(code, want);
		assert_non_null(strstr(ex, "spark-head"));
		assert_non_null(strstr(ex, "spark-worker (10.10.10.2)"));
		assert_non_null(strstr(ex, "; fix: "));
	}
	preflight_free(pf);
}

static void
test_pair_rounds(void **state)
{
	(void)state;
	unreachable_case("ping-lost", "ping-lost", 1, DIAG_LINK_UNREACHABLE);
	unreachable_case("ping-ok", "ping-big-lost", 1, DIAG_MTU_MISMATCH);
	unreachable_case("ping-ok", "ping-big-ok", 0, DIAG_LINK_UNREACHABLE);
}

/*
 * A node not asked (its session down): no pair with it can be proven, so
 * the link says nothing ("-"); the ssh check names the node.
 */
static void
test_node_down(void **state)
{
	struct preflight *pf = preflight_new(cf);
	enum diag_code code;
	char ex[700];
	size_t node;
	int th, c;
	struct due d;

	(void)state;
	th = first_round(pf, HEAD);
	preflight_node_down(pf, WORKER, "ssh: connect to 192.168.110.97:22: "
	    "connection refused");
	answer_rec(pf, HEAD, th, "state-up");
	more(pf, &d);
	assert_int_equal(d.n, 0);
	assert_true(preflight_complete(pf));
	assert_string_equal(preflight_result(pf, HEAD, PF_LINK)->detail, "-");
	/* SSH failed; the rest was not asked: not checked, not failed */
	assert_int_equal(preflight_result(pf, WORKER, PF_SSH)->status,
	    PFS_FAILED);
	for (c = PF_ENGINE; c < PF_COUNT; c++)
		assert_int_equal(preflight_result(pf, WORKER, c)->status,
		    PFS_NOT_CHECKED);
	assert_false(preflight_ok(pf, NULL));
	assert_int_equal(preflight_failure(pf, &node, &code, ex, sizeof(ex)),
	    1);
	assert_int_equal(node, WORKER);
	assert_int_equal(code, DIAG_NODE_UNREACHABLE);
	preflight_free(pf);
}

/*
 * No ping on the head: its peers not pinged, said on its line, not a
 * failure (as without nvidia-smi). A ping whose channel failed: could
 * not tell, retried. Answers twice or for no such peer change nothing.
 */
static void
test_no_ping_and_errors(void **state)
{
	struct preflight *pf = preflight_new_link(cf);
	struct cmd_result lost = { .exit_code = -1, .out = "", .err = "",
	    .error = "ssh: session down" };
	enum diag_code code;
	char ex[700];
	size_t node;
	int tag[2];
	struct due d;

	(void)state;
	for (node = 0; node < 2; node++) {
		tag[node] = link_cmds(pf, node, "none\n");
	}
	states_up(pf, tag[0], tag[1], &d);
	answer(pf, HEAD, due_find(&d, HEAD, "ping")->tag, 127, "",
	    "sh: 1: ping: not found\n");
	/* the same again, and a peer that is not there */
	answer(pf, HEAD, due_find(&d, HEAD, "ping")->tag, 0, "", "");
	answer(pf, HEAD, due_find(&d, HEAD, "ping")->tag + 30, 0, "", "");
	assert_false(preflight_complete(pf));
	preflight_answer(pf, WORKER, due_find(&d, WORKER, "ping")->tag, &lost);
	preflight_cmds_free(d.v, d.n);
	assert_true(preflight_complete(pf));
	assert_non_null(strstr(preflight_result(pf, HEAD, PF_LINK)->detail,
	    "its peers not pinged: no ping on the node"));
	assert_true(preflight_result(pf, HEAD, PF_LINK)->ok);
	assert_int_equal(preflight_failure(pf, &node, &code, ex, sizeof(ex)),
	    1);
	assert_int_equal(node, WORKER);
	assert_int_equal(code, DIAG_UNRECOGNISED_ANSWER);
	assert_non_null(strstr(ex, "could not tell whether spark-worker "
	    "reaches spark-head"));
	assert_non_null(strstr(ex, "ssh: session down"));
	preflight_free(pf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_healthy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdma_per_node, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_rdma_diagnoses, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_link_only, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_link_down, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_mtu_mismatch, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pair_rounds, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_node_down, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_no_ping_and_errors, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
