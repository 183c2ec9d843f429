/*
 * libFuzzer harness for the HTTP API: each input is sent as raw bytes to
 * the daemon's real libmicrohttpd server (httpd.c, inside a libuv loop, as
 * in tandemd) over a loopback TCP connection, then the write side is shut
 * and the loop runs until the server closes. The cluster behind it is real
 * but never started, so POST /rebuild /pause /resume (the corpus carries
 * the token) drive the state machine without touching any node. Its state
 * directory is on tmpfs: every event is an fsynced write.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conffile.h"
#include "api.h"
#include "cluster.h"
#include "http.h"
#include "log.h"
#include "ssh.h"

static uv_loop_t		*loop;
static struct sockaddr_in	 addr;

static void
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	if (fp == NULL || fputs(text, fp) == EOF || fclose(fp) == EOF) {
		perror(path);
		exit(1);
	}
}

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A port nothing listens on now: the kernel's pick for port 0. */
static int
free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd, port = -1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return 20000 + getpid() % 20000;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port > 0 ? port : 20000 + getpid() % 20000;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/dev/shm/fuzz-http.XXXXXX", path[128], text[1024];
	char err[ERRLEN];
	struct config *cf;
	struct cluster *cl;
	/*
	 * A port per process (-merge runs an outer and an inner one), the
	 * kernel's free one: a port made of the pid fell on one in use
	 * beside the beds.
	 */
	int port = free_port();

	(void)argc;
	(void)argv;
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/token", dir);
	write_file(path, "fuzz-token\n");
	chmod(path, 0600);	/* tandemd refuses a token others can read */
	snprintf(path, sizeof(path), "%s/known_hosts", dir);
	write_file(path, "");
	snprintf(text, sizeof(text),
	    "{\"name\": \"fuzz\", \"listen\": \"127.0.0.1:%d\",\n"
	    " \"api_token_file\": \"%s/token\",\n"
	    " \"api_socket\": \"%s/api.sock\",\n"
	    " \"ssh\": {\"known_hosts_file\": \"%s/known_hosts\",\n"
	    "  \"identity_file\": \"%s/known_hosts\"},\n"
	    " \"container\": {\"image\": \"img\"},\n"
	    " \"nodes\": [{\"name\": \"a\", \"role\": \"head\", \"ssh_host\":"
	    " \"127.0.0.1\", \"ssh_port\": 1, \"ip\": \"127.0.0.1\", \"ifname\":"
	    " \"lo\"}],\n"
	    " \"vllm\": {\"model\": \"/m\"}}\n", port, dir, dir, dir, dir);
	snprintf(path, sizeof(path), "%s/tandem.json", dir);
	write_file(path, text);
	if ((cf = conffile_load(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "fuzz_http: %s\n", err);
		exit(1);
	}
	signal(SIGPIPE, SIG_IGN);
	loop = uv_default_loop();
	if (sshc_ssh_init() != 0 || http_init(loop) != 0)
		exit(1);
	cl = cluster_new(loop, cf, dir, 0);
	if (httpd_start(cl, err, sizeof(err)) == -1) {
		fprintf(stderr, "fuzz_http: %s\n", err);
		exit(1);
	}
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[65536];
	struct pollfd pfd;
	size_t off = 0;
	ssize_t n;
	int fd, i, shut = 0;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1) {
		perror("fuzz_http: socket");
		exit(1);
	}
	/*
	 * libFuzzer's timeout alarm can interrupt a blocking connect, which
	 * then goes on by itself: try again until it says connected.
	 */
	pfd.fd = fd;
	pfd.events = POLLOUT;
	while (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == -1 &&
	    errno != EISCONN) {
		if (errno != EINTR && errno != EALREADY) {
			perror("fuzz_http: connect");
			exit(1);
		}
		poll(&pfd, 1, 10);
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	pfd.events = POLLIN;
	/*
	 * Send, let the server read, then shut the write side and drain the
	 * answers until it closes. The FIN goes separately: with edge-triggered
	 * epoll, MHD does not see an EOF that arrived with the last bytes until
	 * its 10 s connection timeout (harmless in tandemd, slow for a fuzzer).
	 */
	for (i = 0; i < 2000; i++) {
		if (off < size) {
			n = send(fd, data + off, size - off, MSG_NOSIGNAL);
			if (n > 0)
				off += (size_t)n;
		} else if (!shut && i >= 3) {
			shutdown(fd, SHUT_WR);
			shut = 1;
		}
		uv_run(loop, UV_RUN_NOWAIT);
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			break;
		if (n < 0)
			poll(&pfd, 1, 1);
	}
	close(fd);
	return 0;
}
