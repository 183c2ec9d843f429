/*
 * Reading tandem.json from disk; lib/config/config_parse.c parses the
 * bytes. Used by tandemd (start and reload), tandemctl and the unit tests.
 */
#ifndef TANDEM_CONFFILE_H
#define TANDEM_CONFFILE_H

#include <stddef.h>

#include "config.h"

/* A tandem config is small; anything larger is some other file. */
#define CONFFILE_MAX	(4 * 1024 * 1024)

/*
 * Reads and parses FILE. On error returns NULL and writes into err
 * "FILE: why" (missing, unreadable, too large, a NUL byte) or the parser's
 * "FILE:LINE:COL: key.path: what is wrong".
 */
struct config	*conffile_load(const char *file, char *err, size_t errlen);

/*
 * The files the config names that tandemd reads before it can reach any
 * node: ssh.identity_file must be readable by this process and
 * ssh.known_hosts_file must hold at least one host key (an empty one
 * would refuse every node), and hooks.on_state's program must be one this
 * user may run. Returns 0, or -1 with "FILE: key PATH: why"
 * in err. tandemd --check and tandemd's start call it.
 */
int		 conffile_check_files(const struct config *, char *err,
		    size_t errlen);

#endif
