/*
 * The evidence bundle: a tar that GNU tar lists and extracts byte for
 * byte, its README, its size bounds, its name, which old bundles go, and
 * what the plan runs on which node.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "bundle.h"
#include "conffile.h"
#include "ustar.h"
#include "util.h"

#include "slurp.h"

static char dir[64];

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tandem-test-bundle-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void
write_file(const char *path, const struct sbuf *b)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fwrite(b->s, 1, b->len, fp), b->len);
	assert_int_equal(fclose(fp), 0);
}

static char *
sh(const char *fmt, const char *arg)
{
	char *cmd = xprintf(fmt, arg, arg, arg);
	struct sbuf b;
	char buf[4096];
	size_t n;
	FILE *p = popen(cmd, "r");

	assert_non_null(p);
	sbuf_init(&b);
	sbuf_add(&b, "");
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		sbuf_addn(&b, buf, n);
	assert_int_equal(pclose(p), 0);
	free(cmd);
	return sbuf_take(&b);
}

/* GNU tar reads what ustar_add writes, names over 100 bytes included. */
static void
test_gnu_tar_reads_it(void **state)
{
	char err[ERRLEN], path[512], *out, *got;
	char longname[200];
	struct sbuf b;
	static const char bin[] = "a\0b\xff\n";
	struct stat st;
	size_t i;

	(void)state;
	snprintf(longname, sizeof(longname), "nodes/%0120d/x.log", 7);
	sbuf_init(&b);
	assert_int_equal(ustar_add(&b, "README.txt", "hello\n", 6, 0644,
	    1793607243, err, sizeof(err)), 0);
	assert_int_equal(ustar_add(&b, "nodes/spark-2/bin.dat", bin,
	    sizeof(bin) - 1, 0600, 1793607243, err, sizeof(err)), 0);
	assert_int_equal(ustar_add(&b, longname, "long\n", 5, 0644, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(ustar_add(&b, "empty", "", 0, 0644, 0, err,
	    sizeof(err)), 0);
	ustar_end(&b);
	assert_int_equal(b.len % USTAR_BLOCK, 0);
	snprintf(path, sizeof(path), "%s/a.tar", dir);
	write_file(path, &b);
	out = sh("tar -tvf %s", path);
	assert_non_null(strstr(out, "-rw-r--r-- root/root         6 "
	    "2026-11-02 08:14 README.txt\n"));
	assert_non_null(strstr(out, "-rw------- root/root         5 "));
	assert_non_null(strstr(out, longname));
	free(out);
	free(sh("mkdir %s.d && tar -xf %s -C %s.d", path));
	snprintf(path, sizeof(path), "%s/a.tar.d/nodes/spark-2/bin.dat", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, sizeof(bin) - 1);
	got = slurp(path);
	for (i = 0; i < sizeof(bin) - 1; i++)
		assert_int_equal(got[i], bin[i]);
	free(got);
	snprintf(path, sizeof(path), "%s/a.tar.d/%s", dir, longname);
	got = slurp(path);
	assert_string_equal(got, "long\n");
	free(got);
	sbuf_free(&b);
}

static void
test_names_refused(void **state)
{
	char err[ERRLEN], name[300];
	struct sbuf b;

	(void)state;
	sbuf_init(&b);
	assert_int_equal(ustar_add(&b, "/etc/passwd", "x", 1, 0644, 0, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "ustar: /etc/passwd: not a plain relative "
	    "name");
	assert_int_equal(ustar_add(&b, "a/../b", "x", 1, 0644, 0, err,
	    sizeof(err)), -1);
	memset(name, 'a', 150);
	name[150] = '\0';	/* no '/' to split at */
	assert_int_equal(ustar_add(&b, name, "x", 1, 0644, 0, err,
	    sizeof(err)), -1);
	assert_int_equal(b.len, 0);
	sbuf_free(&b);
}

/* The README first, each file's tail, the whole under its limit. */
static void
test_bundle_tar(void **state)
{
	struct bundle bd = { 0 };
	struct sbuf big, out;
	char err[ERRLEN], path[128], *list, *readme;
	size_t i;

	(void)state;
	sbuf_init(&big);
	for (i = 0; i < BUNDLE_PART_MAX + 100; i++)
		sbuf_addc(&big, i < 100 ? 'x' : 'y');
	bundle_add(&bd, "head/vllm.log", big.s, big.len, 0, NULL);
	assert_int_equal(bd.v[0].cut, 100);
	assert_int_equal(bd.v[0].data[0], 'y');
	bundle_add(&bd, "nodes/spark-2/container.log", "ray: bye\n", 9, 0,
	    NULL);
	bundle_add(&bd, "nodes/spark-2/nvidia-smi.txt", "", 0, -1,
	    "the node did not answer");
	bundle_add(&bd, "nodes/spark-1/container.log", big.s, 4096, 1, NULL);
	sbuf_init(&out);
	/* room for everything but the last */
	assert_int_equal(bundle_tar(&bd, "3 rebuilds in the last hour.", 0,
	    ustar_file_size(64 * 1024) + 2 * USTAR_BLOCK +
	    ustar_file_size(BUNDLE_PART_MAX) + ustar_file_size(9) +
	    ustar_file_size(0) + 100, &out, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/b.tar", dir);
	write_file(path, &out);
	list = sh("tar -tf %s", path);
	assert_string_equal(list, "README.txt\nhead/vllm.log\n"
	    "nodes/spark-2/container.log\nnodes/spark-2/nvidia-smi.txt\n");
	readme = sh("tar -xOf %s README.txt", path);
	assert_string_equal(readme, "tandem evidence bundle\n\n3 rebuilds in "
	    "the last hour.\n\nFiles (each keeps the tail of what was read; "
	    "exit status of the command on the node):\n"
	    "  head/vllm.log: 1048576 bytes, exit status 0, its first 100 "
	    "bytes cut\n"
	    "  nodes/spark-2/container.log: 9 bytes, exit status 0\n"
	    "  nodes/spark-2/nvidia-smi.txt: 0 bytes; the node did not answer\n"
	    "  nodes/spark-1/container.log: left out (4096 bytes): the bundle "
	    "is at its size limit\n");
	assert_true(out.len <= BUNDLE_MAX);
	free(list);
	free(readme);
	sbuf_free(&out);
	sbuf_free(&big);
	bundle_free(&bd);
}

static void
test_names_and_rotation(void **state)
{
	char name[BUNDLE_NAME_MAX];
	char *names[] = {
		"tandem-bundle-20261102T091240Z-g17.tar",
		"tandem-bundle-20261101T080000Z-g9.tar",
		"notes.txt",
		"tandem-bundle-20261102T101500Z-g18.tar",
		"tandem-bundle-20261030T120000Z-g2.tar",
		"tandem-bundle-20261102T091240Z-g17.tar.tmp",
	};
	uint64_t sizes[] = { 10, 10, 999, 10, 10, 10 };
	size_t del[6], n;

	(void)state;
	bundle_name(1793607243.0, 17, name, sizeof(name));
	assert_string_equal(name, "tandem-bundle-20261102T081403Z-g17.tar");
	assert_true(bundle_name_valid(name));
	assert_false(bundle_name_valid("tandem-bundle-2026110T081403Z-g1.tar"));
	assert_false(bundle_name_valid("tandem-bundle-20261102T081403Z-g.tar"));
	assert_false(bundle_name_valid("../tandem-bundle-20261102T081403Z-g1."
	    "tar"));
	/* issue 43 item 5: a name from Content-Disposition that left the
	 * working directory passed a check that stopped at the first '.' */
	assert_false(bundle_name_valid("tandem-bundle-20260101T000000Z-g1.d/"
	    "../../../../pwn/evil.tar"));
	assert_false(bundle_name_valid("tandem-bundle-20260101T000000Z-g1.tar/"
	    "x.tar"));
	assert_false(bundle_name_valid("tandem-bundle-20260101T000000Z-g1.tar."
	    "tar"));
	assert_false(bundle_name_valid("tandem-bundle-20260101T000000Z-g12a"
	    ".tar"));
	assert_true(bundle_name_valid("tandem-bundle-20260101T000000Z-g1.tar"));
	assert_int_equal(bundle_latest(names, 6), 3);
	/* keep 2: the two oldest go, foreign names stay */
	n = bundle_rotate(names, sizes, 6, 2, 1000, del);
	assert_int_equal(n, 2);
	assert_int_equal(del[0], 1);
	assert_int_equal(del[1], 4);
	/* 25 bytes at most: only the newest fits, and it always stays */
	n = bundle_rotate(names, sizes, 6, 5, 15, del);
	assert_int_equal(n, 3);
	n = bundle_rotate(names, sizes, 6, 5, 5, del);
	assert_int_equal(n, 3);
	assert_int_equal(bundle_latest(names, 0), -1);
}

static void
test_plan(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	struct bundle_plan p;
	size_t i;

	(void)state;
	assert_non_null(cf);
	bundle_plan(cf, 1793607243.0, &p);
	assert_int_equal(p.n, 2 * 4 + 2);
	assert_string_equal(p.v[0].name, "nodes/spark-head/container.log");
	assert_int_equal(p.v[0].node, 0);
	assert_string_equal(p.v[7].name, "nodes/spark-worker/kernel-nvrm.txt");
	assert_non_null(strstr(p.v[7].cmd, "--since @1793607243"));
	assert_string_equal(p.v[8].name, "head/vllm.log");
	assert_int_equal(p.v[8].node, cf->head);
	assert_string_equal(p.v[9].name, "head/ray-status.txt");
	for (i = 0; i < p.n; i++)
		assert_true(strlen(p.v[i].what) > 5);
	bundle_plan_free(&p);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gnu_tar_reads_it),
		cmocka_unit_test(test_names_refused),
		cmocka_unit_test(test_bundle_tar),
		cmocka_unit_test(test_names_and_rotation),
		cmocka_unit_test(test_plan),
	};

	return cmocka_run_group_tests_name("bundle", tests, setup, teardown);
}
