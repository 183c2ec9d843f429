/*
 * The HTTP API's listen sockets: TCP (listen, with the warning when other
 * hosts can reach it) and tandemctl's Unix socket (api_socket).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd_int.h"
#include "api.h"
#include "config.h"
#include "log.h"
#include "portholder.h"

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 answer only this host. */
static int
listen_is_loopback(const char *host)
{
	struct in_addr a;
	struct in6_addr a6;

	if (inet_pton(AF_INET, host, &a) == 1)
		return ntohl(a.s_addr) >> 24 == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) &&
		    a6.s6_addr[12] == 127);
	return 0;
}

/* The warning for an API that other hosts can reach, or NULL. */
const char *
httpd_listen_warning(const struct config *cf, char *buf, size_t len)
{
	if (listen_is_loopback(cf->listen_host))
		return NULL;
	snprintf(buf, len, "listen %s:%d is not a loopback address: GET "
	    "/status, /events and /metrics answer anyone who can reach it, "
	    "without a token, and the API token of POST requests crosses the "
	    "network in clear (no TLS); see tandem.json(5)", cf->listen_host,
	    cf->listen_port);
	return buf;
}

/*
 * The listen socket is made here rather than by libmicrohttpd so that a
 * taken port is reported by name: 9100 is also node_exporter's default, and
 * on GPU nodes it often runs already.
 */
int
httpd_listen_tcp(const struct config *cf, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t sslen;
	int fd, on = 1, e, sndbuf = SEND_BUF;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, cf->listen_host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)cf->listen_port);
		sslen = sizeof(*sin);
	} else if (inet_pton(AF_INET6, cf->listen_host,
	    &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)cf->listen_port);
		sslen = sizeof(*sin6);
	} else {
		seterr(err, errlen, "listen %s: not an IP address",
		    cf->listen_host);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		seterr(err, errlen, "listen: socket: %s", strerror(errno));
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (bind(fd, (struct sockaddr *)&ss, sslen) == 0 &&
	    listen(fd, LISTEN_BACKLOG) == 0)
		return fd;
	e = errno;
	close(fd);
	if (e == EADDRINUSE) {
		struct port_holder h;
		char who[128];

		/*
		 * A tandemd there (the service beside a --once, or one of
		 * another config) would make two managers of one cluster.
		 */
		port_holder_find(cf->listen_host, cf->listen_port, &h);
		if (h.tandemd)
			seterr(err, errlen, "listen %s:%d: another tandemd, pid "
			    "%ld, already serves http://%s:%d: two would manage "
			    "the cluster at once: stop that one first "
			    "(systemctl stop tandemd)", cf->listen_host,
			    cf->listen_port, (long)h.pid, cf->listen_host,
			    cf->listen_port);
		else
			seterr(err, errlen, "listen %s:%d: address in use by "
			    "%s%s; set \"listen\" in tandem.json to a free "
			    "port", cf->listen_host, cf->listen_port,
			    port_holder_words(&h, who, sizeof(who)),
			    cf->listen_port == 9100 && strcmp(h.comm,
			    "node_exporter") != 0 ? " (node_exporter uses 9100 "
			    "by default)" : "");
	} else
		seterr(err, errlen, "listen %s:%d: %s", cf->listen_host,
		    cf->listen_port, strerror(e));
	return -1;
}

/*
 * tandemctl's socket (api_socket, docs/api.md "How tandemctl reaches the
 * daemon"): 0660, group tandem when that group exists, in a directory
 * nobody but its owner can write, so no other user can stand in for
 * tandemd there as one can on a TCP port it left free. Under the unit,
 * whose user namespace (PrivateUsers=yes) maps no group tandem, the group
 * comes from the directory (setgid, set by the unit's ExecStartPre).
 */
int
httpd_listen_unix(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)], *slash;
	struct stat st;
	struct group *gr;
	int fd, e;

	if (strlen(path) >= sizeof(sun.sun_path) || path[0] != '/') {
		seterr(err, errlen, "api_socket %s: not an absolute path of at "
		    "most %zu bytes", path, sizeof(sun.sun_path) - 1);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	memcpy(dir, path, strlen(path) + 1);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		seterr(err, errlen, "api_socket %s: cannot make %s: %s", path,
		    dir, strerror(errno));
		return -1;
	}
	if (stat(dir, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		seterr(err, errlen, "api_socket %s: its directory %s must be "
		    "owned by root or tandemd's user and writable by nobody "
		    "else (another user could put a socket of their own there)",
		    path, dir);
		return -1;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			seterr(err, errlen, "api_socket %s: exists and is not a "
			    "socket", path);
			return -1;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
		if (fd != -1 && (connect(fd, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0 || errno == EAGAIN)) {
			close(fd);
			seterr(err, errlen, "api_socket %s: another tandemd "
			    "answers there (two daemons must not manage one "
			    "cluster; stop it, or give this one another "
			    "api_socket and listen)", path);
			return -1;
		}
		if (fd != -1)
			close(fd);
		/* left by a daemon that crashed: nobody listens */
		if (unlink(path) == -1 && errno != ENOENT) {
			seterr(err, errlen, "api_socket %s: cannot remove the "
			    "stale socket: %s", path, strerror(errno));
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		seterr(err, errlen, "api_socket: socket: %s", strerror(errno));
		return -1;
	}
	/* bound under umask (0027 in the unit): nobody else may connect yet */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		e = errno;
		close(fd);
		seterr(err, errlen, "api_socket %s: %s", path, strerror(e));
		return -1;
	}
	if ((gr = getgrnam("tandem")) != NULL &&
	    chown(path, (uid_t)-1, gr->gr_gid) == -1)
		log_debug("api_socket %s: group tandem: %s (the directory's "
		    "group stands)", path, strerror(errno));
	if (chmod(path, 0660) == -1 || listen(fd, LISTEN_BACKLOG) == -1) {
		e = errno;
		close(fd);
		unlink(path);
		seterr(err, errlen, "api_socket %s: %s", path, strerror(e));
		return -1;
	}
	return fd;
}
