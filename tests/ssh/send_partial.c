/*
 * tandem's SSH client (daemon/ssh/) against a real sshd, with every send
 * libssh2 makes forced short: each third call says EAGAIN and the others
 * write a few bytes only. Then packets are left half-sent all the time,
 * and libssh2 1.10 requires that the next call that sends is the very call
 * that left one (transport.c send_existing: LIBSSH2_ERROR_BAD_USE, -39,
 * for any other; issue 45 item 2). Twelve commands, a stream and the
 * heartbeat run at once on the session; each command must answer its own
 * line with exit 0, the stream its lines, and the session stay up.
 *
 * usage: send_partial HOST PORT USER IDENTITY KNOWN_HOSTS
 * exit 0 when all answered; 1 (and why on stderr) otherwise.
 */
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssh_int.h"
#include "log.h"

#define NCMDS		12
#define STREAM_LINES	3000

static uv_loop_t	*loop;
static struct sshc	*sc;
static uv_timer_t	 limit;
static int		 answered, stream_lines, stream_done, failed;
static unsigned long	 sends, shorts;
static char		 failure[512];

static ssize_t
short_send(libssh2_socket_t fd, const void *buf, size_t len, int flags,
    void **abstract)
{
	ssize_t n;

	(void)abstract;
	if (++sends % 3 == 0) {
		shorts++;
		return -EAGAIN;
	}
	if (len > 1 + sends % 13) {
		len = 1 + sends % 13;
		shorts++;
	}
	n = send(fd, buf, len, flags);
	return n < 0 ? -errno : n;
}

static void
finish(const char *why)
{
	if (why && !failed) {
		failed = 1;
		snprintf(failure, sizeof(failure), "%s", why);
	}
	uv_timer_stop(&limit);
	if (sc) {
		sshc_free(sc);
		sc = NULL;
	}
}

static void
maybe_done(void)
{
	if (answered == NCMDS && stream_done)
		finish(NULL);
}

static void
on_cmd(const struct cmd_result *r, void *arg)
{
	char want[32], why[512];

	snprintf(want, sizeof(want), "hi %d\n", (int)(intptr_t)arg);
	if (r->exit_code != 0 || strcmp(r->out, want) != 0) {
		snprintf(why, sizeof(why), "command %d: exit %d, %s, out %.40s",
		    (int)(intptr_t)arg, r->exit_code,
		    r->error ? r->error : "no error", r->out);
		finish(why);
		return;
	}
	answered++;
	maybe_done();
}

static void
on_stream_line(const char *line, void *arg)
{
	(void)arg;
	if (strncmp(line, "line ", 5) == 0)
		stream_lines++;
}

static void
on_stream_end(const struct cmd_result *r, void *arg)
{
	char why[256];

	(void)arg;
	if (r->exit_code != 0 || stream_lines != STREAM_LINES) {
		snprintf(why, sizeof(why), "stream: exit %d, %s, %d lines",
		    r->exit_code, r->error ? r->error : "no error",
		    stream_lines);
		finish(why);
		return;
	}
	stream_done = 1;
	maybe_done();
}

static void
on_state(struct sshc *c, int up, const char *why, int fatal, void *arg)
{
	char cmd[64], msg[512];

	(void)arg;
	(void)fatal;
	if (!up) {
		if (sc) {
			snprintf(msg, sizeof(msg), "session down: %s", why);
			sc = NULL;	/* ssh_fail is running: no free here */
			failed = 1;
			snprintf(failure, sizeof(failure), "%s", msg);
			uv_timer_stop(&limit);
			uv_stop(loop);
		}
		return;
	}
	for (int i = 0; i < NCMDS; i++) {
		snprintf(cmd, sizeof(cmd), "echo hi %d", i);
		sshc_exec(c, cmd, 30, on_cmd, (void *)(intptr_t)i);
	}
	snprintf(cmd, sizeof(cmd), "i=0; while [ $i -lt %d ]; do "
	    "echo \"line $i\"; i=$((i+1)); done", STREAM_LINES);
	sshc_stream(c, cmd, on_stream_line, on_stream_end, NULL);
}

static void
on_limit(uv_timer_t *t)
{
	char why[128];

	(void)t;
	snprintf(why, sizeof(why), "not done in 60 s: %d of %d answered, "
	    "%d stream lines", answered, NCMDS, stream_lines);
	finish(why);
}

int
main(int argc, char **argv)
{
	struct ssh_params p;

	if (argc != 6) {
		fprintf(stderr, "usage: send_partial HOST PORT USER IDENTITY "
		    "KNOWN_HOSTS\n");
		return 2;
	}
	log_init(0);
	sshc_ssh_init();
	ssh_send_hook = short_send;
	memset(&p, 0, sizeof(p));
	p.host = argv[1];
	p.port = atoi(argv[2]);
	p.user = argv[3];
	p.identity_file = argv[4];
	p.known_hosts_file = argv[5];
	p.connect_timeout_s = 10;
	p.keepalive_s = 1;
	loop = uv_default_loop();
	uv_timer_init(loop, &limit);
	uv_timer_start(&limit, on_limit, 60000, 0);
	sc = sshc_new(loop, &p, on_state, NULL);
	sshc_connect(sc);
	uv_run(loop, UV_RUN_DEFAULT);
	printf("libssh2 %s: %lu sends, %lu short; %d of %d commands, %d "
	    "stream lines\n", libssh2_version(0), sends, shorts, answered,
	    NCMDS, stream_lines);
	if (failed) {
		fprintf(stderr, "FAIL: %s\n", failure);
		return 1;
	}
	return 0;
}
