/*
 * Are Ray's ports open to the fast link, and does Ray want a token
 * (lib/parse/raysec.c reads the answer)? Run on a worker against the head's
 * nodes[].ip, it sees what anyone on that network sees; run on the head
 * against 127.0.0.1, it reaches a dashboard that `ray start` binds to
 * localhost only (Ray's default --dashboard-host). Agentless: the node's
 * bash opens the connections (/dev/tcp) and speaks HTTP/1.0 itself, each
 * under coreutils' timeout; no curl is needed on the nodes.
 */
#include <stdlib.h>

#include "plan.h"
#include "quote.h"

/*
 * $1 host, $2 the GCS port, $3 the dashboard's. For each port "port N
 * open|closed"; then for two dashboard paths "get PATH", the raw answer
 * (2 KiB at most), "end PATH". /api/authentication_mode is public in Ray
 * 2.52 and later ({"authentication_mode": "token"|"disabled"}) and absent
 * before; /api/version answers 401 without a token when token auth is on.
 */
static const char probe[] =
    "h=$1; "
    "for p in \"$2\" \"$3\"; do "
    "if timeout 3 bash -c 'exec 3<>\"/dev/tcp/$0/$1\"' \"$h\" \"$p\" "
    "2>/dev/null; then echo \"port $p open\"; "
    "else echo \"port $p closed\"; fi; done; "
    "for path in /api/authentication_mode /api/version; do "
    "echo \"get $path\"; "
    "timeout 5 bash -c 'exec 3<>\"/dev/tcp/$0/$1\" || exit 1; "
    "printf \"GET %s HTTP/1.0\\r\\nHost: %s\\r\\nUser-Agent: tandem\\r\\n\\r\\n\" "
    "\"$2\" \"$0\" >&3; head -c 2048 <&3' \"$h\" \"$3\" \"$path\" "
    "2>/dev/null; echo; echo \"end $path\"; done";

char *
cmd_ray_exposure(const struct config *cf, const char *host)
{
	struct strv v;
	char *s;

	strv_init(&v);
	strv_add(&v, "timeout");
	strv_add(&v, "30");
	strv_add(&v, "bash");
	strv_add(&v, "-c");
	strv_add(&v, probe);
	strv_add(&v, "tandem-ray-check");
	strv_add(&v, host ? host : cf->nodes[cf->head].ip);
	strv_addf(&v, "%d", cf->ray.port);
	strv_addf(&v, "%d", RAY_DASHBOARD_PORT);
	s = shell_command(v.v);
	strv_free(&v);
	return s;
}

/*
 * The preflight's: ray.auth_token_file is a file with something in it on
 * the node (docker would make a directory of a missing -v source, and
 * Ray would then stop with ray-token-missing after the containers
 * started). NULL when no token is configured.
 */
char *
cmd_ray_token_present(const struct config *cf)
{
	struct strv v;
	char *s;

	if (cf->topology != TOPO_RAY || cf->ray.auth_token_file == NULL)
		return NULL;
	strv_init(&v);
	strv_add(&v, "test");
	strv_add(&v, "-f");
	strv_add(&v, cf->ray.auth_token_file);
	strv_add(&v, "-a");
	strv_add(&v, "-s");
	strv_add(&v, cf->ray.auth_token_file);
	s = shell_command(v.v);
	strv_free(&v);
	return s;
}
