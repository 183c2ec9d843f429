/*
 * systemd.exec(5): ProtectHome=yes makes /home, /root and /run/user
 * "inaccessible and empty"; PrivateTmp=yes mounts a private /tmp and
 * /var/tmp. Both are in systemd/tandemd.service; keep this table with it.
 */
#include <string.h>

#include "unitpaths.h"

static const struct {
	const char	*dir;
	const char	*setting;
} hidden[] = {
	{ "/root",	"ProtectHome=yes" },
	{ "/home",	"ProtectHome=yes" },
	{ "/run/user",	"ProtectHome=yes" },
	{ "/tmp",	"PrivateTmp=yes" },
	{ "/var/tmp",	"PrivateTmp=yes" },
};

const char *
unit_hiding(const char *path, const char **dir)
{
	size_t i, l;

	for (i = 0; path && i < sizeof(hidden) / sizeof(hidden[0]); i++) {
		l = strlen(hidden[i].dir);
		if (strncmp(path, hidden[i].dir, l) == 0 &&
		    (path[l] == '/' || path[l] == '\0')) {
			if (dir)
				*dir = hidden[i].dir;
			return hidden[i].setting;
		}
	}
	return NULL;
}

static size_t
one(struct strv *w, const char *key, const char *path)
{
	const char *dir, *setting = unit_hiding(path, &dir);

	if (setting == NULL)
		return 0;
	strv_addf(w, "%s %s: under %s, which tandemd.service does not let "
	    "tandemd see (%s): the service would not find it; keep tandem's "
	    "files in /etc/tandem, where tandemctl init puts them", key, path,
	    dir, setting);
	return 1;
}

size_t
unit_hidden_paths(const struct config *cf, struct strv *w)
{
	size_t n = 0;

	n += one(w, "ssh.identity_file", cf->ssh.identity_file);
	n += one(w, "ssh.known_hosts_file", cf->ssh.known_hosts_file);
	n += one(w, "api_token_file", cf->api_token_file);
	if (cf->hooks.on_state.n)
		n += one(w, "hooks.on_state", cf->hooks.on_state.v[0]);
	if (cf->hooks.on_change.n)
		n += one(w, "hooks.on_change", cf->hooks.on_change.v[0]);
	return n;
}
