/*
 * tandemctl init's commands and the link check's, run by a real POSIX sh
 * (dash, not the bash the bed's logins use): the read-only ones print what
 * the parsers read, on this machine; the key is added to authorized_keys
 * once however often init runs, whatever the key's characters; values
 * reach ping as single words.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "discover.h"
#include "netinfo.h"
#include "plan.h"
#include "util.h"
#include "slurp.h"

/* Runs /bin/sh -c cmd with HOME=home; its stdout, and the exit status. */
static char *
run(const char *cmd, const char *home, int *status)
{
	char tmpl[] = "/tmp/test_plan_init.XXXXXX", *out;
	int fd = mkstemp(tmpl), st;
	pid_t pid;

	assert_true(fd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd, 1);
		if (home)
			setenv("HOME", home, 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	close(fd);
	out = slurp(tmpl);
	unlink(tmpl);
	return out;
}

static void
test_read_only(void **state)
{
	struct net_ifaces ifs;
	struct node_facts f;
	char *cmd, *addrs, *out, err[ERRLEN];
	int st;

	(void)state;
	cmd = cmd_node_facts();
	out = run(cmd, NULL, &st);
	assert_int_equal(st, 0);
	assert_int_equal(facts_parse(out, &f), 0);
	assert_true(f.hostname[0] != '\0');
	free(out);
	free(cmd);
	cmd = cmd_net_addrs();
	addrs = run(cmd, NULL, &st);
	free(cmd);
	assert_int_equal(st, 0);
	assert_int_equal(net_parse_ip_addr(addrs, strlen(addrs), &ifs, err,
	    sizeof(err)), 0);
	assert_non_null(net_iface_find(&ifs, "lo"));
	cmd = cmd_net_speeds();
	out = run(cmd, NULL, &st);
	free(cmd);
	assert_int_equal(st, 0);
	/* a line for each interface, "-" for lo */
	assert_non_null(strstr(out, "lo -\n"));
	net_parse_speeds(out, &ifs);
	free(out);
	net_ifaces_free(&ifs);
	free(addrs);
	/* no /model here, or one: exit 0 either way */
	cmd = cmd_model_dirs();
	out = run(cmd, NULL, &st);
	assert_int_equal(st, 0);
	free(out);
	free(cmd);
}

static void
test_dir_files(void **state)
{
	char dir[] = "/tmp/test_plan_init.dXXXXXX", path[128], *cmd, *out;
	FILE *fp;
	int st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a b'c", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/a b'c/config.json", dir);
	fp = fopen(path, "w");
	fputs("{}\n", fp);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/a b'c", dir);
	cmd = cmd_dir_files(path);
	out = run(cmd, NULL, &st);
	assert_int_equal(st, 0);
	assert_string_equal(out, "f 3 config.json\n");
	free(out);
	free(cmd);
	snprintf(path, sizeof(path), "rm -r '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void
test_authorize_key_once(void **state)
{
	char home[] = "/tmp/test_plan_init.hXXXXXX", path[128], *cmd, *out;
	const char *key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDQqHk2PqQTlz "
	    "tandem@it's $(not run) `nor this`";
	struct stat sb;
	int st, i;

	(void)state;
	assert_non_null(mkdtemp(home));
	cmd = cmd_authorize_key(key);
	for (i = 0; i < 3; i++) {
		out = run(cmd, home, &st);
		assert_int_equal(st, 0);
		free(out);
	}
	free(cmd);
	snprintf(path, sizeof(path), "%s/.ssh/authorized_keys", home);
	out = slurp(path);
	assert_int_equal(strlen(out), strlen(key) + 1);
	assert_int_equal(strncmp(out, key, strlen(key)), 0);
	free(out);
	/* the modes sshd's StrictModes wants */
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 077, 0);
	snprintf(path, sizeof(path), "%s/.ssh", home);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 077, 0);
	snprintf(path, sizeof(path), "rm -r '%s'", home);
	assert_int_equal(system(path), 0);
}

static void
test_link_commands(void **state)
{
	char err[ERRLEN], *cmd;
	struct config *cf;
	char *text = slurp("etc/tandem.json");

	(void)state;
	cf = config_parse(text, "tandem.json", err, sizeof(err));
	assert_non_null(cf);
	cmd = cmd_link_ping(cf, 0, 1, 8972);
	assert_string_equal(cmd, "ping -n -c 1 -W 1 -M do -s 8972 -I "
	    "enp1s0f0np0 10.10.10.2");
	free(cmd);
	cmd = cmd_link_ping(cf, 1, 0, 0);
	assert_string_equal(cmd, "ping -n -c 1 -W 1 -I enp1s0f0np0 10.10.10.1");
	free(cmd);
	cmd = cmd_link_state(cf, 1);
	assert_string_equal(cmd, "ip -j addr show dev enp1s0f0np0 && { s=; "
	    "read -r s < /sys/class/net/enp1s0f0np0/speed 2>/dev/null; "
	    "echo \"speed ${s:--}\"; }");
	free(cmd);
	config_free(cf);
	free(text);
	/* lo: the state and speed lines as the parser reads them */
	{
		struct config c;
		struct node_conf nc;
		int st;
		char *out;

		memset(&c, 0, sizeof(c));
		memset(&nc, 0, sizeof(nc));
		nc.ifname = (char *)(uintptr_t)"lo";
		c.nodes = &nc;
		c.nnodes = 1;
		cmd = cmd_link_state(&c, 0);
		out = run(cmd, NULL, &st);
		assert_int_equal(st, 0);
		assert_non_null(strstr(out, "\"ifname\":\"lo\""));
		assert_non_null(strstr(out, "\nspeed -\n"));
		free(out);
		free(cmd);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_only),
		cmocka_unit_test(test_dir_files),
		cmocka_unit_test(test_authorize_key_once),
		cmocka_unit_test(test_link_commands),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
