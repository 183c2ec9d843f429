/*
 * The HTTP API's changes (docs/api.md): POST /rebuild, /pause, /resume,
 * /apply, /rollback, each through the door (Host, Origin, the token).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd_int.h"
#include "apiguard.h"
#include "cluster.h"
#include "log.h"
#include "token.h"

/*
 * Every POST, and GET /bundle (logs may hold prompts): from a local client
 * or this API's own page (Host, Origin: lib/api/apiguard.c), then the token. Host and Origin come first so that a
 * page from elsewhere learns nothing, not even whether a token is set.
 */
int
httpd_post_door(struct cluster *cl, struct MHD_Connection *c,
    enum MHD_Result *ret)
{
	const char *want = cluster_token(cl), *given;
	char err[ERRLEN];

	if (apiguard_post_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_HOST), MHD_lookup_connection_value(c,
	    MHD_HEADER_KIND, "Origin"), err, sizeof(err)) == -1) {
		*ret = httpd_reply_json(c, 403, err);
		return 1;
	}
	if (want == NULL) {
		*ret = httpd_reply_json(c, 403, "mutating endpoints are disabled:"
		    " set api_token_file in the config to a file holding a "
		    "token, then reload (systemctl reload tandemd)");
		return 1;
	}
	given = token_from_authorization(MHD_lookup_connection_value(c,
	    MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
	if (given == NULL) {
		*ret = httpd_reply_json(c, 401, "Authorization: Bearer <token> "
		    "required");
		return 1;
	}
	if (!token_matches(given, want)) {
		*ret = httpd_reply_json(c, 403, "wrong token");
		return 1;
	}
	return 0;
}

enum MHD_Result
httpd_post_rebuild(struct cluster *cl, struct MHD_Connection *c)
{
	const char *reset = MHD_lookup_connection_value(c,
	    MHD_GET_ARGUMENT_KIND, "reset");

	if (reset && strcmp(reset, "1") == 0)
		cluster_reset_remedy(cl);
	if (cluster_fsm(cl)->action == A_PAUSED)
		return httpd_reply_json(c, 409, "paused: resume first");
	cluster_event(cl, EV_REBUILD, "POST /rebuild");
	return httpd_reply_json(c, 202, "rebuild started");
}

enum MHD_Result
httpd_post_pause(struct cluster *cl, struct MHD_Connection *c)
{
	cluster_event(cl, EV_PAUSE, "POST /pause");
	return httpd_reply_json(c, 202, "paused");
}

enum MHD_Result
httpd_post_resume(struct cluster *cl, struct MHD_Connection *c)
{
	return httpd_reply_json(c, 202, cluster_resume(cl));
}

/*
 * tandemctl apply: the body is a config file's text, parsed and checked
 * as tandemd's own file; the change it makes is judged as a reload's. Only
 * on tandemctl's socket, which only root and group tandem can open: over
 * TCP a body of up to 4 MiB would be held before the token is checked.
 */
enum MHD_Result
httpd_post_apply(struct cluster *cl, struct MHD_Connection *c)
{
	const char *file = MHD_lookup_connection_value(c,
	    MHD_GET_ARGUMENT_KIND, "file");
	const char *keep = MHD_lookup_connection_value(c,
	    MHD_GET_ARGUMENT_KIND, "no_rollback");
	char err[ERRLEN];
	int rc;

	if (!httpd_state_via_socket(c) || httpd_state.req_text == NULL)
		return httpd_reply_json(c, 403, "POST /apply is taken only on "
		    "tandemctl's socket (api_socket): tandemctl apply FILE");
	if (httpd_state.req_text->len == 0)
		return httpd_reply_json(c, 400, "no config in the body");
	if (file == NULL || *file == '\0')
		file = "applied config";
	log_info("POST /apply: %s%s", file, keep && strcmp(keep, "1") == 0 ?
	    " (no rollback)" : "");
	rc = cluster_apply_text(cl, httpd_state.req_text->s,
	    httpd_state.req_text->len, file, keep && strcmp(keep, "1") == 0,
	    err, sizeof(err));
	if (rc == -1) {
		log_node(LOG_ERR, NULL, "apply refused, keeping the running "
		    "config: %s", err);
		return httpd_reply_json(c, 400, err);
	}
	return httpd_reply_json(c, 202, rc == 2 ? "the image, model or flags "
	    "changed: checking every node before the switch" : rc == 1 ?
	    "cluster changed, rebuilding" : "no change the cluster depends "
	    "on");
}

/* tandemctl rollback: the last config that served, as an apply of it. */
enum MHD_Result
httpd_post_rollback(struct cluster *cl, struct MHD_Connection *c)
{
	char err[ERRLEN];
	int rc;

	log_info("POST /rollback: to the last-known-good config");
	if ((rc = cluster_rollback(cl, err, sizeof(err))) == -1)
		return httpd_reply_json(c, 409, err);
	return httpd_reply_json(c, 202, rc == 2 ? "back to the last-known-good "
	    "config: checking every node before the switch" :
	    "back to the last-known-good config");
}
