/*
 * Naming the program on a port: the socket's inode from the kernel's TCP
 * tables, then the process whose fd links to "socket:[INODE]" (proc(5);
 * what ss -p and fuser do). Other users' /proc/PID/fd is readable only
 * with CAP_SYS_PTRACE: a non-root caller may learn only that the port is
 * taken.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "portholder.h"
#include "procnet.h"
#include "util.h"

/* /proc/self/net, not /proc/net: the unit's ProcSubset=pid hides the latter. */
static unsigned long
listener_inode(const char *host, int port)
{
	static const char *const tables[2] = {
		"/proc/self/net/tcp", "/proc/self/net/tcp6"
	};
	struct in_addr a4;
	unsigned long inode = 0;
	int i, v4 = inet_pton(AF_INET, host, &a4) == 1;

	for (i = 0; i < 2 && inode == 0; i++) {
		FILE *f = fopen(tables[i], "re");
		char *text = NULL;
		size_t cap = 0, n = 0, r;

		if (f == NULL)
			continue;
		do {
			if (n + 4096 + 1 > cap)
				text = xrealloc(text, cap = cap * 2 + 8192);
			r = fread(text + n, 1, 4096, f);
			n += r;
		} while (r > 0 && n < (1u << 24));
		fclose(f);
		text[n] = '\0';
		inode = procnet_listener(text, i == 1, v4 ? a4.s_addr : 0,
		    port);
		free(text);
	}
	return inode;
}

/* Whether a process of ours has the socket among its files. */
static int
has_socket(const char *pid, const char *want)
{
	char path[320], link[64];
	struct dirent *e;
	DIR *d;
	ssize_t l;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	if ((d = opendir(path)) == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		if ((l = readlinkat(dirfd(d), e->d_name, link,
		    sizeof(link) - 1)) <= 0)
			continue;
		link[l] = '\0';
		found = strcmp(link, want) == 0;
	}
	closedir(d);
	return found;
}

void
port_holder_find(const char *host, int port, struct port_holder *h)
{
	char want[48], path[320];
	unsigned long inode;
	struct dirent *e;
	DIR *proc;
	FILE *f;

	memset(h, 0, sizeof(*h));
	if ((inode = listener_inode(host, port)) == 0)
		return;
	h->found = 1;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	if ((proc = opendir("/proc")) == NULL)
		return;
	while ((e = readdir(proc)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]) ||
		    !has_socket(e->d_name, want))
			continue;
		h->pid = (pid_t)atol(e->d_name);
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		if ((f = fopen(path, "re")) != NULL) {
			if (fgets(h->comm, sizeof(h->comm), f) == NULL)
				h->comm[0] = '\0';
			h->comm[strcspn(h->comm, "\n")] = '\0';
			fclose(f);
		}
		if (h->comm[0] == '\0')
			snprintf(h->comm, sizeof(h->comm), "a program");
		h->tandemd = strcmp(h->comm, "tandemd") == 0;
		break;
	}
	closedir(proc);
}

const char *
port_holder_words(const struct port_holder *h, char *buf, size_t len)
{
	if (!h->found)
		snprintf(buf, len, "another program");
	else if (h->pid == 0)
		snprintf(buf, len, "a program this user cannot see (as root, "
		    "ss -ltnp names it)");
	else
		snprintf(buf, len, "%s%s (pid %ld)", h->tandemd ? "another " :
		    "", h->comm, (long)h->pid);
	return buf;
}
