/*
 * The head's files a config names that systemd/tandemd.service cannot
 * see: its sandbox hides /root, /home and /run/user (ProtectHome=yes)
 * and gives it its own /tmp and /var/tmp (PrivateTmp=yes). tandemd
 * --check in a shell reads them fine; the service then says the key
 * "does not exist". Pure: tandemd --check and tandemd's start say it.
 */
#ifndef TANDEM_UNITPATHS_H
#define TANDEM_UNITPATHS_H

#include "config.h"
#include "util.h"

/*
 * One line per such path into w: "ssh.identity_file /root/.ssh/id:
 * under /root, which tandemd.service hides (ProtectHome=yes): ...".
 * Returns how many. container.image_archive and container.cache_dir are
 * on the nodes, not here, and are left out.
 */
size_t	unit_hidden_paths(const struct config *, struct strv *w);

/* The unit setting that hides path, or NULL: "ProtectHome=yes". */
const char *unit_hiding(const char *path, const char **dir);

#endif
