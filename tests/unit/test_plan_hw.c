/*
 * The hardware and bundle commands (lib/plan/plan_hw.c, lib/plan/plan_bundle.c):
 * their exact text, and the kernel log command run by a real sh against
 * stand-in journalctl and dmesg that print recorded lines, read back by
 * lib/parse/xid.c as the daemon would.
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

#include "conffile.h"
#include "plan.h"
#include "util.h"
#include "xid.h"

#include "slurp.h"

static char dir[64];

static void
script(const char *sub, const char *name, const char *body)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n%s", body);
	fclose(fp);
	chmod(path, 0755);
}

static void
tool(const char *sub, const char *name)
{
	char path[256], target[256];

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	snprintf(target, sizeof(target), "/usr/bin/%s", name);
	assert_int_equal(symlink(target, path), 0);
}

static int
setup(void **state)
{
	static const char *const tools[] = { "grep", "tail", "cut", "cat",
	    "dirname", NULL };
	const char *const *t;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tandem-test-hw-XXXXXX");
	assert_non_null(mkdtemp(dir));
	/* j/: a node with systemd's journal; d/: one with dmesg only */
	script("j", "journalctl", "echo \"$*\" >\"$(dirname \"$0\")/args\"\n"
	    "cat tests/unit/data/nvidia-xid/tandem-journalctl.txt | "
	    "grep -v '^tandem:'\n"
	    "echo '2026-11-02T09:03:00+0000 spark-2 kernel: EXT4-fs (nvme0n1p2): "
	    "re-mounted'\n");
	script("d", "dmesg", "echo \"$*\" >\"$(dirname \"$0\")/args\"\n"
	    "echo 'dmesg: read kernel buffer failed: Operation not permitted' "
	    ">&2\nexit 1\n");
	for (t = tools; *t; t++) {
		tool("j", *t);
		tool("d", *t);
	}
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *
run(const char *sub, const char *cmd)
{
	char *full = xprintf("PATH=%s/%s; export PATH; %s", dir, sub, cmd);
	struct sbuf b;
	char buf[4096];
	size_t n;
	FILE *p = popen(full, "r");

	assert_non_null(p);
	sbuf_init(&b);
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		sbuf_addn(&b, buf, n);
	pclose(p);
	free(full);
	if (b.s == NULL)
		sbuf_add(&b, "");
	return sbuf_take(&b);
}

static void
test_kernel_journalctl(void **state)
{
	struct xid_scan sc;
	char *cmd = cmd_kernel_xid(1793607243.0), *out, *args, path[128];

	(void)state;
	assert_string_equal(cmd, "if command -v journalctl >/dev/null 2>&1; "
	    "then journalctl -k --no-pager -o short-iso --since @1793607243 "
	    "2>&1 | grep -E 'NVRM|journal|Hint:' | tail -n 400 | cut -c 1-1000; "
	    "echo 'tandem: journalctl'; else dmesg --time-format iso 2>&1 | "
	    "grep -E 'NVRM|^dmesg:' | tail -n 400 | cut -c 1-1000; echo "
	    "'tandem: dmesg'; fi");
	out = run("j", cmd);
	snprintf(path, sizeof(path), "%s/j/args", dir);
	args = slurp(path);
	assert_string_equal(args, "-k --no-pager -o short-iso --since "
	    "@1793607243\n");
	xid_scan(out, strlen(out), 0, &sc);
	assert_int_equal(sc.source, KLOG_JOURNALCTL);
	assert_int_equal(sc.unreadable, 0);
	assert_int_equal(sc.n, 3);
	assert_int_equal(xid_worst(&sc)->code, 79);
	assert_null(strstr(out, "EXT4"));	/* only the driver's lines */
	free(args);
	free(out);
	free(cmd);
	cmd = cmd_kernel_xid(0);
	assert_null(strstr(cmd, "--since"));
	free(cmd);
}

static void
test_kernel_dmesg_refused(void **state)
{
	struct xid_scan sc;
	char *cmd = cmd_kernel_xid(100), *out;

	(void)state;
	out = run("d", cmd);
	xid_scan(out, strlen(out), 100, &sc);
	assert_int_equal(sc.source, KLOG_DMESG);
	assert_int_equal(sc.unreadable, 1);
	assert_string_equal(sc.why, "dmesg: read kernel buffer failed: "
	    "Operation not permitted");
	free(out);
	free(cmd);
}

static void
test_other_commands(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	char *s;

	(void)state;
	assert_non_null(cf);
	s = cmd_gpu_ecc();
	assert_string_equal(s, "nvidia-smi --query-gpu=index,pci.bus_id,"
	    "ecc.errors.uncorrected.volatile.total --format=csv,noheader");
	free(s);
	s = cmd_bundle_logs(cf, 1, 2000);
	assert_string_equal(s, "docker logs --timestamps --tail 2000 "
	    "vllm-worker 2>&1 | tail -c 1048576");
	free(s);
	s = cmd_bundle_state(cf, 0);
	assert_string_equal(s, "docker inspect --format '{{json .State}}' "
	    "vllm-head 2>&1 | tail -c 1048576");
	free(s);
	s = cmd_bundle_vllm_log(cf);
	assert_string_equal(s, "docker exec vllm-head tail -c 1048576 "
	    "/tmp/vllm_serve.log");
	free(s);
	s = cmd_bundle_gpus();
	assert_string_equal(s, "nvidia-smi 2>&1 | tail -c 1048576");
	free(s);
	config_free(cf);
}

/* ray.auth_token_file: mounted read-only, named to Ray, never on a line. */
static void
test_ray_token_in_plan(void **state)
{
	char err[ERRLEN];
	struct config *cf = conffile_load("etc/tandem.json", err, sizeof(err));
	struct plan p;
	size_t i;
	int runs = 0;

	(void)state;
	assert_non_null(cf);
	plan_rebuild(cf, 0, &p);
	for (i = 0; i < p.n; i++)
		assert_null(strstr(p.cmds[i].shell, "RAY_AUTH"));
	plan_free(&p);
	cf->ray.auth_token_file = xstrdup("/etc/tandem/ray-token");
	plan_rebuild(cf, 0, &p);
	for (i = 0; i < p.n; i++) {
		if (p.cmds[i].phase != PH_HEAD && p.cmds[i].phase !=
		    PH_WORKERS)
			continue;
		runs++;
		assert_non_null(strstr(p.cmds[i].shell, " -v "
		    "/etc/tandem/ray-token:/run/tandem/ray-auth-token:ro -e "
		    "RAY_AUTH_MODE=token -e "
		    "RAY_AUTH_TOKEN_PATH=/run/tandem/ray-auth-token "));
	}
	assert_int_equal(runs, 2);
	plan_free(&p);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_journalctl),
		cmocka_unit_test(test_kernel_dmesg_refused),
		cmocka_unit_test(test_other_commands),
		cmocka_unit_test(test_ray_token_in_plan),
	};

	return cmocka_run_group_tests_name("plan_hw", tests, setup, teardown);
}
